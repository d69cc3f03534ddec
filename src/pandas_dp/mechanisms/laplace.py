"""The discrete Laplace (two-sided geometric) mechanism.

References
----------
A. Ghosh, T. Roughgarden and M. Sundararajan, "Universally utility-maximizing privacy
mechanisms", STOC 2009 (the geometric mechanism). C. Canonne, G. Kamath and T. Steinke,
"The Discrete Gaussian for Differential Privacy", NeurIPS 2020 (the exact sampler).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property, lru_cache

from pandas_dp.mechanisms.random import I64, RandomSource
from pandas_dp.mechanisms.samplers import (
    MAX_SCALE_TERM,
    check_positive_fraction,
    discrete_laplace,
)
from pandas_dp.mechanisms.small_draws import discrete_laplace_small

#: Noise is always drawn in batches of at least this many variates and the surplus thrown
#: away, so that the time a release takes says little about the size of its own noise.
MIN_BATCH = 256
#: Up to this many variates are drawn one at a time (:mod:`pandas_dp.mechanisms.small_draws`):
#: a vectorised batch costs as much as about five of them. Their work does not depend on
#: the values drawn either, which is what the batch is for. Scales ``1/s`` (``t = 1``) take
#: half as many: the batch's uniform and acceptance steps are trivial there (it costs about
#: two and a half single draws).
SMALL_DRAWS = 4


def sampler_terms(scale: Fraction) -> tuple[int, int]:
    """Return integers ``(t, s)`` with ``t / s >= scale`` that the exact sampler accepts.

    The scale is used exactly when its numerator and denominator fit in ``2**52``;
    otherwise it is rounded *up* to the next multiple of ``2**-m``, with ``m`` the largest
    exponent (at most 51) that keeps ``t <= 2**51``. More noise than calibrated never weakens
    the privacy guarantee.
    """
    if scale <= 0:
        raise ValueError(f"noise scale must be positive, got {scale}")
    if scale.numerator <= MAX_SCALE_TERM and scale.denominator <= MAX_SCALE_TERM:
        return scale.numerator, scale.denominator
    m = 51 - max(0, math.ceil(math.log2(scale)))
    m = min(m, 52)
    if m < 0:
        raise ValueError(f"noise scale {float(scale):.3g} exceeds the sampler's range 2**51")
    t = -((-scale.numerator << m) // scale.denominator)  # ceil(scale * 2**m)
    return t, 1 << m


@dataclass(frozen=True)
class DiscreteLaplace:
    """Integer noise with ``P(Z = z) ∝ exp(-|z| / scale)``.

    Parameters
    ----------
    scale : Fraction
        The scale ``b`` in lattice units; the mechanism is ``(Δ / b)``-DP for a query whose
        values on neighbouring datasets differ by at most ``Δ`` lattice units.

    Notes
    -----
    Sampled exactly with CKS20 Algorithm 2 from the given random source. If the scale's
    numerator or denominator is too large for the sampler, the scale actually used is
    rounded up (:attr:`effective_scale`), which only adds noise.
    """

    scale: Fraction
    name = "discrete_laplace"

    def __post_init__(self) -> None:
        check_positive_fraction(self.scale, "scale")

    @classmethod
    def calibrated(cls, sensitivity: int, epsilon: Fraction) -> DiscreteLaplace:
        """The mechanism giving ``epsilon``-DP for an integer query of L1 ``sensitivity``."""
        if sensitivity < 1:
            raise ValueError(f"sensitivity must be a positive integer, got {sensitivity}")
        return cls(Fraction(sensitivity) / epsilon)

    @cached_property
    def _terms(self) -> tuple[int, int]:
        """The sampler's ``(t, s)`` (computed once: the mechanism is frozen)."""
        return sampler_terms(self.scale)

    @property
    def effective_scale(self) -> Fraction:
        """The scale the sampler really uses (``>= scale``)."""
        t, s = self._terms
        return Fraction(t, s)

    def sample(self, n: int, source: RandomSource) -> I64:
        """Draw ``n`` independent variates.

        Up to :data:`SMALL_DRAWS` (half as many at scales ``1/s``) are drawn one at a time;
        more, in a vectorised batch of at least :data:`MIN_BATCH` (same law either way).
        """
        if n < 0:
            raise ValueError(f"cannot draw a negative number of variates ({n})")
        t, s = self._terms
        if n <= (SMALL_DRAWS if t > 1 else SMALL_DRAWS // 2):
            return discrete_laplace_small(source, t, s, n)
        return discrete_laplace(source, t, s, max(n, MIN_BATCH))[:n]

    @cached_property
    def _inverse(self) -> float:
        t, s = self._terms
        return 1.0 / float(Fraction(t, s))

    def _inverse_scale(self) -> float:
        return self._inverse

    def variance(self) -> float:
        """Exact variance ``2q / (1 - q)**2`` with ``q = exp(-1/b)``.

        Computed as ``2q / expm1(-1/b)**2`` so that large scales lose no precision.
        """
        a = self._inverse_scale()
        return 2.0 * math.exp(-a) / math.expm1(-a) ** 2

    def tail(self, k: int) -> float:
        """``P(|Z| >= k)`` for an integer ``k``: ``2 q**k / (1 + q)`` when ``k >= 1``."""
        return _tail(self._inverse, k)

    def quantile_halfwidth(self, alpha: float) -> int:
        """Smallest integer ``k`` with ``P(|Z| > k) <= alpha``, from the exact tail.

        ``P(|Z| > k) = 2 exp(-(k+1)/b) / (1 + q)``, so ``k = ceil(b log(2 / (α (1+q)))) - 1``;
        the float estimate is then corrected by evaluating the tail itself.
        """
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
        return _halfwidth(self._inverse, alpha)


def _tail(a: float, k: int) -> float:
    """``P(|Z| >= k)`` for the discrete Laplace of inverse scale ``a``."""
    if k <= 0:
        return 1.0
    return 2.0 * math.exp(-k * a) / (1.0 + math.exp(-a))


@lru_cache(maxsize=1024)
def _halfwidth(a: float, alpha: float) -> int:
    """:meth:`DiscreteLaplace.quantile_halfwidth` for inverse scale ``a``.

    Memoised: a release asks for the same half-width several times (intervals, previews,
    the noise-dominated check).
    """
    estimate = math.log(2.0 / (alpha * (1.0 + math.exp(-a)))) / a
    k = max(0, math.ceil(estimate) - 1)
    while k > 0 and _tail(a, k) <= alpha:  # guard the float estimate from above ...
        k -= 1
    while _tail(a, k + 1) > alpha:  # ... and from below
        k += 1
    return k
