"""The public grids a quantile chooses among: a grid's edges and round values within bounds.

Public inputs only (bounds, cells, a column's kind): the planner prices a quantile on these
candidates and an engine ranks the rows against the same ones.
"""

from __future__ import annotations

import functools
import math
from typing import Literal

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]


def grid_edges(lower: float, upper: float, cells: int) -> F64:
    """The ``cells + 1`` edges ``lower + k ((upper - lower) / cells)``, the last exactly ``upper``.

    The same float64 arithmetic as :func:`pandas_dp.mechanisms.quantile.grid_value` (the
    values a quantile releases): non-decreasing in ``k``, so sorted.
    """
    edges = lower + np.arange(cells + 1, dtype=np.float64) * ((upper - lower) / cells)
    edges[-1] = upper
    return edges


#: How a quantile's candidates extend its grid: ``"grid"`` (the grid's edges alone: an integer
#: column's grid of the integers), ``"number"`` or ``"time"`` (plus the round values), or
#: ``"magnitude"``: the public magnitude lattice of a bounds release on ``[-2**64, 2**64]``
#: (:mod:`pandas_dp.mechanisms.bounds`), whatever the cells.
Rounding = Literal["grid", "number", "time", "magnitude"]

#: Mantissas of the magnitude lattice's points within each power of two.
MANTISSAS = (1.0, 1.25, 1.5, 1.75)
#: Smallest and largest exponent ``e`` of the points ``m·2**e`` below the ends ``±2**64``.
SMALLEST_EXPONENT, LARGEST_EXPONENT = -32, 63
#: The magnitude lattice's ends: values beyond them are clipped to them.
LATTICE_END = 2.0**64


def _magnitudes() -> F64:
    exponents = np.arange(SMALLEST_EXPONENT, LARGEST_EXPONENT + 1)
    points = [np.ldexp(m, exponents) for m in MANTISSAS]
    return np.asarray(np.sort(np.concatenate([*points, [LATTICE_END]])), dtype=np.float64)


#: The magnitude lattice's positive points, increasing: ``2**-32`` up to ``2**64``. Each is
#: an exact float64 with at most three significant bits; neighbours differ by a factor of at
#: most 1.25 (public: fixed before any data is read).
MAGNITUDES = _magnitudes()
MAGNITUDES.setflags(write=False)


def lattice() -> F64:
    """The magnitude lattice, sorted: ``-2**64 .. -2**-32, 0, 2**-32 .. 2**64`` (a copy)."""
    return np.concatenate([-MAGNITUDES[::-1], [0.0], MAGNITUDES])


def scan_points(side: Literal[-1, 1]) -> F64:
    """The points a bound's scan visits, in scan order: from 0 outwards on ``side``."""
    return np.concatenate([[0.0], MAGNITUDES if side == 1 else -MAGNITUDES])


#: Round steps of time columns, in nanoseconds: powers of ten up to a second, then a minute,
#: an hour, a day, and powers of ten of days. Each divides the next, so a finer step's
#: multiples hold every coarser one's.
TIME_STEPS = (
    *(10**j for j in range(10)), 60 * 10**9, 3600 * 10**9, 86_400 * 10**9,
    *(86_400 * 10 ** (9 + j) for j in range(1, 6)),
)  # fmt: skip


def _multiples(lower: float, upper: float, numerator: int, denominator: int) -> F64:
    """The multiples ``k · numerator / denominator`` within ``[lower, upper]``.

    Each is the float nearest that rational (``k · numerator`` and ``denominator`` are
    exact integers).
    """
    step = numerator / denominator
    first, last = math.ceil(lower / step), math.floor(upper / step)
    if last < first:
        return np.empty(0, dtype=np.float64)
    k = np.arange(first, last + 1, dtype=np.int64)
    if denominator == 1:
        values = (k * numerator).astype(np.float64)  # exact integers: no float step
    else:
        values = (k * numerator).astype(np.float64) / denominator  # correctly rounded
    return values[(values >= lower) & (values <= upper)]


def _finest(lower: float, upper: float, steps: list[tuple[int, int]], budget: int) -> F64:
    """The multiples of the finest step in ``steps`` (coarse to fine) within the bounds.

    At most about ``budget`` of them: none if even the coarsest step has more.
    """
    chosen = np.empty(0, dtype=np.float64)
    for numerator, denominator in steps:
        step = numerator / denominator
        if (upper - lower) / step > budget + 1:
            break
        chosen = _multiples(lower, upper, numerator, denominator)
    return chosen


def round_values(lower: float, upper: float, cells: int, rounding: Rounding) -> F64:
    """The round values within ``[lower, upper]`` a quantile also takes as candidates.

    Numbers: the multiples of the finest power of ten with at most ``2 cells`` of them
    within the bounds, and of the finest power of two likewise (on ``(0, 100)`` with 4,096
    cells: every 0.1 and every 1/64, so whole numbers, tenths, halves and quarters). Times
    (nanoseconds): the multiples of the finest of ``TIME_STEPS`` with at most ``4 cells``
    (a year's bounds: every hour; two hours': every second). None when a bound's
    magnitude reaches 2**53 (2**62 ns for times). Public inputs only.
    """
    span = max(abs(lower), abs(upper), upper - lower)
    limit = 2.0**62 if rounding == "time" else 2.0**53  # int64 steps; exact float integers
    if rounding == "grid" or not upper > lower or not span < limit:
        return np.empty(0, dtype=np.float64)
    if rounding == "time":
        steps = [(step, 1) for step in reversed(TIME_STEPS)]
        return _finest(lower, upper, steps, 4 * cells)
    top = math.frexp(span)[1]  # 2**top > span
    decimal = [(10**j, 1) if j >= 0 else (1, 10**-j) for j in range(len(str(int(span))), -19, -1)]
    dyadic = [(2**j, 1) if j >= 0 else (1, 2**-j) for j in range(top, -61, -1)]
    return np.concatenate(
        [_finest(lower, upper, decimal, 2 * cells), _finest(lower, upper, dyadic, 2 * cells)]
    )


@functools.lru_cache(maxsize=64)
def _candidates(lower: float, upper: float, cells: int, rounding: Rounding) -> F64:
    if rounding == "magnitude":
        values = lattice()
        if (lower, upper) != (values[0], values[-1]):
            raise ValueError("the magnitude lattice spans exactly [-2**64, 2**64]")
        values.setflags(write=False)
        return values
    edges = grid_edges(lower, upper, cells)
    if rounding == "grid":
        values = edges
    else:
        values = np.unique(np.concatenate([edges, round_values(lower, upper, cells, rounding)]))
    values.setflags(write=False)
    return values


def quantile_candidates(lower: float, upper: float, cells: int, rounding: Rounding) -> F64:
    """A quantile's candidates, sorted, each value once; the first ``lower``, the last ``upper``.

    The grid's edges, plus the round values (:func:`round_values`) unless ``rounding`` is
    ``"grid"``.

    ``"grid"`` keeps the edges exactly as :func:`grid_edges` gives them (an integer column's
    grid of the integers). Read-only (cached).
    """
    return _candidates(float(lower), float(upper), int(cells), rounding)
