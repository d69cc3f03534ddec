"""Ungrouped releases: count, sum and mean of a protected frame or Series.

They are the one-group case of :mod:`pandas_dp.api.aggregation`; nothing here is written
twice for grouped releases.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import pandas as pd

from pandas_dp.api.aggregation import PostProcess, Stat, caps_for, plan, validate
from pandas_dp.api.pipeline import Target, resolve, run
from pandas_dp.errors import DPKeyError


def _column_of(target: Target, column: Hashable | None) -> Hashable | None:
    return target.column if target.column is not None else column


def release_one(
    obj: pd.DataFrame | pd.Series, how: str, column: Hashable | None, **kwargs: Any
) -> Any:
    """Release one ungrouped statistic ``how`` of ``column`` (rows when None)."""
    target = resolve(obj)
    stat = Stat(how, how, _column_of(target, column))
    if how != "count" and stat.column is None:
        raise DPKeyError(f"column None not found: {how} needs a column of this frame")
    caps = caps_for(target, grouped=False)
    request = validate(target, [stat], caps=caps, query=how, per_column=False, **kwargs)
    return run(target, plan(target, request, shape="scalar", post=PostProcess()))


def count(obj: pd.DataFrame | pd.Series, *, epsilon: Any) -> int:
    """Noisy number of rows of a frame, or of non-missing values of a Series.

    Notes
    -----
    Sensitivity 1 (adding or removing a row changes the count by at most one; ``k`` under a
    privacy unit with at most ``k`` rows); discrete Laplace noise of scale ``1/ε``; costs ``ε``.
    """
    result: int = release_one(obj, "count", None, epsilon=epsilon)
    return result


def total(
    obj: pd.DataFrame | pd.Series,
    column: Hashable | None = None,
    *,
    bounds: Any,
    epsilon: Any,
    fillna: Any = None,
) -> float:
    """Noisy sum of a column clipped to public bounds (see ``DataFrame.dp.sum``)."""
    result: float = release_one(obj, "sum", column, epsilon=epsilon, bounds=bounds, fillna=fillna)
    return result


def mean(
    obj: pd.DataFrame | pd.Series,
    column: Hashable | None = None,
    *,
    bounds: Any,
    epsilon: Any,
    fillna: Any = None,
) -> float:
    """Noisy mean of a column clipped to public bounds (see ``DataFrame.dp.mean``)."""
    result: float = release_one(obj, "mean", column, epsilon=epsilon, bounds=bounds, fillna=fillna)
    return result
