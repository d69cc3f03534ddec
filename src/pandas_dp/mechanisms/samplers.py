"""Exact, vectorised samplers for integer noise (Canonne, Kamath & Steinke 2020).

The algorithms are those of C. Canonne, G. Kamath and T. Steinke, "The Discrete Gaussian for
Differential Privacy" (NeurIPS 2020), arXiv:2004.00010: Algorithm 1 (Bernoulli(exp(-γ)) for
rational γ), Algorithm 2 (discrete Laplace with rational scale t/s) and Algorithm 3 (discrete
Gaussian, in :mod:`pandas_dp.mechanisms.gaussian`). Every random decision is an exact
comparison of uniform integers, so each sample has exactly the stated distribution; no
floating-point number is involved.

Vectorisation: each algorithm is a loop whose iterations are independent coin flips. We run
the loop for a whole array at once and, at every step, keep only the entries whose loop has
not yet ended. In Algorithm 1 every entry that is still running after ``k - 1`` steps needs
a Bernoulli(γ/k) trial, so one step serves them all with a single modulus ``k``.
"""

from __future__ import annotations

import numpy as np

from pandas_dp.mechanisms.random import (
    I64,
    Bools,
    RandomSource,
    bernoulli_one_over,
    random_bits,
    uniform_below,
)

#: Largest numerator or denominator of a discrete Laplace scale ``t/s`` the sampler accepts.
#: With ``t <= 2**52`` the sum ``U + t*V`` stays inside int64 unless the geometric ``V``
#: exceeds 2**10, an event of probability exp(-1024) that we resample (see
#: :func:`discrete_laplace`).
MAX_SCALE_TERM = 1 << 52
_MAX_GEOMETRIC = 1 << 10


def bernoulli_exp_neg_fraction(source: RandomSource, numerators: I64, denominator: int) -> Bools:
    """Exact Bernoulli(exp(-γ)) trials with ``γ = numerators / denominator`` in ``[0, 1]``.

    CKS20 Algorithm 1: set ``K = 1``; repeat ``A ~ Bernoulli(γ / K)``, and while ``A = 1``
    increase ``K``; return 1 when the final ``K`` is odd. Then
    ``P(return 1) = sum_k odd P(K = k) = exp(-γ)``. A Bernoulli(γ/K) trial is realised as the
    product of independent Bernoulli(1/K) and Bernoulli(num/den) trials, both exact.
    """
    # Round K = 1: Bernoulli(1/1) always succeeds, so only the Bernoulli(num/den) coin counts.
    coin = uniform_below(source, denominator, numerators.size) < numerators
    result = ~coin  # stopping at K = 1 (odd) returns 1
    active = np.flatnonzero(coin)
    k = 2
    while active.size:
        coin = bernoulli_one_over(source, k, active.size)
        hit = np.flatnonzero(coin)
        if hit.size:
            coin[hit] = uniform_below(source, denominator, hit.size) < numerators[active[hit]]
        result[active[~coin]] = k % 2 == 1
        active = active[coin]
        k += 1
    return result


def bernoulli_exp_neg_one(source: RandomSource, n: int) -> Bools:
    """Exact Bernoulli(exp(-1)) trials (CKS20 Algorithm 1 with γ = 1)."""
    result = np.empty(n, dtype=np.bool_)
    active = np.arange(n)
    k = 2  # with γ = 1 the first trial, Bernoulli(1/1), always succeeds
    while active.size:
        coin = bernoulli_one_over(source, k, active.size)
        result[active[~coin]] = k % 2 == 1
        active = active[coin]
        k += 1
    return result


def bernoulli_exp_neg(source: RandomSource, numerators: I64, denominator: int) -> Bools:
    """Exact Bernoulli(exp(-γ)) trials for any ``γ = numerators / denominator >= 0``."""
    whole = numerators // denominator
    return bernoulli_exp_neg_parts(source, whole, numerators - whole * denominator, denominator)


def bernoulli_exp_neg_parts(
    source: RandomSource, whole: I64, numerators: I64, denominator: int
) -> Bools:
    """Exact Bernoulli(exp(-γ)) trials for ``γ = whole + numerators / denominator``.

    CKS20 Algorithm 1 for ``γ > 1``: ``exp(-γ)`` is the probability that ``whole``
    independent Bernoulli(exp(-1)) trials and one Bernoulli(exp(-numerators/denominator))
    trial all succeed (``0 <= numerators < denominator``).
    """
    result = bernoulli_exp_neg_fraction(source, numerators, denominator)
    active = np.flatnonzero(result & (whole > 0))
    remaining = whole[active]
    while active.size:
        ok = bernoulli_exp_neg_one(source, active.size)
        result[active[~ok]] = False
        remaining = remaining[ok] - 1
        active = active[ok]
        more = remaining > 0
        active, remaining = active[more], remaining[more]
    return result


def geometric_exp_neg_one(source: RandomSource, n: int) -> I64:
    """Number of Bernoulli(exp(-1)) successes before the first failure, ``n`` times.

    ``P(V = v) = (1 - e^-1) e^-v`` for ``v = 0, 1, ...``.
    """
    counts = np.zeros(n, dtype=np.int64)
    active = np.arange(n)
    while active.size:
        ok = bernoulli_exp_neg_one(source, active.size)
        active = active[ok]
        counts[active] += 1
    return counts


def discrete_laplace(source: RandomSource, t: int, s: int, n: int) -> I64:
    """Draw ``n`` exact discrete Laplace variates with scale ``t / s``.

    ``P(Z = z) = (1 - q) / (1 + q) * q**|z|`` with ``q = exp(-s / t)``, for every integer
    ``z`` (the two-sided geometric distribution).

    Parameters
    ----------
    source : RandomSource
        Where the random words come from.
    t, s : int
        Numerator and denominator of the scale, each in ``[1, 2**52]``.
    n : int
        How many variates to draw.

    Returns
    -------
    numpy.ndarray of int64

    Notes
    -----
    CKS20 Algorithm 2. Draw ``U`` uniform on ``{0, ..., t-1}`` and keep it with probability
    ``exp(-U/t)``; draw ``V`` geometric with ratio ``e^-1``; then ``X = U + t V`` has
    ``P(X = x) ∝ exp(-x/t)`` on the non-negative integers, and ``Y = floor(X / s)`` has
    ``P(Y = y) ∝ exp(-y s / t)``. A fair sign ``B`` makes it two-sided, rejecting ``-0`` so
    that zero is not counted twice.

    ``V > 2**10`` would overflow int64 when ``t`` is near its maximum; such entries are
    redrawn. That event has probability ``exp(-1024)`` (below 10**-444), far below any
    distinguishable effect.
    """
    if not (1 <= t <= MAX_SCALE_TERM and 1 <= s <= MAX_SCALE_TERM):
        raise ValueError(f"scale terms must lie in [1, 2**52], got t={t}, s={s}")
    out = np.empty(n, dtype=np.int64)
    filled = 0
    while filled < n:
        # About 63% of candidates survive; draw enough that one pass usually suffices.
        # Candidates are independent, so keeping the first accepted ones is unbiased.
        want = n - filled
        u = uniform_below(source, t, want + want // 2 + 64)
        u = u[bernoulli_exp_neg_fraction(source, u, t)]
        v = geometric_exp_neg_one(source, u.size)
        fits = v <= _MAX_GEOMETRIC
        y = (u[fits] + t * v[fits]) // s
        negative = random_bits(source, y.size)
        ok = ~(negative & (y == 0))
        z = np.where(negative, -y, y)[ok][:want]
        out[filled : filled + z.size] = z
        filled += z.size
    return out
