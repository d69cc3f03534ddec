"""Calibrated choices among public candidates: quantiles, top-k, interval ends, keys.

The counterparts of :mod:`.parts` for mechanisms that choose rather than add noise to a
value: the exponential mechanism (quantiles, mode, top-k), the sparse vector technique (the
ends of a quantile's interval) and the optimal partition-selection rule (which keys to
release). Everything here depends on public parameters only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from pandas_dp.accounting.events import Measurement, SelectionMeasurement
from pandas_dp.measures.aggregates import Aggregate, CellCounts, EdgeRanks, Measure, Rows
from pandas_dp.measures.grids import LATTICE_END, Rounding, quantile_candidates, scan_points
from pandas_dp.mechanisms.bounds import bound_scores, margin, scan_index
from pandas_dp.mechanisms.exponential import ExponentialMechanism
from pandas_dp.mechanisms.laplace import DiscreteLaplace
from pandas_dp.mechanisms.lattice import Lattice
from pandas_dp.mechanisms.optimal_selection import keep, keep_table
from pandas_dp.mechanisms.quantile import DEFAULT_CELLS, grid_value, quantile_scores
from pandas_dp.mechanisms.quantile_interval import (
    Side,
    end_index,
    first_crossing,
    scan_noise,
    scan_scores,
    threshold_for,
)
from pandas_dp.planning.measurement.parts import ROW, Part
from pandas_dp.units import Contribution

if TYPE_CHECKING:
    from pandas_dp.planning.noise import NoiseSource


def quantile_part(
    column: Hashable,
    bounds: tuple[float, float],
    q: Fraction,
    epsilon: Fraction,
    *,
    cells: int = DEFAULT_CELLS,
    rounding: Rounding = "grid",
    label: str = "quantile",
    contribution: Contribution = ROW,
    flip: bool = True,
) -> SelectPart:
    """Smith's exponential-mechanism quantile over public candidates, by permute-and-flip.

    The candidates are the edges of a grid of ``cells`` cells on the bounds, plus (unless
    ``rounding`` is ``"grid"``) the round values within them
    (:func:`~pandas_dp.measures.grids.quantile_candidates`): public inputs only. Candidate
    ``c`` scores ``max(#{x < c} - q n, q n - #{x <= c})``, the distance from ``q n`` to its
    rank interval, negative inside it (see :mod:`pandas_dp.mechanisms.quantile`).
    Sensitivity: a row added below ``c`` moves both counts by 1 and ``q n`` by ``q``, at
    ``c`` only ``#{x <= c}``, above it only ``q n``; so ``max(q, 1 - q)`` per row (1/2 for
    the median), ``l1`` times that per privacy unit.

    The sampler is permute-and-flip (``flip``, the default): the exponential mechanism's
    weights ``exp(-ε s / (2Δ))`` as independent acceptance coins, a uniform accepted candidate
    released; ε-DP as the exponential mechanism is, and never a larger expected score
    (McKenna & Sheldon 2020; :func:`~pandas_dp.mechanisms.exponential.sample_permute_and_flip`).
    The planner switches it to the exponential mechanism (:func:`by_exponential`) where the
    choice is priced by bounded range (a zCDP session: ``ε²/8`` holds for the exponential
    mechanism, not for permute-and-flip) and where one release would flip more than
    :data:`FLIP_MAX_COINS` coins (public groups × candidates); both decisions read public
    inputs only.
    """
    lower, upper = bounds
    sensitivity = contribution.l1 * max(q, 1 - q)
    mechanism = ExponentialMechanism(epsilon, sensitivity, flip=flip)
    record = SelectionMeasurement(
        label, mechanism.name, epsilon, contribution.l1, 2 * sensitivity / epsilon
    )
    candidates = quantile_candidates(lower, upper, cells, rounding)

    def to_real(index: Any) -> Any:
        return candidates[np.asarray(index, dtype=np.int64)]

    return SelectPart(
        label, EdgeRanks(column, lower, upper, cells, rounding), mechanism, record,
        lambda counts: quantile_scores(np.asarray(counts, dtype=np.int64), q), to_real,
        candidates=len(candidates),
    )  # fmt: skip


#: Permute-and-flip flips one coin per candidate and group; a release whose public groups ×
#: candidates exceed this many uses the exponential mechanism (a few proposals per group).
FLIP_MAX_COINS = 1 << 23


def by_exponential(part: SelectPart) -> SelectPart:
    """``part`` sampled by the exponential mechanism instead of permute-and-flip.

    The same ε, sensitivity and rate; its record names the exponential mechanism.
    """
    mechanism = dataclasses.replace(part.mechanism, flip=False)
    record = dataclasses.replace(part.measurement, mechanism=mechanism.name)
    return dataclasses.replace(part, mechanism=mechanism, measurement=record)


@dataclass(frozen=True)
class SelectPart:
    """A choice among public candidates by the exponential mechanism (e.g. a quantile).

    ``score`` turns the exact aggregate into integer score numerators (one row per group,
    one column per candidate) and their common denominator; ``to_real`` turns chosen
    candidate indices into released values. ``candidates`` is their number per group when
    it is public and fixed (quantiles), else 0.
    """

    label: str
    measure: Measure
    mechanism: ExponentialMechanism
    measurement: Measurement
    score: Callable[[Aggregate], tuple[np.ndarray, int]]
    to_real: Callable[[Any], Any]
    lattice: Lattice | None = None
    rounds: int = 1
    candidates: int = 0

    @property
    def exponent(self) -> int:
        """Selections are not on a noise lattice."""
        return 0

    def release(self, exact: Aggregate, source: NoiseSource) -> Aggregate:
        """Choose one candidate per group, or ``rounds`` distinct ones by peeling.

        Peeling (top-k): each round chooses among the candidates not chosen yet with
        ``ε / rounds``; by sequential composition the rounds together cost ``ε``.
        """
        scores, denominator = self.score(exact)
        if self.rounds == 1:
            return source.choose(self.mechanism, scores, denominator)
        each = dataclasses.replace(self.mechanism, epsilon=self.mechanism.epsilon / self.rounds)
        remaining = np.arange(scores.shape[1])
        picked = []
        for _ in range(self.rounds):
            index = int(source.choose(each, scores[:, remaining], denominator)[0])
            picked.append(remaining[index])
            remaining = np.delete(remaining, index)
        return np.asarray(picked, dtype=np.int64)

    def halfwidth(self, alpha: float) -> float:
        """Selections have no interval in the column's units."""
        raise ValueError(f"{self.label} is a selection; its error is in ranks, not units")


