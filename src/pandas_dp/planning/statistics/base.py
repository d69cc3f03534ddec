"""The statistic protocol: what one requested statistic needs and how it is computed.

A statistic names the noisy measurements it is computed from (by
:class:`~pandas_dp.planning.measurement.keys.MeasurementKey`), turns their released values into its
own values and, where it has one, a confidence interval, and states its error for a preview.
The planner shares measurements between statistics and calibrates their noise; a statistic
never sees the data or the budget.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Literal, Protocol

import numpy as np

from pandas_dp.measures.aggregates import Aggregate
from pandas_dp.planning.measurement.choices import AnyPart
from pandas_dp.planning.measurement.keys import MeasurementKey

if TYPE_CHECKING:
    from pandas_dp.planning.statistics.postprocess import PostProcess

#: How a statistic's values relate to a time column: positions on its axis (a mean or a
#: quantile of datetimes is a datetime), lengths (a standard deviation is a timedelta), a
#: total (defined for timedeltas only, as in pandas) or undefined (None: refused).
OnTime = Literal["point", "span", "total"] | None

F64 = np.ndarray

#: A ratio, spread or quantile is dominated by its error when its 95% interval (from noisy
#: values and public parameters) covers at least this share of the range it can take.
DOMINATED_SHARE = 0.5
#: The level of the intervals and half-widths the NoiseDominatedWarning rules read.
DOMINATED_ALPHA = 0.05


class Context(Protocol):
    """What a statistic may ask about public inputs when choosing its measurements."""

    def count_for(self, column: Hashable | None, *, imputed: bool) -> MeasurementKey:
        """The count that goes with ``column``: rows, or its non-missing values."""

    def imputed(self, column: Hashable) -> bool:
        """Whether missing values of ``column`` are replaced by a public ``fillna``."""

    def measured(self, key: MeasurementKey) -> bool:
        """Whether another statistic of the release measures ``key`` anyway."""

    def bounds_of(self, column: Hashable) -> tuple[float, float]:
        """The public bounds of ``column`` (for statistics that read values)."""

    @property
    def confidence(self) -> float | None:
        """The confidence level of the release's intervals (``ci``), if it has them."""

    @property
    def count_quantiles(self) -> bool:
        """Whether quantiles measure their (groups') counts (``min_count`` given)."""


@dataclass(frozen=True)
class Inputs:
    """A statistic's measurements (in the order it asked for them) and their noisy values.

    ``noisy`` is empty in a preview, which reads no data.
    """

    parts: tuple[AnyPart, ...]
    bounds: tuple[float, float] | None = None
    noisy: tuple[Aggregate, ...] = ()

    def real(self, position: int) -> F64:
        """The noisy value of measurement ``position`` in the column's units, as float64."""
        part = self.parts[position]
        return np.asarray(part.to_real(self.noisy[position]), dtype=np.float64)

    def counts(self, position: int) -> F64:
        """The noisy count of measurement ``position`` as float64 (weighted: in weight units)."""
        return self.real(position)

    def halfwidth(self, position: int, alpha: float) -> float:
        """Error bound of measurement ``position`` at level ``alpha`` (column units)."""
        return self.parts[position].halfwidth(alpha)

    @property
    def reach(self) -> float:
        """Half the width of the bounds."""
        assert self.bounds is not None
        return (self.bounds[1] - self.bounds[0]) / 2

    def too_few(self, count: int) -> F64:
        """Where the noisy count (measurement ``count``) is below its own 95% half-width.

        There the group may well be empty.
        """
        return self.counts(count) < self.halfwidth(count, DOMINATED_ALPHA)

    def dominated(self, count: int, interval: tuple[F64, F64], span: float) -> F64:
        """The rule of means and spreads: :meth:`too_few` or :func:`too_wide`."""
        return np.asarray(too_wide(interval, span) | self.too_few(count), dtype=bool)


def too_wide(interval: tuple[F64, F64], span: float) -> F64:
    """Where a 95% ``interval`` covers at least :data:`DOMINATED_SHARE` of ``span``.

    ``span`` is the range the value can take. With :meth:`Inputs.too_few`, the
    NoiseDominatedWarning rules of every statistic (post-processing of noisy values).
    """
    lower, upper = interval
    return np.asarray(upper - lower, dtype=np.float64) >= DOMINATED_SHARE * span


