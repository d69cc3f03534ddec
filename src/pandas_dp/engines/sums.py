"""Exact integer sums that cannot wrap: int64 slices, added as Python integers.

Every engine sums per-row lattice units (each of magnitude at most a public ``bound``) here.
An int64 partial sum holds :func:`rows_per_sum` such rows without wrapping, a number chosen
from the bound alone; longer columns are summed slice by slice and the slices added as
Python integers, so no total depends on row order or can overflow, whatever the data.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
#: One exact integer per group: int64 when it fits, else an object array of Python ints.
Aggregate = npt.NDArray[np.int64] | npt.NDArray[np.object_]

#: Rows per int64 partial sum when rows are within a lattice's ``2**37`` units.
INT64_EXACT_ROWS = 1 << 26
INT64_MAX = (1 << 63) - 1
#: int64 values below this magnitude can be doubled without overflowing.
_INT64_SAFE = 1 << 62


def rows_per_sum(bound: int) -> int:
    """How many rows of magnitude at most ``bound`` an int64 partial sum holds without wrapping.

    Chosen from public parameters only, so no partial sum can wrap whatever the data; a
    lattice keeps a row within ``2**37`` units, which leaves ``2**26`` rows per partial sum.
    """
    return max(1, min(INT64_EXACT_ROWS, INT64_MAX // max(bound, 1)))


def exact_total(units: I64, bound: int) -> int:
    """Exact sum of lattice values of magnitude at most ``bound``.

    Int64 partial sums of :func:`rows_per_sum` rows (they cannot wrap), added as Python ints.
    """
    step = rows_per_sum(bound)
    return sum(int(units[i : i + step].sum()) for i in range(0, max(units.size, 1), step))


def grouped_total(bins: I64, units: I64, groups: int, bound: int) -> Aggregate:
    """Exact per-group sums of int64 lattice values of magnitude at most ``bound``.

    ``bins`` is the group code plus one (bin 0 collects dropped rows). Slices of at most
    :func:`rows_per_sum` rows are scatter-added in int64, which cannot wrap; their totals are
    added as Python integers when there is more than one slice.
    """
    step = rows_per_sum(bound)
    if units.size <= step:
        out = np.zeros(groups + 1, dtype=np.int64)
        np.add.at(out, bins, units)
        return out[1:]
    totals = [0] * groups
    for start in range(0, units.size, step):
        part = np.zeros(groups + 1, dtype=np.int64)
        np.add.at(part, bins[start : start + step], units[start : start + step])
        totals = [t + int(p) for t, p in zip(totals, part[1:].tolist(), strict=True)]
    return np.array(totals, dtype=object)


def summed(bins: I64 | None, units: I64, groups: int, bound: int) -> Aggregate:
    """Exact sums per group (``bins``), or one total when ungrouped (``bins`` None)."""
    if bins is None:
        return np.array([exact_total(units, bound)], dtype=object)
    return grouped_total(bins, units, groups, bound)


def scaled(totals: Aggregate, shift: int) -> Aggregate:
    """Exact ``totals * 2**shift``: int64 while it cannot overflow, Python ints beyond."""
    if totals.dtype != object:
        largest = int(np.abs(totals).max()) if totals.size else 0
        if largest < _INT64_SAFE >> shift:
            return np.asarray(totals << shift, dtype=np.int64)
    return np.asarray([int(total) << shift for total in totals], dtype=object)
