"""Confidence intervals for quantiles: each end found by the sparse vector technique.

A quantile released by the exponential mechanism carries a rank error, not an interval in
the column's units. Its interval's ends are released separately, each by AboveThreshold
(Dwork, Naor, Reingold, Rothblum & Vadhan 2009; the ε-DP form of Lyu, Su & Li, "Understanding
the Sparse Vector Technique for Differential Privacy", VLDB 2017, Algorithm 1 with ``c = 1``).

The lower end scans the grid's edges upwards. Edge ``k`` asks whether
``a_k = qd·rank_k - qn·n`` (``q = qn/qd``; ``rank_k`` values lie below the edge) is at least
the threshold ``T``; the first edge ``c`` whose noisy answer clears the noisy threshold
stops the scan, and the lower end is the edge before it, ``c - 1``. One row moves every
``a_k`` by at most ``Δ = qd·max(q, 1 - q)`` (an integer), so with threshold noise of scale
``2Δ/ε`` and query noise of scale ``4Δ/ε`` (discrete Laplace: the proof's shifts are by the
integer Δ, which the discrete law's ratios respect) the scan is ε-DP, whatever the number
of edges. The upper end scans downwards with ``-a_k`` and takes the edge after the stop.

Coverage does not depend on the data's shape (ties, atoms, empty cells), and it needs the
noise of one edge only. The scores grow with ``k`` (ranks do), so let ``k°`` be the first
edge with ``a_k >= -qd``: a fact of the data, fixed before any noise is drawn. The scan
stops at or before ``k°`` unless edge ``k°`` does not fire, ``a_k° + ν_k° < T + ρ``, which
with ``T = -M - qd`` needs ``ν_k° - ρ < -M``. ``M`` is the smallest integer making that at
most ``β``, from the exact law of the difference of two independent discrete Laplace
variates (:func:`difference_tail`), so no union over the ``K + 1`` edges is paid (an earlier
version bounded every edge's noise at ``β/(2(K + 1))`` and the threshold's at ``β/2``,
margins 1.7 to 3.4 times wider). When the scan stops before ``k°``, every edge before the
stop has ``a_k < -qd``: the lower end has fewer than ``q n - 1 <= (n - 1) q`` values below
it, so it lies at or below the sample quantile (linear interpolation, as
``Series.quantile``); the upper end likewise at or above it. Both ends together cover with
probability at least ``1 - 2β``.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Literal

import numpy as np
import numpy.typing as npt

from pandas_dp.mechanisms.laplace import DiscreteLaplace

I64 = npt.NDArray[np.int64]
Side = Literal[-1, 1]


def scan_noise(epsilon: Fraction, q: Fraction) -> tuple[DiscreteLaplace, DiscreteLaplace, int]:
    """The threshold's and the queries' noise for an ε-DP scan at level ``q``, and ``Δ``."""
    sensitivity = q.denominator * max(q, 1 - q)
    assert sensitivity.denominator == 1
    delta = int(sensitivity)
    return (
        DiscreteLaplace(Fraction(2 * delta) / epsilon),
        DiscreteLaplace(Fraction(4 * delta) / epsilon),
        delta,
    )


def threshold_for(
    threshold_noise: DiscreteLaplace, query_noise: DiscreteLaplace, beta: float, q: Fraction
) -> int:
    """``T = -M - qd``, ``M`` the least integer with ``P(ν - ρ < -M) <= β`` (module notes)."""
    return -difference_margin(threshold_noise, query_noise, beta) - q.denominator


def difference_tail(first: DiscreteLaplace, second: DiscreteLaplace, m: int) -> float:
    """``P(X + Y >= m)`` for independent discrete Laplace ``X``, ``Y`` and an integer ``m >= 1``.

    Closed form of ``Σ_x P(X = x) P(Y >= m - x)`` with ``P(X = x) = c₁ r₁^|x|``,
    ``c = (1 - r)/(1 + r)``, ``r = exp(-1/b)`` (the scales the samplers really use), split
    at ``x >= m`` (``Y >= m - x`` but for its upper tail), ``0 <= x < m`` and ``x < 0``.
    ``X + Y`` is symmetric, so this is also ``P(X - Y >= m)``.
    """
    if m < 1:
        raise ValueError(f"m must be a positive integer, got {m}")
    a1, a2 = 1.0 / float(first.effective_scale), 1.0 / float(second.effective_scale)
    r1, r2 = math.exp(-a1), math.exp(-a2)
    c1 = -math.expm1(-a1) / (1.0 + r1)
    pair = -math.expm1(-(a1 + a2))  # 1 - r₁r₂, without cancellation at large scales
    at_or_above = r1**m * (1.0 / (1.0 + r1) - c1 * r2 / ((1.0 + r2) * pair))
    # Σ_{0<=x<m} r₁^x r₂^(m-x), a geometric sum; m·r^m when the ratios are equal as floats
    # (equal scales, or both so small that exp underflows to 0: the sum is then 0 too)
    between = m * r2**m if r1 == r2 else r2 * (r2**m - r1**m) / (r2 - r1)
    below = r2**m * r1 * r2 / pair
    return at_or_above + c1 / (1.0 + r2) * (between + below)


def difference_margin(first: DiscreteLaplace, second: DiscreteLaplace, beta: float) -> int:
    """The least integer ``M >= 0`` with ``P(X - Y >= M + 1) <= β`` (see :func:`difference_tail`).

    The float tail is compared with ``β`` less one part in 10⁹, which its rounding cannot
    exceed, so the margin is never too small.
    """
    if not 0.0 < beta < 1.0:
        raise ValueError(f"beta must lie in (0, 1), got {beta}")
    target = beta * (1.0 - 1e-9)
    if difference_tail(first, second, 1) <= target:
        return 0
    low, high = 0, 1  # tail(low + 1) > target throughout; find a high with tail(high + 1) <= it
    while difference_tail(first, second, high + 1) > target:
        low, high = high, 2 * high
    while high - low > 1:
        middle = (low + high) // 2
        if difference_tail(first, second, middle + 1) <= target:
            high = middle
        else:
            low = middle
    return high


def scan_scores(cell_counts: I64, q: Fraction, side: Side) -> I64:
    """``a_k = qd·rank_k - qn·n`` for the lower end; ``-a_k``, edges reversed, for the upper.

    Python integers where int64 could wrap (a ``q`` with a large denominator on many rows).
    """
    groups, cells = cell_counts.shape
    ranks = np.zeros((groups, cells + 1), dtype=np.int64)
    np.cumsum(cell_counts, axis=1, out=ranks[:, 1:])
    totals = ranks[:, -1:]
    if q.denominator * int(totals.max(initial=0)) >= 1 << 62:
        ranks, totals = ranks.astype(object), totals.astype(object)
    scores = q.denominator * ranks - q.numerator * totals
    return np.asarray(scores if side == -1 else -scores[:, ::-1])


def first_crossing(scores: I64, threshold: int, rho: I64, nu: I64) -> I64:
    """Per group, the first column with ``score + ν >= T + ρ``; the column count if none."""
    hits = scores + nu >= threshold + rho[:, None]
    first = np.argmax(hits, axis=1)
    return np.where(hits.any(axis=1), first, scores.shape[1]).astype(np.int64)


def end_index(stop: I64, edges: int, side: Side) -> I64:
    """The grid edge reported for a scan that stopped at ``stop`` (scan order).

    Lower end: the edge before the stop (edge 0 when the first edge stops; the last edge
    when none does). Upper end: the edge after the stop, counted from the top.
    """
    before = np.clip(stop - 1, 0, edges - 1)
    before = np.where(stop >= edges, edges - 1, before)
    return np.asarray(before if side == -1 else edges - 1 - before, dtype=np.int64)
