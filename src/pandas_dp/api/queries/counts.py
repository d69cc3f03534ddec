"""Counts over public values and bins: ``Series.dp.value_counts`` and histograms.

Both are the group-by's row counts over public keys (or privately selected ones), reshaped
like their pandas twins; see :class:`~pandas_dp.api.queries.groupby.DPGroupBy`.
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Hashable
from dataclasses import replace
from typing import Any, Literal, Unpack

import numpy as np
import pandas as pd

from pandas_dp.api.queries.groupby import DPGroupBy
from pandas_dp.api.queries.grouped.counts import count_options
from pandas_dp.api.queries.time_bins import is_count, time_edges
from pandas_dp.api.queries.ungrouped import after_bounds
from pandas_dp.api.release import PlannedRelease, ReleaseOptions, resolve
from pandas_dp.api.release.arguments import CountArgs, Keys
from pandas_dp.api.release.types import Table
from pandas_dp.api.temporal import ValueKind
from pandas_dp.api.validation import check_column, parse_bounds
from pandas_dp.errors import DPTypeError, DPValueError
from pandas_dp.measures.aggregates import Binning, OtherCells


def plan_value_counts(
    series: pd.Series,
    keys: Keys = None,
    *,
    normalize: bool = False,
    sort: bool = True,
    ascending: bool = False,
    ci: float | None = None,
    dropna: bool = True,
    selection: Literal["threshold", "optimal"] | None = None,
    **options: Unpack[CountArgs],
) -> PlannedRelease[pd.Series | pd.DataFrame]:
    """Noisy counts of each public key in a Series (see ``Series.dp.value_counts``)."""
    if normalize and ci is not None:
        raise DPValueError("ci is for counts; it cannot be combined with normalize=True")
    target = resolve(series)
    grouped = DPGroupBy.of(
        target, target.column, keys, dropna=dropna, selection=selection, called="value_counts"
    )
    listed = grouped.keys
    if normalize and listed is not None:  # shares of all rows, as pandas: one "other" cell
        other = OtherCells(None, listed)
        extended = pd.RangeIndex(other.size, name=listed.name)
        grouping = replace(grouped._grouping, keys=extended, other=other)
        grouped = replace(grouped, _grouping=grouping)
    planned = grouped.plan_counts("value_counts", count_options(options, ci, clamp=normalize))
    unnamed = series.name is None

    def shape(counts: Any) -> Any:
        if normalize:
            counts = _proportions(counts, listed)
        if sort:
            by = {"by": "count"} if isinstance(counts, pd.DataFrame) else {}
            counts = counts.sort_values(**by, ascending=ascending, kind="stable")
        if unnamed:  # like pandas: an unnamed Series gives an unnamed index
            counts.index.name = None
        return counts

    return planned.then(shape)


def _proportions(counts: pd.Series, listed: pd.Index | None) -> pd.Series:
    """Shares of the clamped counts of every cell, then the listed keys' (and NaN's).

    With public keys, ``counts`` holds one more cell after the keys (the rows whose value
    is not among them): it counts in the total, as pandas divides by every row, and is
    not shown. A missing-value cell (``dropna=False``) comes last and is shown.
    """
    clamped = np.maximum(counts.to_numpy(dtype=np.float64), 0.0)
    total = clamped.sum()
    values = clamped / total if total > 0 else np.full(len(clamped), 1.0 / max(len(clamped), 1))
    if listed is None:
        return pd.Series(values, index=counts.index, name="proportion")
    shown = np.r_[0 : len(listed), len(listed) + 1 : len(values)]  # all but the other cell
    index = listed
    if len(values) > len(listed) + 1:  # the missing values' cell, as the engine labels it
        index = listed.append(pd.Index([np.nan], name=listed.name))
    return pd.Series(values[shown], index=index, name="proportion")


def plan_histogram(
    obj: pd.Series | pd.DataFrame,
    bins: object,
    *,
    column: Hashable | None = None,
    range: object = None,
    freq: str | None = None,
    right: bool | None = None,
    include_lowest: bool = False,
    clip: bool = False,
    ci: float | None = None,
    **options: Unpack[CountArgs],
) -> PlannedRelease[pd.Series | pd.DataFrame]:
    """Noisy counts of values in public bins (see ``Series.dp.histogram``).

    ``obj`` is the Series, or a DataFrame with ``column`` (the only route under a privacy
    unit, whose column a Series does not carry). ``bins`` may be a number of equal bins
    over ``range``, as in :func:`numpy.histogram`: left-closed, the last one closed on both
    sides. Datetime and timedelta columns take time edges, or ``freq`` and ``range``
    (:mod:`~pandas_dp.api.queries.time_bins`): bins of a frequency are left-closed and the
    result is indexed by their labels, as ``resample(freq).size()`` gives them.
    """
    target = resolve(obj)
    col = target.column if target.column is not None else column
    check_column(target.engine, target.data, col, known=target.session.columns, temporal=True)
    kind = ValueKind.of(dict(target.engine.dtypes(target.data).items())[col])
    if isinstance(range, str) and range == "auto":
        if kind.temporal or freq is not None or not is_count(bins):
            raise DPValueError(
                "range='auto' goes with a number of bins (bins=10) of a numeric column: the "
                "range is released first (as priv.dp.bounds), then cut into equal bins; give "
                "edges, or a public range"
            )

        def cut(given: ReleaseOptions) -> PlannedRelease[pd.Series | pd.DataFrame]:
            table: Any = given.bounds  # the released (lower, upper) of the column
            span = (float(table["lower"].iloc[0]), float(table["upper"].iloc[0]))
            rest: Any = {**options, "epsilon": given.epsilon}
            return plan_histogram(
                obj, bins, column=column, range=span, right=right,
                include_lowest=include_lowest, clip=clip, ci=ci, **rest,
            )  # fmt: skip

        asked = ReleaseOptions(epsilon=options.get("epsilon"), rho=options.get("rho"))
        return after_bounds(obj, [col], asked, cut, auto="range='auto'")
    breaks: Any = None  # the edges as the index shows them (Timestamps for datetimes)
    labels: pd.Index | None = None  # with freq: resample's labels of the bins
    if kind.temporal:
        if freq is not None and (right or include_lowest):
            raise DPValueError(
                "bins of a frequency are [start, end), labelled by their start like "
                "resample(freq); right= and include_lowest= are for edges (bins=[...])"
            )
        edges, breaks, labels = time_edges(bins, freq, range, kind, col)
    elif freq is not None:
        raise DPValueError(
            f"freq= is for datetime and timedelta columns; column {col!r} holds numbers, so "
            "give edges (bins=[...]) or a number of bins over a range (bins=10, range=(0, 1))"
        )
    elif is_count(bins):
        edges = _equal_edges(bins, range)
    else:
        if range is not None:
            raise DPValueError("range= goes with a number of bins (bins=10); these are edges")
        edges = _parse_edges(bins)
    if is_count(bins):  # numpy.histogram's bins: [a, b), the last one [a, b]
        binning = Binning(edges, right=False, include_highest=True)
    elif labels is not None:  # resample's bins: [a, b), the last one too
        binning = Binning(edges, right=False, clip=bool(clip))
    else:
        binning = Binning(edges, right is None or bool(right), bool(include_lowest), bool(clip))
    breaks = list(edges) if breaks is None else breaks
    intervals = pd.IntervalIndex.from_breaks(
        breaks, closed="right" if binning.right else "left", name=col
    )
    grouped = DPGroupBy.of(target, col, intervals, binning=binning)
    planned = grouped.plan_counts("histogram", count_options(options, ci))
    if labels is not None:  # indexed like df.set_index(col).resample(freq).size()
        named = labels.rename(col)

        def labelled(counts: Table) -> Table:
            counts.index = named
            return counts

        planned = planned.then(labelled)
    if isinstance(obj, pd.Series) and obj.name is None:  # like pd.cut on an unnamed Series

        def unnamed(counts: Table) -> Table:
            counts.index.name = None
            return counts

        return planned.then(unnamed)
    return planned


def _equal_edges(bins: numbers.Integral, span: object) -> tuple[float, ...]:
    """``bins`` equal bins over the public ``span``, as ``numpy.histogram`` cuts them."""
    if bins < 1:
        raise DPValueError(f"bins must be at least 1, got {bins}")
    if span is None:
        raise DPTypeError(
            f"bins={bins} needs range=(lower, upper): public limits (pandas-dp never reads "
            "them off the data, as numpy.histogram would)"
        )
    lower, upper = parse_bounds(span, "range")
    return tuple(float(edge) for edge in np.linspace(lower, upper, int(bins) + 1))


def _parse_edges(bins: object) -> tuple[float, ...]:
    if isinstance(bins, str | bytes) or not hasattr(bins, "__iter__"):
        raise DPTypeError("bins must be a list of public bin edges, e.g. [0, 18, 65, 120]")
    edges = []
    for edge in bins:
        if isinstance(edge, bool) or not isinstance(edge, int | float | np.integer | np.floating):
            raise DPTypeError(f"bin edges must be numbers, got {type(edge).__name__}")
        if not math.isfinite(float(edge)):
            raise DPValueError("bin edges must be finite; use clip=True to catch outliers")
        edges.append(float(edge))
    if len(edges) < 2 or any(b <= a for a, b in itertools.pairwise(edges)):
        raise DPValueError("bins must be at least two strictly increasing edges")
    return tuple(edges)
