"""Each row's clipped value in integer lattice units, and the most one row can contribute.

The per-row step of clipped sums (:class:`~pandas_dp.measures.aggregates.ClippedSum`) and capped
squares (:class:`~pandas_dp.measures.aggregates.ClippedSquares`) in the pandas engine: clip, scale
by a power of two (exact), round, fill missing values, shift by the offset. Every step is a
function of one row and public parameters, and nothing data-dependent surfaces as a
warning. :func:`row_bound` reads the largest magnitude of one row's units (weighted sums'
too) off the measure alone: the bound the exact sums of :mod:`pandas_dp.engines.sums` need.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from pandas_dp.engines.columns import F64
from pandas_dp.measures.aggregates import ClippedSquares, ClippedSum, WeightedSum

I64 = npt.NDArray[np.int64]

#: A sum's lattice keeps one row within this many units (``MAX_ROW_UNITS`` of
#: :mod:`pandas_dp.mechanisms.lattice`; the engines do not import the noise layer).
MAX_ROW_UNITS = 1 << 37


def lattice_values(values: F64, measure: ClippedSum) -> I64:
    """Round clipped values onto the lattice: ``rint(clip(x, L, U) / g) - offset`` as int64.

    Clipping happens in the column's units first (±inf land on the bounds, and no huge
    value can overflow when scaled); scaling by ``2**-exponent`` is then exact.
    """
    lower = math.ldexp(measure.lower, measure.exponent)  # exact: see Lattice
    upper = math.ldexp(measure.upper, measure.exponent)
    with np.errstate(all="ignore"):  # nothing data-dependent may surface as a warning
        scaled = np.clip(values, lower, upper)
        scaled *= math.ldexp(1.0, -measure.exponent)
        np.rint(scaled, out=scaled)
        missing = np.isnan(scaled)
        if missing.any():
            if measure.fill is None:
                scaled[missing] = measure.offset
            else:
                filled = min(max(measure.fill, lower), upper)
                scaled[missing] = round(math.ldexp(filled, -measure.exponent))
        units = scaled.astype(np.int64)
    if measure.offset:
        units -= measure.offset
    return units


def square_values(values: F64, measure: ClippedSquares) -> I64:
    """Per-row capped squares ``min(rint((clip(x) - c)**2 / 2**e), units) - offset``."""
    with np.errstate(all="ignore"):
        deviation = np.clip(values, measure.lower, measure.upper) - measure.centre
        squares = deviation * deviation * math.ldexp(1.0, -measure.exponent)
        np.rint(squares, out=squares)
        np.clip(squares, 0, measure.units, out=squares)
        missing = np.isnan(squares)
        if missing.any():
            if measure.fill is None:
                squares[missing] = measure.offset
            else:
                gap = min(max(measure.fill, measure.lower), measure.upper) - measure.centre
                squares[missing] = min(
                    round(math.ldexp(gap * gap, -measure.exponent)), measure.units
                )
        units = squares.astype(np.int64)
    if measure.offset:
        units -= measure.offset
    return units


def row_bound(measure: ClippedSum | ClippedSquares | WeightedSum) -> int:
    """The largest magnitude one row contributes, in lattice units (public: from the measure)."""
    if isinstance(measure, ClippedSquares):
        return max(measure.units - measure.offset, measure.offset)
    offset = measure.offset if isinstance(measure, ClippedSum) else 0
    return max(abs(measure.lower - offset), abs(measure.upper - offset))
