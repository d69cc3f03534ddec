"""Spreads: the variance, standard deviation and standard error of the mean.

From noisy centred squares, a centred sum and a count (see :mod:`.moments` for those).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

import numpy as np

from pandas_dp.mechanisms.accuracy import variance_interval
from pandas_dp.mechanisms.quantile import variance_from
from pandas_dp.planning.measurement.keys import MeasurementKey
from pandas_dp.planning.measurement.kinds import CentredSum, Squares
from pandas_dp.planning.statistics.base import DOMINATED_ALPHA, F64, Context, Inputs, Statistic
from pandas_dp.planning.statistics.planning import spread_moments
from pandas_dp.planning.statistics.postprocess import PostProcess

if TYPE_CHECKING:
    from pandas_dp.planning.statistics.base import OnTime


@dataclass(frozen=True)
class Var(Statistic):
    """``(S2 - S1²/N) / max(N - ddof, 1)`` from three noisy moments, clamped."""

    ddof: int = 1

    how: ClassVar[str] = "var"
    empty_is_nan: ClassVar[bool] = True
    margin: ClassVar[Literal["sum", "pooled", "none"]] = "pooled"

    def measurements(self, context: Context) -> tuple[MeasurementKey, ...]:
        """Centred squares, centred sum, count."""
        imputed = context.imputed(self.column)
        return (
            Squares(self.column),
            CentredSum(self.column),
            context.count_for(self.column, imputed=imputed),
        )

    def variance(self, inputs: Inputs) -> F64:
        """The clamped variance (free post-processing of the three moments)."""
        return variance_from(
            inputs.noisy[2], inputs.real(1), inputs.real(0), inputs.reach, self.ddof
        )

    def variance_interval(self, inputs: Inputs, alpha: float) -> tuple[F64, F64]:
        """Interval arithmetic over the three moments, each within its half-width (α/3)."""
        third = alpha / 3
        return variance_interval(
            inputs.counts(2), inputs.halfwidth(2, third),
            inputs.real(1), inputs.halfwidth(1, third),
            inputs.real(0), inputs.halfwidth(0, third),
            inputs.reach, self.ddof,
        )  # fmt: skip

    def value(self, inputs: Inputs, post: PostProcess) -> F64:
        """The variance; NaN where the noisy count is below ``min_count``."""
        return self.hidden(self.variance(inputs), inputs, post)

    def hidden(self, values: F64, inputs: Inputs, post: PostProcess) -> F64:
        """``values`` with NaN where the noisy count is below ``min_count``."""
        return post.hide_small(values, inputs.counts(2))

    def interval(self, inputs: Inputs, alpha: float) -> tuple[F64, F64]:
        """See :meth:`variance_interval`."""
        return self.variance_interval(inputs, alpha)

    def dominated(self, inputs: Inputs) -> F64:
        """A noisy count below its 95% half-width, or a wide 95% interval of the spread.

        Judged on the standard deviation's scale for all three (variance, standard
        deviation, standard error: the same measurements): the square roots of the
        variance's interval ends cover at least half of ``[0, (upper - lower)/2]``.
        """
        lower, upper = self.variance_interval(inputs, DOMINATED_ALPHA)
        return inputs.dominated(2, (np.sqrt(lower), np.sqrt(upper)), inputs.reach)

    def planned_error(
        self, inputs: Inputs, alpha: float, expected_rows: float, mean: float | None = None
    ) -> float:
        """The largest distance from the exact value to the interval's ends, over data.

        Over a grid of the data the bounds allow at ``expected_rows`` rows (see
        :func:`~pandas_dp.planning.statistics.planning.spread_moments`), by this statistic's own
        interval: the same rule for the variance, the standard deviation and the sem.
        """
        planned = spread_moments(inputs, float(expected_rows))
        lower, upper = self.interval(planned, alpha)
        value = self.value(planned, PostProcess())
        return float(np.max(np.maximum(upper - value, value - lower)))

    def notes(self) -> tuple[str, ...]:
        """The variance's formula."""
        return (
            "var = (noisy squares - noisy centred sum²/N) / max(N - ddof, 1), N = max(noisy "
            "count, 1), clipped to [0, ((upper - lower)/2)²]",
        )


@dataclass(frozen=True)
class Std(Var):
    """The square root of :class:`Var` (same measurements, same cost)."""

    how: ClassVar[str] = "std"
    on_time: ClassVar[OnTime] = "span"

    def value(self, inputs: Inputs, post: PostProcess) -> F64:
        """The standard deviation."""
        return self.hidden(np.sqrt(self.variance(inputs)), inputs, post)

    def interval(self, inputs: Inputs, alpha: float) -> tuple[F64, F64]:
        """Square roots of the variance's interval ends."""
        lower, upper = self.variance_interval(inputs, alpha)
        return np.sqrt(lower), np.sqrt(upper)


@dataclass(frozen=True)
class Sem(Var):
    """The standard error of the mean, ``sqrt(var / N)``, as ``Series.sem`` (ddof 1)."""

    how: ClassVar[str] = "sem"

    def value(self, inputs: Inputs, post: PostProcess) -> F64:
        """From the same three moments as :class:`Var`; ``N = max(noisy count, 1)``."""
        sem = np.sqrt(self.variance(inputs) / np.maximum(inputs.counts(2), 1.0))
        return self.hidden(sem, inputs, post)

    def interval(self, inputs: Inputs, alpha: float) -> tuple[F64, F64]:
        """The variance's interval over the count's, on the event both hold (α/3 each)."""
        lower, upper = self.variance_interval(inputs, alpha)
        count, width = inputs.counts(2), inputs.halfwidth(2, alpha / 3)
        n_low, n_high = np.maximum(count - width, 1.0), np.maximum(count + width, 1.0)
        return np.sqrt(lower / n_high), np.sqrt(upper / n_low)
