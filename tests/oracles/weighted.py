"""The documented weighted lattice, written from the weights how-to, never imported from pandas_dp.

The rule (``docs/how-to/weights.md``): a row's weight is clipped to ``[wl, W]`` (a missing
weight counts 0) and multiplies a factor: 1 (weighted count), 1 or 0 as ``x`` is present or
missing (weighted count of present values), ``clip(x, L, U)`` (weighted sum) or
``clip(x, L, U) - c`` with ``c = (L + U) / 2`` (weighted centred sum, for the mean); a missing
``x`` gives 0. One row's product lies in ``[min(0, W·(L - c)), max(0, W·(U - c))]`` (``c = 0``
unless centred; ``[0, W]`` for counts), and the lattice is the one of a plain clipped sum over
that range (``oracles.lattice``). Each product is rounded to the lattice (half to even) and
clamped to the range's rounded ends. The sensitivity is the larger rounded end: ``W``,
``W·max(|L|, |U|)`` or ``W·(U - L)/2``.

All arithmetic is exact (``fractions.Fraction``); products of the test data are exact in
binary floating point, so the engine's float product is the same number.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from .lattice import Lattice, exponent_for, lattice_at


@dataclass(frozen=True)
class WeightedLattice:
    """One weighted measurement: its lattice, centre and what it reads."""

    lattice: Lattice
    kind: str  # "count", "present", "sum" or "centred"
    weight_bounds: tuple[float, float]
    bounds: tuple[float, float] | None = None
    centre: float = 0.0

    @property
    def step(self) -> Fraction:
        return self.lattice.step

    @property
    def sensitivity(self) -> int:
        """One row's largest contribution, in steps."""
        return self.lattice.sensitivity

    def units(self, weight: float, value: Any = 1.0) -> int:
        """One row's contribution in steps."""
        if _missing(weight):
            return 0
        w = Fraction(min(max(weight, self.weight_bounds[0]), self.weight_bounds[1]))
        if self.kind == "count":
            factor = Fraction(1)
        elif self.kind == "present":
            factor = Fraction(0 if _missing(value) else 1)
        elif _missing(value):
            factor = Fraction(0)
        else:
            assert self.bounds is not None
            x = min(max(float(value), self.bounds[0]), self.bounds[1])
            factor = Fraction(x) - Fraction(self.centre)
        units = round(w * factor / self.step)
        return min(max(units, self.lattice.lower), self.lattice.upper)

    def total(self, weights: Iterable[float], values: Iterable[Any] | None = None) -> int:
        """Exact sum in steps over rows."""
        weights = list(weights)
        xs = [1.0] * len(weights) if values is None else list(values)
        return sum(self.units(w, x) for w, x in zip(weights, xs, strict=True))

    def real(self, units: int) -> float:
        return float(units * self.step)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def weighted_lattice(
    kind: str,
    weight_bounds: tuple[float, float],
    epsilon: Any,
    bounds: tuple[float, float] | None = None,
) -> WeightedLattice:
    """The documented lattice of one weighted measurement released with ``epsilon`` per row."""
    top = Fraction(weight_bounds[1])
    centre = 0.0
    if kind in ("count", "present"):
        low, high = Fraction(0), top
    else:
        assert bounds is not None
        if kind == "centred":
            centre = (bounds[0] + bounds[1]) / 2
        low = min(Fraction(0), top * (Fraction(bounds[0]) - Fraction(centre)))
        high = max(Fraction(0), top * (Fraction(bounds[1]) - Fraction(centre)))
    exponent = exponent_for(float(low), float(high), epsilon, False)
    lattice = lattice_at(float(low), float(high), exponent, False)
    return WeightedLattice(lattice, kind, weight_bounds, bounds, centre)


def documented_sensitivity(
    kind: str, weight_bounds: tuple[float, float], bounds: tuple[float, float] | None = None
) -> Fraction:
    """``W``, ``W·max(|L|, |U|)`` or ``W·(U - L)/2`` (the issue's sensitivities)."""
    top = Fraction(weight_bounds[1])
    if kind in ("count", "present"):
        return top
    assert bounds is not None
    low, high = Fraction(bounds[0]), Fraction(bounds[1])
    if kind == "sum":
        return top * max(abs(low), abs(high))
    return top * (high - low) / 2
