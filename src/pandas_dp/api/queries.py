"""Ungrouped releases: count, sum and mean of a protected frame or Series.

They are the one-group case of :mod:`pandas_dp.api.aggregation`; nothing here is written
twice for grouped releases. Every function can also *preview* its release: the same
validation and planning, then a description of cost and accuracy instead of a release.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import replace
from typing import Any

import pandas as pd

from pandas_dp.api.aggregation import plan, preview
from pandas_dp.api.caps import caps_for
from pandas_dp.api.pipeline import resolve, run
from pandas_dp.api.request import Stat, validate
from pandas_dp.errors import DPKeyError


def release_many(
    obj: pd.DataFrame | pd.Series,
    stats: list[Stat],
    *,
    query: str,
    previewing: bool = False,
    **kwargs: Any,
) -> Any:
    """Release (or preview) several ungrouped statistics at once: a one-row DataFrame.

    A statistic whose column is None reads the Series' own values (for Series targets).
    """
    target = resolve(obj)
    if target.column is not None:
        stats = [s if s.column is not None else replace(s, column=target.column) for s in stats]
    caps = caps_for(target, grouped=False)
    request = validate(target, stats, caps=caps, query=query, **kwargs)
    if previewing:
        return preview(target, request)
    return run(target, plan(target, request, shape="frame"))


def release_one(
    obj: pd.DataFrame | pd.Series,
    how: str,
    column: Hashable | None,
    *,
    previewing: bool = False,
    **kwargs: Any,
) -> Any:
    """Release (or preview) one ungrouped statistic ``how`` of ``column`` (rows when None)."""
    target = resolve(obj)
    stat = Stat(how, how, target.column if target.column is not None else column)
    if how != "count" and stat.column is None:
        raise DPKeyError(f"column None not found: {how} needs a column of this frame")
    caps = caps_for(target, grouped=False)
    request = validate(target, [stat], caps=caps, query=how, per_column=False, **kwargs)
    if previewing:
        return preview(target, request)
    return run(target, plan(target, request, shape="scalar"))
