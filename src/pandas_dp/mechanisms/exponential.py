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

Permute-and-flip (McKenna & Sheldon 2020) uses the same weights as acceptance probabilities
of independent coins and outputs a uniform accepted candidate (:func:`sample_permute_and_flip`):
ε-DP at the same rate for non-monotone scores, and never a larger expected score than the
exponential mechanism. Quantiles use it in pure-ε sessions (see
:func:`pandas_dp.planning.measurement.choices.quantile_part`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from pandas_dp.mechanisms.random import I64, RandomSource, uniform_below_each, uniform_words
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
#: Coins per chunk of permute-and-flip (rows × candidates), to bound its memory.
_MAX_COINS = 1 << 22


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


def sample_permute_and_flip(
    source: RandomSource, scores: npt.NDArray[np.int64], denominator: int, rate: Fraction
) -> I64:
    """For each row of ``scores``, draw an index by permute-and-flip at ``rate``.

    Parameters
    ----------
    source : RandomSource
        Randomness.
    scores : ndarray of int64 (or exact Python ints), shape (groups, candidates)
        Score numerators (lower is better); the score is ``scores / denominator``.
    denominator : int
        Common positive denominator of the scores.
    rate : Fraction
        ``a`` in ``exp(-a (s - s_min))``: ``ε / (2Δ)`` for scores of sensitivity ``Δ``.

    Returns
    -------
    ndarray of int64, shape (groups,)

    Notes
    -----
    The law. Each candidate ``k`` of a row is accepted independently with probability
    ``p_k = exp(-a (s_k - s_min))`` (the best candidates with probability 1), forming the
    accepted set ``A``; the output is a uniform member of ``A``. So
    ``P(r) = E[1{r ∈ A} / |A|] = p_r ∫_0^1 Π_{k≠r} (1 - p_k u) du``.

    It is permute-and-flip (McKenna & Sheldon 2020, Algorithm 1): visit the candidates in a
    uniformly random order and stop at the first whose coin ``Bernoulli(p_k)`` succeeds (a
    best candidate always does). Drawing every coin first and the order afterwards changes
    nothing, since the order is independent of the coins; given the coins, the first
    accepted candidate in a uniform order is uniform over the accepted set ``A``. Hence the
    same law.

    Privacy. For non-monotone scores of sensitivity ``Δ`` and ``a = ε / (2Δ)`` (the rate of
    the exponential mechanism) it is ε-DP (McKenna & Sheldon 2020, Theorem 1), and its
    expected score is never worse than the exponential mechanism's at the same ε
    (Theorem 2). Monotone scores are not offered here.

    Exactness and cost. Every coin is CKS20's exact Bernoulli(exp(-γ)) trial for the rational
    ``γ = a (s_k - s_min)`` (:func:`bernoulli_exp_neg_parts`, with the rate rounded down by
    :func:`coarser_rate` as for :func:`sample_exponential`), and the member of ``A`` is
    exactly uniform (:func:`~pandas_dp.mechanisms.random.uniform_below_each`): ``K`` coins
    per row of ``K`` candidates, whatever the scores (the exponential mechanism's rejection
    sampler needs a few proposals when the weights are concentrated). Rows are processed in
    chunks of at most about ``2**22`` coins.
    """
    groups, candidates = scores.shape
    if candidates == 0:
        raise ValueError("permute-and-flip needs at least one candidate")
    excess = scores - scores.min(axis=1, keepdims=True)  # >= 0, 0 at the best candidate
    if excess.dtype == object and int(excess.max(initial=0)) < 1 << 62:
        excess = excess.astype(np.int64)  # exact scores that fit: the fast path
    rate = coarser_rate(rate, denominator)
    den = rate.denominator * denominator
    chosen = np.empty(groups, dtype=np.int64)
    step = max(1, _MAX_COINS // candidates)
    for start in range(0, groups, step):
        block = excess[start : start + step]
        whole, fraction = split_rate(block.ravel(), rate.numerator, den)
        accepted = bernoulli_exp_neg_parts(source, whole, fraction, den).reshape(block.shape)
        counts = accepted.sum(axis=1)  # >= 1: a best candidate is always accepted
        nth = uniform_below_each(source, counts.astype(np.int64))
        running = np.cumsum(accepted, axis=1)
        chosen[start : start + step] = np.argmax(running > nth[:, None], axis=1)
    return chosen


def permute_and_flip_probabilities(
    scores: npt.NDArray[np.float64], rate: float
) -> npt.NDArray[np.float64]:
    """The law of :func:`sample_permute_and_flip` for real scores (rows on the last axis).

    ``P(r) = p_r ∫_0^1 Π_{k≠r} (1 - p_k u) du`` with ``p_k = exp(-rate (s_k - s_min))``:
    ``E[1 / |A|]`` over the other candidates' coins is ``E[∫_0^1 u^{|A|-1} du]`` and
    ``E[u^X]`` of a sum of independent Bernoulli(p_k) is ``Π (1 - p_k + p_k u)``. The
    integrand is a polynomial of degree ``K - 1`` in ``u`` (written with ``1 - u`` for
    ``u``), so Gauss–Legendre quadrature with ``⌊K/2⌋ + 1`` nodes (scipy's) is exact for
    it; its weights and the integrand are positive, so nothing cancels. The products are
    summed as logarithms, each ``|log(1 - p u)| <= 15`` at the nodes (``1 - u >= 3e-7`` for
    ``K <= 4,097``): pairwise summation of ``K`` of them errs by at most about
    ``(log2 K + 2) · 15 K · 2**-52`` relatively (``1e-16`` for one candidate, ``8e-11`` for
    2,001), which bounds the relative error of each probability.
    """
    from scipy.special import roots_legendre  # lazy: scipy is not loaded by ``import pandas_dp``

    scores = np.asarray(scores, dtype=np.float64)
    shape = scores.shape
    rows = scores.reshape(-1, shape[-1])
    nodes, weights = roots_legendre(shape[-1] // 2 + 1)
    u = (nodes + 1) / 2  # on (0, 1)
    out = np.empty_like(rows)
    for i, row in enumerate(rows):
        p = np.exp(-rate * (row - row.min()))
        logs = np.log1p(-np.outer(p, u))  # (K, nodes): log(1 - p_k u)
        others = np.exp(logs.sum(axis=0)[None, :] - logs)  # Π_{k≠r} (1 - p_k u)
        out[i] = p * (others @ weights) / 2
    return np.asarray(out.reshape(shape), dtype=np.float64)


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
    flip : bool
        Sample by permute-and-flip (:func:`sample_permute_and_flip`) at the same rate: ε-DP
        for non-monotone scores, never a larger expected score. Its ledger name is
        ``"permute_and_flip"``. Not with ``monotone`` (its monotone analysis is not ours),
        and not where the choice is priced by bounded range (that holds for the exponential
        mechanism's law only).
    """

    epsilon: Fraction
    sensitivity: Fraction = Fraction(1)
    monotone: bool = False
    flip: bool = False

    def __post_init__(self) -> None:
        if self.flip and self.monotone:
            raise ValueError("permute-and-flip is offered for non-monotone scores only")

    @property
    def name(self) -> str:
        """The mechanism's name in the ledger."""
        return "permute_and_flip" if self.flip else "exponential"

    @property
    def rate(self) -> Fraction:
        """``a`` in the weights ``exp(-a s)``."""
        return self.epsilon / (self.sensitivity * (1 if self.monotone else 2))

    def choose(self, scores: npt.NDArray[np.int64], denominator: int, source: RandomSource) -> I64:
        """Draw one candidate index per row of ``scores``.

        By :func:`sample_permute_and_flip` when :attr:`flip`, else :func:`sample_exponential`.
        """
        if self.flip:
            return sample_permute_and_flip(source, scores, denominator, self.rate)
        return sample_exponential(source, scores, denominator, self.rate)

    def probabilities(self, scores: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """Selection probabilities for real scores (for accuracy statements and tests).

        The law of :meth:`choose`: permute-and-flip's when :attr:`flip`
        (:func:`permute_and_flip_probabilities`), else ``∝ exp(-rate s)``.
        """
        if self.flip:
            return permute_and_flip_probabilities(scores, float(self.rate))
        logits = -float(self.rate) * (scores - scores.min(axis=-1, keepdims=True))
        weights = np.exp(logits)
        return np.asarray(weights / weights.sum(axis=-1, keepdims=True), dtype=np.float64)
