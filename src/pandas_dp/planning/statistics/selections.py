"""Statistics chosen by the exponential mechanism (quantiles), and hierarchy level counts."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, ClassVar, Literal

import numpy as np

from pandas_dp.measures.aggregates import EdgeRanks
from pandas_dp.measures.grids import quantile_candidates
from pandas_dp.mechanisms.quantile import rank_error
from pandas_dp.planning.measurement.choices import SelectPart
from pandas_dp.planning.measurement.keys import MeasurementKey
from pandas_dp.planning.measurement.kinds import (
    BoundEnd,
    LevelCounts,
    ModeChoice,
    NonNullCount,
    QuantileChoice,
    RowCount,
    TopKChoice,
)
from pandas_dp.planning.statistics.base import (
    DOMINATED_ALPHA,
    F64,
    Context,
    Inputs,
    Statistic,
    too_wide,
)

if TYPE_CHECKING:
    from pandas_dp.planning.statistics.base import OnTime
    from pandas_dp.planning.statistics.postprocess import PostProcess


@dataclass(frozen=True)
class Quantile(Statistic):
    """The ``q`` quantile on a public grid, by Smith's (2011) exponential mechanism's weights.

    Sampled by permute-and-flip in pure-ε releases (see
    :func:`~pandas_dp.planning.measurement.choices.quantile_part`).
    """

    q: Fraction = Fraction(1, 2)

    how: ClassVar[str] = "quantile"
    empty_is_nan: ClassVar[bool] = True
    on_time: ClassVar[OnTime] = "point"
    error_in: ClassVar[str] = "ranks"

    def measurements(self, context: Context) -> tuple[MeasurementKey, ...]:
        """One choice among the grid's edges; with ``ci``, also its interval's two ends.

        Then the column's count, when the release measures it anyway (a mean of the same
        column) or ``min_count`` asks for it: a column or group whose noisy count is below
        ``min_count`` gets NaN, as pandas gives for an empty group.
        """
        keys: tuple[MeasurementKey, ...] = (QuantileChoice(self.column, self.q),)
        if context.confidence is not None:
            keys += (
                QuantileChoice(self.column, self.q, side=-1),
                QuantileChoice(self.column, self.q, side=1),
            )
        count = context.count_for(self.column, imputed=False)
        if context.count_quantiles or context.measured(count):
            keys += (count,)
        return keys

    def value(self, inputs: Inputs, post: PostProcess) -> F64:
        """The chosen grid edge (NaN where a measured count is below ``min_count``)."""
        if len(inputs.parts) in (2, 4):  # the last measurement is the group's count
            return post.hide_small(inputs.real(0), inputs.counts(len(inputs.parts) - 1))
        return inputs.real(0)

    def error_weights(
        self, keys: tuple[MeasurementKey, ...], context: Context
    ) -> dict[MeasurementKey, float]:
        """Equal for the estimate and its interval's ends; 1/8 for a count asked for.

        The count only decides which groups look empty, so it needs far less ε than the
        choice itself: with ``ε_i ∝ c_i^(2/3)``, a weight of 1/8 gives it a quarter of the
        median's share (20% of ε alone). A count another statistic measures anyway weighs 0
        here: reusing it must not change the split.
        """
        count = 0.125 if context.count_quantiles else 0.0
        return {key: count if isinstance(key, RowCount | NonNullCount) else 1.0 for key in keys}

    def interval(self, inputs: Inputs, alpha: float) -> tuple[F64, F64]:
        """The two ends (each holds with probability ``1 - α/2``), widened to the estimate.

        The ends cover the sample quantile of the clipped values (``Series.quantile``'s
        linear interpolation) whatever the data's shape; see
        :mod:`pandas_dp.mechanisms.quantile_interval`. Widening an interval to contain the
        released estimate keeps that coverage and never shows an estimate outside its own
        interval.
        """
        point = inputs.real(0)
        return np.minimum(inputs.real(1), point), np.maximum(inputs.real(2), point)

    def preview_error(self, inputs: Inputs, alpha: float) -> float:
        """The rank error exceeded with probability at most ``alpha``."""
        part = inputs.parts[0]
        assert isinstance(part, SelectPart)
        assert isinstance(part.measure, EdgeRanks)
        sensitivity = float(part.mechanism.sensitivity)
        epsilon = float(part.measurement.epsilon)
        measure = part.measure
        count = quantile_candidates(measure.lower, measure.upper, measure.cells, measure.rounding)
        return rank_error(epsilon, count.size, alpha, sensitivity)

    def dominated(self, inputs: Inputs) -> F64:
        """Its interval (``ci``) covers half the bounds, or its measured count is too small.

        Too small: below the count's 95% half-width, or below twice the 95% rank error (the
        chosen edge may be off by half the values). Without ``ci`` and without a count
        (``min_count``), only the choice was measured: nothing to decide from.
        """
        point = inputs.real(0)
        flags = np.zeros(point.shape, dtype=bool)
        if len(inputs.parts) in (3, 4):  # the interval's two ends
            assert inputs.bounds is not None
            interval = self.interval(inputs, DOMINATED_ALPHA)
            flags |= too_wide(interval, inputs.bounds[1] - inputs.bounds[0])
        if len(inputs.parts) in (2, 4):  # the group's count, last
            last = len(inputs.parts) - 1
            flags |= inputs.too_few(last)
            flags |= inputs.counts(last) < 2 * self.preview_error(inputs, DOMINATED_ALPHA)
        return flags

    def notes(self) -> tuple[str, ...]:
        """The mechanism."""
        return ("quantiles: a choice on a grid (sampler below); interval ends: sparse vector",)


@dataclass(frozen=True)
class Median(Quantile):
    """The 0.5 quantile."""

    how: ClassVar[str] = "median"


@dataclass(frozen=True)
class Min(Quantile):
    """A DP minimum: the 0 quantile, the grid edge with about no value below it.

    Every edge between the lower bound and the smallest value scores alike (no value lies
    below any of them), so the release lands anywhere there: towards the bound when the
    data is sparse. Not the true minimum, which no DP release can promise.
    """

    q: Fraction = Fraction(0)

    how: ClassVar[str] = "min"

    def notes(self) -> tuple[str, ...]:
        """What a DP extreme is."""
        side = "below" if self.q == 0 else "above"
        what = f"{self.how}: the {self.q} quantile (a grid edge with about no value {side} it)"
        return (*super().notes(), what)


@dataclass(frozen=True)
class Max(Min):
    """A DP maximum: the 1 quantile, the grid edge with about no value above it (see Min)."""

    q: Fraction = Fraction(1)

    how: ClassVar[str] = "max"


@dataclass(frozen=True)
class Bound(Statistic):
    """One end of a bounds release: a lattice point beyond the ``q`` quantile on ``side``.

    Needs no bounds (the release's bounds are the lattice's ends, ``±2**64``); see
    :mod:`pandas_dp.mechanisms.bounds`.
    """

    q: Fraction = Fraction(999, 1000)
    side: Literal[-1, 1] = 1

    how: ClassVar[str] = "bounds"
    per_group: ClassVar[bool] = True
    on_time: ClassVar[OnTime] = "point"

    def measurements(self, context: Context) -> tuple[MeasurementKey, ...]:
        """One scan."""
        return (BoundEnd(self.column, self.q, side=self.side),)

    def value(self, inputs: Inputs, post: PostProcess) -> F64:
        """The released lattice point."""
        return inputs.real(0)

    def notes(self) -> tuple[str, ...]:
        """The mechanism."""
        return (
            "bounds: sparse-vector scans from 0 outwards over the lattice 0, ±m·2**e "
            "(m in 1, 1.25, 1.5, 1.75; e in -32..63), ±2**64",
        )


@dataclass(frozen=True)
class LevelCount(Statistic):
    """The raw noisy counts of one level of a hierarchy (before consistency)."""

    level: int = 0
    title: str = ""  # the level's name: the margins name, then each column of the hierarchy

    how: ClassVar[str] = "count"
    reads_values: ClassVar[bool] = False
    integer: ClassVar[bool] = True
    error_in: ClassVar[str] = "raw count"

    def measurements(self, context: Context) -> tuple[MeasurementKey, ...]:
        """The row counts of the level's nodes."""
        return (LevelCounts(self.title, level=self.level),)

    def value(self, inputs: Inputs, post: PostProcess) -> F64:
        """The raw counts (the hierarchy's finisher makes them consistent)."""
        return np.asarray(inputs.noisy[0], dtype=np.int64)

    def preview_error(self, inputs: Inputs, alpha: float) -> float:
        """The noise's half-width."""
        return inputs.halfwidth(0, alpha)


@dataclass(frozen=True)
class Choice(Statistic):
    """The ``rounds`` most frequent groups (the mode for one round), by peeling."""

    rounds: int = 1
    mode: bool = False  # released as the one most frequent value, not a list

    how: ClassVar[str] = "top_k"
    reads_values: ClassVar[bool] = False
    per_group: ClassVar[bool] = False

    def measurements(self, context: Context) -> tuple[MeasurementKey, ...]:
        """One choice among the groups."""
        kind = ModeChoice if self.mode else TopKChoice
        return (kind(self.column, rounds=self.rounds),)

    def value(self, inputs: Inputs, post: PostProcess) -> F64:
        """Positions of the chosen groups, most frequent first."""
        return np.asarray(inputs.noisy[0], dtype=np.int64)
