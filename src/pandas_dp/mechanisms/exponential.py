"""The exponential mechanism over a finite public candidate set, sampled exactly.

McSherry & Talwar (2007): choose candidate ``k`` with probability proportional to
``exp(-ε s_k / (2Δ))`` for scores ``s_k`` (lower is better) of sensitivity ``Δ``; for
*monotone* scores (adding a row can only lower every score, or only raise every score, e.g.
counts) ``exp(-ε s_k / Δ)`` suffices (Dwork & Roth 2014, Thm. 3.10 remark).

Exact sampling by rejection (no floating point): a proposal shaped like the weights (an exact
geometric draw of the weight's whole part, then a candidate of that part), accepted by CKS20's
exact Bernoulli(exp(-γ)) trials for rational ``γ``; see :func:`sample_exponential`. Scores are
rationals ``numerators / denominator``; ``a`` is a rational. The sampler is vectorised over
groups (rows of the score matrix), each group drawing proposals in batches.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from pandas_dp.mechanisms.random import I64, RandomSource, uniform_words
from pandas_dp.mechanisms.samplers import (
    bernoulli_exp_neg_fraction,
    bernoulli_exp_neg_one,
    bernoulli_exp_neg_parts,
    geometric_exp_neg_one,
)

_BATCH = 16
_MAX_DRAWS = 1 << 22  # proposals per round, all groups together (memory)
#: Whole parts at or above this share one bucket (a geometric draw reaches it with
#: probability e^-(2**40); fewer with over 2**22 groups, to keep keys in int64).
_TAIL = 1 << 40


def sample_exponential(
    source: RandomSource, scores: npt.NDArray[np.int64], denominator: int, rate: Fraction
) -> I64:
    """For each row of ``scores``, draw an index ``k`` with ``P(k) ∝ exp(-rate s_k)``.

    Parameters
    ----------
    source : RandomSource
        Randomness.
    scores : ndarray of int64, shape (groups, candidates)
        Score numerators (lower is better); the score is ``scores / denominator``.
    denominator : int
        Common positive denominator of the scores.
    rate : Fraction
        ``a`` in ``exp(-a s)``: ``ε / (2Δ)``, or ``ε / Δ`` for monotone scores.

    Returns
    -------
    ndarray of int64, shape (groups,)

    Notes
    -----
    Rejection from a proposal shaped like the target. Write each candidate's weight as
    ``exp(-(w + f))`` with ``w`` the whole part of ``a (s - s_min)`` and ``f`` its fraction.
    A proposal draws a bucket ``j`` with probability ``(1 - e^-1) e^-j`` (an exact geometric
    draw; ``j >= 2**40`` is one tail bucket, of probability ``e^-(2**40)``), then a uniform slot
    ``r < W`` with ``W`` a power of two at least the group's largest bucket: the slot names a
    candidate of bucket ``j`` when ``r`` is below the bucket's size ``n_j`` (probability
    ``n_j / W``, each member alike). The candidate is accepted with probability ``e^-f``
    (times ``(1 - e^-1) e^-(w - 2**40)`` in the tail bucket), by CKS20's exact Bernoulli
    trials.
    So every candidate ``k`` is chosen in one round with probability
    ``(1 - e^-1) e^-(w_k + f_k) / W``: proportional to its weight, exactly. The expected
    number of proposals is ``W / ((1 - e^-1) Σ_k e^-(w_k + f_k))``, a few when weights are
    concentrated, where proposing candidates uniformly needs about ``K`` of them.
    """
    groups, candidates = scores.shape
    if candidates == 0:
        raise ValueError("the exponential mechanism needs at least one candidate")
    excess = scores - scores.min(axis=1, keepdims=True)  # >= 0, 0 at the best candidate
    if excess.dtype == object and int(excess.max(initial=0)) < 1 << 62:
        excess = excess.astype(np.int64)  # exact scores that fit: the fast path
    rate = coarser_rate(rate, denominator)
    den = rate.denominator * denominator
    whole, fraction = split_rate(excess.ravel(), rate.numerator, den)
    buckets = _Buckets.of(whole.reshape(groups, candidates))
    chosen = np.full(groups, -1, dtype=np.int64)
    pending = np.arange(groups)
    batch = _BATCH
    while pending.size:
        group = np.repeat(pending, batch)
        slot, flat = buckets.propose(source, group)
        accepted = np.zeros(group.size, dtype=np.bool_)
        named = np.flatnonzero(flat >= 0)
        keep = bernoulli_exp_neg_fraction(source, fraction[flat[named]], den)
        tail = np.flatnonzero(keep & (slot[named] == buckets.tail))
        if tail.size:  # (1 - e^-1) e^-(w - tail) more for the tail bucket
            beyond = whole[flat[named[tail]]] - buckets.tail
            extra = ~bernoulli_exp_neg_one(source, tail.size)
            extra &= bernoulli_exp_neg_parts(source, beyond, np.zeros_like(beyond), 1)
            keep[tail] = extra
        accepted[named[keep]] = True
        by_group = accepted.reshape(-1, batch)
        hit = by_group.any(axis=1)
        first = by_group.argmax(axis=1)
        rows = np.flatnonzero(hit)
        picks = flat.reshape(-1, batch)[rows, first[rows]]
        chosen[pending[rows]] = picks - pending[rows] * candidates
        pending = pending[~hit]
        # Groups still waiting get larger batches (fewer rounds). Each group takes the first
        # accepted proposal of an i.i.d. sequence, so the batch size never changes the law.
        batch = min(2 * batch, max(_BATCH, _MAX_DRAWS // max(pending.size, 1)))
    return chosen


@dataclass(frozen=True)
class _Buckets:
    """Candidates grouped by (group, whole part): the buckets' keys, sizes and members.

    A bucket's key is ``group * (tail + 1) + min(whole, tail)``, which fits int64 for any
    number of groups; only buckets that hold a candidate are stored (sorted), so there are
    at most as many as candidates.
    """

    keys: I64  # sorted keys of the non-empty buckets
    sizes: I64  # their sizes
    starts: I64  # where each bucket's members begin in ``order``
    order: I64  # flat candidate positions, sorted by key
    masks: I64  # per group: W - 1, W the smallest power of two >= its largest bucket
    tail: int  # whole parts at or above it share the last bucket

    @classmethod
    def of(cls, whole: I64) -> _Buckets:
        groups = whole.shape[0]
        tail = min(_TAIL, (1 << 62) // max(groups, 1) - 1)
        key = np.arange(groups, dtype=np.int64)[:, None] * (tail + 1) + np.minimum(whole, tail)
        order = np.argsort(key.ravel(), kind="stable")
        keys, sizes = np.unique(key.ravel()[order], return_counts=True)
        starts = np.cumsum(sizes) - sizes
        largest = np.zeros(groups, dtype=np.int64)
        np.maximum.at(largest, keys // (tail + 1), sizes)
        width = np.ones(groups, dtype=np.int64)
        while (short := width < largest).any():
            width[short] *= 2
        sizes, starts = sizes.astype(np.int64), starts.astype(np.int64)
        return cls(keys, sizes, starts, order, width - 1, tail)

    def propose(self, source: RandomSource, group: I64) -> tuple[I64, I64]:
        """Each proposal's bucket, and its candidate's flat position (-1: no candidate)."""
        slot = np.minimum(geometric_exp_neg_one(source, group.size), self.tail)
        r = uniform_words(source, 62, group.size) & self.masks[group]
        wanted = group * (self.tail + 1) + slot
        found = np.minimum(np.searchsorted(self.keys, wanted), self.keys.size - 1)
        size = np.where(self.keys[found] == wanted, self.sizes[found], 0)
        named = r < size
        flat = np.full(group.size, -1, dtype=np.int64)
        flat[named] = self.order[self.starts[found[named]] + r[named]]
        return slot, flat


def coarser_rate(rate: Fraction, denominator: int) -> Fraction:
    """``rate`` itself, or the largest rational below it that exact int64 sampling can use.

    The sampler works with ``rate.denominator * denominator < 2**62``. A finer rate (an ε
    or a quantile level with many digits) is rounded *down* to a multiple of ``1/D`` with
    ``D = (2**62 - 1) // denominator``: a smaller rate means less privacy loss, so the
    guarantee of ``rate`` still holds, and the change (below ``1/D``, some ``1e-12`` of a
    typical rate) is far below the noise. Public parameters only.
    """
    if rate.denominator * denominator < 1 << 62:
        return rate
    limit = max(((1 << 62) - 1) // denominator, 1)
    return Fraction(math.floor(rate * limit), limit)


#: Whole parts of γ are capped here to stay in int64: accepting needs that many successive
#: Bernoulli(exp(-1)) successes, probability exp(-2**62), which the cap does not change in
#: any way a computer could observe.
_WHOLE_CAP = 1 << 62


def split_rate(excess: I64, numerator: int, denominator: int) -> tuple[I64, I64]:
    """``excess * numerator / denominator`` as exact (whole, remainder numerator) int64 parts.

    Works for any sizes: when the products could overflow int64, exact Python integers are
    used, so whether sampling succeeds never depends on the scores (that is, on the data).
    """
    q, r = divmod(numerator, denominator)
    largest = int(excess.max(initial=0))
    if largest * max(q, r, 1) < _WHOLE_CAP:
        product = excess * r
        return excess * q + product // denominator, product % denominator
    exact = excess.astype(object)
    product = exact * r
    whole = np.minimum(exact * q + product // denominator, _WHOLE_CAP)
    return whole.astype(np.int64), (product % denominator).astype(np.int64)


@dataclass(frozen=True)
class ExponentialMechanism:
    """The exponential mechanism with a fixed ε, sensitivity and monotonicity.

    Attributes
    ----------
    epsilon : Fraction
        Its privacy cost (pure ε-DP).
    sensitivity : Fraction
        Largest change of any candidate's score between neighbouring datasets.
    monotone : bool
        Whether all scores move in the same direction (halves the noise).
    """

    epsilon: Fraction
    sensitivity: Fraction = Fraction(1)
    monotone: bool = False
    name = "exponential"

    @property
    def rate(self) -> Fraction:
        """``a`` in the weights ``exp(-a s)``."""
        return self.epsilon / (self.sensitivity * (1 if self.monotone else 2))

    def choose(self, scores: npt.NDArray[np.int64], denominator: int, source: RandomSource) -> I64:
        """Draw one candidate index per row of ``scores`` (see :func:`sample_exponential`)."""
        return sample_exponential(source, scores, denominator, self.rate)

    def probabilities(self, scores: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """Selection probabilities for real scores (for accuracy statements and tests)."""
        logits = -float(self.rate) * (scores - scores.min(axis=-1, keepdims=True))
        weights = np.exp(logits)
        return np.asarray(weights / weights.sum(axis=-1, keepdims=True), dtype=np.float64)
