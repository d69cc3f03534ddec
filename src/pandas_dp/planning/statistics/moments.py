"""Counts, sums and means of noisy counts and lattice sums (spreads: :mod:`.spreads`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

import numpy as np

from pandas_dp.measures.aggregates import Aggregate
from pandas_dp.mechanisms.accuracy import (
    combined_laplace_halfwidth,
    ratio_interval,
)
from pandas_dp.mechanisms.laplace import DiscreteLaplace
from pandas_dp.planning.measurement.keys import MeasurementKey
from pandas_dp.planning.measurement.kinds import CentredSum, PlainSum
from pandas_dp.planning.measurement.parts import Part
from pandas_dp.planning.statistics.base import DOMINATED_ALPHA, F64, Context, Inputs, Statistic
from pandas_dp.planning.statistics.planning import mean_halfwidth
from pandas_dp.planning.statistics.postprocess import PostProcess

if TYPE_CHECKING:
    from pandas_dp.planning.statistics.base import OnTime


def _clamp_by_sign(
    lower: F64, upper: F64, bounds: tuple[float, float] | None, count: bool
) -> tuple[F64, F64]:
    """An interval for a count or a sum of values of one sign cannot cross zero."""
    if count or (bounds is not None and bounds[0] >= 0):
        lower, upper = np.maximum(lower, 0.0), np.maximum(upper, 0.0)
    if bounds is not None and bounds[1] <= 0:
        lower, upper = np.minimum(lower, 0.0), np.minimum(upper, 0.0)
    return lower, upper


@dataclass(frozen=True)
class Count(Statistic):
    """Rows (``column`` None) or non-missing values of ``column``, with noise."""

    how: ClassVar[str] = "count"
    reads_values: ClassVar[bool] = False
    integer: ClassVar[bool] = True
    margin: ClassVar[Literal["sum", "pooled", "none"]] = "sum"
    group_count: ClassVar[bool] = True

    def measurements(self, context: Context) -> tuple[MeasurementKey, ...]:
        """One count: of rows, or of the column's values when it may hold missing ones."""
        return (self.weigh(context.count_for(self.column, imputed=False)),)

    def value(self, inputs: Inputs, post: PostProcess) -> F64:
        """The noisy count, post-processed as asked (clamped, fitted to a total)."""
        return post.apply(np.asarray(inputs.noisy[0], dtype=np.int64))

    def interval(self, inputs: Inputs, alpha: float) -> tuple[F64, F64]:
        """The noise's exact interval, clamped at 0."""
        raw, width = inputs.real(0), inputs.halfwidth(0, alpha)
        return _clamp_by_sign(raw - width, raw + width, None, count=True)

    def preview_error(self, inputs: Inputs, alpha: float) -> float:
        """The noise's half-width."""
        return inputs.halfwidth(0, alpha)


@dataclass(frozen=True)
class Sum(Statistic):
    """A column's sum, each value clipped to the bounds and rounded to a public lattice.

    Measured on its own (a plain lattice sum), or, when the release measures the column's
    centred sum and count anyway (for a mean or a spread), derived from them for free:
    ``sum = centre × count + centred sum``, which spends no ε of its own and leaves more
    for the measurements it shares.
    """

    how: ClassVar[str] = "sum"
    margin: ClassVar[Literal["sum", "pooled", "none"]] = "sum"
    on_time: ClassVar[OnTime] = "total"

    def measurements(self, context: Context) -> tuple[MeasurementKey, ...]:
        """The plain lattice sum, or the centred sum and the count already measured."""
        centred = self.weigh(CentredSum(self.column))
        if not context.measured(centred):
            return (self.weigh(PlainSum(self.column)),)
        count = context.count_for(self.column, imputed=context.imputed(self.column))
        return centred, self.weigh(count)

    def value(self, inputs: Inputs, post: PostProcess) -> F64:
        """The noisy sum in the column's units."""
        if len(inputs.parts) == 1:
            return inputs.real(0)
        return _centre(inputs) * inputs.counts(1) + inputs.real(0)

    def interval(self, inputs: Inputs, alpha: float) -> tuple[F64, F64]:
        """The noise's interval widened by the worst rounding (see ``Part.halfwidth``).

        A derived sum's interval holds when both of its measurements are within their
        See :func:`_derived_halfwidth`.
        """
        return _clamp_by_sign(*_sum_range(inputs, alpha), inputs.bounds, count=False)

    def preview_error(self, inputs: Inputs, alpha: float) -> float:
        """Noise and rounding half-width."""
        if len(inputs.parts) == 1:
            return inputs.halfwidth(0, alpha)
        return _derived_halfwidth(inputs, alpha)

    def error_weights(
        self, keys: tuple[MeasurementKey, ...], context: Context
    ) -> dict[MeasurementKey, float]:
        """Plain: its sensitivity. Derived: the centred sum's, and |centre| × the count's."""
        lower, upper = context.bounds_of(self.column)
        if len(keys) == 1:
            return {keys[0]: max(abs(lower), abs(upper))}
        return {keys[0]: (upper - lower) / 2, keys[1]: abs(upper + lower) / 2}


def _centre(inputs: Inputs) -> float:
    centred = inputs.parts[0]
    assert isinstance(centred, Part)
    return centre_of(centred)


def _sum_range(inputs: Inputs, alpha: float) -> tuple[F64, F64]:
    if len(inputs.parts) == 1:
        raw, width = inputs.real(0), inputs.halfwidth(0, alpha)
        return raw - width, raw + width
    raw = inputs.real(0) + _centre(inputs) * inputs.counts(1)
    width = _derived_halfwidth(inputs, alpha)
    return raw - width, raw + width


