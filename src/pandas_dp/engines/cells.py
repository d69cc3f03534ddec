"""Which cell of a public grid or table each row falls in: bins, grid cells, table cells.

Row-local and total like :mod:`pandas_dp.engines.codes`: a value outside the public bins or
keys (or missing) is -1, and rows at -1 are not counted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from pandas_dp.engines.codes import level_codes
from pandas_dp.engines.columns import F64, numeric_values
from pandas_dp.measures.aggregates import (
    Aggregate,
    Axis,
    Binning,
    CellCounts,
    EdgeRanks,
    JointCounts,
)
from pandas_dp.measures.grids import quantile_candidates

I64 = npt.NDArray[np.int64]


def cell_codes(values: F64, measure: CellCounts) -> I64:
    """The grid cell of each value, or -1 for missing values.

    ``floor((clip(x, lower, upper) - lower) / width)`` capped at ``cells - 1``, computed in
    place in one buffer (10**7 values: a few passes, no temporaries).
    """
    width = (measure.upper - measure.lower) / measure.cells
    with np.errstate(all="ignore"):
        position = np.clip(values, measure.lower, measure.upper)
        position -= measure.lower
        position /= width
        np.floor(position, out=position)
        np.minimum(position, measure.cells - 1, out=position)  # >= 0 after the clip
        missing = np.isnan(position)
        codes = position.astype(np.int64)
    codes[missing] = -1
    return codes


def cell_counts(bins: I64 | None, groups: int, cells: I64, count: int) -> Aggregate:
    """A (groups, cells) matrix of counts; ``bins`` 0 and cell -1 are dropped.

    Rows are counted at ``bin * (count + 1) + cell + 1`` in one ``bincount``: bin 0 (dropped
    rows) and cell -1 (rows outside the grid or table) land in a row and a column that are
    cut off, so no mask or copy of the rows is needed.
    """
    slot = cells + 1
    first = 0 if bins is None else 1  # ungrouped rows all sit in row 0
    if bins is not None:
        slot += bins * (count + 1)
    flat = np.bincount(slot, minlength=(groups + 1) * (count + 1))
    counts = flat.reshape(groups + 1, count + 1)[first : first + groups, 1:]
    return counts.astype(np.int64)


def edge_positions(values: F64, edges: F64) -> tuple[I64, I64]:
    """Per value ``x`` clipped to the edges: ``#{k: c_k < x}`` and ``#{k: c_k <= x} - 1``.

    The second is the last edge at or below ``x``; missing values get -1 in both. Exact
    comparisons with the edges: the arithmetic guess ``floor((x - c_0) / width)`` is
    checked against the edges around it, and a value it misplaces (float rounding, or runs
    of equal edges on a grid finer than float64 resolves) is found by binary search.
    """
    cells = len(edges) - 1
    lower, upper = float(edges[0]), float(edges[-1])
    with np.errstate(all="ignore"):
        x = np.clip(values, lower, upper)
        position = x - lower
        position /= (upper - lower) / cells
        np.floor(position, out=position)
        np.minimum(position, cells, out=position)  # >= 0 after the clip
        missing = np.isnan(position)
        last = position.astype(np.int64)
    del position
    last[missing] = 0
    low = edges[last]
    wrong = low > x
    wrong |= np.append(edges[1:], np.inf)[last] <= x  # NaN compares False: never wrong
    if wrong.any():
        last[wrong] = np.searchsorted(edges, x[wrong], side="right") - 1
        low[wrong] = edges[last[wrong]]
    below = np.not_equal(low, x).view(np.int8).astype(np.int64)
    below += last  # #{edges < x}: the last edge at or below x, plus one unless x is on it
    if cells > 0 and np.any(edges[1:] == edges[:-1]):  # equal edges: count all that x equals
        rows = np.flatnonzero(low == x)
        below[rows] = np.searchsorted(edges, x[rows], side="left")
    below[missing] = -1
    last[missing] = -1
    return below, last


def edge_ranks(bins: I64 | None, groups: int, values: F64, measure: EdgeRanks) -> Aggregate:
    """``#{x < c_k}`` then ``#{x <= c_k}`` per group, for every candidate ``c_k``.

    The candidates are :func:`quantile_candidates` of the measure. A value is below
    candidate ``k`` iff the last candidate at or below it comes before ``k``, and at or
    below candidate ``k`` iff fewer than ``k + 1`` candidates lie below it: one histogram of
    each position, then running sums. Exact comparisons with the candidates (values clipped
    to the bounds, missing values not counted).
    """
    edges = quantile_candidates(measure.lower, measure.upper, measure.cells, measure.rounding)
    count = edges.size
    if measure.rounding == "grid":
        below, last = edge_positions(values, edges)
    else:
        with np.errstate(all="ignore"):
            x = np.clip(values, edges[0], edges[-1])
        missing = np.isnan(x)
        below = np.searchsorted(edges, x, side="left").astype(np.int64)
        last = np.searchsorted(edges, x, side="right").astype(np.int64) - 1
        below[missing] = -1
        last[missing] = -1
    strictly = np.zeros((groups, count), dtype=np.int64)
    np.cumsum(cell_counts(bins, groups, last, count)[:, :-1], axis=1, out=strictly[:, 1:])
    up_to = np.cumsum(cell_counts(bins, groups, below, count), axis=1)
    return np.concatenate([strictly, up_to], axis=1).astype(np.int64)


def binned_codes(column: pd.Series, binning: Binning) -> I64:
    """Bin index of each row (-1 when dropped), following :class:`Binning`'s rules."""
    x = numeric_values(column)
    edges = np.asarray(binning.edges, dtype=np.float64)
    bins = len(edges) - 1
    side: Literal["left", "right"] = "left" if binning.right else "right"
    codes = np.searchsorted(edges, x, side=side).astype(np.int64) - 1
    if binning.include_lowest and binning.right:
        codes[x == edges[0]] = 0
    if binning.include_highest and not binning.right:
        codes[x == edges[-1]] = bins - 1
    if binning.clip:
        codes = np.clip(codes, 0, bins - 1)
    else:
        codes[(codes < 0) | (codes >= bins)] = -1
    codes[np.isnan(x)] = -1
    return np.asarray(codes, dtype=np.int64)


