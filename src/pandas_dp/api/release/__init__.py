"""The one release path, one file per step.

::

    target.resolve      the live session, the trusted rows, the engine
    options.validate    public arguments -> a Request (nothing read, nothing charged)
    planned.plan        Request -> PlannedRelease: the planner's measurements, calibrated noise,
                        ledger record (pandas_dp.planning.planner), with target and finisher
    run.run             check -> exact aggregates -> noise -> selection -> finish -> charge
    finish              noisy integers -> values, intervals, pandas shapes (free)
    preview.preview     PlannedRelease -> Preview (reads nothing, charges nothing)
    consumers           Run (run it) or Describe (preview it): the value an accessor holds

Every query family builds its release through :func:`~.planned.plan`; :func:`~.run.run`
and :func:`~.preview.preview` both consume the one
:class:`~.types.PlannedRelease`, so a preview cannot drift from the release; which of
them does is a value, :class:`~.consumers.Run` or :class:`~.consumers.Describe`.
"""

from pandas_dp.api.release.options import validate
from pandas_dp.api.release.planned import plan
from pandas_dp.api.release.preview import Preview, preview
from pandas_dp.api.release.run import run
from pandas_dp.api.release.target import resolve
from pandas_dp.api.release.types import PlannedRelease, ReleaseOptions, Target
from pandas_dp.planning.request import ColumnFacts, PlannedOutput, Presentation, Pricing, Request

__all__ = [
    "ColumnFacts",
    "PlannedOutput",
    "PlannedRelease",
    "Presentation",
    "Preview",
    "Pricing",
    "ReleaseOptions",
    "Request",
    "Target",
    "plan",
    "preview",
    "resolve",
    "run",
    "validate",
]
