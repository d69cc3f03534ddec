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
from pandas_dp.engines.plan import Aggregate, Axis, Binning, CellCounts, JointCounts

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


def joint_codes(frame: pd.DataFrame, measure: JointCounts, codes: Callable[[Axis], I64]) -> I64:
    """Each row's cell of the contingency table (C order), or -1.

    The cell number is below the table's size, which the caller keeps public and small.
    """
    cell = np.zeros(len(frame), dtype=np.int64)
    inside = np.ones(len(frame), dtype=bool)
    for axis in measure.axes:
        position = codes(axis)
        inside &= position >= 0
        cell = cell * axis.size + position
    for axis in measure.within:
        inside &= codes(axis) >= 0
    return np.where(inside, cell, -1)