def axis_codes(frame: pd.DataFrame, axis: Axis) -> I64:
    """Each row's position among the axis's keys or bins, or -1 (outside the table)."""
    if axis.binning is not None:
        return binned_codes(frame[axis.column], axis.binning)
    keys = pd.Index(list(axis.keys), tupleize_cols=False)
    return level_codes(frame[axis.column], keys)


def joint_codes(
    measure: JointCounts,
    codes: Callable[[Axis], I64],
    inside: Callable[[tuple[Axis, ...]], npt.NDArray[np.bool_]],
) -> I64:
    """Each row's cell of the contingency table (C order), or -1.

    ``inside(axes)`` says which rows have a key on every one of ``axes``: the table's own
    and those it is counted ``within``. The caller computes it once per set of axes, since
    the many tables of one release (all pairs of twelve columns, say) share it. The cell
    number is below the table's size, which the caller keeps public and small.
    """
    keyed = inside(measure.axes + measure.within)
    cell = np.zeros(len(keyed), dtype=np.int64)
    for axis in measure.axes:
        cell = cell * axis.size + codes(axis)  # rows off a key are masked out below
    return np.asarray(np.where(keyed, cell, -1), dtype=np.int64)


def inside_every(
    axes: tuple[Axis, ...], codes: Callable[[Axis], I64], rows: int
) -> npt.NDArray[np.bool_]:
    """Rows with a key (or bin) on each of ``axes``."""
    mask = np.ones(rows, dtype=np.bool_)
    for axis in axes:
        mask &= codes(axis) >= 0
    return mask
