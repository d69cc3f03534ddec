"""Exact, vectorised samplers for integer noise (Canonne, Kamath & Steinke 2020).

The algorithms are those of C. Canonne, G. Kamath and T. Steinke, "The Discrete Gaussian for
Differential Privacy" (NeurIPS 2020), arXiv:2004.00010: Algorithm 1 (Bernoulli(exp(-γ)) for
rational γ), Algorithm 2 (discrete Laplace with rational scale t/s) and Algorithm 3 (discrete
Gaussian, in :mod:`pandas_dp.mechanisms.gaussian.discrete`). Every random decision is an exact
comparison of uniform integers, so each sample has exactly the stated distribution; no
floating-point number is involved.

Vectorisation: each algorithm is a loop whose iterations are independent coin flips. We run
the loop for a whole array at once and, at every step, keep only the entries whose loop has
not yet ended. In Algorithm 1 every entry that is still running after ``k - 1`` steps needs
a Bernoulli(γ/k) trial, so one step serves them all with a single modulus ``k``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from pandas_dp.mechanisms.random import (
    I64,
    MAX_MODULUS,
    Bools,
    RandomSource,
    bernoulli_ratio,
    random_bits,
    uniform_below,
)

#: Largest numerator or denominator of a discrete Laplace scale ``t/s`` the sampler accepts.
#: With ``t <= 2**52`` the sum ``U + t*V`` stays inside int64 unless the geometric ``V``
#: exceeds 2**10, an event of probability exp(-1024) that we resample (see
#: :func:`discrete_laplace`).
MAX_SCALE_TERM = 1 << 52
_MAX_GEOMETRIC = 1 << 10


def coin_chain_ends(source: RandomSource, n: int, start: int = 2) -> I64:
    """Where ``n`` independent chains of Bernoulli(1/k) coins end: their first failed ``k``.

    Each chain flips coins for ``k = start, start + 1, ...`` and ends at the first failure.

    One uniform integer serves a whole run of coins. If ``X`` is uniform on ``[0, P)`` with
    ``P = start · (start + 1) ··· stop``, its mixed-radix digits (``X = d_start + start ·
    d_{start+1} + start (start+1) · d_{start+2} + ...``, ``0 <= d_k < k``) are independent and
    ``d_k`` is uniform on ``[0, k)`` (the map between ``[0, P)`` and the digit tuples is a
    bijection), so the events ``d_k = 0`` are independent Bernoulli(1/k) coins. The coins
    ``start .. k`` all succeed exactly when ``start ··· k`` divides ``X``, so the chain ends at
    the first ``k`` whose partial product does not divide ``X``. Chains whose coins up to
    ``stop`` all succeed continue with fresh randomness from ``stop + 1``.

    For ``start = 2`` (every call but those rare continuations) ``P = 7! = 5040``: ``X`` is
    drawn below ``13 · 5040 = 65520`` (one 16-bit word, almost never rejected) and reduced
    modulo 5040, which keeps it uniform; a table gives the end of each chain.
    """
    if start == 2:
        x = uniform_below(source, 13 * TABLE_SPAN, n) % TABLE_SPAN
        ends, stop = CHAIN_END[x].astype(np.int64), 7
    else:
        stop, product = start, start
        while product * (stop + 1) <= MAX_MODULUS:
            stop += 1
            product *= stop
        x = uniform_below(source, product, n)
        ends = np.full(n, stop + 1, dtype=np.int64)
        product = 1
        for k in range(start, stop + 1):
            product *= k
            ends[(ends == stop + 1) & (x % product != 0)] = k
    more = (ends > stop).nonzero()[0]
    if more.size:
        ends[more] = coin_chain_ends(source, more.size, stop + 1)
    return ends


def _chain_end_table() -> npt.NDArray[np.int8]:
    """``CHAIN_END[r]``: the first ``k`` in ``2..7`` with ``k!`` not dividing ``r``, else 8.

    Bytes, so that the table (5 KB) stays in the processor's fastest cache.
    """
    r = np.arange(TABLE_SPAN, dtype=np.int64)
    ends = np.full(TABLE_SPAN, 8, dtype=np.int8)
    for k in range(7, 1, -1):
        ends[r % math.factorial(k) != 0] = k
    return ends


TABLE_SPAN = 5040  # 7!
CHAIN_END = _chain_end_table()


def first_failures(
    source: RandomSource, numerators: I64, denominator: int | I64, lengths: I64
) -> I64:
    """Position of the first failure among ``lengths[i]`` coins, or ``lengths[i]`` if none.

    Entry ``i`` flips ``lengths[i]`` Bernoulli(``numerators[i] / denominator``) coins (the
    denominator may be one per entry).

    All coins are drawn in one batch (independent exact uniform comparisons), laid out
    entry after entry; a coin drawn after an entry's first failure is never read.
    """
    out = lengths.copy()
    total = int(lengths.sum())
    if total == 0:
        return out
    starts = np.cumsum(lengths) - lengths
    owner = np.repeat(np.arange(lengths.size), lengths)
    per_coin = denominator[owner] if isinstance(denominator, np.ndarray) else denominator
    coins = bernoulli_ratio(source, numerators[owner], per_coin)
    failed = (~coins).nonzero()[0]
    who = owner[failed]
    np.minimum.at(out, who, failed - starts[who])  # each entry's earliest failed coin
    return out


def bernoulli_exp_neg_fraction(
    source: RandomSource, numerators: I64, denominator: int | I64
) -> Bools:
    """Exact Bernoulli(exp(-γ)) trials with ``γ = numerators / denominator`` in ``[0, 1]``.

    CKS20 Algorithm 1: set ``K = 1``; repeat ``A ~ Bernoulli(γ / K)``, and while ``A = 1``
    increase ``K``; return 1 when the final ``K`` is odd. Then
    ``P(return 1) = sum_k odd P(K = k) = exp(-γ)``. A Bernoulli(γ/K) trial is realised as the
    product of independent Bernoulli(1/K) and Bernoulli(num/den) coins, both exact.

    The coins are drawn in a different order, which does not change the law of ``K``: it is
    the first ``k`` at which either coin fails. Round 1 has only the Bernoulli(γ) coin
    (Bernoulli(1/1) always succeeds). For the entries still running, all their Bernoulli(1/k)
    coins are drawn first (:func:`coin_chain_ends`: the first failure is at ``E``); ``K`` is
    then ``E`` unless one of the Bernoulli(γ) coins of rounds ``2 .. E - 1`` fails earlier
    (:func:`first_failures`). All coins are independent, so this is the same ``K``.
    """
    coin = bernoulli_ratio(source, numerators, denominator)
    result = ~coin  # stopping at K = 1 (odd) returns 1
    active = coin.nonzero()[0]
    if active.size:
        lengths = coin_chain_ends(source, active.size) - 2
        den = denominator[active] if isinstance(denominator, np.ndarray) else denominator
        k = 2 + first_failures(source, numerators[active], den, lengths)
        result[active] = k % 2 == 1
    return result


def bernoulli_exp_neg_one(source: RandomSource, n: int) -> Bools:
    """Exact Bernoulli(exp(-1)) trials (CKS20 Algorithm 1 with γ = 1).

    With γ = 1 the first trial, Bernoulli(1/1), always succeeds, and ``K`` is the first
    ``k >= 2`` whose Bernoulli(1/k) coin fails (:func:`coin_chain_ends`).
    """
    return coin_chain_ends(source, n) % 2 == 1


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
    trial all succeed (``0 <= numerators < denominator``). The first ``whole`` trials of an
    i.i.d. Bernoulli(exp(-1)) sequence all succeed exactly when the number of successes
    before its first failure, a :func:`geometric_exp_neg_one` variate, is at least ``whole``.
    """
    result = bernoulli_exp_neg_fraction(source, numerators, denominator)
    active = np.flatnonzero(result & (whole > 0))
    if active.size:
        result[active] = geometric_exp_neg_one(source, active.size) >= whole[active]
    return result


