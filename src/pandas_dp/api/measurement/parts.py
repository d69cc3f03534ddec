"""Calibration: from a public measurement to the noise that protects it.

Each function here turns one measurement (a count, a clipped sum on a lattice, centred
squares, a quantile by the exponential mechanism) and its share of ε (and δ) into a *part*:
the engine measure to compute, the calibrated mechanism, the ledger's
:class:`~pandas_dp.accounting.events.Measurement`, and how noisy integers map back to the
column's units. Everything here depends on public parameters only.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from pandas_dp.accounting.events import (
    GaussianMeasurement,
    LaplaceMeasurement,
    Measurement,
    SelectionMeasurement,
)
from pandas_dp.engines import ClippedSum, Measure, NonNull, Rows
from pandas_dp.engines.plan import Aggregate, CellCounts, ClippedSquares
from pandas_dp.errors import DPValueError
from pandas_dp.mechanisms.exponential import ExponentialMechanism
from pandas_dp.mechanisms.gaussian import DiscreteGaussian, plan_gaussian
from pandas_dp.mechanisms.laplace import DiscreteLaplace
from pandas_dp.mechanisms.lattice import Lattice, sum_lattice
from pandas_dp.mechanisms.optimal_selection import keep, keep_table
from pandas_dp.mechanisms.quantile import DEFAULT_CELLS, grid_value, quantile_scores, square_units
from pandas_dp.mechanisms.quantile_interval import (
    Side,
    end_index,
    first_crossing,
    scan_noise,
    scan_scores,
    threshold_for,
)
from pandas_dp.units import Contribution

if TYPE_CHECKING:
    from pandas_dp.api.session import Session

Noise = DiscreteLaplace | DiscreteGaussian


@dataclass(frozen=True)
class NoiseChoice:
    """The noise of a release: discrete Laplace, or discrete Gaussian with its δ share."""

    gaussian: bool = False
    delta: Fraction = Fraction(0)  # δ of each Gaussian measurement


@dataclass(frozen=True)
class Part:
    """One noisy measure: what the engine computes and the noise that protects it.

    The exact aggregate, in units of ``2**(lattice exponent)``, is rounded to a multiple of
    ``2**shift`` of those units (Gaussian noise on a coarser lattice; 0 otherwise) before
    noise is added in units of ``2**shift``.
    """

    label: str
    measure: Measure
    mechanism: Noise
    measurement: Measurement
    lattice: Lattice | None = None
    shift: int = 0

    @property
    def exponent(self) -> int:
        """Noise units are ``2**exponent`` in the column's units."""
        return (0 if self.lattice is None else self.lattice.exponent) + self.shift

    def round(self, exact: Aggregate) -> Aggregate:
        """Round exact aggregates to multiples of ``2**shift`` units (half up)."""
        if self.shift == 0:
            return exact
        return (exact + (1 << (self.shift - 1))) >> self.shift

    def to_real(self, units: Any) -> Any:
        """Noisy values in noise units to the column's units (identity for counts)."""
        if self.exponent == 0:
            return np.asarray(units)
        return np.ldexp(np.asarray(units, dtype=np.float64), self.exponent)

    def release(self, exact: Aggregate, session: Session) -> Aggregate:
        """Round, then add exact noise drawn from the session's random source."""
        return add_noise(self.round(exact), session.draw(self.mechanism, len(exact)))

    def halfwidth(self, alpha: float) -> float:
        """Largest error, in the column's units, exceeded with probability at most ``alpha``.

        The noise's exact quantile, plus the worst rounding: half a noise unit when the
        aggregate was rounded to a coarser lattice, and ``g/2`` per row for up to ``2**32``
        rows of a lattice sum.
        """
        return math.ldexp(self.mechanism.quantile_halfwidth(alpha), self.exponent) + (
            self.allowance()
        )

    def allowance(self) -> float:
        """The worst rounding error, in the column's units (see :meth:`halfwidth`)."""
        error = math.ldexp(0.5, self.exponent) if self.shift else 0.0
        if self.lattice is not None:
            error += self.lattice.rounding_allowance()
        return error


#: Defaults: one row per unit, Laplace noise.
ROW = Contribution()
LAPLACE = NoiseChoice()