@dataclass(frozen=True)
class EndpointPart:
    """One end of a quantile's confidence interval, by the sparse vector technique.

    See :mod:`pandas_dp.mechanisms.quantile_interval`: the scan over the grid's edges costs
    ``measurement.epsilon`` and holds with probability ``1 - beta``. Its ``threshold`` is
    set at planning from public inputs, so nothing about it can fail after the charge.
    """

    label: str
    measure: CellCounts
    measurement: Measurement
    q: Fraction
    side: Side
    beta: float
    threshold_noise: DiscreteLaplace
    query_noise: DiscreteLaplace
    threshold: int
    to_real: Callable[[Any], Any]
    lattice: Lattice | None = None

    @property
    def exponent(self) -> int:
        """Not on a noise lattice."""
        return 0

    def release(self, exact: Aggregate, source: NoiseSource) -> Aggregate:
        """The reported edge's index per group (noise drawn for every edge of every group)."""
        scores = scan_scores(np.asarray(exact, dtype=np.int64), self.q, self.side)
        groups, edges = scores.shape
        rho = source.draw(self.threshold_noise, groups)
        nu = source.draw(self.query_noise, groups * edges).reshape(groups, edges)
        return end_index(first_crossing(scores, self.threshold, rho, nu), edges, self.side)

    def halfwidth(self, alpha: float) -> float:
        """An interval's end has no error of its own in the column's units."""
        raise ValueError(f"{self.label} is an interval's end, not a noisy value")


def endpoint_part(
    grid: CellCounts, q: Fraction, epsilon: Fraction, side: Side, beta: float, label: str,
    contribution: Contribution = ROW,
) -> EndpointPart:  # fmt: skip
    """The lower (``side=-1``) or upper end of the ``q`` quantile's interval on ``grid``.

    ε-DP: one privacy unit moves every scan score by ``l1`` times a row's ``Δ``, and the
    noise scales with it.
    """
    threshold_noise, query_noise, delta = scan_noise(epsilon / contribution.l1, q)
    record = SelectionMeasurement(
        label, "sparse_vector", epsilon, contribution.l1 * delta, query_noise.scale
    )

    def to_real(index: Any) -> Any:
        return grid_value(np.asarray(index, dtype=np.int64), grid.lower, grid.upper, grid.cells)

    threshold = threshold_for(threshold_noise, query_noise, beta, q)
    return EndpointPart(
        label, grid, record, q, side, beta, threshold_noise, query_noise, threshold, to_real
    )