def geometric_exp_neg_one(source: RandomSource, n: int) -> I64:
    """Number of Bernoulli(exp(-1)) successes before the first failure, ``n`` times.

    ``P(V = v) = (1 - e^-1) e^-v`` for ``v = 0, 1, ...``. One i.i.d. sequence of
    Bernoulli(exp(-1)) trials is read in batches (each about the expected length, ``1.58 n``);
    its runs of successes between consecutive failures are independent variates, and the
    first ``n`` runs are returned. A run that reaches the end of a batch continues into the
    next (batches are fresh trials, so the concatenation is one i.i.d. sequence).
    """
    parts: list[I64] = [np.zeros(0, dtype=np.int64)]
    need, carry = n, 0
    while need:
        trials = bernoulli_exp_neg_one(source, need + need * 5 // 8 + 16)
        failed = (~trials).nonzero()[0]
        if failed.size:
            runs = failed.copy()  # successes before each failure since the previous one
            runs[1:] -= failed[:-1] + 1
            runs[0] += carry
            parts.append(runs[:need])
            need -= parts[-1].size
            carry = trials.size - 1 - int(failed[-1])
        else:
            carry += trials.size
    return parts[-1] if len(parts) == 2 else np.concatenate(parts)


def check_positive_fraction(value: object, name: str) -> None:
    """Refuse a noise parameter (a scale, a variance) that is not a positive Fraction.

    The samplers need its exact numerator and denominator: a float would already be rounded.

    Raises
    ------
    ValueError
        Unless ``value`` is a :class:`~fractions.Fraction` above 0.
    """
    if not isinstance(value, Fraction) or value <= 0:
        raise ValueError(f"{name} must be a positive Fraction, got {value!r}")


def check_scale_terms(t: int, s: int) -> None:
    """Refuse a discrete Laplace scale ``t / s`` whose terms the samplers cannot take.

    Raises
    ------
    ValueError
        Unless ``t`` and ``s`` both lie in ``[1, MAX_SCALE_TERM]``.
    """
    if not (1 <= t <= MAX_SCALE_TERM and 1 <= s <= MAX_SCALE_TERM):
        raise ValueError(f"scale terms must lie in [1, 2**52], got t={t}, s={s}")


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
    return discrete_laplace_many(source, [(t, s, n)])[0]


def discrete_laplace_many(
    source: RandomSource, requests: Sequence[tuple[int, int, int]]
) -> list[I64]:
    """For each ``(t, s, n)``: ``n`` exact discrete Laplace variates of scale ``t / s``.

    :func:`discrete_laplace` for several scales at once: one pass of the algorithm over the
    candidates of every request, each candidate with its own ``t`` and ``s`` (a release's
    measurements then share the cost of each vectorised step). Candidates are independent,
    and each request keeps the first of its own accepted ones, in order: the same law as
    :func:`discrete_laplace` for each request, independently.
    """
    for t, s, _ in requests:
        check_scale_terms(t, s)
    outs = [np.empty(n, dtype=np.int64) for _, _, n in requests]
    filled = [0] * len(requests)
    wants = [out.size for out in outs]
    while any(wants):
        # About 63% of candidates survive; draw enough that one pass usually suffices.
        sizes = [w + w // 2 + 64 if w else 0 for w in wants]
        tc = _per_candidate([r[0] for r in requests], sizes)
        sc = _per_candidate([r[1] for r in requests], sizes)
        drawn = [uniform_below(source, r[0], k) for r, k in zip(requests, sizes, strict=True)]
        u = drawn[0] if len(drawn) == 1 else np.concatenate(drawn)
        kept = bernoulli_exp_neg_fraction(source, u, tc).nonzero()[0]
        v = geometric_exp_neg_one(source, kept.size)
        if v.max(initial=0) > _MAX_GEOMETRIC:
            kept, v = kept[v <= _MAX_GEOMETRIC], v[v <= _MAX_GEOMETRIC]
        y = (u[kept] + _at(tc, kept) * v) // _at(sc, kept)
        negative = random_bits(source, y.size)
        ok = ~(negative & (y == 0))
        z = np.where(negative, -y, y)[ok]
        owner = None if len(requests) == 1 else np.repeat(np.arange(len(requests)), sizes)
        for i, want in enumerate(wants):
            mine = (z if owner is None else z[owner[kept[ok]] == i])[:want]
            outs[i][filled[i] : filled[i] + mine.size] = mine
            filled[i] += mine.size
            wants[i] -= mine.size
    return outs


def _per_candidate(values: list[int], sizes: list[int]) -> int | I64:
    """Each candidate's term: one int when every request has the same (the common case)."""
    if len(set(values)) == 1:
        return values[0]
    return np.repeat(np.array(values, dtype=np.int64), sizes)


def _at(values: int | I64, positions: I64) -> int | I64:
    return values[positions] if isinstance(values, np.ndarray) else values
