"""The square-root factorization for running totals, ρ-zCDP.

See :mod:`~pandas_dp.mechanisms.continual` for the three strategies and their maths.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np
import numpy.typing as npt

from pandas_dp.budget import RhoBudget
from pandas_dp.mechanisms.continual.strategies import (
    _DENSE_BINS,
    _INT_LIMIT,
    F64,
    MAX_BINS,
    MAX_ROWS_PER_UNIT,
    SHIFT,
    Strategy,
    _as_counts,
    _check_alpha,
    _check_int,
    _sigma2_for,
    gaussian_sum_halfwidth,
)
from pandas_dp.mechanisms.gaussian.discrete import DiscreteGaussian
from pandas_dp.mechanisms.random import I64


@lru_cache(maxsize=16)
def _sqrt_coefficients(bins: int, shift: int) -> tuple[int, ...]:
    """``c'_k = round(binom(2k, k) 2^shift / 4^k)`` for ``k < bins``, exactly (half up)."""
    out, central = [], 1  # central = binom(2k, k)
    for k in range(bins):
        if k:
            central = central * (2 * k) * (2 * k - 1) // (k * k)
        out.append(((central << (shift + 1)) + (1 << (2 * k))) >> (2 * k + 1))
    return tuple(out)


def sqrt_coefficients(bins: int, shift: int = SHIFT) -> I64:
    """The integer Toeplitz coefficients ``c'_k = round(c_k 2^shift)``, ``k < bins``.

    ``c_k = binom(2k, k) / 4^k`` are the coefficients of ``(1 - x)^{-1/2}``, whose square is
    ``1/(1 - x)``: the all-ones lower-triangular matrix is ``R R``.
    """
    return np.array(_sqrt_coefficients(bins, shift), dtype=np.int64)


def _forward_integer(y: I64, c: I64, shift: int) -> tuple[I64, I64]:
    """Integer ``x̃`` and residual ``r`` with ``R' x̃ + r = y``, ``|r| <= 2^(shift-1)``.

    Forward substitution rounding each step: ``x̃_n = round((y_n - Σ_{k>=1} c'_k x̃_{n-k}) /
    2^shift)``. When ``y = R' x`` for an integer ``x``, every step divides exactly and
    ``x̃ = x``, ``r = 0``. Works on the last axis of ``y``.
    """
    bins = y.shape[-1]
    reversed_c = c[::-1].copy()
    xt = np.zeros_like(y)
    half = 1 << (shift - 1)
    for n in range(bins):
        acc = xt[..., :n] @ reversed_c[bins - 1 - n : bins - 1] if n else 0
        xt[..., n] = (y[..., n] - acc + half) >> shift
    r = y - _toeplitz_times(c, xt)
    return xt, r


