"""The exponential mechanism over a finite public candidate set, sampled exactly.

McSherry & Talwar (2007): choose candidate ``k`` with probability proportional to
``exp(-ε s_k / (2Δ))`` for scores ``s_k`` (lower is better) of sensitivity ``Δ``; for
*monotone* scores (adding a row can only lower every score, or only raise every score, e.g.
counts) ``exp(-ε s_k / Δ)`` suffices (Dwork & Roth 2014, Thm. 3.10 remark).

Exact sampling by rejection (no floating point): propose a candidate uniformly, accept it
with probability ``exp(-a (s_k - s_min))`` using CKS20's exact Bernoulli(exp(-γ)) for the
rational ``γ``. The best candidate is accepted with probability 1, so at most ``K`` proposals
are needed on average. Scores are rationals ``numerators / denominator``; ``a`` is a
rational. The sampler is vectorised over groups (rows of the score matrix), each group
drawing proposals in batches.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from pandas_dp.mechanisms.random import I64, RandomSource, uniform_below
from pandas_dp.mechanisms.samplers import bernoulli_exp_neg_parts

_BATCH = 64
_MAX_DRAWS = 1 << 22  # proposals per round, all groups together (memory)


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
    """
    groups, candidates = scores.shape
    if candidates == 0:
        raise ValueError("the exponential mechanism needs at least one candidate")
    excess = scores - scores.min(axis=1, keepdims=True)  # >= 0, 0 at the best candidate
    if excess.dtype == object and int(excess.max(initial=0)) < 1 << 62:
        excess = excess.astype(np.int64)  # exact scores that fit: the fast path
    rate = coarser_rate(rate, denominator)
    den = rate.denominator * denominator
    chosen = np.full(groups, -1, dtype=np.int64)
    pending = np.arange(groups)
    batch = _BATCH
    while pending.size:
        proposals = uniform_below(source, candidates, pending.size * batch).reshape(-1, batch)
        whole, fraction = split_rate(
            excess[pending[:, None], proposals].ravel(), rate.numerator, den
        )
        accepted = bernoulli_exp_neg_parts(source, whole, fraction, den).reshape(-1, batch)
        hit = accepted.any(axis=1)
        first = accepted.argmax(axis=1)
        rows = np.flatnonzero(hit)
        chosen[pending[rows]] = proposals[rows, first[rows]]
        pending = pending[~hit]
        # Groups still waiting have peaked weights (few acceptable candidates): larger
        # batches mean fewer rounds. Each group still takes its first accepted proposal of
        # an i.i.d. sequence, so the batch size never changes the law of the choice.
        batch = min(
            2 * batch, max(_BATCH, 4 * candidates), max(_BATCH, _MAX_DRAWS // max(pending.size, 1))
        )
    return chosen


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
