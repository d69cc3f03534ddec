"""Calibration: from a public measurement to the noise that protects it.

Each function here turns one measurement (a count, a clipped sum on a lattice, centred
squares) and its share of ε (and δ) into a *part* (choices among candidates, such as
quantiles, are in :mod:`.choices`):
the engine measure to compute, the calibrated mechanism, the ledger's
:class:`~pandas_dp.accounting.events.Measurement`, and how noisy integers map back to the
column's units. Everything here depends on public parameters only.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from pandas_dp.accounting.events import (
    GaussianMeasurement,
    LaplaceMeasurement,
    Measurement,
)
from pandas_dp.errors import DPValueError
from pandas_dp.measures.aggregates import (
    Aggregate,
    ClippedSquares,
    ClippedSum,
    Distinct,
    Measure,
    NonNull,
    Rows,
)
from pandas_dp.mechanisms.gaussian.discrete import (
    DiscreteGaussian,
    plan_gaussian,
    plan_gaussian_rho,
)
from pandas_dp.mechanisms.knorm import DiscreteLinfKNorm
from pandas_dp.mechanisms.laplace import DiscreteLaplace
from pandas_dp.mechanisms.lattice import Lattice, sum_lattice
from pandas_dp.mechanisms.quantile import square_units
from pandas_dp.units import Contribution

if TYPE_CHECKING:
    from pandas_dp.planning.noise import NoiseSource

Noise = DiscreteLaplace | DiscreteGaussian | DiscreteLinfKNorm


@dataclass(frozen=True)
class NoiseChoice:
    """The noise of a release: discrete Laplace, or discrete Gaussian with its δ share."""

    gaussian: bool = False
    delta: Fraction = Fraction(0)  # δ of each Gaussian measurement
    #: Gaussian noise priced in zCDP: a measurement given ε gets ρ = ε²/2 and no δ.
    zcdp: bool = False


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
    #: The public centre subtracted from each value when it is not the lattice's offset
    #: (a weighted centred sum subtracts it before multiplying by the weight).
    centre: float | None = None

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

    def release(self, exact: Aggregate, source: NoiseSource) -> Aggregate:
        """Round, then add exact noise drawn from ``source`` (handed down by the runner)."""
        return self.add(exact, source.draw(self.mechanism, len(exact)))

    def add(self, exact: Aggregate, noise: np.ndarray) -> Aggregate:
        """Round, then add ``noise`` drawn for this part (``len(exact)`` variates)."""
        return add_noise(self.round(exact), noise)

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


def noisy_part(
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
        laplace, scale = _laplace(sensitivity, epsilon)
        pure = LaplaceMeasurement(label, laplace.name, epsilon, sensitivity, scale, exponent)
        return Part(label, measure, laplace, pure, lattice)
    if noise.zcdp:  # the ρ a pure ε-DP measurement of this ε would cost: ε²/2
        plan = plan_gaussian_rho(units * contribution.linf, contribution.l0, epsilon**2 / 2)
    else:
        plan = plan_gaussian(units * contribution.linf, contribution.l0, epsilon, noise.delta)
    gauss = plan.mechanism
    record = GaussianMeasurement(
        label, gauss.name, epsilon, plan.sensitivity, gauss.scale, exponent + plan.shift,
        delta=noise.delta, coordinates=plan.coordinates, sigma2=gauss.sigma2,
    )  # fmt: skip
    return Part(label, measure, gauss, record, lattice, plan.shift)


@lru_cache(maxsize=512)
def _laplace(sensitivity: int, epsilon: Fraction) -> tuple[DiscreteLaplace, Fraction]:
    """The calibrated discrete Laplace mechanism and its effective scale, memoised.

    A pure function of public parameters (the mechanism is frozen; a refusal raises again:
    errors are not cached), asked for the same sensitivity and ε at every release of a
    notebook's cells.
    """
    laplace = DiscreteLaplace.calibrated(sensitivity, epsilon)
    return laplace, laplace.effective_scale


def count_part(
    epsilon: Fraction,
    column: Hashable | None = None,
    label: str = "count",
    contribution: Contribution = ROW,
    noise: NoiseChoice = LAPLACE,
    *,
    distinct: bool = False,
) -> Part:
    """Rows, non-missing values of ``column`` (or its distinct values) with calibrated noise.

    One row changes a count by at most 1, and the number of distinct values of its group by
    at most 1; one privacy unit by its contribution bound (``l1`` in total for Laplace
    noise; ``linf`` in each of ``l0`` groups for Gaussian).
    """
    measure: Measure = Rows() if column is None else NonNull(column)
    if distinct:
        assert column is not None
        measure = Distinct(column)
    return noisy_part(label, measure, 1, contribution, epsilon, noise)


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
        lattice = _sum_lattice(bounds[0], bounds[1], epsilon / contribution.l1, centered)
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
    return noisy_part(label, measure, lattice.sensitivity, contribution, epsilon, noise, lattice)


@lru_cache(maxsize=512)
def _sum_lattice(lower: float, upper: float, epsilon: Fraction, centered: bool) -> Lattice:
    """:func:`~pandas_dp.mechanisms.lattice.sum_lattice`, memoised.

    A pure function of public parameters (a refusal raises again: errors are not cached),
    asked for the same bounds and ε at every release of a notebook's cells.
    """
    return sum_lattice(lower, upper, epsilon, centered=centered)


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
    return noisy_part(label, measure, lattice.sensitivity, contribution, epsilon, noise, lattice)


def add_noise(exact: Aggregate, noise: np.ndarray) -> Aggregate:
    """Exact integer addition, in int64 when it cannot overflow, else in Python ints."""
    if exact.dtype != object and noise.size and exact.size:
        limit = 1 << 62
        if np.abs(exact).max() < limit and np.abs(noise).max() < limit:
            return np.asarray(exact + noise, dtype=np.int64)
    return np.asarray(np.asarray(exact, dtype=object) + noise.astype(object), dtype=object)
