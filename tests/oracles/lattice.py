"""The documented lattice of clipped sums, written from the docs and never imported from pandas_dp.

The rule (``sum_lattice`` Notes in ``pandas_dp.mechanisms.lattice`` and ``DataFrame.dp.sum``):
with ``Δ`` the largest (centred) contribution of one row, the step ``g = 2**k`` is the smallest
power of two with ``g >= max(Δ, Δ/ε) / 2**36``, capped at a quarter of ``upper - lower`` and
raised so that uncentred values stay below ``2**61`` steps. A value ``x`` becomes
``rint(clip(x, L, U) / g) - offset`` (ties to even), the offset being the rounded midpoint for
centred sums. When a column's plain and centred sums are released together they share the finer
step if the plain sum still fits (a row at most ``2**37`` steps). Squared deviations from a
centre ``c`` use the smallest power-of-two step keeping ``h²`` within ``2**36`` steps,
``h = max(|L - c|, |U - c|)``, each row capped at ``ceil(h² / step)`` steps.

All arithmetic is exact (``fractions.Fraction``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

ROW_BITS = 36  # a row spans about 2**36 lattice steps
MAX_ROW_UNITS = 2 ** (ROW_BITS + 1)  # hard cap on one row's contribution
RAW_BITS = 61  # uncentred lattice values stay below 2**61 steps


def as_fraction(number: Any) -> Fraction:
    """What a user means by ``number`` (floats read from their shortest decimal text)."""
    if isinstance(number, float):
        return Fraction(str(number))
    return Fraction(number)


def ceil_log2(x: Fraction) -> int:
    """Smallest ``k`` with ``2**k >= x`` (exact)."""
    k = x.numerator.bit_length() - x.denominator.bit_length() - 1
    while Fraction(2) ** k < x:
        k += 1
    while Fraction(2) ** (k - 1) >= x:
        k -= 1
    return k


def floor_log2(x: Fraction) -> int:
    """Largest ``k`` with ``2**k <= x`` (exact)."""
    k = ceil_log2(x)
    return k if Fraction(2) ** k == x else k - 1


@dataclass(frozen=True)
class Lattice:
    """Step ``2**exponent``, bounds in steps, and the offset subtracted from every row."""

    exponent: int
    lower: int
    upper: int
    offset: int = 0

    @property
    def step(self) -> Fraction:
        return Fraction(2) ** self.exponent

    @property
    def granularity(self) -> float:
        """The step as a float (exact: a power of two)."""
        return math.ldexp(1.0, self.exponent)

    @property
    def sensitivity(self) -> int:
        return max(abs(self.lower - self.offset), abs(self.upper - self.offset))

    @property
    def centre(self) -> Fraction:
        return self.offset * self.step

    @property
    def centre_real(self) -> float:
        return math.ldexp(float(self.offset), self.exponent)

    def units(self, value: float) -> int:
        """One value's contribution in steps: clip, round half to even, subtract the offset."""
        clipped = min(max(value, self.lower * self.step), self.upper * self.step)  # ±inf too
        return round(Fraction(clipped) / self.step) - self.offset

    def total(self, values: Iterable[float]) -> int:
        """Exact sum in steps of the non-missing ``values``."""
        return sum(self.units(v) for v in values if not math.isnan(v))

    def units_of(self, values: pd.Series) -> pd.Series:
        """Each value in steps (NaN stays NaN), with pandas and numpy only."""
        lo, hi = math.ldexp(self.lower, self.exponent), math.ldexp(self.upper, self.exponent)
        scaled = values.astype("float64").clip(lo, hi) / self.granularity
        return pd.Series(np.rint(scaled.to_numpy()), index=values.index) - self.offset


def exponent_for(lower: float, upper: float, epsilon: Any, centered: bool) -> int:
    """The documented step exponent for a (centred) sum released with ``epsilon`` per row."""
    lo, hi, eps = Fraction(lower), Fraction(upper), as_fraction(epsilon)
    reach = (hi - lo) / 2 if centered else max(abs(lo), abs(hi))
    k = min(ceil_log2(max(reach, reach / eps) / 2**ROW_BITS), floor_log2((hi - lo) / 4))
    return max(k, ceil_log2(max(abs(lo), abs(hi)) / 2**RAW_BITS))


def lattice_at(lower: float, upper: float, exponent: int, centered: bool) -> Lattice:
    """The lattice of a given step (e.g. read from a release's measurement)."""
    step = Fraction(2) ** exponent
    q_lower, q_upper = round(Fraction(lower) / step), round(Fraction(upper) / step)
    offset = (q_lower + q_upper) // 2 if centered else 0
    return Lattice(exponent, q_lower, q_upper, offset)


def reference_lattice(
    lower: float, upper: float, epsilon: Any, *, centered: bool = False
) -> Lattice:
    """The documented lattice of one (centred) sum released with ``epsilon`` per row."""
    return lattice_at(lower, upper, exponent_for(lower, upper, epsilon, centered), centered)


def shared_lattices(
    lower: float, upper: float, epsilon_per_row: Any, *, plain: bool, centred: bool
) -> dict[str, Lattice]:
    """The lattices of a column's plain and/or centred sum released in one call."""
    k_plain = exponent_for(lower, upper, epsilon_per_row, False)
    k_centred = exponent_for(lower, upper, epsilon_per_row, True)
    if plain and centred:
        shared = min(k_plain, k_centred)
        candidate = lattice_at(lower, upper, shared, False)
        fits = (
            candidate.sensitivity <= MAX_ROW_UNITS
            and max(-candidate.lower, candidate.upper) <= 2**RAW_BITS
        )
        if fits:
            k_plain = k_centred = shared
    out = {}
    if plain:
        out["sum"] = lattice_at(lower, upper, k_plain, False)
    if centred:
        out["centred_sum"] = lattice_at(lower, upper, k_centred, True)
    return out


@dataclass(frozen=True)
class SquareLattice:
    """Step ``2**exponent`` of squared deviations; ``cap`` steps per row (its sensitivity)."""

    exponent: int
    cap: int

    @property
    def step(self) -> Fraction:
        return Fraction(2) ** self.exponent


def square_lattice(lower: float, upper: float, centre: Fraction) -> SquareLattice:
    """Smallest power-of-two step keeping ``h²`` within ``2**36`` steps; cap ``ceil(h²/step)``."""
    reach = max(abs(Fraction(lower) - centre), abs(Fraction(upper) - centre))
    exponent = ceil_log2(reach * reach / 2**ROW_BITS)
    return SquareLattice(exponent, math.ceil(reach * reach / Fraction(2) ** exponent))
