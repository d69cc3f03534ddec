"""pandas-dp: differential privacy that feels like pandas.

Importing the package registers the ``.dp`` accessor on :class:`pandas.DataFrame` and
:class:`pandas.Series`::

    import pandas_dp
    priv = df.dp.protect(epsilon=1.0)
    priv.dp.count(epsilon=0.1)

Module map (imports point downwards only)::

    pandas_dp.api          accessors, sessions, the release pipeline    (joins the three below)
    pandas_dp.mechanisms   exact samplers, lattices, calibration        (numpy + stdlib)
    pandas_dp.accounting   releases, composition, the accountant        (no pandas)
    pandas_dp.engines      exact clipped aggregates on pandas           (never noise)
    pandas_dp.publish      release files: plan, run, report             (on top of api)
    pandas_dp.cli          the pandas-dp command line                   (on top of publish)
    pandas_dp.budget       exact budgets;  pandas_dp.errors  exceptions and warnings
    pandas_dp.testing      helpers for tests: inspect the noise a release would use
"""

from typing import TYPE_CHECKING

from pandas_dp.api.accessors import DataFrameDPAccessor, SeriesDPAccessor, register
from pandas_dp.api.outputs import Estimate
from pandas_dp.api.release import Preview
from pandas_dp.api.session import Session
from pandas_dp.budget import Budget
from pandas_dp.errors import (
    BudgetExceededError,
    DPError,
    DPKeyError,
    DPTypeError,
    DPValueError,
    DuplicatedRowsError,
    LedgerError,
    MissingExtraError,
    NoiseDominatedWarning,
    NotProtectedError,
    PrivacyLeakWarning,
    ReleaseFailedError,
    SpecError,
)

if TYPE_CHECKING:
    from pandas_dp.api.plotting import plot_intervals

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    """Load what most sessions never use on first access (``plot_intervals``)."""
    if name == "plot_intervals":
        from pandas_dp.api.plotting import plot_intervals

        return plot_intervals
    raise AttributeError(f"module 'pandas_dp' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), "plot_intervals"})


__all__ = [
    "Budget",
    "BudgetExceededError",
    "DPError",
    "DPKeyError",
    "DPTypeError",
    "DPValueError",
    "DataFrameDPAccessor",
    "DuplicatedRowsError",
    "Estimate",
    "LedgerError",
    "MissingExtraError",
    "NoiseDominatedWarning",
    "NotProtectedError",
    "Preview",
    "PrivacyLeakWarning",
    "ReleaseFailedError",
    "SeriesDPAccessor",
    "Session",
    "SpecError",
    "__version__",
    "plot_intervals",
]

register()
