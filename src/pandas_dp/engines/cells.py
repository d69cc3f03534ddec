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
from pandas_dp.engines.plan import Aggregate, Axis, Binning, CellCounts, JointCounts

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


def numeric_values(column: pd.Series) -> F64:
    """The column as float64 with NaN for missing values (bool becomes 0/1)."""
    if isinstance(column.dtype, np.dtype) and column.dtype.kind == "f":
        return np.asarray(column.to_numpy(), dtype=np.float64)
    return np.asarray(column.to_numpy(dtype=np.float64, na_value=np.nan))


def cell_codes(values: F64, measure: CellCounts) -> I64:
    """The grid cell of each value, or -1 for missing values."""
    width = (measure.upper - measure.lower) / measure.cells
    with np.errstate(all="ignore"):
        position = np.floor((np.clip(values, measure.lower, measure.upper) - measure.lower) / width)
        np.clip(position, 0, measure.cells - 1, out=position)
        position[np.isnan(position)] = -1
        return position.astype(np.int64)


def cell_counts(bins: I64 | None, groups: int, cells: I64, count: int) -> Aggregate:
    """A (groups, cells) matrix of counts; ``bins`` 0 and cell -1 are dropped."""
    group = np.zeros(cells.size, dtype=np.int64) if bins is None else bins - 1
    keep = (group >= 0) & (cells >= 0)
    flat = np.bincount(group[keep] * count + cells[keep], minlength=groups * count)
    return flat.reshape(groups, count).astype(np.int64)


def binned_codes(column: pd.Series, binning: Binning) -> I64:
    """Bin index of each row (-1 when dropped), following :class:`Binning`'s rules."""
    x = numeric_values(column)
    edges = np.asarray(binning.edges, dtype=np.float64)
    bins = len(edges) - 1
    side: Literal["left", "right"] = "left" if binning.right else "right"
    codes = np.searchsorted(edges, x, side=side).astype(np.int64) - 1
    if binning.include_lowest and binning.right:
        codes[x == edges[0]] = 0
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