@dataclass(frozen=True)
class BoundPart:
    """One end of a bounds release, by a sparse-vector scan over the magnitude lattice.

    See :mod:`pandas_dp.mechanisms.bounds`: the scan from 0 outwards on ``side`` costs
    ``measurement.epsilon``; its threshold (the query noise's scale) and lattice are public.
    """

    label: str
    measure: EdgeRanks
    measurement: Measurement
    q: Fraction
    side: Side
    threshold_noise: DiscreteLaplace
    query_noise: DiscreteLaplace
    threshold: int
    lattice: Lattice | None = None

    @property
    def exponent(self) -> int:
        """Not on a noise lattice."""
        return 0

    def release(self, exact: Aggregate, source: NoiseSource) -> Aggregate:
        """The index of the released point per group (noise drawn for every point scanned)."""
        scores = bound_scores(np.asarray(exact, dtype=np.int64), self.q, self.side)
        groups, points = scores.shape
        rho = source.draw(self.threshold_noise, groups)
        nu = source.draw(self.query_noise, groups * points).reshape(groups, points)
        return scan_index(scores, self.threshold, rho, nu)

    def to_real(self, index: Any) -> Any:
        """The lattice point of each index (scan order: from 0 outwards)."""
        return scan_points(self.side)[np.asarray(index, dtype=np.int64)]

    def halfwidth(self, alpha: float) -> float:
        """A bound has no error of its own in the column's units."""
        raise ValueError(f"{self.label} is a scan's stopping point, not a noisy value")


def bound_part(
    column: Hashable, q: Fraction, epsilon: Fraction, side: Side, label: str,
    contribution: Contribution = ROW,
) -> BoundPart:  # fmt: skip
    """The lower (``side=-1``, level ``q`` near 0) or upper end of a bounds release.

    ε-DP: one privacy unit moves every query by ``l1`` times a row's ``Δ = qd·max(q, 1 - q)``,
    and the noise scales with it (as :func:`endpoint_part`).
    """
    threshold_noise, query_noise, delta = scan_noise(epsilon / contribution.l1, q)
    record = SelectionMeasurement(
        label, "sparse_vector", epsilon, contribution.l1 * delta, query_noise.scale
    )
    measure = EdgeRanks(column, -LATTICE_END, LATTICE_END, 1, "magnitude")
    threshold = margin(query_noise.scale)
    return BoundPart(label, measure, record, q, side, threshold_noise, query_noise, threshold)


@dataclass(frozen=True)
class KeyChoicePart:
    """Which keys to release, by the optimal partition-selection rule.

    See :mod:`pandas_dp.mechanisms.optimal_selection`. The exact aggregate is each key's row
    count; ``n`` is that count divided by ``rows_per_unit`` (rounded down), which one unit
    moves by at most one.
    """

    label: str
    measure: Rows
    measurement: Measurement
    table: Any  # int64 array of π(n) in units of 2**-53
    rows_per_unit: int
    lattice: Lattice | None = None

    @property
    def exponent(self) -> int:
        """Not on a noise lattice."""
        return 0

    def release(self, exact: Aggregate, source: NoiseSource) -> Aggregate:
        """1 for each key kept, 0 otherwise."""
        units = np.asarray(exact, dtype=np.int64) // self.rows_per_unit
        words = source.words(len(units))
        return keep(units, self.table, words).astype(np.int64)

    def to_real(self, chosen: Any) -> Any:
        """The 0/1 choices as they are."""
        return np.asarray(chosen)

    def halfwidth(self, alpha: float) -> float:
        """A choice of keys has no error in the column's units."""
        raise ValueError(f"{self.label} is a choice of keys, not a noisy value")


def key_choice_part(
    epsilon: Fraction, delta: Fraction, contribution: Contribution = ROW, label: str = "keys"
) -> KeyChoicePart:
    """The optimal rule at ``(ε/Δ0, δ/Δ0)`` per key (a unit touches at most ``Δ0`` keys)."""
    table = keep_table(epsilon / contribution.l0, delta / contribution.l0)
    record = SelectionMeasurement(
        label, "optimal_selection", epsilon, contribution.l0, contribution.l0 / epsilon,
        extra_delta=delta,
    )  # fmt: skip
    return KeyChoicePart(label, Rows(), record, table, contribution.linf)


#: Any calibrated measurement: noisy values, a choice, an interval's end, or a key choice.
AnyPart = Part | SelectPart | EndpointPart | KeyChoicePart | BoundPart


def choice_part(
    column: Hashable, rounds: int, epsilon: Fraction, sensitivity: int, label: str
) -> SelectPart:
    """The ``rounds`` most frequent groups by peeling with the exponential mechanism.

    Scores are the groups' row counts (monotone, sensitivity: the rows one unit may add to
    one group), so each round weighs a group by ``exp(ε_r count / Δ)`` with
    ``ε_r = ε / rounds``.
    """
    mechanism = ExponentialMechanism(epsilon, Fraction(sensitivity), monotone=True)
    record = SelectionMeasurement(
        label, mechanism.name, epsilon, sensitivity, sensitivity / epsilon
    )
    return SelectPart(
        label, Rows(), mechanism, record,
        lambda counts: (-np.asarray(counts, dtype=np.int64)[None, :], 1),
        lambda index: index, rounds=rounds,
    )  # fmt: skip