def _toeplitz_times(c: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``R v`` for the lower-triangular Toeplitz ``R`` of ``c``, on the last axis of ``v``."""
    bins = v.shape[-1]
    if v.ndim == 1:
        return np.convolve(c, v)[:bins]
    if bins <= _DENSE_BINS:  # many short rows: one matrix product (exact for int64)
        lag = np.subtract.outer(np.arange(bins), np.arange(bins))
        dense = np.where(lag >= 0, c[np.maximum(lag, 0)], 0).astype(c.dtype)
        return np.asarray(v @ dense.T)
    flat = v.reshape(-1, bins)
    out = np.stack([np.convolve(c, row)[:bins] for row in flat])
    return out.reshape(v.shape)


@dataclass(frozen=True)
class SqrtFactorization(Strategy):
    """The square-root factorization for running totals, ρ-zCDP.

    ``bins`` and ``rows_per_unit`` (``k``) as in
    :class:`~pandas_dp.mechanisms.continual.Strategy`; the L2 sensitivity of ``x -> R' x``
    is ``k Δ``, ``Δ² = Σ_{k<T} c'_k²``.

    Attributes
    ----------
    mechanism : DiscreteGaussian
        ``σ² >= k² Δ² / (2ρ)`` (exact rational comparison).
    cost : RhoBudget
        ``ρ``.
    shift : int
        ``s``: ``c'_k = round(c_k 2^s)``.
    """

    mechanism: DiscreteGaussian
    cost: RhoBudget
    shift: int = SHIFT

    @classmethod
    def plan(cls, bins: int, *, rho: object, rows_per_unit: int = 1) -> SqrtFactorization:
        """Calibrate discrete Gaussian noise with ``σ² >= (k Δ)² / (2ρ)``."""
        bins = _check_int(bins, "bins", MAX_BINS)
        k = _check_int(rows_per_unit, "rows_per_unit", MAX_ROWS_PER_UNIT)
        budget = RhoBudget.of(rho)
        sigma2 = _sigma2_for(k * k * sensitivity_squared(bins), budget.rho)
        return cls(bins, k, DiscreteGaussian(sigma2), budget)

    @property
    def size(self) -> int:
        """One noisy measurement per bin."""
        return self.bins

    @property
    def coefficients(self) -> I64:
        """``c'_0 .. c'_{T-1}``, the first column of ``R'``."""
        return sqrt_coefficients(self.bins, self.shift)

    def measure(self, counts: npt.ArrayLike) -> I64:
        """``R' x`` for the clipped counts ``x`` (exact int64: below ``2**61``)."""
        return _toeplitz_times(self.coefficients, _as_counts(counts, self.bins))

    @cached_property
    def decoder(self) -> F64:
        """``D``, the first column of the lower-triangular Toeplitz ``A R'^{-1}``.

        ``d`` (first column of ``R'^{-1}``) by the series-inverse recurrence ``d_0 = 2^{-s}``,
        ``d_n = -2^{-s} Σ_{k=1}^{n} c'_k d_{n-k}``, and ``D = cumsum(d)`` (``A`` is the
        Toeplitz matrix of ones).
        """
        c = self.coefficients.astype(np.float64)
        d = np.zeros(self.bins)
        d[0] = 1.0 / c[0]
        reversed_c = c[::-1].copy()
        for n in range(1, self.bins):
            d[n] = -float(d[:n] @ reversed_c[self.bins - 1 - n : self.bins - 1]) / c[0]
        return np.cumsum(d)

    def decode(self, noisy: I64) -> F64:
        """Prefix sums ``A R'^{-1} y`` from the noisy ``y`` (last axis); post-processing.

        Computed as ``cumsum(x̃) + A R'^{-1} r`` with ``R' x̃ + r = y`` (integer forward
        substitution, :func:`_forward_integer`), exact when ``y = R' x``. If ``y`` is so large
        that the integer path could overflow (a branch on released values only), in floats.
        """
        y = np.asarray(noisy, dtype=np.int64)
        c = self.coefficients
        biggest = int(np.max(np.abs(y))) if y.size else 0
        d1 = float(np.abs(np.diff(self.decoder, prepend=0.0)).sum())
        x_bound = math.ceil(d1 * (biggest + 2 ** (self.shift - 1)) * (1 + 1e-9)) + 2
        if int(c.sum()) * x_bound + biggest < _INT_LIMIT:
            xt, r = _forward_integer(y, c, self.shift)
            whole = np.cumsum(xt, axis=-1).astype(np.float64)
            return whole + _toeplitz_times(self.decoder, r.astype(np.float64))
        return _toeplitz_times(self.decoder, y.astype(np.float64))

    def variance(self) -> F64:
        """Variance of each prefix's error: ``Var(Z) Σ_{j<t} D_j²``.

        ``Σ_{j<t} D_j²`` is the squared norm of row ``t`` of ``A R'^{-1}``.
        """
        return np.cumsum(self.decoder**2) * self.mechanism.variance()

    def halfwidth(self, alpha: float) -> F64:
        """Per prefix, ``h_t`` with ``P(|error_t| >= h_t) <= alpha`` (sub-Gaussian bound)."""
        alpha = _check_alpha(alpha)
        norm2 = np.cumsum(self.decoder**2)
        return gaussian_sum_halfwidth(norm2, float(self.mechanism.effective_sigma2), alpha)


def sensitivity_squared(bins: int, shift: int = SHIFT) -> int:
    """``Δ² = Σ_{k<T} c'_k²``: the squared largest column norm of ``R'`` (its first column)."""
    return sum(v * v for v in _sqrt_coefficients(bins, shift))
