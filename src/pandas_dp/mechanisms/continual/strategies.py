"""The running-total strategies' common ground (see :mod:`pandas_dp.mechanisms.continual`).

:class:`Strategy`, the baseline :class:`NoisyBins`, the checks and the half-widths.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from pandas_dp.budget import Budget, RhoBudget
from pandas_dp.mechanisms.gaussian.discrete import DiscreteGaussian, exact_sigma2
from pandas_dp.mechanisms.laplace import DiscreteLaplace
from pandas_dp.mechanisms.random import I64, RandomSource

F64 = npt.NDArray[np.float64]

#: Most bins a running total may have (``2**16`` days is 179 years).
MAX_BINS = 1 << 16
#: Counts are clipped to ``[0, MAX_COUNT]``; with :data:`MAX_BINS` every integer sum of the
#: three strategies (``R' x`` included: ``Σ c'_k < 2**28.3``) stays below ``2**61``.
MAX_COUNT = 1 << 32
#: Largest ``rows_per_unit`` (contributions per privacy unit).
MAX_ROWS_PER_UNIT = 1 << 10
#: Bits of the lattice of the square-root factorization: ``c'_k = round(c_k 2**SHIFT)``.
SHIFT = 20
#: Grid of ``x = λ b max|w|`` in (0, 1) on which the Chernoff bound is minimised.
_CHERNOFF_GRID = np.concatenate([np.geomspace(1e-6, 0.5, 400), np.linspace(0.5, 1 - 1e-9, 800)])
_INT_LIMIT = 1 << 62
#: Batches of rows at most this long are multiplied by a dense Toeplitz matrix.
_DENSE_BINS = 512


# --- validation ------------------------------------------------------------------------------


def _check_int(value: object, name: str, upper: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if not 1 <= int(value) <= upper:
        raise ValueError(f"{name} must lie in [1, {upper}], got {value}")
    return int(value)


def _as_counts(counts: npt.ArrayLike, bins: int) -> I64:
    """Validate shape and dtype (public), then clip silently to ``[0, MAX_COUNT]``."""
    array = np.asarray(counts)
    if array.dtype.kind not in "iu" or array.dtype == np.uint64:
        raise TypeError(
            f"counts must be a signed or small unsigned integer array, got {array.dtype}"
        )
    if array.shape != (bins,):
        raise ValueError(f"counts must have shape ({bins},), got {array.shape}")
    return np.clip(array.astype(np.int64), 0, MAX_COUNT)


def _check_alpha(alpha: float) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not 0 < alpha < 1:
        raise ValueError(f"alpha must lie strictly between 0 and 1, got {alpha!r}")
    return float(alpha)


# --- tail bounds -----------------------------------------------------------------------------


def laplace_sum_halfwidth(norm2: F64, wmax: F64, scale: float, alpha: float) -> F64:
    """Conservative ``h`` with ``P(|Σ w_i Z_i| >= h) <= alpha``, ``Z_i`` i.i.d. discrete Laplace.

    Parameters
    ----------
    norm2, wmax : ndarray
        ``Σ w_i²`` and ``max |w_i|`` of each weight vector (``wmax > 0``).
    scale : float
        The scale ``b`` the sampler really uses (``q = exp(-1/b)``).
    alpha : float
        Two-sided tail probability.

    Notes
    -----
    The discrete Laplace has ``E e^{μZ} = 1 / (1 - sinh²(μ/2) / sinh²(1/(2b)))`` for
    ``|μ| < 1/b``, at most the continuous Laplace's ``1 / (1 - b²μ²)`` (``sinh(u)/u``
    increases). As ``-log(1 - u)/u`` increases, ``Σ -log(1 - b²λ²w_i²) <= r (-log(1 - x²))``
    with ``x = bλ max|w|`` and ``r = Σ w_i² / max|w|²``. Chernoff, both tails:
    ``P(|S| >= h) <= 2 exp(-λh) E e^{λS}``, so every ``x`` in (0, 1) gives a valid
    ``h = b max|w| (log(2/α) + r (-log(1 - x²))) / x``; the smallest over a grid is returned.
    """
    log_term = math.log(2.0 / alpha)
    r = (np.asarray(norm2, dtype=np.float64) / np.asarray(wmax, dtype=np.float64) ** 2)[:, None]
    x = _CHERNOFF_GRID[None, :]
    best = np.min((log_term - r * np.log1p(-(x * x))) / x, axis=1)
    return np.asarray(scale * np.asarray(wmax, dtype=np.float64) * best, dtype=np.float64)


def gaussian_sum_halfwidth(norm2: F64, sigma2: float, alpha: float) -> F64:
    """``h = σ ||w|| sqrt(2 log(2/α))``: ``P(|Σ w_i Z_i| >= h) <= alpha`` (discrete Gaussian).

    The discrete Gaussian of parameter ``σ²`` is sub-Gaussian with that same parameter
    (``E e^{λZ} <= e^{λ²σ²/2}``, Canonne, Kamath & Steinke 2020, Corollary 9), so a weighted
    sum is sub-Gaussian with ``σ² ||w||²`` and Chernoff gives both tails at ``α/2`` each. (The
    normal quantile ``σ ||w|| Φ^{-1}(1 - α/2)`` is a slightly narrower approximation.)
    """
    return np.sqrt(np.asarray(norm2, dtype=np.float64) * sigma2 * 2.0 * math.log(2.0 / alpha))


# --- what the strategies share ---------------------------------------------------------------


@dataclass(frozen=True)
class Strategy:
    """What the three strategies share: their attributes, the release and the error spread.

    A strategy measures the clipped counts exactly (:meth:`measure`: ``size`` integers),
    adds one noise draw to each measurement and decodes the prefix sums (:meth:`decode`).

    Attributes
    ----------
    bins : int
        ``T``, the number of bins.
    rows_per_unit : int
        ``k``: rows one privacy unit may add (to any bins).
    mechanism : DiscreteLaplace or DiscreteGaussian
        The noise on each measurement, calibrated to the strategy's sensitivity.
    cost : Budget or RhoBudget
        What one release costs.
    """

    bins: int
    rows_per_unit: int
    mechanism: DiscreteLaplace | DiscreteGaussian
    cost: Budget | RhoBudget

    @property
    def size(self) -> int:
        """How many noisy measurements a release draws."""
        raise NotImplementedError

    def measure(self, counts: npt.ArrayLike) -> I64:
        """The exact measurements of the clipped counts."""
        raise NotImplementedError

    def decode(self, noisy: I64) -> F64:
        """Prefix sums from noisy measurements (last axis); post-processing."""
        raise NotImplementedError

    def variance(self) -> F64:
        """Variance of each prefix's error."""
        raise NotImplementedError

    def release(self, counts: npt.ArrayLike, source: RandomSource) -> F64:
        """All ``T`` noisy prefix sums."""
        exact = self.measure(counts)
        return self.decode(exact + self.mechanism.sample(self.size, source))

    def stddev(self) -> F64:
        """Standard deviation of each prefix's error."""
        return np.sqrt(self.variance())


