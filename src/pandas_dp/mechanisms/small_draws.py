"""Exact discrete Laplace variates one at a time, for releases of a few values (issue 28).

:func:`pandas_dp.mechanisms.samplers.discrete_laplace` is built for large batches: each call
costs a few dozen numpy operations whatever its size, and a batch of
:data:`~pandas_dp.mechanisms.laplace.MIN_BATCH` variates reads several kilobytes of
entropy. A mean or a count releases one or two values, and that fixed cost was most of
their time. :func:`discrete_laplace_small` draws each variate with Python integers instead:
the same algorithm (CKS20 Algorithm 2, with Algorithm 1 for the acceptance step), hence
exactly the same law, from the same :class:`~pandas_dp.mechanisms.random.RandomSource`.

The time a draw takes says little about the value it returns, which is what drawing whole
batches achieves for the vectorised sampler:

* the candidates rejected before the one returned (by Algorithm 1, by the ``-0`` rule or
  by the overflow guard) are independent of it: rejection sampling;
* each candidate flips :data:`ACCEPT_COINS` of Algorithm 1's coins whatever its ``U``
  (more only when they all succeed, probability at most ``1 / 8!``), and an accepted one
  reads :data:`GEOMETRIC_TRIALS` Bernoulli(exp(-1)) trials for its ``V`` whatever ``V`` is
  (more only when they all succeed, probability ``exp(-32)``): coins drawn after the first
  failure are never read, so flipping them changes no probability.

Left: a trial whose chain of coins runs past 7 (probability ``1 / 7!`` per trial, so about
one draw in 150) continues with fresh coins, a little more work whose chance barely
depends on ``V``.
"""

from __future__ import annotations

import numpy as np

from pandas_dp.mechanisms.random import I64, RandomSource
from pandas_dp.mechanisms.samplers import (
    CHAIN_END,
    TABLE_SPAN,
    check_scale_terms,
    coin_chain_ends,
)

#: Coins of CKS20 Algorithm 1 flipped per candidate, whether or not an earlier one failed.
ACCEPT_COINS = 8
#: Bernoulli(exp(-1)) trials read per geometric ``V``, whether or not an earlier one failed.
GEOMETRIC_TRIALS = 32
#: Bytes read from the source at a time (a candidate reads about 40).
CHUNK_BYTES = 128
#: ``V`` above this is redrawn, as in the vectorised sampler (so that both have one law).
MAX_GEOMETRIC = 1 << 10


class _Bits:
    """Uniform random bits cut from a source's bytes, each used once; leftovers are dropped."""

    __slots__ = ("_have", "_pool", "_source")

    def __init__(self, source: RandomSource) -> None:
        self._source = source
        self._pool = 0
        self._have = 0

    def take(self, k: int) -> int:
        """A uniform ``k``-bit integer."""
        while self._have < k:
            chunk = int.from_bytes(self._source.randbytes(CHUNK_BYTES).tobytes(), "little")
            self._pool |= chunk << self._have
            self._have += 8 * CHUNK_BYTES
        word = self._pool & ((1 << k) - 1)
        self._pool >>= k
        self._have -= k
        return word

    def below(self, modulus: int) -> int:
        """A uniform integer in ``[0, modulus)``: the first ``k``-bit word below it.

        The number of words rejected is independent of the one returned.
        """
        k = (modulus - 1).bit_length()
        while True:
            word = self.take(k)
            if word < modulus:
                return word


def discrete_laplace_small(source: RandomSource, t: int, s: int, n: int) -> I64:
    """Draw ``n`` exact discrete Laplace variates of scale ``t / s``, one at a time.

    Parameters
    ----------
    source, t, s
        As for :func:`pandas_dp.mechanisms.samplers.discrete_laplace`.
    n : int
        How many variates to draw (meant for a few; large ``n`` is faster vectorised).

    Returns
    -------
    numpy.ndarray of int64
        The law of :func:`pandas_dp.mechanisms.samplers.discrete_laplace`, exactly.
    """
    check_scale_terms(t, s)
    bits = _Bits(source)
    return np.array([_one(bits, source, t, s) for _ in range(n)], dtype=np.int64)


def _one(bits: _Bits, source: RandomSource, t: int, s: int) -> int:
    """One variate: CKS20 Algorithm 2, candidate after candidate until one is kept.

    ``U`` uniform below ``t`` is kept with probability ``exp(-U/t)``; ``X = U + t V`` with
    ``V`` geometric of ratio ``e^-1`` then has ``P(X = x) ∝ exp(-x/t)``, and
    ``Y = floor(X / s)`` has ``P(Y = y) ∝ exp(-y s/t)``; a fair sign makes it two-sided,
    rejecting ``-0`` so that zero is not counted twice.
    """
    while True:
        u = bits.below(t)
        if not _accepts(bits, u, t):
            continue
        v = _geometric(source)
        if v > MAX_GEOMETRIC:  # probability exp(-1024): kept for the same law as the batch
            continue
        y = (u + t * v) // s
        negative = bits.take(1)
        if negative and y == 0:
            continue
        return -y if negative else y


def _accepts(bits: _Bits, u: int, t: int) -> bool:
    """Bernoulli(exp(-u/t)) by CKS20 Algorithm 1, ``0 <= u < t``.

    ``K`` is the first ``k >= 1`` whose Bernoulli(``u / (t k)``) coin fails (a uniform
    integer below ``t k`` is not below ``u``); the trial succeeds when ``K`` is odd. The
    coins are flipped :data:`ACCEPT_COINS` at a time, so the work does not depend on ``K``.
    """
    first = 1
    while True:
        coins = [bits.below(t * k) < u for k in range(first, first + ACCEPT_COINS)]
        if False in coins:
            return (first + coins.index(False)) % 2 == 1
        first += ACCEPT_COINS


def _geometric(source: RandomSource) -> int:
    """Bernoulli(exp(-1)) successes before the first failure (``P(V = v) ∝ e^-v``).

    The trials are drawn :data:`GEOMETRIC_TRIALS` at a time, so the work does not depend
    on ``V``; trials after the first failure are never read.
    """
    done = 0
    while True:
        failures = np.flatnonzero(_exp_neg_one_trials(source) % 2 == 0)
        if failures.size:
            return done + int(failures[0])
        done += GEOMETRIC_TRIALS


def _exp_neg_one_trials(source: RandomSource) -> I64:
    """:data:`GEOMETRIC_TRIALS` chain ends of CKS20 Algorithm 1 with γ = 1 (odd: success).

    :func:`~pandas_dp.mechanisms.samplers.coin_chain_ends` in fewer numpy calls: a 16-bit
    word below ``13 · 7!`` taken modulo ``7!`` is uniform below ``7!``, whose mixed-radix
    digits are the coins ``2 .. 7`` (``CHAIN_END``). The rare words above (16 in 65536) are
    skipped, and so is the batch if too few are left; chains past 7 continue afresh.
    """
    words = source.randbytes(2 * _WORDS).view(np.uint16)
    kept = words[words < 13 * TABLE_SPAN][:GEOMETRIC_TRIALS]
    if kept.size < GEOMETRIC_TRIALS:  # probability below 1e-20
        return coin_chain_ends(source, GEOMETRIC_TRIALS)
    ends = CHAIN_END[kept % TABLE_SPAN].astype(np.int64)
    more = np.flatnonzero(ends > 7)
    if more.size:
        ends[more] = coin_chain_ends(source, more.size, 8)
    return ends


#: 16-bit words read for :data:`GEOMETRIC_TRIALS` chains (a few spare for the rejected).
_WORDS = GEOMETRIC_TRIALS + 8
