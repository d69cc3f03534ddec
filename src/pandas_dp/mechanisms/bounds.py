"""Bounds from the data: a sparse-vector scan outwards from 0 over a public magnitude lattice.

A release of ``(lower, upper)`` that covers most of a column needs no bounds of its own: it
scans a lattice fixed before any data is read. The lattice holds 0 and ``±m·2**e`` for
``m`` in ``{1, 1.25, 1.5, 1.75}`` and ``e`` in ``-32 .. 63``, then ``±2**64`` (every point is
an exact float64 with three significant bits; neighbours differ by a factor of at most 1.25
above ``2**-32``). Values are clipped to ``±2**64`` (``±inf`` included) and compared with the
points exactly; missing values are not counted.

The upper bound at level ``q = qn/qd`` (say 0.999) scans the points ``c_0 = 0 < c_1 < ...``
upwards and asks at each whether ``a_j = qd·#{x <= c_j} - qn·n`` is at least the threshold
``T`` (whether ``c_j`` lies at or above the sample's ``q`` quantile, by a margin); the first
point whose noisy answer clears the noisy threshold, ``a_j + ν_j >= T + ρ``, is released.
The lower bound at level ``p`` (say 0.001) scans ``0 > -c_1 > ...`` downwards with
``b_j = qd·#{x >= -c_j} - (qd - qn)·n`` for ``p = qn/qd``. ``T`` is the query noise's scale
``4Δ/ε`` rounded (:func:`margin`): a scan stops at the first of many noisy answers that
clears the threshold, so without a margin it stops early, inside the aimed quantile, by
about the noise's size; for means and sums of heavy-tailed columns clipping too much costs
more than bounds a little too wide (measured in ``benchmarks/bench_bounds.py``). In ranks the
margin is ``4·max(q, 1 - q)/ε`` values: it vanishes as ε grows, and without noise at large ε
the release is the lattice point at or above the ``q`` quantile nearest to it (the upper
end of the lattice cell ``(c_{j-1}, c_j]`` that holds it) and, for the lower bound, the point
at or below the ``p`` quantile nearest to it.

Privacy. ``T`` depends on ε, ``q`` and the privacy unit's bound only. One row moves ``n``
by one and each count by at most one, so every ``a_j`` (and ``b_j``) by at most
``Δ = qd·max(q, 1 - q)``, an integer (``l1`` times that when a privacy unit holds up to
``l1`` rows). AboveThreshold (Dwork, Naor, Reingold, Rothblum & Vadhan 2009; Lyu, Su & Li,
VLDB 2017, Algorithm 1 with ``c = 1``) with threshold noise of scale ``2Δ/ε`` and query
noise of scale ``4Δ/ε`` is ε-DP whatever the number of points scanned and whatever the
public threshold; the noise is discrete Laplace (as for a quantile's interval ends,
:mod:`pandas_dp.mechanisms.quantile_interval`, whose noise this reuses). The lattice, the
threshold and the scan order are public, so only the noisy answers decide the point.

Why outwards from 0. Google's ApproxBounds (Wilson et al., PoPETs 2020) and an exponential
mechanism over the whole lattice both pay for the hundreds of empty points beyond the data:
the first needs a threshold growing with their logarithm, the second gives them most of its
probability when ``(1 - q) n ε`` is small (a bound near ``2**64``). Scanning from 0 reaches
the data before any empty point beyond it, and the scan stops at the first point past the
aimed quantile; points beyond the data are only reached when the noise (or the margin, when
fewer than about ``4/ε`` values lie past the aimed quantile) says so, and there each point
stops the scan with probability about 0.22 (``P(ν - ρ >= T)``), a factor of at most 1.25
at a time. When there is too little data for the budget, the bounds are too narrow (the
scan stopped by noise between 0 and the data) or a few lattice steps wide of it, not wild.
``bound_scores`` is ``>= 0`` exactly when ``c`` lies beyond the ``q`` quantile on its side;
the scan asks for ``>= T``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Literal

import numpy as np
import numpy.typing as npt

from pandas_dp.mechanisms.quantile_interval import first_crossing

I64 = npt.NDArray[np.int64]
Side = Literal[-1, 1]


def bound_scores(edge_ranks: I64, q: Fraction, side: Side) -> I64:
    """The scan's queries (one row per group, one column per point, in scan order).

    ``edge_ranks`` holds ``#{x < c}`` then ``#{x <= c}`` for every point ``c`` of
    :func:`~pandas_dp.measures.grids.lattice`. Upper bound (``side`` 1):
    ``qd·#{x <= c} - qn·n`` for ``c = 0, c_1, ...`` upwards; lower bound (-1):
    ``qd·#{x >= c} - (qd - qn)·n`` for ``c = 0, -c_1, ...`` downwards. Each is ``>= 0``
    exactly when ``c`` lies beyond the ``q`` quantile on its side. Python integers where
    int64 could wrap.
    """
    ranks = np.asarray(edge_ranks)
    below, at_most = np.split(ranks, 2, axis=1)
    totals = at_most[:, -1:]
    middle = below.shape[1] // 2  # the point 0
    if q.denominator * int(totals.max(initial=0)) >= 1 << 62:
        below, at_most, totals = below.astype(object), at_most.astype(object), totals.astype(object)
    if side == 1:
        return np.asarray(q.denominator * at_most[:, middle:] - q.numerator * totals)
    at_least = totals - below[:, middle::-1]
    return np.asarray(q.denominator * at_least - (q.denominator - q.numerator) * totals)


def margin(query_scale: Fraction) -> int:
    """The threshold ``T``: the query noise's scale, rounded to an integer (public)."""
    return round(query_scale)


def scan_index(scores: I64, threshold: int, rho: I64, nu: I64) -> I64:
    """Per group, the first point (scan order) with ``score + ν >= T + ρ``; the last if none."""
    stop = first_crossing(scores, threshold, rho, nu)
    return np.minimum(stop, scores.shape[1] - 1).astype(np.int64)
