"""Covariances and correlations of pairs of columns, from noisy sums of products.

Each statistic is one pair ``(j, k)`` of a :class:`~pandas_dp.planning.measurement.products.
ProductLayout` (all pairs of a release share its one measurement). Over the rows that hold
both values (or every complete row), with ``n`` rows, sums ``a = Σ z_j``, ``b = Σ z_k``,
``s = Σ z_j z_k`` and squares ``q_j``, ``q_k`` of the scaled values ``z = (x - c) / r``:

- covariance ``r_j r_k (s - a b / n) / (n - ddof)``, as pandas' pairwise ``cov``;
- correlation ``(s - a b / n) / sqrt((q_j - a² / n)(q_k - b² / n))``, as pandas' ``corr``.

Intervals bound every sum a value reads by its noise's quantile at ``α / m`` (``m`` sums:
together they hold with probability at least ``1 - α``), then carry the bounds through the
formula by interval arithmetic: conservative, and exact about what they promise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from pandas_dp.planning.measurement.keys import MeasurementKey
from pandas_dp.planning.measurement.products import PairSums, ProductLayout
from pandas_dp.planning.statistics.base import F64, Context, Inputs, Statistic

if TYPE_CHECKING:
    from pandas_dp.planning.statistics.postprocess import PostProcess

Bounds = tuple[F64, F64]


@dataclass(frozen=True)
class PairCovariance(Statistic):
    """The covariance of columns ``j`` and ``k`` of ``layout`` (``j == k``: a variance)."""

    layout: ProductLayout | None = None
    j: int = 0
    k: int = 0
    ddof: int = 1
    min_periods: float = 1.0

    how: ClassVar[str] = "cov"
    #: Sums a value reads (each interval bound holds at ``α / reads``).
    reads: ClassVar[int] = 4

    def measurements(self, context: Context) -> tuple[MeasurementKey, ...]:
        """The release's one measurement of sums of products."""
        assert self.layout is not None
        return (self.layout.key,)

    @property
    def sums(self) -> PairSums:
        """Where this pair's sums sit in the measurement."""
        assert self.layout is not None
        return self.layout.pair(self.j, self.k)

    @property
    def scale(self) -> float:
        """``r_j r_k``: from products of scaled values to the columns' units."""
        assert self.layout is not None
        (lj, uj), (lk, uk) = self.layout.bounds[self.j], self.layout.bounds[self.k]
        return (uj - lj) / 2 * ((uk - lk) / 2)

    def value(self, inputs: Inputs, post: PostProcess | None) -> F64:
        """One value per group; NaN where the noisy row count is below ``min_periods``."""
        sums = _sums(inputs)
        return self._hidden(sums[:, self.sums.rows], self._point(sums))

    def _point(self, sums: F64) -> F64:
        at = self.sums
        n, a, b, s = (sums[:, i] for i in (at.rows, at.first, at.second, at.products))
        with np.errstate(all="ignore"):
            return (s - a * b / n) / (n - self.ddof) * self.scale

    def _hidden(self, n: F64, values: F64) -> F64:
        small = (n < max(self.min_periods, 1.0)) | (n - self.ddof <= 0)
        return np.where(small, np.nan, values)

    def interval(self, inputs: Inputs, alpha: float) -> Bounds:
        """Bounds that hold together with probability at least ``1 - alpha``."""
        sums = _sums(inputs)
        width = inputs.halfwidth(0, alpha / self.reads)
        lower, upper = self._bounds(sums, width)
        n = sums[:, self.sums.rows]
        return self._hidden(n, lower), self._hidden(n, upper)

    def _bounds(self, sums: F64, width: float) -> Bounds:
        at = self.sums
        n, a, b, s = (
            _around(sums[:, i], width) for i in (at.rows, at.first, at.second, at.products)
        )
        n = (np.maximum(n[0], self.ddof + 1.0), np.maximum(n[1], self.ddof + 1.0))
        centred = _sub(s, _div(_mul(a, b), n))
        lower, upper = _div(centred, (n[0] - self.ddof, n[1] - self.ddof))
        # Values in [-1, 1] have a covariance within n / (n - ddof) <= 2 (ddof <= 1) of 0.
        reach = 2.0 * self.scale
        return np.maximum(lower * self.scale, -reach), np.minimum(upper * self.scale, reach)

    def planned_error(
        self, inputs: Inputs, alpha: float, expected_rows: float, mean: float | None = None
    ) -> float:
        """The interval's half-width at ``expected_rows`` rows of centred, uniform values."""
        width = inputs.halfwidth(0, alpha / self.reads)
        sums = np.zeros((1, len(inputs.parts[0].layout.monomials)))  # type: ignore[union-attr]
        at = self.sums
        sums[0, at.rows] = expected_rows
        sums[0, [at.first_squares, at.second_squares]] = expected_rows / 3
        lower, upper = self._bounds(sums, width)
        return float((upper[0] - lower[0]) / 2)


@dataclass(frozen=True)
class PairCorrelation(PairCovariance):
    """The Pearson correlation of columns ``j`` and ``k`` (``j == k``: 1, NaN if constant)."""

    how: ClassVar[str] = "corr"
    reads: ClassVar[int] = 6

    def _point(self, sums: F64) -> F64:
        n, a, b, s, qa, qb = (sums[:, i] for i in self.sums.positions)
        with np.errstate(all="ignore"):
            first, second = qa - a * a / n, qb - b * b / n
            positive = (first > 0) & (second > 0)
            if self.j == self.k:
                return np.where(first > 0, 1.0, np.nan)
            ratio = (s - a * b / n) / np.sqrt(np.where(positive, first * second, np.nan))
            return np.clip(ratio, -1.0, 1.0)

    def _bounds(self, sums: F64, width: float) -> Bounds:
        n, a, b, s, qa, qb = (_around(sums[:, i], width) for i in self.sums.positions)
        n = (np.maximum(n[0], 2.0), np.maximum(n[1], 2.0))
        if self.j == self.k:
            ones = np.ones_like(n[0])
            return ones, ones
        centred = _sub(s, _div(_mul(a, b), n))
        first = _sub(qa, _div(_mul(a, a), n))
        second = _sub(qb, _div(_mul(b, b), n))
        known = (first[0] > 0) & (second[0] > 0)  # both variances surely positive
        with np.errstate(all="ignore"):
            low = np.sqrt(np.where(known, first[0] * second[0], 1.0))
            high = np.sqrt(np.where(known, first[1] * second[1], 1.0))
            lower, upper = _div(centred, (low, high))
        lower = np.where(known, np.clip(lower, -1.0, 1.0), -1.0)
        upper = np.where(known, np.clip(upper, -1.0, 1.0), 1.0)
        return lower, upper


def _sums(inputs: Inputs) -> F64:
    """The noisy sums in products of scaled values, one row per group."""
    values = inputs.real(0)
    return values.reshape(-1, values.shape[-1]) if values.ndim else values.reshape(1, -1)


def _around(values: F64, width: float) -> Bounds:
    return values - width, values + width


def _sub(x: Bounds, y: Bounds) -> Bounds:
    return x[0] - y[1], x[1] - y[0]


def _mul(x: Bounds, y: Bounds) -> Bounds:
    corners = np.stack([x[0] * y[0], x[0] * y[1], x[1] * y[0], x[1] * y[1]])
    return corners.min(axis=0), corners.max(axis=0)


def _div(x: Bounds, y: Bounds) -> Bounds:
    """``x / y`` for ``y`` positive."""
    return _mul(x, (1.0 / y[1], 1.0 / y[0]))