def _noisy(
    label: str,
    measure: Measure,
    units: int,
    contribution: Contribution,
    epsilon: Fraction,
    noise: NoiseChoice,
    lattice: Lattice | None = None,
) -> Part:
    """Calibrate noise for an aggregate whose rows move it by at most ``units`` each."""
    exponent = 0 if lattice is None else lattice.exponent
    if not noise.gaussian:
        sensitivity = units * contribution.l1
        laplace = DiscreteLaplace.calibrated(sensitivity, epsilon)
        pure = LaplaceMeasurement(
            label, laplace.name, epsilon, sensitivity, laplace.effective_scale, exponent
        )
        return Part(label, measure, laplace, pure, lattice)
    plan = plan_gaussian(units * contribution.linf, contribution.l0, epsilon, noise.delta)
    gauss = plan.mechanism
    record = GaussianMeasurement(
        label, gauss.name, epsilon, plan.sensitivity, gauss.scale, exponent + plan.shift,
        delta=noise.delta, coordinates=plan.coordinates, sigma2=gauss.sigma2,
    )  # fmt: skip
    return Part(label, measure, gauss, record, lattice, plan.shift)


def count_part(
    epsilon: Fraction,
    column: Hashable | None = None,
    label: str = "count",
    contribution: Contribution = ROW,
    noise: NoiseChoice = LAPLACE,
) -> Part:
    """Rows (or non-missing values of ``column``) with calibrated noise.

    One row changes a count by at most 1; one privacy unit by its contribution bound
    (``l1`` in total for Laplace noise; ``linf`` in each of ``l0`` groups for Gaussian).
    """
    measure: Measure = Rows() if column is None else NonNull(column)
    return _noisy(label, measure, 1, contribution, epsilon, noise)


def sum_part(
    column: Hashable,
    bounds: tuple[float, float],
    epsilon: Fraction,
    *,
    centered: bool = False,
    fill: float | None = None,
    label: str = "sum",
    contribution: Contribution = ROW,
    noise: NoiseChoice = LAPLACE,
) -> Part:
    """A clipped sum on a public lattice with calibrated noise.

    One row changes the lattice sum by at most ``lattice.sensitivity`` units (the larger
    rounded bound in absolute value, or half the rounded range when centred); one privacy
    unit by its contribution bound times that.
    """
    try:
        lattice = sum_lattice(bounds[0], bounds[1], epsilon / contribution.l1, centered=centered)
    except ValueError:
        raise DPValueError(
            f"bounds {bounds} of {column!r} are too close together for their magnitude to "
            "release a plain sum: the step that keeps them apart would give one row more "
            "than 2**37 lattice steps. Release the mean (it centres the values), or sum "
            "the values minus a public offset"
        ) from None
    measure = ClippedSum(
        column, lattice.exponent, lattice.lower, lattice.upper, lattice.offset, fill
    )
    return _noisy(label, measure, lattice.sensitivity, contribution, epsilon, noise, lattice)


def squares_part(
    column: Hashable,
    bounds: tuple[float, float],
    centre: float,
    epsilon: Fraction,
    *,
    fill: float | None = None,
    label: str = "centred_squares",
    contribution: Contribution = ROW,
    noise: NoiseChoice = LAPLACE,
) -> Part:
    """The sum of squared deviations from a public ``centre``, capped per row, with noise.

    Each row's square is rounded to ``2**e`` and capped at ``units`` steps (about ``2**36``),
    which is one row's sensitivity. (Centring the squares would halve it, but the count's
    noise would then re-enter the variance with the same weight.)
    """
    exponent, units = square_units(bounds[0], bounds[1], centre)
    lattice = Lattice(exponent, 0, units)
    measure = ClippedSquares(column, exponent, centre, bounds[0], bounds[1], units, 0, fill)
    return _noisy(label, measure, lattice.sensitivity, contribution, epsilon, noise, lattice)


def quantile_part(
    column: Hashable,
    bounds: tuple[float, float],
    q: Fraction,
    epsilon: Fraction,
    *,
    cells: int = DEFAULT_CELLS,
    label: str = "quantile",
    contribution: Contribution = ROW,
) -> SelectPart:
    """Smith's exponential-mechanism quantile over a public grid of ``cells`` cells.

    Sensitivity of the scores ``|rank - q n|``: a row added below an edge raises its rank
    and ``q n`` by 1 and ``q``; above it, only ``q n`` by ``q``. So ``max(q, 1 - q)`` per row
    (1/2 for the median), ``l1`` times that per privacy unit.
    """
    lower, upper = bounds
    sensitivity = contribution.l1 * max(q, 1 - q)
    mechanism = ExponentialMechanism(epsilon, sensitivity)
    record = SelectionMeasurement(
        label, mechanism.name, epsilon, contribution.l1, 2 * sensitivity / epsilon
    )

    def to_real(index: Any) -> Any:
        return grid_value(np.asarray(index, dtype=np.int64), lower, upper, cells)

    return SelectPart(
        label, CellCounts(column, lower, upper, cells), mechanism, record,
        lambda counts: quantile_scores(np.asarray(counts, dtype=np.int64), q), to_real,
    )  # fmt: skip


