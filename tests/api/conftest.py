"""Helpers for the API tests: a from-the-docs lattice and a "charged nothing" check.

The lattice here is written from the documented rule (``DataFrame.dp.sum`` Notes), not from
``pandas_dp.mechanisms.lattice``, so glue tests compare the implementation with the spec:
the step ``g = 2**k`` is the smallest power of two with ``g >= max(Δ, Δ/ε) / 2**36``,
capped at the largest power of two ``<= (U - L) / 4``, and never below
``max(|L|, |U|) / 2**61``; each value is clipped to the bounds and rounded to a multiple of
``g``; a mean centres the values on the lattice point nearest the midpoint and
spends ``ε · share`` on that sum.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest


def as_fraction(number: Any) -> Fraction:
    """The exact value a user means by ``number`` (floats read from their decimal text)."""
    if isinstance(number, float):
        return Fraction(str(number))
    return Fraction(number)


@dataclass(frozen=True)
class ReferenceLattice:
    """The lattice a clipped sum should use, derived from the documented rule."""

    exponent: int
    lower: int
    upper: int
    offset: int

    @property
    def step(self) -> Fraction:
        return Fraction(2) ** self.exponent

    @property
    def sensitivity(self) -> int:
        return max(abs(self.lower - self.offset), abs(self.upper - self.offset))

    @property
    def centre(self) -> Fraction:
        return self.offset * self.step

    def units(self, value: float) -> int:
        """One value's contribution in lattice units: clip, round half to even, centre."""
        in_units = Fraction(min(max(value, self.lower * self.step), self.upper * self.step))
        return round(in_units / self.step) - self.offset

    def total(self, values: Iterable[float]) -> int:
        """Exact sum in lattice units of the non-missing ``values``."""
        return sum(self.units(v) for v in values if not math.isnan(v))


def _ceil_log2(x: Fraction, *, floor: bool = False) -> int:
    """Smallest k with 2**k >= x (or, with ``floor``, largest k with 2**k <= x), exactly."""
    k = math.floor(math.log2(x)) - 2
    while Fraction(2) ** k < x:
        k += 1
    if floor and Fraction(2) ** k > x:
        k -= 1
    return k


def reference_lattice(
    lower: float, upper: float, epsilon: Any, *, centered: bool = False
) -> ReferenceLattice:
    lo, hi, eps = Fraction(lower), Fraction(upper), as_fraction(epsilon)
    middle = (lo + hi) / 2 if centered else Fraction(0)
    reach = max(abs(lo - middle), abs(hi - middle))
    exponent = max(
        min(_ceil_log2(max(reach, reach / eps) / 2**36), _ceil_log2((hi - lo) / 4, floor=True)),
        _ceil_log2(max(abs(lo), abs(hi)) / 2**61),
    )
    step = Fraction(2) ** exponent
    q_lower, q_upper = round(lo / step), round(hi / step)
    offset = (q_lower + q_upper) // 2 if centered else 0
    return ReferenceLattice(exponent, q_lower, q_upper, offset)


@pytest.fixture
def lattice() -> Callable[..., ReferenceLattice]:
    """``lattice(lower, upper, epsilon, centered=False)``: the documented lattice."""
    return reference_lattice


@pytest.fixture
def glue_data(census: pd.DataFrame) -> pd.DataFrame:
    """The census extract with missing incomes, outliers on both sides, and off-lattice reals.

    ``frac`` holds reals in [-0.5, 1.5] that no coarse lattice represents exactly.
    """
    data = census.copy()
    data["income"] = data["income"].astype("float64")
    data.loc[data.index[::9], "income"] = np.nan
    data.loc[[1, 2, 4, 5], "income"] = [12345.678, 1e9, -50.0, 4999.9996]
    data["frac"] = np.random.default_rng(20240611).uniform(-0.5, 1.5, len(data))
    data.loc[[3, 6], "frac"] = [np.inf, -np.inf]
    return data
