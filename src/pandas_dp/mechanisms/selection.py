"""Differentially private partition selection by thresholding a noisy count.

When group keys are not public, only keys whose *noisy* count clears a threshold ``τ`` may be
released (Korolova et al., "Releasing search queries and clicks privately", WWW 2009; Wilson
et al., "Differentially private SQL with bounded user contribution", PoPETs 2020; the
thresholding family of Desfontaines, Voss, Gipson & Mandayam, "Differentially private
partition selection", PoPETs 2022).

The count is released with discrete Laplace noise of scale ``b`` (L1 sensitivity ``Δ1``,
so ``ε = Δ1 / b``). Keys found in the data are kept when ``count + Z >= τ``. A neighbouring
dataset differs by one privacy unit, which can create at most ``Δ0`` keys, each holding at
most ``Δ∞`` of its rows. Such a key is kept with probability at most
``p = P(Z >= τ - Δ∞)``; the threshold makes ``1 - (1 - p)**Δ0 <= δ``. Keys present in both
datasets are covered by the Laplace mechanism, so the release is ``(ε, δ)``-DP.
"""

from __future__ import annotations

import math
from fractions import Fraction

#: Relative safety margin on the float evaluation of tail probabilities (err towards more
#: suppression, never less).
_MARGIN = 1e-9


def _ratio(scale: Fraction) -> float:
    return math.exp(-1.0 / float(scale))


def tail_at_least(k: int, scale: Fraction) -> float:
    """``P(Z >= k)`` for discrete Laplace ``Z`` of the given scale (exact formula).

    ``q**k / (1 + q)`` for ``k >= 1`` and ``1 - q**(1-k) / (1 + q)`` for ``k <= 0``, with
    ``q = exp(-1/scale)``.
    """
    q = _ratio(scale)
    if k >= 1:
        return float(q**k / (1.0 + q))
    return float(1.0 - q ** (1 - k) / (1.0 + q))


def per_key_delta(delta: Fraction, max_keys: int) -> float:
    """δ allowed per key so that ``max_keys`` keys together stay within ``delta``."""
    return -math.expm1(math.log1p(-float(delta)) / max_keys)


def selection_threshold(
    scale: Fraction, delta: Fraction, max_keys_per_unit: int, max_rows_per_key: int
) -> int:
    """Smallest integer threshold ``τ`` that makes thresholded counts ``(ε, δ)``-DP.

    Parameters
    ----------
    scale : Fraction
        Effective scale of the discrete Laplace noise on the count.
    delta : Fraction
        δ spent on selecting keys, ``0 < delta < 1``.
    max_keys_per_unit : int
        ``Δ0``: how many keys one privacy unit can contribute to.
    max_rows_per_key : int
        ``Δ∞``: how many rows one unit can add to one key's count.

    Returns
    -------
    int
        ``τ`` with ``P(Z >= τ - Δ∞) <= 1 - (1 - δ)**(1/Δ0)``, evaluated with a relative
        safety margin so that float rounding can only make ``τ`` larger.
    """
    if not 0 < delta < 1:
        raise ValueError(f"partition selection needs 0 < delta < 1, got {delta}")
    target = per_key_delta(delta, max_keys_per_unit) * (1.0 - _MARGIN)
    q = _ratio(scale)
    # q**k / (1 + q) <= target  <=>  k >= log(target (1 + q)) / log(q)
    k = max(1, math.ceil(math.log(target * (1.0 + q)) / math.log(q)))
    while k > 1 and tail_at_least(k - 1, scale) <= target:
        k -= 1
    while tail_at_least(k, scale) > target:
        k += 1
    return max_rows_per_key + k


def keep_probability(count: int, threshold: int, scale: Fraction) -> float:
    """Probability that a key with true count ``count`` is released: ``P(count + Z >= τ)``."""
    return tail_at_least(threshold - count, scale)
