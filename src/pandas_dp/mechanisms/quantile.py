"""Quantiles by the exponential mechanism, and variances from noisy moments.

Quantiles (Smith 2011, "Privacy-preserving statistical estimation with optimal convergence
rates"): the candidates are the ``K + 1`` edges of a public grid of ``K`` equal cells on
``[L, U]``; candidate ``k`` scores ``|rank_k - q n|`` where ``rank_k`` counts the values
below edge ``k`` and ``n`` the values. Adding one value below edge ``k`` raises ``rank_k`` by
one and ``q n`` by ``q`` (the score moves by at most ``1 - q``); above it, only ``q n`` moves,
by ``q``. So the sensitivity is ``Δ = max(q, 1 - q)`` (1/2 for the median; ``l1`` times that
when one privacy unit may hold ``l1`` rows), and as the scores are not monotone the weights
are ``exp(-ε s / (2Δ))``. This is Smith's mechanism over the intervals between sorted data
points, measured in grid cells instead of lengths: a candidate's chance is proportional to
the number of grid edges in its interval. Sampling is exact (see
:mod:`pandas_dp.mechanisms.exponential`).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import numpy.typing as npt

#: Quantile levels are read as the closest fraction with a denominator up to this (so the
#: ``0.3333333333333333`` a user types is 1/3); the sensitivity is that of the level used.
MAX_LEVEL_DENOMINATOR = 10**9

#: Default number of grid cells for quantiles: the output lies on ``(U - L) / 4096`` steps.
DEFAULT_CELLS = 4096
MAX_CELLS = 1 << 16


def quantile_scores(
    cell_counts: npt.NDArray[np.int64], q: Fraction
) -> tuple[npt.NDArray[np.int64], int]:
    """Integer score numerators ``|qd·rank_k - qn·n|`` over the common denominator ``qd``.

    ``cell_counts`` has one row per group and one column per cell; the result has one more
    column (the grid's edges, from ``L`` to ``U``).
    """
    groups, cells = cell_counts.shape
    ranks = np.zeros((groups, cells + 1), dtype=np.int64)
    np.cumsum(cell_counts, axis=1, out=ranks[:, 1:])
    totals = ranks[:, -1:]
    largest = int(totals.max(initial=0))
    if q.denominator * largest >= 1 << 62:  # exact Python integers where int64 could wrap
        ranks, totals = ranks.astype(object), totals.astype(object)
    return np.abs(q.denominator * ranks - q.numerator * totals), q.denominator


def grid_value(
    index: npt.NDArray[np.int64], lower: float, upper: float, cells: int
) -> npt.NDArray[np.float64]:
    """The grid edge ``lower + index (upper - lower) / cells`` (exactly ``upper`` at the end)."""
    values = lower + index.astype(np.float64) * ((upper - lower) / cells)
    return np.asarray(np.where(index >= cells, upper, values), dtype=np.float64)


def rank_error(epsilon: float, candidates: int, alpha: float, sensitivity: float = 1.0) -> float:
    """Rank error exceeded with probability at most ``alpha`` (McSherry & Talwar 2007).

    The chosen candidate scores at most ``min score + 2Δ (ln K + ln(1/α)) / ε``, measured
    from the best grid edge (the grid's own resolution is not included). The error is in
    *ranks* (number of rows), not in the column's units.
    """
    return 2.0 * sensitivity * (math.log(candidates) + math.log(1.0 / alpha)) / epsilon


def square_units(lower: float, upper: float, centre: float, bits: int = 36) -> tuple[int, int]:
    """Lattice ``(exponent, units)`` for squared deviations from ``centre``.

    The step ``2**exponent`` is the smallest power of two keeping ``h**2`` (``h`` the largest
    deviation inside the bounds) within ``2**bits`` steps; ``units`` caps every row's value.
    """
    reach = max(abs(lower - centre), abs(upper - centre))
    target = reach * reach / 2**bits
    mantissa, exponent = math.frexp(target)
    exponent = exponent - 1 if mantissa == 0.5 else exponent
    units = math.ceil(math.ldexp(reach * reach, -exponent))
    return exponent, units


def variance_from(
    count: npt.ArrayLike, centred_sum: npt.ArrayLike, centred_squares: npt.ArrayLike,
    reach: float, ddof: int = 1,
) -> npt.NDArray[np.float64]:  # fmt: skip
    """Variance from noisy moments about a public centre, clamped to ``[0, reach**2]``.

    ``var = (S2 - S1²/N) / max(N - ddof, 1)`` with ``N`` clamped to at least 1: free
    post-processing of three noisy releases. ``reach`` is half the width of the bounds;
    ``reach**2`` bounds the population variance (``ddof=0``) of values in the bounds, and
    the clamp keeps sample variances (``ddof=1``, at most ``reach² n/(n-1)``) at that bound.
    """
    n = np.maximum(np.asarray(count, dtype=np.float64), 1.0)
    s1 = np.asarray(centred_sum, dtype=np.float64)
    s2 = np.asarray(centred_squares, dtype=np.float64)
    spread = (s2 - s1 * s1 / n) / np.maximum(n - ddof, 1.0)
    return np.asarray(np.clip(spread, 0.0, reach * reach), dtype=np.float64)
