"""From noisy integers to what the user sees: values, intervals, pandas shapes.

Everything here is post-processing of released values with public parameters (free), and it
is written to be total: it cannot fail on any released value.
"""

from __future__ import annotations

import numbers
from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING, Literal

import numpy as np
import pandas as pd
from pandas._typing import ArrayLike

from pandas_dp.api.outputs import Estimate
from pandas_dp.measures.aggregates import Aggregate
from pandas_dp.planning.measurement.keys import MeasurementKey
from pandas_dp.planning.noise import NoiseSource
from pandas_dp.planning.request import PlannedOutput, Presentation, TimeKind
from pandas_dp.planning.statistics import Size, Sum
from pandas_dp.planning.statistics.postprocess import PostProcess

if TYPE_CHECKING:
    from pandas_dp.api.release.types import Finish

#: How a release's statistics are shaped: one number, a Series over the keys, or a table.
Shape = Literal["scalar", "series", "frame"]


def integral(out: PlannedOutput, columns: frozenset[Hashable]) -> bool:
    """Whether ``out`` is an unweighted sum of an integer column with integer bounds.

    pandas sums such a column to an integer; so does pandas-dp, by rounding the noisy sum to
    the nearest integer (free post-processing; at most 1/2 more error, and the interval's
    ends are rounded outwards).
    """
    return (
        isinstance(out.stat, Sum)
        and out.stat.column in columns
        and all(getattr(key, "weights", None) is None for key in out.keys)
    )


def released(
    out: PlannedOutput,
    noisy: dict[MeasurementKey, Aggregate],
    post: PostProcess,
    columns: frozenset[Hashable] = frozenset(),
) -> np.ndarray:
    """The statistic's released values (an integral sum rounded to int64)."""
    value = out.stat.value(out.inputs(noisy), post)
    if not integral(out, columns):
        return value
    whole = np.rint(np.asarray(value, dtype=np.float64))
    if np.all(np.abs(whole) < 2.0**62):
        return whole.astype(np.int64)
    return whole  # beyond int64: float64 values, whole numbers already


def table_values(
    outputs: tuple[PlannedOutput, ...],
    noisy: dict[MeasurementKey, Aggregate],
    post: PostProcess,
    integral_columns: frozenset[Hashable] = frozenset(),
) -> list[np.ndarray]:
    """Every statistic's released values, a table's NaN rule applied (see below)."""
    values = [released(out, noisy, post, integral_columns) for out in outputs]
    return hide_where_empty(outputs, values, post)


def hide_where_empty(
    outputs: tuple[PlannedOutput, ...], values: list[np.ndarray], post: PostProcess
) -> list[np.ndarray]:
    """One rule for every table: no mean, spread or quantile of a group that looks empty.

    A statistic that describes its group's values (:attr:`Statistic.empty_is_nan`) is
    already NaN where its own noisy count (when it measures one) is below ``min_count``.
    Here it is also NaN where a count in the same table says its values look empty: a count
    of rows (``size``, ``count`` of rows) or a count of its own column, as released (after
    ``nonnegative`` or ``total``), below ``min_count``. So a row never shows ``n = -9`` next
    to a mean, whichever measurements the two were computed from. Free post-processing of
    released values; ``min_count=0`` keeps every value.
    """
    if post.min_count == 0:
        return values
    rows: np.ndarray | None = None
    of_column: dict[Hashable, np.ndarray] = {}
    for out, value in zip(outputs, values, strict=True):
        if not out.stat.group_count:
            continue
        if not out.stat.per_group:
            continue
        small = np.asarray(value, dtype=np.float64) < post.min_count
        if isinstance(out.stat, Size) or out.stat.column is None:
            rows = small if rows is None else rows | small
        else:
            column = out.stat.column
            of_column[column] = small | of_column[column] if column in of_column else small
    if rows is None and not of_column:
        return values
    hidden_values = []
    for out, value in zip(outputs, values, strict=True):
        if out.stat.empty_is_nan and out.stat.per_group:
            masks = [m for m in (rows, of_column.get(out.stat.column)) if m is not None]
            if masks and np.shape(masks[0]) == np.shape(value):
                empty = np.logical_or.reduce(masks)
                value = np.where(empty, np.nan, np.asarray(value, dtype=np.float64))
        hidden_values.append(value)
    return hidden_values


