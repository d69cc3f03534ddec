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
    """Unbiased frequency estimates from randomized counts, and their error bound.

    With ``q = (1 - p)/(k - 1)``, the observed share ``f_c`` has mean ``q + (p - q) π_c``, so
    ``π̂_c = (f_c - q) / (p - q)`` is unbiased. By Hoeffding's inequality ``f_c`` is within
    ``sqrt(ln(2/β) / (2n))`` of its mean with probability ``1 - β``; dividing by ``p - q``
    gives the half-width returned (for one category; use ``β/k`` for all at once).
    """
    observed = np.asarray(counts, dtype=np.float64)
    n = observed.sum()
    k = observed.size
    p = keep_probability(epsilon, k)
    q = (1.0 - p) / (k - 1)
    estimates = (observed / max(n, 1.0) - q) / (p - q)
    halfwidth = math.sqrt(math.log(2.0 / beta) / (2.0 * max(n, 1.0))) / (p - q)
    return np.asarray(estimates, dtype=np.float64), halfwidth
