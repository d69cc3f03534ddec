"""Calibration of weighted counts and sums (survey weights).

A weighted measurement sums, per row, the row's clipped weight ``w ∈ [lower, upper]``
(``0 <= lower``) times a factor: 1 for a weighted count, the clipped value ``x`` for a
weighted sum, ``x - c`` for a weighted centred sum. The product's public range gives the
lattice (:func:`~pandas_dp.mechanisms.lattice.lattice_at`) and the sensitivity: one row
added or removed moves the sum by at most ``W = upper`` (count), ``W·max(|L|, |U|)`` (sum)
or ``W·(U - L)/2`` (centred at the midpoint ``c``), rounded to the lattice; a privacy unit
multiplies it by its contribution bound, as for unweighted sums.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable
from dataclasses import dataclass
from fractions import Fraction

from pandas_dp.measures.aggregates import WeightedSum
from pandas_dp.mechanisms.lattice import lattice_at, lattice_exponent
from pandas_dp.planning.measurement.parts import NoiseChoice, Part, noisy_part
from pandas_dp.units import Contribution


@dataclass(frozen=True)
class Weights:
    """A validated weight column and its public bounds ``0 <= lower < upper``.

    ``source`` says where the bounds came from, for the ledger (empty: the argument).
    """

    column: Hashable
    lower: float
    upper: float
    source: str = ""

    def describe(self) -> str:
        """Ledger text: the column, its clipping and where the bounds came from."""
        origin = f" (bounds from the {self.source})" if self.source else ""
        return (
            f"rows weighted by {self.column}, clipped to [{self.lower:g}, {self.upper:g}]"
            f"{origin}; a missing weight counts 0"
        )


def weighted_centre(bounds: tuple[float, float]) -> float:
    """The public centre of a weighted centred sum: the midpoint of the value bounds."""
    return (bounds[0] + bounds[1]) / 2


def _product_range(
    weights: Weights, bounds: tuple[float, float] | None, *, reads_values: bool, centred: bool
) -> tuple[float, float, float]:
    """The range of one row's ``clip(w) · factor`` (0 included: a missing weight) and centre."""
    if not reads_values:
        return 0.0, weights.upper, 0.0
    assert bounds is not None, "weighted sums read values with public bounds"
    centre = weighted_centre(bounds) if centred else 0.0
    low, high = bounds[0] - centre, bounds[1] - centre
    return min(0.0, weights.upper * low), max(0.0, weights.upper * high), centre


def weighted_part(
    label: str,
    column: Hashable | None,
    weights: Weights,
    bounds: tuple[float, float] | None,
    fill: float | None,
    epsilon: Fraction,
    contribution: Contribution,
    noise: NoiseChoice,
    *,
    reads_values: bool,
    centred: bool = False,
) -> Part:
    """A weighted count or (centred) sum on a public lattice, with calibrated noise.

    A count (``reads_values`` False) sums the clipped weights of the rows where ``column``
    is present (all rows for None); a sum, the weights times the clipped values (centred at
    :func:`weighted_centre` if ``centred``). The lattice step is chosen as for a clipped sum
    whose values span the product's range (about ``2**36`` steps per row at most), so the
    rounding error stays far below the noise.
    """
    low, high, centre = _product_range(weights, bounds, reads_values=reads_values, centred=centred)
    exponent = lattice_exponent(low, high, epsilon / contribution.l1, centered=False)
    lattice = lattice_at(low, high, exponent, centered=False)
    measure = WeightedSum(
        weights.column, (weights.lower, weights.upper), exponent, lattice.lower, lattice.upper,
        column, bounds if reads_values else None, centre, fill if reads_values else None,
    )  # fmt: skip
    part = noisy_part(label, measure, lattice.sensitivity, contribution, epsilon, noise, lattice)
    return dataclasses.replace(part, centre=centre) if centred else part