def _derived_halfwidth(inputs: Inputs, alpha: float) -> float:
    """Half-width of ``centred sum + centre × count`` at level ``alpha``.

    With Laplace noise on both, the exact quantile of the combined noise (the two laws
    convolved, :func:`~pandas_dp.mechanisms.accuracy.combined_laplace_halfwidth`) plus the
    worst rounding. Otherwise a union bound: both measurements lie within their half-widths
    at levels ``a`` and ``alpha - a``, with ``a`` the one of 19 public levels that gives the
    narrowest interval (conservative, like the mean's).
    """
    centred, count = inputs.parts[0], inputs.parts[1]
    assert isinstance(centred, Part)
    assert isinstance(count, Part)
    centre = abs(_centre(inputs))
    if isinstance(centred.mechanism, DiscreteLaplace) and isinstance(
        count.mechanism, DiscreteLaplace
    ):
        exact = combined_laplace_halfwidth(
            float(centred.mechanism.effective_scale), math.ldexp(1.0, centred.exponent),
            float(count.mechanism.effective_scale), centre * math.ldexp(1.0, count.exponent),
            alpha,
        )  # fmt: skip
        if exact is not None:
            return exact + centred.allowance() + centre * count.allowance()
    return min(
        inputs.halfwidth(0, alpha * k / 20) + centre * inputs.halfwidth(1, alpha * (20 - k) / 20)
        for k in range(1, 20)
    )


def centre_of(part: Part) -> float:
    """The public centre of a centred sum: the lattice point nearest the bounds' midpoint.

    A weighted centred sum has its own centre, the midpoint itself.
    """
    if part.centre is not None:
        return part.centre
    assert part.lattice is not None
    return part.lattice.to_real(part.lattice.offset)


def mean_from(
    centred: Part, sums: Aggregate, counts: Aggregate | F64, bounds: tuple[float, float]
) -> F64:
    """Post-process noisy centred sums and counts into means: never 0/0, always in bounds.

    ``centre + noisy centred sum / max(noisy count, 1)``, clipped to ``bounds``.
    """
    denominators = np.maximum(np.asarray(counts, dtype=np.float64), 1.0)
    means = centre_of(centred) + np.asarray(centred.to_real(sums), dtype=np.float64) / denominators
    return np.asarray(np.clip(means, *bounds), dtype=np.float64)


@dataclass(frozen=True)
class Mean(Statistic):
    """``centre + noisy centred sum / max(noisy count, 1)``, clipped to the bounds."""

    how: ClassVar[str] = "mean"
    empty_is_nan: ClassVar[bool] = True
    margin: ClassVar[Literal["sum", "pooled", "none"]] = "pooled"
    on_time: ClassVar[OnTime] = "point"

    def measurements(self, context: Context) -> tuple[MeasurementKey, ...]:
        """The centred sum, then the count (of rows when missing values are imputed)."""
        imputed = context.imputed(self.column)
        count = context.count_for(self.column, imputed=imputed)
        return self.weigh(CentredSum(self.column)), self.weigh(count)

    def value(self, inputs: Inputs, post: PostProcess) -> F64:
        """See :func:`mean_from`; NaN where the noisy count is below ``min_count``."""
        assert inputs.bounds is not None
        centred = inputs.parts[0]
        assert isinstance(centred, Part)
        means = mean_from(centred, inputs.noisy[0], inputs.counts(1), inputs.bounds)
        return post.hide_small(means, inputs.counts(1))

    def interval(self, inputs: Inputs, alpha: float) -> tuple[F64, F64]:
        """Both measurements within their half-widths (α/2 each), the ratio's range."""
        assert inputs.bounds is not None
        centred = inputs.parts[0]
        assert isinstance(centred, Part)
        centre = centre_of(centred)
        reach = (centre - inputs.bounds[0], inputs.bounds[1] - centre)
        lower, upper = ratio_interval(
            inputs.real(0), inputs.halfwidth(0, alpha / 2),
            inputs.counts(1), inputs.halfwidth(1, alpha / 2), (-reach[0], reach[1]),
        )  # fmt: skip
        return centre + lower, centre + upper

    def planned_error(
        self, inputs: Inputs, alpha: float, expected_rows: float, mean: float | None = None
    ) -> float:
        """See :func:`~pandas_dp.planning.statistics.planning.mean_halfwidth`."""
        centred = inputs.parts[0]
        assert isinstance(centred, Part)
        position = None if mean is None else float(mean) - centre_of(centred)
        a, b = inputs.halfwidth(0, alpha / 2), inputs.halfwidth(1, alpha / 2)
        return mean_halfwidth(inputs.reach, a, b, float(expected_rows), position)

    def dominated(self, inputs: Inputs) -> F64:
        """A noisy count below its 95% half-width, or a 95% interval over half the bounds."""
        assert inputs.bounds is not None
        interval = self.interval(inputs, DOMINATED_ALPHA)
        return inputs.dominated(1, interval, inputs.bounds[1] - inputs.bounds[0])

    def error_weights(
        self, keys: tuple[MeasurementKey, ...], context: Context
    ) -> dict[MeasurementKey, float]:
        """Both weigh ``h``, half the bounds' width: equal shares when alone.

        ``mean ≈ centre + C/n``: ``∂/∂C = 1/n`` (sensitivity ``h``) and
        ``∂/∂N = -(mean - centre)/n`` with ``|mean - centre| <= h`` at worst (sensitivity
        1); the common ``1/n`` drops out.
        """
        lower, upper = context.bounds_of(self.column)
        return dict.fromkeys(keys, (upper - lower) / 2)

    def notes(self) -> tuple[str, ...]:
        """The mean's formula."""
        return ("mean = centre + noisy centred sum / max(noisy count, 1), clipped to bounds",)
