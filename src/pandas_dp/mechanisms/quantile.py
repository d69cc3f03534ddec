"""Quantiles by the exponential mechanism's weights, and variances from noisy moments.

Quantiles (Smith 2011, "Privacy-preserving statistical estimation with optimal convergence
rates"): the candidates are public values ``c_k`` on ``[L, U]``: the ``K + 1`` edges of a
grid of ``K`` equal cells, and, unless the column is an integer one with integer bounds at
most ``K`` apart (then the integers from ``L`` to ``U`` alone), the "round" values within
the bounds (see :func:`pandas_dp.measures.grids.quantile_candidates`: multiples of a power of
ten and of a power of two for numbers, of a second, minute, hour or day for times), so that
the values data usually take (whole hours, prices in cents, halves and quarters) are
candidates. The set is chosen from public inputs only: the bounds, ``K`` and the dtype.
Each candidate owns the interval of ranks ``[a_k, b_k] = [#{x < c_k}, #{x <= c_k}]`` (the
positions a value equal to ``c_k`` could take in the sorted data) and scores::

    s_k = max(a_k - q n, q n - b_k)

(lower is better): ``max(#below - q n, #above - (1 - q) n)``, as ``#above = n - b_k``. Outside
the interval it is the distance from ``q n`` to the interval; inside it is minus the
distance to the interval's nearer end. So a tie block holding rank ``q n`` makes its value
the best candidate, by the depth of ``q n`` inside the block, and the candidates around it
(whose intervals end where the block begins or ends) score at least 0: a block is not
split over its neighbours, and a constant column's median is that constant. (With the score
clamped at 0, as before issue 38, the block and the candidates next to it scored almost
alike; OpenDP's ``|(1 - q) a_k - q (n - b_k)|`` measures from a point inside the block, so a
large block with ``q n`` near its end loses to its neighbour.)

Sensitivity. Adding one value ``x`` moves ``n`` by 1 and ``q n`` by ``q``; below ``c_k`` it
raises ``a_k`` and ``b_k`` by 1 (``a_k - q n`` and ``q n - b_k`` move by ``±(1 - q)``), at
``c_k`` only ``b_k`` (they move by ``-q`` and ``-(1 - q)``), above it neither (``∓q``).
Each term of the maximum moves by at most ``Δ = max(q, 1 - q)``, so their maximum does too;
removing a value is the reverse. So ``Δ = max(q, 1 - q)`` (1/2 for the median; ``l1``
times that when one privacy unit may hold ``l1`` rows), as for ``|#{x < c_k} - q n|``
without ties, and as the scores are not monotone the weights are ``exp(-ε s / (2Δ))``. The
candidate set does not depend on the data, so the mechanism is ε-DP whatever it holds. A
value's chance grows with the number of candidates in its rank interval (Smith's mechanism
over the intervals between sorted data points, measured in candidates). Sampling is exact
(see :mod:`pandas_dp.mechanisms.exponential`): by permute-and-flip with these weights in a
pure-ε release (ε-DP at the same rate, McKenna & Sheldon 2020, and never a worse expected
score), by the exponential mechanism itself where its bounded-range price is used (ρ
sessions) or where a release's public groups × candidates exceed 2**23 (see
:func:`pandas_dp.planning.measurement.choices.quantile_part`).
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


def grid_cells(lower: float, upper: float, cells: int, integer: bool) -> int:
    """The number of cells of a quantile's grid on ``[lower, upper]``.

    ``upper - lower`` (the grid of the integers between the bounds) for an ``integer``
    column (a public fact: its dtype) with integer bounds at most ``cells`` apart: integer
    data then sits on the candidates, and no candidate lies between two integers, where no
    value can be. Otherwise the ``cells`` asked for.
    """
    width = upper - lower
    whole = float(lower).is_integer() and float(upper).is_integer()
    if integer and whole and 1 <= width <= cells:
        return int(width)
    return cells


def quantile_scores(
    edge_ranks: npt.NDArray[np.int64], q: Fraction
) -> tuple[npt.NDArray[np.int64], int]:
    """Integer score numerators over the common denominator ``qd`` (``q = qn / qd``).

    ``edge_ranks`` has one row per group and ``2 m`` columns: ``a_k = #{x < c_k}`` for the
    ``m`` candidates, then ``b_k = #{x <= c_k}`` (so ``n = b_{m-1}``, the last candidate
    being the upper bound). The scores are
    ``max(qd·a_k - qn·n, qn·n - qd·b_k)``, one column per candidate: ``qd`` times the
    distance from ``q n`` to the rank interval ``[a_k, b_k]``, or minus ``qd`` times its
    depth inside it (lower is better; sensitivity ``qd·max(q, 1 - q)``, see the module).
    """
    below, at_most = np.split(np.asarray(edge_ranks), 2, axis=1)
    totals = at_most[:, -1:]
    largest = int(totals.max(initial=0))
    if q.denominator * largest >= 1 << 62:  # exact Python integers where int64 could wrap
        below, at_most, totals = below.astype(object), at_most.astype(object), totals.astype(object)
    target = q.numerator * totals
    over = q.denominator * below - target  # > 0: too many values below the candidate
    under = target - q.denominator * at_most  # > 0: too few at or below it
    return np.maximum(over, under), q.denominator


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