def columns_of(
    outputs: tuple[PlannedOutput, ...],
    noisy: dict[MeasurementKey, Aggregate],
    post: PostProcess,
    alpha: float | None,
    relative: bool = False,
    integral_columns: frozenset[Hashable] = frozenset(),
    kinds: Mapping[Hashable, TimeKind] | None = None,
) -> dict[Hashable, ArrayLike]:
    """Each statistic's values (and ``_lower``/``_upper`` with ``alpha``), by name.

    With ``relative``, also ``_rel_error``: the interval's larger half-width over the value's
    magnitude (``inf`` at 0): below 0.1 the number is good to about 10%; above 1 it is
    mostly noise. Statistics of the datetime and timedelta columns in ``kinds`` come back
    in the column's dtype (their relative error stays a number).
    """
    columns: dict[Hashable, ArrayLike] = {}
    values = table_values(outputs, noisy, post, integral_columns)
    for out, value in zip(outputs, values, strict=True):
        inputs = out.inputs(noisy)
        columns[out.stat.name] = value
        names = [out.stat.name]
        if alpha is not None:
            lower, upper = out.stat.interval(inputs, alpha)
            if integral(out, integral_columns):  # outwards, so the interval still covers
                lower, upper = np.floor(lower), np.ceil(upper)
            if value.dtype.kind == "f":  # a value hidden as NaN hides its interval too
                hidden = np.isnan(value)
                lower, upper = np.where(hidden, np.nan, lower), np.where(hidden, np.nan, upper)
            name = out.stat.name
            columns[suffixed(name, "_lower")], columns[suffixed(name, "_upper")] = lower, upper
            names += [suffixed(name, "_lower"), suffixed(name, "_upper")]
            if relative:
                columns[suffixed(name, "_rel_error")] = _relative(value, lower, upper)
        kind = (kinds or {}).get(out.stat.column)
        if kind is not None and out.stat.reads_values:
            for name in names:
                columns[name] = kind.present(columns[name], out.stat.on_time)
    return columns


def suffixed(name: Hashable, suffix: str) -> Hashable:
    """``name`` + ``suffix``; a ``(column, statistic)`` pair suffixes its statistic."""
    if not suffix:
        return name
    if isinstance(name, tuple) and name:
        return (*name[:-1], f"{name[-1]}{suffix}")
    return f"{name}{suffix}"


def scalar(value: object) -> object:
    """A released number as a float; a datetime or timedelta (or NaT) as it is."""
    if isinstance(value, numbers.Real):
        return float(value)
    return value


def _relative(value: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Larger half-width over ``|value|`` (post-processing of released numbers)."""
    v = np.asarray(value, dtype=np.float64)
    width = np.maximum(v - np.asarray(lower, np.float64), np.asarray(upper, np.float64) - v)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(v == 0, np.inf, width / np.abs(v))


def finisher(outputs: tuple[PlannedOutput, ...], shape: Shape, shown: Presentation) -> Finish:
    """Build the function that turns noisy aggregates into the user's result.

    ``"scalar"`` (one statistic, ungrouped), ``"series"`` (one statistic per key) or
    ``"frame"``. With a confidence level, each statistic ``x`` gains ``x_lower`` and
    ``x_upper`` (a Series becomes a DataFrame; a scalar an :class:`Estimate`).
    """
    post = shown.post or PostProcess()
    confidence = shown.confidence
    alpha = None if confidence is None else 1.0 - confidence
    first = outputs[0].stat

    def finish(
        keys: pd.Index | None, noisy: dict[MeasurementKey, Aggregate], source: NoiseSource
    ) -> object:
        columns = columns_of(
            outputs, noisy, post, alpha, shown.relative_error, shown.integral_columns,
            shown.kinds,
        )  # fmt: skip
        if shape == "scalar":
            value = columns[first.name][0]
            whole = first.integer or integral(outputs[0], shown.integral_columns)
            value = int(value) if whole else scalar(value)
            if alpha is None:
                return value
            lower = columns[suffixed(first.name, "_lower")][0]
            upper = columns[suffixed(first.name, "_upper")][0]
            return Estimate(value, scalar(lower), scalar(upper), 1.0 - alpha)
        index = keys if keys is not None else pd.RangeIndex(1)
        if shape == "series" and alpha is None:
            return pd.Series(columns[first.name], index=index, name=first.name)
        return pd.DataFrame(columns, index=index)

    return finish
