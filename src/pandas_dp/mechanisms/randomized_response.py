"""Randomized response: local differential privacy, one value at a time.

Warner (1965) for two categories and its k-ary generalisation (Kairouz, Bonawitz & Ramage
2016; Wang et al. 2017, "generalized randomized response"): each value is kept with
probability ``p = e^ε / (e^ε + k - 1)`` and otherwise replaced by one of the ``k - 1`` other
categories, uniformly. The output of every single row is ε-DP with respect to that row.

Exact sampling: propose a category uniformly; accept the true one always and any other with
probability ``exp(-ε)`` (exact Bernoulli for rational ε). The accepted category is the true
one with probability ``1 / (1 + (k-1) e^-ε) = p``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from pandas_dp.mechanisms.random import I64, RandomSource, uniform_below
from pandas_dp.mechanisms.samplers import bernoulli_exp_neg


def keep_probability(epsilon: float, categories: int) -> float:
    """``p = e^ε / (e^ε + k - 1)``, the chance a value is reported truthfully."""
    return 1.0 / (1.0 + (categories - 1) * math.exp(-epsilon))


def randomize(source: RandomSource, codes: I64, categories: int, epsilon: Fraction) -> I64:
    """Randomized response on category codes ``0 .. k-1`` (exact, vectorised)."""
    if categories < 2:
        raise ValueError("randomized response needs at least two categories")
    out = np.empty(codes.size, dtype=np.int64)
    pending = np.arange(codes.size)
    while pending.size:
        proposal = uniform_below(source, categories, pending.size)
        other = proposal != codes[pending]
        gamma = np.full(int(other.sum()), epsilon.numerator, dtype=np.int64)
        accept = np.ones(pending.size, dtype=np.bool_)
        accept[other] = bernoulli_exp_neg(source, gamma, epsilon.denominator)
        out[pending[accept]] = proposal[accept]
        pending = pending[~accept]
    return out


def estimate_frequencies(
    counts: npt.ArrayLike, epsilon: float, beta: float = 0.05
) -> tuple[npt.NDArray[np.float64], float]:
    """Unbiased frequency estimates from randomized counts, and Hoeffding's error bound.

    With ``q = (1 - p)/(k - 1)``, the observed share ``f_c`` has mean ``q + (p - q) π_c``, so
    ``π̂_c = (f_c - q) / (p - q)`` is unbiased. By Hoeffding's inequality ``f_c`` is within
    ``sqrt(ln(2/β) / (2n))`` of its mean with probability ``1 - β``; dividing by ``p - q``
    gives the half-width returned (for one category; use ``β/k`` for all at once).
    :func:`frequency_intervals` gives exact intervals, about 30% narrower.
    """
    observed = np.asarray(counts, dtype=np.float64)
    n = observed.sum()
    k = observed.size
    p = keep_probability(epsilon, k)
    q = (1.0 - p) / (k - 1)
    estimates = (observed / max(n, 1.0) - q) / (p - q)
    halfwidth = math.sqrt(math.log(2.0 / beta) / (2.0 * max(n, 1.0))) / (p - q)
    return np.asarray(estimates, dtype=np.float64), halfwidth


#: Added to every computed tail before it is compared with β/2: it covers float error and
#: the pmf mass left out beyond 40 standard deviations, so a category count is dropped from
#: an interval only if its exact tail is below β/2 (intervals can only widen).
_SLACK = 1e-9


def _tails(inside: int, n: int, x: int, p: float, q: float) -> tuple[float, float]:
    """``P(X <= x)`` and ``P(X >= x)`` for ``X = Bin(inside, p) + Bin(n - inside, q)``."""
    from scipy import stats  # lazy: scipy is not loaded by ``import pandas_dp``

    spread = 40.0 * math.sqrt(inside * p * (1 - p)) + 2
    low = max(0, math.floor(inside * p - spread))
    high = min(inside, x, math.ceil(inside * p + spread))
    j = np.arange(low, max(high, low - 1) + 1)
    below = float(np.sum(stats.binom.pmf(j, inside, p) * stats.binom.cdf(x - j, n - inside, q)))
    high = min(inside, math.ceil(inside * p + spread))
    j = np.arange(low, high + 1)
    above = float(np.sum(stats.binom.pmf(j, inside, p) * stats.binom.sf(x - j - 1, n - inside, q)))
    return below, above


def _first(test: object, n: int) -> int:
    """The smallest ``m`` in ``0..n`` with ``test(m)`` (true at ``n``), by bisection."""
    assert callable(test)
    lo, hi = -1, n
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if test(mid):
            hi = mid
        else:
            lo = mid
    return hi


def frequency_intervals(
    counts: npt.ArrayLike, epsilon: float, beta: float = 0.05
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Unbiased frequencies and exact ``1 - β`` intervals, per category, from randomized counts.

    Returns the estimates ``π̂_c`` of :func:`estimate_frequencies` and, per category, the
    lower and upper ends of an interval for ``π_c`` in ``[0, 1]``.

    Notes
    -----
    With ``n`` answers of which ``m_c = n π_c`` are truly ``c``, the count of answers ``c``
    is exactly ``X_c = Bin(m_c, p) + Bin(n - m_c, q)`` (each row answers independently:
    ``c`` with probability ``p`` if it is ``c``, else ``q``), stochastically increasing in
    ``m_c`` since ``p > q``. The interval is the exact test inversion (Neyman construction,
    the Clopper–Pearson construction for this law): every ``m`` with ``P_m(X_c >= x_c) > β/2``
    and ``P_m(X_c <= x_c) > β/2``, divided by ``n``. For the true ``m_c`` each of the two
    events has probability at most ``β/2``, so the interval covers ``π_c`` with probability
    at least ``1 - β``, for every data set (not asymptotically); tails are computed with a
    margin that can only widen it. Coverage is per category, like Hoeffding's bound (``β/k``
    for all at once). The answers are already private (local DP), so this is post-processing.
    An empty set (``x_c`` beyond every ``m``'s β/2 tail) becomes the nearest end, 0 or 1.
    """
    observed = np.asarray(counts, dtype=np.int64)
    k = observed.size
    n = int(observed.sum())
    estimates, _ = estimate_frequencies(observed, epsilon, beta)
    lower = np.zeros(k)
    upper = np.ones(k)
    if n == 0:
        return estimates, lower, upper
    p = keep_probability(epsilon, k)
    q = (1.0 - p) / (k - 1)
    half = beta / 2 * (1 - _SLACK)
    for c, x in enumerate(observed.tolist()):
        low = _first(lambda m, x=x: _tails(m, n, x, p, q)[1] > half, n)
        high = _first(lambda m, x=x: _tails(m, n, x, p, q)[0] <= half, n + 1) - 1
        if high < low:  # empty: the observed count is beyond every m's tail
            low = high = n if _tails(n, n, x, p, q)[1] <= half else 0
        lower[c], upper[c] = low / n, high / n
    return estimates, lower, upper
