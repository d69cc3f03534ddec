"""Helpers for the grouped-release tests: a lattice from the documented rule, data with
planted secrets, and a "charged nothing" check.

The lattice is written from the documented rule (``sum_lattice`` Notes in
``pandas_dp.mechanisms.lattice``), not imported from it, so the glue tests compare the
implementation with its specification:

- ``Δ`` is the largest contribution of one row: ``max(|L|, |U|)`` for a plain sum,
  ``(U - L)/2`` for a centred one; ``ε`` is the ε of that sum *per row*, i.e. the
  measurement's ε divided by the L1 contribution bound of a privacy unit (1 for rows);
- the step ``g = 2**k`` is the smallest power of two with ``g >= max(Δ, Δ/ε) / 2**36``,
  capped at the largest power of two ``<= (U - L)/4`` and never below
  ``max(|L|, |U|) / 2**61``;
- a value becomes ``rint(clip(x, L, U) / g)`` (half to even), minus the offset
  ``(rint(L/g) + rint(U/g)) // 2`` when centred;
- a call that needs both the plain and the centred sum of one column uses the finer of the
  two steps for both, unless at that step one row of the plain sum would exceed ``2**37``
  units (or ``|bounds| / g`` would exceed ``2**61``); then each keeps its own step.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

ROW_BITS = 36
MAX_ROW_UNITS = 2 ** (ROW_BITS + 1)
RAW_BITS = 61


def as_fraction(number: Any) -> Fraction:
    """The exact value a user means by ``number`` (floats read from their decimal text)."""
    if isinstance(number, float):
        return Fraction(str(number))
    return Fraction(number)


def _ceil_log2(x: Fraction) -> int:
    k = math.floor(math.log2(x)) - 2
    while Fraction(2) ** k < x:
        k += 1
    return k


def _floor_log2(x: Fraction) -> int:
    k = _ceil_log2(x)
    return k if Fraction(2) ** k == x else k - 1


@dataclass(frozen=True)
class RefLattice:
    """The lattice a clipped (centred) sum should use, from the documented rule."""

    exponent: int
    lower: int
    upper: int
    offset: int

    @property
    def step(self) -> float:
        return math.ldexp(1.0, self.exponent)

    @property
    def sensitivity(self) -> int:
        return max(abs(self.lower - self.offset), abs(self.upper - self.offset))

    @property
    def centre(self) -> float:
        return math.ldexp(float(self.offset), self.exponent)

    def units(self, values: pd.Series) -> pd.Series:
        """Each value in lattice units (NaN stays NaN), with pandas and numpy only."""
        lo, hi = math.ldexp(self.lower, self.exponent), math.ldexp(self.upper, self.exponent)
        scaled = values.astype("float64").clip(lo, hi) / self.step
        return pd.Series(np.rint(scaled.to_numpy()), index=values.index) - self.offset


def exponent_for(lower: float, upper: float, epsilon: Fraction, centered: bool) -> int:
    lo, hi = Fraction(lower), Fraction(upper)
    reach = (hi - lo) / 2 if centered else max(abs(lo), abs(hi))
    k = _ceil_log2(max(reach, reach / epsilon) / 2**ROW_BITS)
    k = min(k, _floor_log2((hi - lo) / 4))
    return max(k, _ceil_log2(max(abs(lo), abs(hi)) / 2**RAW_BITS))


def lattice_with(lower: float, upper: float, exponent: int, centered: bool) -> RefLattice:
    step = Fraction(2) ** exponent
    q_lower, q_upper = round(Fraction(lower) / step), round(Fraction(upper) / step)
    offset = (q_lower + q_upper) // 2 if centered else 0
    return RefLattice(exponent, q_lower, q_upper, offset)


def reference_lattices(
    lower: float, upper: float, epsilon_per_row: Fraction, *, plain: bool, centred: bool
) -> dict[str, RefLattice]:
    """The lattices of the plain and/or centred sum of one column in one call."""
    out = {}
    k_plain = exponent_for(lower, upper, epsilon_per_row, False)
    k_centred = exponent_for(lower, upper, epsilon_per_row, True)
    if plain and centred:
        shared = min(k_plain, k_centred)
        candidate = lattice_with(lower, upper, shared, False)
        fits = (
            candidate.sensitivity <= MAX_ROW_UNITS
            and max(-candidate.lower, candidate.upper) <= 2**RAW_BITS
        )
        if fits:
            k_plain = k_centred = shared
    if plain:
        out["sum"] = lattice_with(lower, upper, k_plain, False)
    if centred:
        out["centred_sum"] = lattice_with(lower, upper, k_centred, True)
    return out


@pytest.fixture
def lattices() -> Callable[..., dict[str, RefLattice]]:
    """``lattices(lower, upper, epsilon_per_row, plain=..., centred=...)``."""
    return reference_lattices


@pytest.fixture
def regional(census: pd.DataFrame) -> pd.DataFrame:
    """The census extract with a region, a string column, missing incomes and outliers.

    Regions are spread unevenly; ``west`` has no rows (an empty group), and 17 rows sit in
    an ``elsewhere`` region that no public key names. Every 7th income is missing.
    """
    data = census.copy()
    rng = np.random.default_rng(20240601)
    region = rng.choice(["north", "south", "east"], size=len(data), p=[0.5, 0.3, 0.2])
    region[rng.choice(len(data), size=17, replace=False)] = "elsewhere"
    data["region"] = region
    data["income"] = data["income"].astype("float64")
    data.loc[data.index[::7], "income"] = np.nan
    data.loc[[1, 2, 3], "income"] = [1e9, -5e4, 123456.789]
    return data
