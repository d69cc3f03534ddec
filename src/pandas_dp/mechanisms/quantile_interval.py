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

Coverage does not depend on the data's shape (ties, atoms, empty cells): with probability
``1 - β`` no noise exceeds its margin (``m_T`` for the threshold at ``β/2``; ``m_q`` for all
``K + 1`` query noises together at ``β/2``), and then every edge scanned before the stop has
``a_k < T + m_T + m_q``. With ``T = -(m_T + m_q) - qd``, the lower end has fewer than
``q n - 1 <= (n - 1) q`` values below it, so it lies at or below the sample quantile
(linear interpolation, as ``Series.quantile``); the upper end likewise at or above it. Both
ends together cover with probability at least ``1 - 2β``.
"""

from __future__ import annotations

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
    threshold_noise: DiscreteLaplace,
    query_noise: DiscreteLaplace,
    edges: int,
    beta: float,
    q: Fraction,
) -> int:
    """``T = -(m_T + m_q) - qd``: the margin that makes the end hold with probability ``1 - β``."""
    margin_t = threshold_noise.quantile_halfwidth(beta / 2)
    margin_q = query_noise.quantile_halfwidth(beta / (2 * edges))
    return -(margin_t + margin_q) - q.denominator


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
