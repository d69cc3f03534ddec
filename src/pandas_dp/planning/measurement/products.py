"""The measurement of several columns' moments: sums of products, one noisy vector.

Covariances, correlations and linear models are functions of a few sums per pair of
columns: the rows both hold, each one's sum and sum of squares over those rows, and the
sum of their products. Each value is centred at the midpoint ``c`` of its public bounds and
divided by their half-width ``r`` (``z = (x - c) / r`` in ``[-1, 1]``), rounded to
``2**-DIGITS``, and every sum is a *monomial* of at most two such values and presence
indicators, each in ``[-1, 1]`` per row (:class:`Monomial`). One row therefore moves each of
the ``p`` sums by at most 1 (``2**(2 DIGITS)`` lattice units): ``p`` in L1 norm and ``√p``
in L2 norm, times the rows a privacy unit may add. All ``p`` sums get independent discrete
Laplace (or Gaussian) noise of one scale; a logistic model's get one discrete ℓ∞ K-norm
vector instead (``products_part(..., vector=True)``), calibrated to the ℓ∞ bound 1.

Survey weights (models only: complete rows) multiply each row's products by its weight
clipped to public bounds ``0 <= L < U``, on a lattice of ``2**WEIGHT_DIGITS`` steps up to
the power of two at or above ``U`` (:func:`weight_lattice`): one row then moves each sum
by at most ``U`` (in the weights' units), so the sensitivity is ``p U`` (L1) or ``√p U``
(L2) and the noise grows with ``U``, never with the data.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Hashable
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, cast

import numpy as np

from pandas_dp.accounting.events import (
    GaussianMeasurement,
    KNormMeasurement,
    LaplaceMeasurement,
)
from pandas_dp.measures.aggregates import Aggregate, ProductSums
from pandas_dp.mechanisms.gaussian.discrete import plan_gaussian, plan_gaussian_rho
from pandas_dp.mechanisms.knorm import DiscreteLinfKNorm
from pandas_dp.mechanisms.laplace import DiscreteLaplace
from pandas_dp.planning.measurement.keys import MeasurementKey
from pandas_dp.planning.measurement.kinds import Products
from pandas_dp.planning.measurement.parts import NoiseChoice, Part
from pandas_dp.planning.measurement.weighted import Weights
from pandas_dp.units import Contribution

if TYPE_CHECKING:
    from pandas_dp.planning.noise import NoiseSource

#: Values are rounded to ``2**-DIGITS`` of their bounds' half-width (about 1.5e-5).
DIGITS = 16
#: One product's largest magnitude in lattice units: the sums' unit.
UNIT = 1 << (2 * DIGITS)
#: A row's weight is rounded to ``2**-WEIGHT_DIGITS`` of the power of two at or above its
#: upper bound (the engine's exact blocks hold ``2**(2 DIGITS + WEIGHT_DIGITS)`` per row).
WEIGHT_DIGITS = 16


def weight_lattice(weights: Weights) -> tuple[int, int]:
    """``(shift, units)``: a weight ``w`` is ``rint(clip(w) * 2**-shift)``, at most ``units``.

    ``2**shift`` is ``2**-WEIGHT_DIGITS`` of the smallest power of two at or above the upper
    bound ``U``, and ``units`` is ``U`` on that lattice (``<= 2**WEIGHT_DIGITS``), so a row's
    weight moves a sum by at most ``units * 2**shift ≈ U`` (exactly ``U`` when it is dyadic).
    """
    mantissa, exponent = math.frexp(weights.upper)  # U = mantissa * 2**exponent
    if mantissa == 0.5:  # a power of two
        exponent -= 1
    shift = exponent - WEIGHT_DIGITS
    return shift, round(math.ldexp(weights.upper, -shift))


@dataclass(frozen=True, order=True)
class Monomial:
    """``Π z_j (j in values) · Π present_p (p in present)`` summed over the rows.

    ``values`` holds at most two column positions (sorted; ``(j, j)`` is a square);
    ``present`` the columns whose presence multiplies it. A value is 0 where it is missing,
    so a column among ``values`` needs no indicator.
    """

    values: tuple[int, ...] = ()
    present: tuple[int, ...] = ()


@dataclass(frozen=True)
class PairSums:
    """Where one pair's sums sit in the released vector (``j == k``: one column's own)."""

    rows: int  # rows holding both
    first: int  # Σ z_j over those rows
    second: int  # Σ z_k
    products: int  # Σ z_j z_k
    first_squares: int  # Σ z_j² over those rows
    second_squares: int  # Σ z_k²

    @property
    def positions(self) -> tuple[int, int, int, int, int, int]:
        """All six, in the order above."""
        return (
            self.rows, self.first, self.second, self.products, self.first_squares,
            self.second_squares,
        )  # fmt: skip


@dataclass(frozen=True)
class ProductLayout:
    """The monomials of a release, in order, for ``columns`` with their public bounds.

    ``nullable`` says which columns may hold missing values (schema, else dtype); with
    ``complete``, rows missing any column are left out (listwise), so no indicator is
    needed; otherwise each pair is computed over the rows that hold both (pandas' rule).
    ``squares``: a pair's sums of squares over its own rows (correlations) are measured.
    With ``weights`` (``complete`` only), each row's products are weighted by its clipped
    weight (:func:`weight_lattice`); ``rows`` adds one last sum, the complete rows holding
    a weight (each counted as ``U``, the weighted sums' largest term).
    """

    columns: tuple[Hashable, ...]
    bounds: tuple[tuple[float, float], ...]
    nullable: tuple[bool, ...]
    complete: bool
    squares: bool
    monomials: tuple[Monomial, ...] = ()
    weights: Weights | None = None
    rows: bool = False

    @classmethod
    def of(
        cls,
        columns: tuple[Hashable, ...],
        bounds: tuple[tuple[float, float], ...],
        nullable: tuple[bool, ...],
        *,
        complete: bool,
        squares: bool,
        weights: Weights | None = None,
        rows: bool = False,
    ) -> ProductLayout:
        """The layout measuring every pair's sums, each monomial once."""
        if weights is not None and not (complete and not squares):
            raise ValueError("weighted sums of products are for complete rows")  # a caller bug
        layout = cls(columns, bounds, nullable, complete, squares)
        needed = [
            monomial
            for j in range(len(columns))
            for k in range(j, len(columns))
            for monomial in layout._pair_monomials(j, k)
        ]
        return cls(
            columns, bounds, nullable, complete, squares, tuple(dict.fromkeys(needed)),
            weights, rows and weights is not None,
        )  # fmt: skip

    @property
    def size(self) -> int:
        """The number of sums measured (the monomials, and the count of ``rows``)."""
        return len(self.monomials) + int(self.rows)

    @property
    def rows_position(self) -> int:
        """Where the count of weighted ``rows`` sits (after the monomials)."""
        return len(self.monomials)

    @property
    def weight_shift(self) -> int:
        """The weights' lattice exponent (0 unweighted), see :func:`weight_lattice`."""
        return 0 if self.weights is None else weight_lattice(self.weights)[0]

    @property
    def weight_unit(self) -> float:
        """The upper weight bound on its lattice, ``units * 2**shift`` (1 unweighted)."""
        if self.weights is None:
            return 1.0
        shift, units = weight_lattice(self.weights)
        return math.ldexp(units, shift)

    @property
    def unit(self) -> int:
        """One row's largest move of a sum, in lattice units: ``2**(2 DIGITS)`` times ``U``'s."""
        return UNIT if self.weights is None else UNIT * weight_lattice(self.weights)[1]

    def _reduced(self, values: tuple[int, ...], present: tuple[int, ...]) -> Monomial:
        """The monomial with only the indicators that matter (none when ``complete``)."""
        kept = () if self.complete else tuple(
            sorted({p for p in present if self.nullable[p] and p not in values})
        )  # fmt: skip
        return Monomial(tuple(sorted(values)), kept)

    def _pair_monomials(self, j: int, k: int) -> tuple[Monomial, ...]:
        both = (j, k)
        sums = [
            self._reduced((), both), self._reduced((j,), both), self._reduced((k,), both),
            self._reduced((j, k), both),
        ]  # fmt: skip
        if self.squares or j == k:
            sums += [self._reduced((j, j), both), self._reduced((k, k), both)]
        return tuple(sums)

    @functools.cached_property
    def _positions(self) -> dict[Monomial, int]:
        """Each monomial's position (built once per layout, read for every pair)."""
        return {monomial: i for i, monomial in enumerate(self.monomials)}

    def pair(self, j: int, k: int) -> PairSums:
        """The positions of the sums of pair ``(j, k)``."""
        at = self._positions
        both = (j, k)
        if not (self.squares or j == k):  # unmeasured: positions of the plain squares
            squares = (at[self._reduced((j, j), (j,))], at[self._reduced((k, k), (k,))])
        else:
            squares = (at[self._reduced((j, j), both)], at[self._reduced((k, k), both)])
        return PairSums(
            at[self._reduced((), both)], at[self._reduced((j,), both)],
            at[self._reduced((k,), both)], at[self._reduced((j, k), both)], *squares,
        )  # fmt: skip

    @property
    def key(self) -> MeasurementKey:
        """The one measurement of the release."""
        weights = None if self.weights is None else self.weights.column
        return Products(self.columns, weights=weights)

    def measure(self) -> ProductSums:
        """The engine's exact sums, in the order of :attr:`monomials`."""
        present = tuple(p for p, nullable in enumerate(self.nullable) if nullable)
        if self.complete:
            present = ()
        slot = {p: 1 + len(self.columns) + i for i, p in enumerate(present)}
        pairs: list[tuple[int, int]] = []
        squares: list[tuple[int, int]] = []
        for monomial in self.monomials:
            values, shown = monomial.values, monomial.present
            if len(values) == 2 and shown:
                squares.append((values[0], present.index(shown[0])))
                continue
            axes = [1 + v for v in values] + [slot[p] for p in shown]
            axes += [0] * (2 - len(axes))  # the constant fills what the monomial lacks
            pairs.append((min(axes), max(axes)))
        # The engine gives the pairs, then the squares: keep the monomials in that order.
        measure = ProductSums(
            self.columns, self.bounds, DIGITS, present, self.complete, tuple(pairs),
            tuple(squares), rows=self.rows,
        )  # fmt: skip
        if self.weights is None:
            return measure
        shift, units = weight_lattice(self.weights)
        return dataclasses.replace(
            measure, weights=self.weights.column,
            weight_bounds=(self.weights.lower, self.weights.upper), weight_shift=shift,
            weight_units=units,
        )  # fmt: skip

    def ordered(self) -> ProductLayout:
        """The same layout, its monomials in the engine's order (pairs, then squares)."""
        plain = [m for m in self.monomials if not (len(m.values) == 2 and m.present)]
        crossed = [m for m in self.monomials if len(m.values) == 2 and m.present]
        return dataclasses.replace(self, monomials=(*plain, *crossed))


def score_layout(
    columns: tuple[Hashable, ...],
    bounds: tuple[tuple[float, float], ...],
    weights: Weights | None = None,
) -> ProductLayout:
    """The sums of the last column alone and times each other column, over complete rows.

    A logistic model's score at a released fit (the last column each row's residual, see
    :class:`~pandas_dp.transformations.design.ScoreResiduals`): ``k`` sums, the intercept's
    first, each moved by at most one unit by a row (``U`` with weights).
    """
    last = len(columns) - 1
    monomials = (Monomial((last,)), *(Monomial((j, last)) for j in range(last)))
    return ProductLayout(
        columns, bounds, (True,) * len(columns), complete=True, squares=False,
        monomials=monomials, weights=weights,
    )  # fmt: skip


@dataclass(frozen=True)
class ProductsPart(Part):
    """The noisy sums of a :class:`ProductLayout`, one independent variate per sum."""

    layout: ProductLayout | None = None

    @property
    def exponent(self) -> int:
        """A noise unit is ``2**exponent`` products of scaled values (``z_j z_k``).

        (times the weights' lattice step with survey weights: the weights' units).
        So :meth:`to_real` gives the sums in those units and :meth:`halfwidth` one sum's
        error bound (the noise's exact quantile, and half a noise unit of rounding when
        the sums are rounded to a coarser lattice; each value's own rounding, at most
        ``2**-17`` of its half-width, is left out).
        """
        weight_shift = 0 if self.layout is None else self.layout.weight_shift
        return self.shift - 2 * DIGITS + weight_shift

    def release(self, exact: Aggregate, source: NoiseSource) -> Aggregate:
        """One independent noise variate per sum (and group)."""
        flat = cast(Aggregate, np.asarray(exact).reshape(-1))
        noisy = self.add(flat, source.draw(self.mechanism, flat.size))
        return cast(Aggregate, noisy.reshape(np.shape(exact)))


def products_part(
    layout: ProductLayout,
    epsilon: Fraction,
    contribution: Contribution,
    noise: NoiseChoice,
    *,
    vector: bool = False,
) -> ProductsPart:
    """Calibrate the noise of every sum of ``layout`` for ``epsilon`` (and δ or ρ).

    ``p`` sums each moved by at most ``UNIT`` by one row (``UNIT`` times the weights' upper
    bound on their lattice, with survey weights): L1 sensitivity ``p · UNIT · l1`` (discrete
    Laplace), or ``UNIT · linf`` in each of ``p · l0`` coordinates (discrete Gaussian, as the
    other measurements' L0 × L∞ bound). Weighted sums get Laplace noise on a lattice
    ``2**WEIGHT_DIGITS`` times coarser (each sum rounded first; a rounded sum moves by one
    step more), so that its scale stays within the exact sampler's range.

    ``vector`` (logistic models, pure ε): one discrete ℓ∞ K-norm vector per group instead
    (:mod:`pandas_dp.mechanisms.knorm`), at scale ``Δ / ε`` with ``Δ`` what a unit moves
    each sum of one group, summed over the groups it reaches: ``UNIT · min(l1, l0 · linf)``
    (plus one rounding step per group with weights). Per-sum Laplace noise needs ``p``
    times that scale; each sum's standard deviation is ``√((p + 1)(p + 2) / 3)`` scales
    against ``√2 p``: 0.51 times Laplace's at ``p = 6``, 0.43 at ``p = 28``.
    """
    layout = layout.ordered()
    measure = layout.measure()
    key = layout.key
    label, size, unit = key.label, layout.size, layout.unit
    if not noise.gaussian:
        # Weighted sums are rounded to 2**WEIGHT_DIGITS of their units first (noise on the
        # unweighted sums' scale, within the sampler's range): a unit's rows then move a
        # group's rounded sum by at most ``rows // 2**WEIGHT_DIGITS + 1``, the rounding's one
        # step included, so all its groups' by at most ``row // 2**WEIGHT_DIGITS + l0``.
        shift = 0 if layout.weights is None else WEIGHT_DIGITS
        if vector:
            return _vector_part(layout, epsilon, contribution, shift)
        row = unit * contribution.l1
        sensitivity = size * (row if shift == 0 else (row >> shift) + contribution.l0)
        laplace = DiscreteLaplace.calibrated(sensitivity, epsilon)
        record = LaplaceMeasurement(
            label, laplace.name, epsilon, sensitivity, laplace.effective_scale,
            shift + layout.weight_shift - 2 * DIGITS, coordinates=size,
        )  # fmt: skip
        return ProductsPart(label, measure, laplace, record, shift=shift, layout=layout)
    coordinates = size * contribution.l0
    if noise.zcdp:
        plan = plan_gaussian_rho(unit * contribution.linf, coordinates, epsilon**2 / 2)
    else:
        plan = plan_gaussian(unit * contribution.linf, coordinates, epsilon, noise.delta)
    gauss = plan.mechanism
    record_g = GaussianMeasurement(
        label, gauss.name, epsilon, plan.sensitivity, gauss.scale,
        plan.shift - 2 * DIGITS + layout.weight_shift,
        delta=noise.delta, coordinates=plan.coordinates, sigma2=gauss.sigma2,
    )  # fmt: skip
    return ProductsPart(label, measure, gauss, record_g, shift=plan.shift, layout=layout)


def _vector_part(
    layout: ProductLayout, epsilon: Fraction, contribution: Contribution, shift: int
) -> ProductsPart:
    """:func:`products_part`'s K-norm calibration (``layout`` ordered; ``shift``: rounding).

    The vectors of a grouped release are independent, so a unit's privacy loss is the sum
    over the groups it reaches of its ℓ∞ move there over the scale: at most its rows in all
    (``l1``), and at most ``linf`` rows in each of ``l0`` groups.
    """
    rows = min(contribution.l1, contribution.l0 * contribution.linf)
    reach = layout.unit * rows
    sensitivity = reach if shift == 0 else (reach >> shift) + contribution.l0
    knorm = DiscreteLinfKNorm.calibrated(sensitivity, epsilon, layout.size)
    record = KNormMeasurement(
        layout.key.label, knorm.name, epsilon, sensitivity, knorm.effective_scale,
        shift + layout.weight_shift - 2 * DIGITS, coordinates=layout.size,
    )  # fmt: skip
    return ProductsPart(
        layout.key.label, layout.measure(), knorm, record, shift=shift, layout=layout
    )
