"""The planned release: the plan of a request, where it runs, and how its result is shaped.

The planner (:func:`pandas_dp.planning.planner.plan`) reads public inputs only; this step
adds the target (session, data, engine) and the finisher, giving the one
:class:`~pandas_dp.api.release.types.PlannedRelease` that
:func:`~pandas_dp.api.release.run.run` releases and
:func:`~pandas_dp.api.release.preview.preview` describes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pandas_dp.api.release.finish import Shape, finisher
from pandas_dp.api.release.types import Finisher, PlannedRelease, Target
from pandas_dp.measures.aggregates import Aggregate
from pandas_dp.planning import planner
from pandas_dp.planning.measurement.choices import AnyPart
from pandas_dp.planning.measurement.keys import MeasurementKey
from pandas_dp.planning.request import Request


def plan(
    target: Target,
    request: Request,
    shape: Shape | Finisher,
    *,
    derive: Callable[[list[Aggregate]], list[Aggregate]] | None = None,
    calibrated: dict[MeasurementKey, AnyPart] | None = None,
) -> PlannedRelease[Any]:
    """Turn a validated request into the planned release (nothing is read or charged).

    ``shape`` is how the statistics are shaped (``"scalar"``, ``"series"``, ``"frame"``),
    or a finisher of one's own given ``(outputs, presentation)``. ``calibrated`` holds a query
    family's own measurements, calibrated jointly (a workload of marginals), by key.
    """
    planned = planner.plan(target.session, request, calibrated=calibrated)
    outputs, shown = planned.outputs, request.presentation
    finish = shape(outputs, shown) if callable(shape) else finisher(outputs, shape, shown)
    return PlannedRelease(
        target=target, parts=planned.parts, outputs=outputs, release=planned.release,
        finish=finish, grouping=request.grouping, bounding=request.caps.bounding,
        selection=planned.selection, derive=derive, confidence=shown.confidence,
        post=shown.post,
    )  # fmt: skip