@dataclass(frozen=True)
class SelectPart:
    """A choice among public candidates by the exponential mechanism (e.g. a quantile).

    ``score`` turns the exact aggregate into integer score numerators (one row per group,
    one column per candidate) and their common denominator; ``to_real`` turns chosen
    candidate indices into released values.
    """

    label: str
    measure: Measure
    mechanism: ExponentialMechanism
    measurement: Measurement
    score: Callable[[Aggregate], tuple[np.ndarray, int]]
    to_real: Callable[[Any], Any]
    lattice: Lattice | None = None
    rounds: int = 1

    @property
    def exponent(self) -> int:
        """Selections are not on a noise lattice."""
        return 0

    def release(self, exact: Aggregate, session: Session) -> Aggregate:
        """Choose one candidate per group, or ``rounds`` distinct ones by peeling.

        Peeling (top-k): each round chooses among the candidates not chosen yet with
        ``ε / rounds``; by sequential composition the rounds together cost ``ε``.
        """
        scores, denominator = self.score(exact)
        if self.rounds == 1:
            return session.choose(self.mechanism, scores, denominator)
        each = dataclasses.replace(self.mechanism, epsilon=self.mechanism.epsilon / self.rounds)
        remaining = np.arange(scores.shape[1])
        picked = []
        for _ in range(self.rounds):
            index = int(session.choose(each, scores[:, remaining], denominator)[0])
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
    ``measurement.epsilon`` and holds with probability ``1 - beta``.
    """

    label: str
    measure: CellCounts
    measurement: Measurement
    q: Fraction
    side: Side
    beta: float
    threshold_noise: DiscreteLaplace
    query_noise: DiscreteLaplace
    to_real: Callable[[Any], Any]
    lattice: Lattice | None = None

    @property
    def exponent(self) -> int:
        """Not on a noise lattice."""
        return 0

    def release(self, exact: Aggregate, session: Session) -> Aggregate:
        """The reported edge's index per group (noise drawn for every edge of every group)."""
        scores = scan_scores(np.asarray(exact, dtype=np.int64), self.q, self.side)
        groups, edges = scores.shape
        threshold = threshold_for(self.threshold_noise, self.query_noise, edges, self.beta, self.q)
        rho = session.draw(self.threshold_noise, groups)
        nu = session.draw(self.query_noise, groups * edges).reshape(groups, edges)
        return end_index(first_crossing(scores, threshold, rho, nu), edges, self.side)

    def halfwidth(self, alpha: float) -> float:
        """An interval's end has no error of its own in the column's units."""
        raise ValueError(f"{self.label} is an interval's end, not a noisy value")


def endpoint_part(
    column: Hashable,
    bounds: tuple[float, float],
    q: Fraction,
    epsilon: Fraction,
    side: Side,
    beta: float,
    *,
    cells: int = DEFAULT_CELLS,
    label: str = "quantile",
    contribution: Contribution = ROW,
) -> EndpointPart:
    """The lower (``side=-1``) or upper end of the ``q`` quantile's interval, ε-DP.

    One privacy unit moves every scan score by ``l1`` times a row's ``Δ``; the noise scales
    with it.
    """
    lower, upper = bounds
    threshold_noise, query_noise, delta = scan_noise(epsilon / contribution.l1, q)
    record = SelectionMeasurement(
        label, "sparse_vector", epsilon, contribution.l1 * delta, query_noise.scale
    )

    def to_real(index: Any) -> Any:
        return grid_value(np.asarray(index, dtype=np.int64), lower, upper, cells)

    return EndpointPart(
        label, CellCounts(column, lower, upper, cells), record, q, side, beta,
        threshold_noise, query_noise, to_real,
    )  # fmt: skip


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

    def release(self, exact: Aggregate, session: Session) -> Aggregate:
        """1 for each key kept, 0 otherwise."""
        units = np.asarray(exact, dtype=np.int64) // self.rows_per_unit
        words = session.priorities(len(units))
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
AnyPart = Part | SelectPart | EndpointPart | KeyChoicePart


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


def add_noise(exact: Aggregate, noise: np.ndarray) -> Aggregate:
    """Exact integer addition, in int64 when it cannot overflow, else in Python ints."""
    if exact.dtype != object and noise.size and exact.size:
        limit = 1 << 62
        if np.abs(exact).max() < limit and np.abs(noise).max() < limit:
            return np.asarray(exact + noise, dtype=np.int64)
    return np.asarray(np.asarray(exact, dtype=object) + noise.astype(object), dtype=object)
