"""The discrete Gaussian mechanism: exact sampling and calibration.

References
----------
C. Canonne, G. Kamath and T. Steinke, "The Discrete Gaussian for Differential Privacy",
NeurIPS 2020 (arXiv:2004.00010): Algorithm 3 (exact sampler), Theorem 7 (its exact
(ε, δ) curve), Theorem 4 (it is ``Δ²/(2σ²)``-zCDP). B. Balle and Y.-X. Wang, "Improving the
Gaussian Mechanism for Differential Privacy: Analytical Calibration and Optimal Denoising",
ICML 2018 (the analytic Gaussian, valid for every ε > 0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from pandas_dp.mechanisms.gaussian.calibration import (
    _log_normal_tail,
    analytic_sigma,
    calibrate_sigma,
    calibrate_sigma_zcdp,
)
from pandas_dp.mechanisms.random import I64, RandomSource
from pandas_dp.mechanisms.samplers import (
    bernoulli_exp_neg,
    check_positive_fraction,
    discrete_laplace,
)

_MIN_BATCH = 256


def discrete_gaussian(source: RandomSource, sigma2: Fraction, n: int) -> I64:
    """Draw ``n`` exact discrete Gaussian variates, ``P(Y = y) ∝ exp(-y² / (2σ²))``.

    CKS20 Algorithm 3 with ``t = floor(σ) + 1``: draw ``Y`` from the discrete Laplace of
    scale ``t`` and accept it with probability ``exp(-(|Y| - σ²/t)² / (2σ²))``. With
    ``σ² = p/q`` the exponent is the rational ``(|Y| q t - p)² / (2 p q t²)``; both terms are
    divided by ``gcd(q t, p)`` so they stay small (when ``σ² = t m`` it is
    ``(|Y| - m)² / (2 t m)``). Entries whose numerator would overflow int64 (``|Y|`` beyond
    about ``2**31``) are handled exactly with Python integers.
    """
    terms = gaussian_terms(sigma2)
    if terms is None:
        raise ValueError(f"sigma2 = {sigma2} is out of the sampler's exact range")
    t, a, b, den = terms
    out = np.empty(n, dtype=np.int64)
    filled = 0
    while filled < n:
        want = n - filled
        y = discrete_laplace(source, t, 1, 2 * want + 64)
        d = np.abs(y) * a - b if a < 1 << 31 else None
        if d is not None and np.abs(d).max() < 1 << 31:
            keep = bernoulli_exp_neg(source, d * d, den)
        else:  # exact slow path; practically unreachable with the calibrated parameters
            keep = np.array(
                [_bernoulli_exp_big(source, (abs(int(v)) * a - b) ** 2, den) for v in y]
            )
        z = y[keep][:want]
        out[filled : filled + z.size] = z
        filled += z.size
    return out


def gaussian_terms(sigma2: Fraction) -> tuple[int, int, int, int] | None:
    """``(t, a, b, den)`` with acceptance exponent ``(|Y| a - b)² / den``, or None.

    ``σ² = p/q``; ``t`` is ``floor(σ) + 1`` or ``floor(σ)`` (CKS20 allows any positive ``t``;
    these two keep the acceptance rate high), whichever keeps ``den`` within ``2**62``.
    """
    if sigma2 <= 0:
        raise ValueError(f"sigma2 must be positive, got {sigma2}")
    p, q = sigma2.numerator, sigma2.denominator
    root = math.isqrt(p // q)
    for t in (root + 1, root):
        if t < 1 or t > 1 << 52:
            continue
        g = math.gcd(q * t, p)
        den = 2 * p * q * t * t // (g * g)
        if den <= 1 << 62:
            return t, q * t // g, p // g, den
    return None


def _bernoulli_exp_big(source: RandomSource, num: int, den: int) -> bool:
    whole, frac = divmod(num, den)
    if whole > 1 << 16:  # probability below exp(-65536): treated as 0 (see the docstring)
        return False
    fraction_ok = bernoulli_exp_neg(source, np.array([frac], dtype=np.int64), den)[0]
    if not fraction_ok:
        return False
    ones = bernoulli_exp_neg(source, np.full(1, whole, dtype=np.int64), 1)[0] if whole else True
    return bool(ones)


def exact_sigma2(sigma: float) -> Fraction:
    """A rational ``σ² >= sigma**2`` with small terms, for the exact sampler.

    For ``σ >= 2**10``: ``σ² = t m`` with ``t = floor(σ) + 1`` (variance raised by less than
    ``t``, i.e. under 0.1%). Below: ``σ²`` rounded up to 20 significant bits.
    """
    if sigma >= 1024:
        t = math.floor(sigma) + 1
        m = math.ceil(Fraction(sigma) ** 2 / t)
        if gaussian_terms(Fraction(t * m)) is None:  # isqrt(t·m) reached t: use t·(t-1)+...
            m = t  # t² is a perfect square: the sampler then takes t itself
        return Fraction(t * m)
    exponent = 20 - math.ceil(math.log2(sigma * sigma))
    scaled = Fraction(sigma) ** 2 * Fraction(2) ** exponent
    return Fraction(math.ceil(scaled)) / Fraction(2) ** exponent


@dataclass(frozen=True)
class DiscreteGaussian:
    """Integer noise with ``P(Y = y) ∝ exp(-y² / (2σ²))``.

    Parameters
    ----------
    sigma2 : Fraction
        The variance parameter ``σ²`` in lattice units (the variance itself is slightly
        below it).
    """

    sigma2: Fraction
    name = "discrete_gaussian"

    def __post_init__(self) -> None:
        check_positive_fraction(self.sigma2, "sigma2")

    @classmethod
    def calibrated(cls, sensitivity: int, epsilon: float, delta: float) -> DiscreteGaussian:
        """The mechanism giving ``(epsilon, delta)``-DP for integer L2 ``sensitivity``."""
        return cls(exact_sigma2(calibrate_sigma(epsilon, delta, sensitivity)))

    @property
    def sigma(self) -> float:
        """``σ`` as a float."""
        return math.sqrt(self.sigma2)

    @property
    def scale(self) -> Fraction:
        """``σ`` rounded *down* to a multiple of ``2**-20`` (the safe side for accounting)."""
        return Fraction(math.floor(math.sqrt(self.sigma2) * 2**20), 2**20)

    @property
    def effective_scale(self) -> Fraction:
        """Same as :attr:`scale` (the sampler uses ``sigma2`` exactly)."""
        return self.scale

    @property
    def effective_sigma2(self) -> Fraction:
        """The ``σ²`` the sampler really uses (``>= sigma2``).

        ``sigma2`` itself when the exact sampler can handle its terms; otherwise rounded up
        to ``t·m`` with ``t = floor(σ) + 1`` (a relative increase below ``1/σ``): more noise
        never weakens the guarantee, which accounting reads from ``sigma2``.
        """
        if gaussian_terms(self.sigma2) is not None:
            return self.sigma2
        return exact_sigma2(math.sqrt(self.sigma2) * (1 + 2**-40))

    def sample(self, n: int, source: RandomSource) -> I64:
        """Draw ``n`` independent variates (at least 256 are drawn)."""
        return discrete_gaussian(source, self.effective_sigma2, max(n, _MIN_BATCH))[:n]

    def _support(self) -> np.ndarray:
        half = int(12 * self.sigma) + 2
        return np.arange(-half, half + 1)

    def _pmf(self) -> tuple[np.ndarray, np.ndarray]:
        y = self._support()
        weights = np.exp(-(y.astype(np.float64) ** 2) / (2 * float(self.sigma2)))
        return y, weights / weights.sum()

    def variance(self) -> float:
        """The variance (slightly below ``σ²``), by summation of the pmf."""
        if self.sigma > 4096:
            return float(self.sigma2)  # the deficit is below exp(-2π²σ²): no float can show it
        y, p = self._pmf()
        return float(np.sum(p * y.astype(np.float64) ** 2))

    def tail(self, k: int) -> float:
        """``P(|Y| >= k)``."""
        if k <= 0:
            return 1.0
        if self.sigma > 4096:
            return float(2 * math.exp(_log_normal_tail((k - 0.5) / self.sigma)))
        y, p = self._pmf()
        return float(p[np.abs(y) >= k].sum())

    def quantile_halfwidth(self, alpha: float) -> int:
        """Smallest integer ``k`` with ``P(|Y| > k) <= alpha``."""
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
        from scipy import special  # lazy: scipy is not loaded by ``import pandas_dp``

        k = max(0, int(self.sigma * -special.ndtri(alpha / 2)) - 2)
        while self.tail(k + 1) > alpha:
            k += 1
        while k > 0 and self.tail(k) <= alpha:
            k -= 1
        return k


#: Gaussian noise is drawn on a coarser lattice when σ would exceed this many noise units, so
#: that its exact privacy-loss distribution stays cheap to build.
SIGMA_TARGET = 2.0**14
#: ... but never so coarse that one unit's change spans fewer noise units than this (the
#: rounding adds one unit to the sensitivity).
MIN_SHIFTED_SENSITIVITY = 64


@dataclass(frozen=True)
class GaussianPlan:
    """Discrete Gaussian noise for an integer aggregate, on a possibly coarser lattice.

    The exact aggregate (in its own units) is first rounded to a multiple of ``2**shift``
    units; rounding two neighbouring aggregates can move them one extra unit apart, which
    :attr:`sensitivity` includes. Noise is then drawn in units of ``2**shift``.
    """

    mechanism: DiscreteGaussian
    shift: int
    sensitivity: int
    coordinates: int


def plan_gaussian(
    sensitivity: int, coordinates: int, epsilon: Fraction, delta: Fraction
) -> GaussianPlan:
    """Calibrate discrete Gaussian noise for ``(epsilon, delta)``-DP.

    Parameters
    ----------
    sensitivity : int
        Largest change of one coordinate, in the aggregate's units.
    coordinates : int
        How many coordinates (groups) one privacy unit can change.
    epsilon, delta : Fraction
        The target guarantee of this measurement on its own.

    Notes
    -----
    One coordinate: the analytic calibration on the exact discrete-Gaussian curve (CKS20
    Thm. 7, the discrete analogue of Balle & Wang 2018). Several: through zCDP.
    """

    def sigma_for(units: int) -> float:
        if coordinates == 1:
            return calibrate_sigma(float(epsilon), float(delta), units)
        return calibrate_sigma_zcdp(float(epsilon), float(delta), coordinates * units * units)

    # σ/Δ is scale-free for the continuous curve: it decides how coarse the noise lattice is.
    ratio = analytic_sigma(float(epsilon), float(delta), 1.0) * math.sqrt(coordinates)
    shift, units = _coarser(ratio, sensitivity)
    sigma = sigma_for(units)
    return GaussianPlan(DiscreteGaussian(exact_sigma2(sigma)), shift, units, coordinates)


def plan_gaussian_rho(sensitivity: int, coordinates: int, rho: Fraction) -> GaussianPlan:
    """Calibrate discrete Gaussian noise for ``rho``-zCDP, with no δ.

    ``σ² >= coordinates · Δ² / (2ρ)`` exactly (Canonne, Kamath & Steinke 2020, Thm. 14: the
    discrete Gaussian is ``Δ²/(2σ²)``-zCDP per coordinate), on the same lattice rule as
    :func:`plan_gaussian`.
    """
    if rho <= 0:
        raise ValueError(f"rho must be positive, got {rho}")
    shift, units = _coarser(math.sqrt(coordinates / (2 * float(rho))), sensitivity)
    target = Fraction(coordinates * units * units) / (2 * rho)
    sigma2 = exact_sigma2(math.sqrt(float(target)))
    while sigma2 < target:  # float rounding: raise it until it covers the exact target
        sigma2 = exact_sigma2(math.sqrt(float(sigma2)) * (1 + 2.0**-30))
    return GaussianPlan(DiscreteGaussian(sigma2), shift, units, coordinates)


def _coarser(ratio: float, sensitivity: int) -> tuple[int, int]:
    """How many powers of two coarser the noise lattice is, and the sensitivity on it.

    ``ratio`` is σ/Δ: noise far wider than :data:`SIGMA_TARGET` units is drawn on a coarser
    lattice (rounding costs one unit of sensitivity), never coarser than
    :data:`MIN_SHIFTED_SENSITIVITY` units per change.
    """
    shift = 0
    while (
        ratio * sensitivity / 2**shift > SIGMA_TARGET
        and sensitivity >> (shift + 1) >= MIN_SHIFTED_SENSITIVITY
    ):
        shift += 1
    return shift, sensitivity if shift == 0 else -(-sensitivity // 2**shift) + 1