# --- the baseline ----------------------------------------------------------------------------


@dataclass(frozen=True)
class NoisyBins(Strategy):
    """Noise on every bin, then a cumulative sum: the baseline.

    Its ``mechanism`` has scale ``k/ε`` (L1 sensitivity ``k``) or ``σ² >= k²/(2ρ)`` (L2
    sensitivity ``k``); the other attributes are those of :class:`Strategy`.
    """

    @classmethod
    def plan(
        cls,
        bins: int,
        *,
        epsilon: object = None,
        rho: object = None,
        rows_per_unit: int = 1,
    ) -> NoisyBins:
        """Calibrate for ``epsilon``-DP (discrete Laplace) or ``rho``-zCDP (discrete Gaussian)."""
        bins = _check_int(bins, "bins", MAX_BINS)
        k = _check_int(rows_per_unit, "rows_per_unit", MAX_ROWS_PER_UNIT)
        if (epsilon is None) == (rho is None):
            raise ValueError("pass exactly one of epsilon (pure DP) and rho (zCDP)")
        if epsilon is not None:
            budget = Budget.of(epsilon)
            return cls(bins, k, DiscreteLaplace.calibrated(k, budget.epsilon), budget)
        zcdp = RhoBudget.of(rho)
        return cls(bins, k, DiscreteGaussian(_sigma2_for(k * k, zcdp.rho)), zcdp)

    @property
    def size(self) -> int:
        """How many noisy measurements a release draws (one per bin)."""
        return self.bins

    def measure(self, counts: npt.ArrayLike) -> I64:
        """The exact measurements: the clipped counts."""
        return _as_counts(counts, self.bins)

    def decode(self, noisy: I64) -> F64:
        """Prefix sums from noisy measurements (last axis); post-processing."""
        return np.cumsum(np.asarray(noisy, dtype=np.int64), axis=-1).astype(np.float64)

    def variance(self) -> F64:
        """Exact variance of each prefix's error: ``t`` times the noise variance."""
        return np.arange(1, self.bins + 1, dtype=np.float64) * self.mechanism.variance()

    def halfwidth(self, alpha: float) -> F64:
        """Per prefix, ``h_t`` with ``P(|error_t| >= h_t) <= alpha`` (a Chernoff bound)."""
        alpha = _check_alpha(alpha)
        t = np.arange(1, self.bins + 1, dtype=np.float64)
        if isinstance(self.mechanism, DiscreteLaplace):
            scale = float(self.mechanism.effective_scale)
            return laplace_sum_halfwidth(t, np.ones_like(t), scale, alpha)
        return gaussian_sum_halfwidth(t, float(self.mechanism.effective_sigma2), alpha)


def _sigma2_for(sensitivity2: int, rho: Fraction) -> Fraction:
    """A ``σ²`` the exact sampler accepts, at least ``sensitivity2 / (2ρ)`` (exactly)."""
    target = Fraction(sensitivity2) / (2 * rho)
    sigma2 = exact_sigma2(math.sqrt(float(target)))
    while sigma2 < target:  # float rounding: raise it until it covers the exact target
        sigma2 = exact_sigma2(math.sqrt(float(sigma2)) * (1 + 2.0**-30))
    return sigma2
