"""The discrete ℓ∞ K-norm mechanism: integer vectors with ``P(b) ∝ exp(-‖b‖∞ / scale)``.

For a query of ``d`` integer sums that one row moves by at most ``Δ`` *each* (an ℓ∞ bound),
per-coordinate Laplace noise must be calibrated to the L1 bound ``d Δ``: each coordinate's
standard deviation is ``√2 d Δ / ε``. The K-norm mechanism of the ℓ∞ ball (Hardt & Talwar
2010) adds one vector whose density falls with its largest coordinate instead: with
``scale = Δ / ε`` it is ε-DP for the same query (the ratio of the densities at ``b - f(D)``
and ``b - f(D')`` is at most ``exp(‖f(D) - f(D')‖∞ / scale)`` by the triangle inequality,
and both have the whole lattice ``Z^d`` as support), and each coordinate's standard
deviation is ``√((d + 1)(d + 2) / 3) Δ / ε``: 0.51 times Laplace's at ``d = 6``, 0.43 at
``d = 28``. Awan & Slavković (2020) compare K-norm mechanisms for such sums.

Sampling is exact (from a uniform random source, in integers), by a mixture of cubes:
``q^‖b‖∞ = Σ_{m >= ‖b‖∞} (1 - q) q^m`` with ``q = exp(-1 / scale)``, so ``b`` is a uniform
point of the cube ``[-M, M]^d`` (``d`` independent uniform coordinates) whose half-side
``M`` has ``P(M = m) ∝ (2m + 1)^d q^m``. ``M`` is drawn by rejection from a negative
binomial proposal, the sum of ``d + 1`` geometric variates of ratio ``q`` (``P(m) ∝
C(m + d, d) q^m``), accepted with probability ``Π_{j=1..d} (2m + 1) / (2m + 2j)``: a ratio
of integers, at most 1 since ``2m + 1 < 2m + 2j``, and proportional to the ratio of the two
laws (``(2m + 1)^d / C(m + d, d)`` over ``2^d d!``). At the scales the library uses
(``M`` near ``(d + 1) scale``, far above ``d``) it is about ``exp(-d / (2 scale))``: nearly
every proposal is kept, at any dimension. A geometric variate is a discrete Laplace variate
conditioned to be non-negative (the exact sampler of :mod:`pandas_dp.mechanisms.samplers`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property

import numpy as np
import numpy.typing as npt

from pandas_dp.mechanisms.laplace import sampler_terms
from pandas_dp.mechanisms.random import I64, RandomSource, uniform_below_each, uniform_words
from pandas_dp.mechanisms.samplers import check_positive_fraction, discrete_laplace

#: The most geometric variates one batch of proposals draws (32 MiB of int64).
BATCH = 1 << 22


@dataclass(frozen=True)
class DiscreteLinfKNorm:
    """Integer vectors of ``dimension`` coordinates with ``P(b) ∝ exp(-‖b‖∞ / scale)``.

    Parameters
    ----------
    scale : Fraction
        ``Δ / ε`` in lattice units: ε-DP for a query whose every coordinate moves by at most
        ``Δ`` between neighbouring datasets.
    dimension : int
        The coordinates of one vector; :meth:`sample` draws whole vectors.
    """

    scale: Fraction
    dimension: int
    name = "discrete_linf_knorm"

    def __post_init__(self) -> None:
        check_positive_fraction(self.scale, "scale")
        if self.dimension < 1:
            raise ValueError(f"dimension must be a positive integer, got {self.dimension}")
        if (self.dimension + 1) * self.scale > 2**53:  # half-sides stay far below 2**61
            raise ValueError(
                f"a scale of {float(self.scale):.3g} over {self.dimension} coordinates exceeds "
                "the sampler's range (2**53 for (dimension + 1) * scale)"
            )

    @classmethod
    def calibrated(cls, sensitivity: int, epsilon: Fraction, dimension: int) -> DiscreteLinfKNorm:
        """The mechanism giving ``epsilon``-DP for ``dimension`` sums of ℓ∞ ``sensitivity``."""
        if sensitivity < 1:
            raise ValueError(f"sensitivity must be a positive integer, got {sensitivity}")
        return cls(Fraction(sensitivity) / epsilon, dimension)

    @cached_property
    def _terms(self) -> tuple[int, int]:
        return sampler_terms(self.scale)

    @property
    def effective_scale(self) -> Fraction:
        """The scale the sampler really uses (``>= scale``, as the Laplace sampler's)."""
        t, s = self._terms
        return Fraction(t, s)

    def sample(self, n: int, source: RandomSource) -> I64:
        """Draw ``n // dimension`` independent vectors, concatenated (``n`` a multiple)."""
        d = self.dimension
        if n < 0 or n % d:
            raise ValueError(f"{n} variates are not whole vectors of {d} coordinates")
        sides = np.repeat(self._sides(source, n // d), d)
        return uniform_below_each(source, 2 * sides + 1) - sides

    def _sides(self, source: RandomSource, count: int) -> I64:
        """``count`` cube half-sides, ``P(m) ∝ (2m + 1)^d q^m`` (negative binomial proposals).

        Each batch proposes enough for all ``count`` at the acceptance expected at the
        proposal's mean (at least one in a million), within :data:`BATCH` geometric draws;
        a shortfall is made up by a further batch, independently.
        """
        d = self.dimension
        mean = (d + 1) * float(self.effective_scale)
        rate = max(1e-6, math.prod((2 * mean + 1) / (2 * mean + 2 * j) for j in range(1, d + 1)))
        found: list[I64] = []
        wanted = count
        while wanted > 0:
            proposals = min(math.ceil(1.25 * wanted / rate) + 8, max(1, BATCH // (d + 1)))
            side = self._geometric(source, proposals * (d + 1)).reshape(proposals, d + 1)
            side = side.sum(axis=1)
            kept = side[_accepts(source, side, d)]
            found.append(kept[:wanted])
            wanted -= len(found[-1])
        return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)

    def _geometric(self, source: RandomSource, n: int) -> I64:
        """``n`` variates with ``P(g) ∝ q^g`` on the non-negative integers."""
        t, s = self._terms
        found: list[I64] = []
        wanted = n
        while wanted > 0:
            draws = discrete_laplace(source, t, s, 2 * wanted + 64)
            found.append(draws[draws >= 0][:wanted])
            wanted -= len(found[-1])
        return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)

    def variance(self) -> float:
        """One coordinate's variance, ``(d + 1)(d + 2) s² / 3``.

        The continuous law's; the lattice's differs by ``O(s)``, a relative ``1e-9`` at the
        scales used.
        """
        d = self.dimension
        s = float(self.effective_scale)
        return (d + 1) * (d + 2) * s * s / 3

    def tail(self, k: int) -> float:
        """``P(|b_j| >= k)`` of one coordinate, from the continuous law.

        ``b_j = r u`` with ``r ~ Gamma(d + 1, s)`` and ``u`` uniform on ``[-1, 1]``:
        ``Q(d + 1, k/s) - (k / (d s)) Q(d, k/s)``, ``Q`` the regularised upper incomplete
        gamma function.
        """
        from scipy.special import gammaincc

        if k <= 0:
            return 1.0
        d, x = self.dimension, k / float(self.effective_scale)
        return float(gammaincc(d + 1, x) - x / d * gammaincc(d, x))

    def quantile_halfwidth(self, alpha: float) -> int:
        """Smallest integer ``k`` with ``P(|b_j| > k) <= alpha`` (bisection on :meth:`tail`)."""
        lo, hi = 0, max(1, math.ceil(float(self.effective_scale) * (self.dimension + 40)))
        while self.tail(hi + 1) > alpha:
            hi *= 2
        while lo < hi:
            mid = (lo + hi) // 2
            if self.tail(mid + 1) <= alpha:
                hi = mid
            else:
                lo = mid + 1
        return lo


def _accepts(source: RandomSource, side: I64, d: int) -> npt.NDArray[np.bool_]:
    """Accept each proposed half-side ``m`` with probability ``Π_{j=1..d} (2m+1) / (2m+2j)``.

    Each test draws a uniform ``U = (w + V) / 2^53``: ``w`` a 53-bit word (exact in a
    float), ``V`` uniform on ``[0, 1)`` and drawn only when needed. ``p`` is computed in
    floats, a product of ``d`` factors in ``(0, 1]`` (relative error about ``d`` · 1e-16), and
    bracketed with a relative margin of 1e-12: where ``[w, w + 1) / 2^53`` lies wholly below
    or above the bracket, ``w`` decides; the rare words it overlaps are decided exactly, in
    integers, by drawing ``V`` (:func:`_exact`). ``U < p`` exactly, so the acceptance is
    exactly ``p``.
    """
    odd = 2.0 * side.astype(np.float64) + 1.0
    probability = np.ones_like(odd)
    for j in range(1, d + 1):
        probability *= odd / (odd + (2 * j - 1))
    words = uniform_words(source, 53, len(side))
    low, high = probability * (1 - 1e-12), probability * (1 + 1e-12)
    accepted = (words + 1).astype(np.float64) * 2.0**-53 <= low
    unsure = np.flatnonzero(~accepted & (words.astype(np.float64) * 2.0**-53 < high))
    for at in unsure:
        accepted[at] = _exact(source, int(side[at]), d, int(words[at]))
    return accepted


def _exact(source: RandomSource, side: int, d: int, word: int) -> bool:
    """``U < p`` in integers, ``U = (word + V) / 2^53`` with ``V = v / den`` uniform below 1.

    ``p = num / den``: ``U < p`` exactly when ``word · den + v < num · 2^53``.
    """
    numerator = (2 * side + 1) ** d
    denominator = math.prod(2 * side + 2 * j for j in range(1, d + 1))
    return word * denominator + _below(source, denominator) < numerator << 53


def _below(source: RandomSource, bound: int) -> int:
    """A uniform integer in ``[0, bound)`` (Python integers, rejection: no modulo bias)."""
    width = bound.bit_length()
    while True:
        raw = int.from_bytes(bytes(source.randbytes((width + 7) // 8)), "little")
        value = raw & ((1 << width) - 1)
        if value < bound:
            return value