@dataclass(frozen=True)
class Statistic(ABC):
    """One requested statistic: ``name`` in the result, of ``column`` (None: the rows).

    Subclasses set :attr:`how` (the name users type) and implement :meth:`measurements`
    and :meth:`value`; :meth:`interval`, :meth:`preview_error` and :meth:`notes` have
    defaults. Register a new statistic in :data:`pandas_dp.planning.statistics.STATISTICS`.
    """

    name: Hashable
    column: Hashable | None = None

    #: The name users type in ``agg`` (``"count"``, ``"mean"``, ...).
    how: ClassVar[str]
    #: Whether the statistic reads a column's values (needing a numeric dtype and bounds).
    reads_values: ClassVar[bool] = True
    #: Whether its values are counts, to which count post-processing applies.
    integer: ClassVar[bool] = False
    #: How :meth:`preview_error` measures the error: in the column's units or in ranks.
    error_in: ClassVar[str] = "column"
    #: Whether it has one value per group (a choice among the groups has one in all).
    per_group: ClassVar[bool] = True
    #: Whether only an in-memory engine can compute it (refused on Dask before any charge).
    in_memory_only: ClassVar[bool] = False
    #: How a margin (a crosstab's "All") follows from the cells: the sum of the released
    #: cells (counts, sums), the statistic of the pooled measurements (means, spreads), or
    #: not at all (quantiles, distinct counts).
    margin: ClassVar[Literal["sum", "pooled", "none"]] = "none"
    #: What its values are on a datetime or timedelta column (see
    #: :data:`pandas_dp.api.temporal.OnTime`); None: refused on such columns, as in pandas.
    on_time: ClassVar[OnTime] = None
    #: Whether the statistic describes its group's values (a mean, a spread, a quantile), so
    #: that it is NaN, interval too, where its group looks empty: its own noisy count, or a
    #: count of the same rows (or of its column) in the same table, below ``min_count``
    #: (see :func:`~pandas_dp.api.release.finish.hide_where_empty`).
    empty_is_nan: ClassVar[bool] = False
    #: Whether it counts its group's rows or present values: the count ``min_count`` reads
    #: (:func:`~pandas_dp.api.release.finish.hide_where_empty`); distinct values do not.
    group_count: ClassVar[bool] = False

    @abstractmethod
    def measurements(self, context: Context) -> tuple[MeasurementKey, ...]:
        """The measurements this statistic is computed from, in the order it reads them."""

    @abstractmethod
    def value(self, inputs: Inputs, post: PostProcess) -> F64:
        """The released statistic (one value per group): free post-processing."""

    def interval(self, inputs: Inputs, alpha: float) -> tuple[F64, F64]:
        """A ``1 - alpha`` interval for the exact (clipped, lattice-rounded) statistic."""
        raise NotImplementedError(f"{self.how} has no confidence interval")

    def preview_error(self, inputs: Inputs, alpha: float) -> float:
        """The error a preview reports (NaN where it depends on private values)."""
        return math.nan

    def planned_error(
        self, inputs: Inputs, alpha: float, expected_rows: float, mean: float | None = None
    ) -> float:
        """The error at a public planning row count (``expected_rows``; per group).

        Statistics whose error depends on their count (means, spreads) give the largest
        over what the bounds allow (or at the planning ``mean``); others their
        :meth:`preview_error`, which needs no count.
        """
        return self.preview_error(inputs, alpha)

    def dominated(self, inputs: Inputs) -> F64 | None:
        """Where the released value is dominated by its error (one flag per group).

        Decided from the noisy values in ``inputs`` and public parameters only (bounds, ε,
        the grid): post-processing, so it may decide a
        :class:`~pandas_dp.errors.NoiseDominatedWarning`. None: the statistic has no rule
        (counts and sums have theirs in the runner).
        """
        return None

    def error_weights(
        self, keys: tuple[MeasurementKey, ...], context: Context
    ) -> dict[MeasurementKey, float]:
        """How each measurement's noise enters this statistic's error, for splitting ε.

        ``c_i``: the first-order coefficient of measurement ``i`` times its sensitivity, in
        this statistic's units, up to a common factor (see
        :mod:`pandas_dp.planning.measurement.split`). By default all equal: alone, the
        statistic's measurements share ε equally.
        """
        return dict.fromkeys(keys, 1.0)

    def notes(self) -> tuple[str, ...]:
        """Lines for the ledger note that explain the post-processing."""
        return ()

    def weigh(self, key: MeasurementKey) -> MeasurementKey:
        """The measurement as this statistic reads it: unweighted here (see ``weighted``)."""
        return key


@dataclass(frozen=True)
class GivenMeasurements(Statistic):
    """A statistic of whole-release measurements its query planned and passes in (``keys``).

    Tables, synthetic rows and running totals read no column's values of their own; their
    query measures first and names the measurements here. ``keys`` is keyword-only so that
    subclasses' own fields keep their positions.
    """

    keys: tuple[MeasurementKey, ...] = field(default=(), kw_only=True)

    reads_values: ClassVar[bool] = False

    def measurements(self, context: Context) -> tuple[MeasurementKey, ...]:
        """The measurements given in ``keys``."""
        return self.keys
