"""Running totals: every prefix sum of a vector of ``T`` integer counts, released at once.

One row adds 1 to one of ``T`` time bins (``rows_per_unit`` rows per privacy unit). Three
strategies release all ``T`` prefix sums ``s_t = x_0 + ... + x_{t-1}`` (``t = 1 .. T``); each
returns them as float64, with analytic standard deviations and conservative half-widths per
prefix (index ``t - 1`` of every array is the prefix of length ``t``):

- :class:`NoisyBins`, the baseline: noise on every bin, then a cumulative sum. Error of
  prefix ``t``: ``sqrt(t)`` noise standard deviations.
- :class:`~pandas_dp.mechanisms.continual_tree.BinaryTree`, pure ε-DP: the binary tree
  mechanism (Dwork, Naor, Pitassi & Rothblum 2010; Chan, Shi & Song 2011). Every complete
  dyadic block ``[i 2^j, (i+1) 2^j)`` inside
  ``[0, T)`` is measured with discrete Laplace noise; a row lies in at most one block per
  level, ``L = T.bit_length()`` levels, so the node vector has L1 sensitivity ``L`` and the
  scale is ``L k / ε``. A prefix is the sum of at most ``L`` nodes (its binary
  decomposition), or, by default, the least-squares estimate from all nodes (Hay, Rastogi,
  Miklau & Suciu 2010, the two-pass algorithm of their Theorem 3; Honaker 2015), which is
  post-processing of the noisy nodes only.
- :class:`~pandas_dp.mechanisms.continual_sqrt.SqrtFactorization`, ρ-zCDP: the square-root
  factorization (Fichtenberger, Henzinger & Upadhyay 2023; Henzinger & Upadhyay 2023). The
  all-ones lower-triangular
  ``A = R R`` with ``R`` the lower-triangular Toeplitz matrix of ``c_k = binom(2k, k)/4^k``;
  on the integer lattice we use ``R'`` of ``c'_k = round(c_k 2^s)`` (exact integers,
  ``c'_0 = 2^s``) and release ``y = R' x + z`` with ``z`` i.i.d. discrete Gaussian. One row
  moves ``y`` by a column of ``R'``, whose norm is at most that of the first column,
  ``Δ = sqrt(Σ_{k<T} c'_k²)``; ``k`` rows move it by at most ``k Δ`` (triangle inequality),
  so ``σ² >= k² Δ² / (2ρ)`` gives ρ-zCDP (Canonne, Kamath & Steinke 2020, Theorem 14).
  Prefixes are ``A R'^{-1} y`` (post-processing).

Exactness. All noise is exact integer noise (:class:`DiscreteLaplace`,
:class:`DiscreteGaussian`) added to exact integer measurements, so every released
measurement lies on the integer lattice whatever the data; decoding reads the noisy
measurements only. Decoding is also exact when the noise is zero: the prefix sums are then
``np.cumsum(counts)`` exactly (decoders split the measurements into an integer part, decoded
in integers, and a residual that is zero for consistent measurements).

Totality. Counts are clipped silently to ``[0, MAX_COUNT]`` (clipping each coordinate is
1-Lipschitz, so the sensitivities hold), which keeps every integer sum inside int64:
validation reads only public inputs (``T``, ``rows_per_unit``, shapes, dtypes).

References
----------
T.-H. H. Chan, E. Shi and D. Song, "Private and continual release of statistics", ACM TISSEC
2011. C. Dwork, M. Naor, T. Pitassi and G. Rothblum, "Differential privacy under continual
observation", STOC 2010. M. Hay, V. Rastogi, G. Miklau and D. Suciu, "Boosting the accuracy of
differentially private histograms through consistency", VLDB 2010. J. Honaker, "Efficient use
of differentially private binary trees", TPDP 2015. H. Fichtenberger, M. Henzinger and J.
Upadhyay, "Constant matters: fine-grained error bound on differentially private continual
observation", ICML 2023. M. Henzinger and J. Upadhyay, "Almost tight error bounds on
differentially private continual counting", SODA 2023. C. Canonne, G. Kamath and T. Steinke,
"The discrete Gaussian for differential privacy", NeurIPS 2020.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from pandas_dp.budget import Budget, RhoBudget
from pandas_dp.mechanisms.gaussian import DiscreteGaussian, exact_sigma2
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
