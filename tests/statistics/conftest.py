"""Independent references for the "more statistics" releases, written from the documented
construction and never imported from ``pandas_dp``:

* spreads (``Series.dp.var`` Notes): clip to ``[L, U]``; centre at the lattice point ``c``
  nearest the midpoint of the centred sum's lattice (step ``g = 2**k``, the documented rule of
  ``DataFrame.dp.sum``); ``S1 = Σ (rint(x/g) - rint-midpoint)`` in steps of ``g``; each
  row's square ``(x - c)²`` rounded to a step ``2**e`` (the smallest power of two keeping
  ``h²`` within ``2**36`` steps, ``h = max(|L - c|, |U - c|)``) and capped at
  ``ceil(h² / 2**e)`` steps; ``var = (S2 - S1²/N) / max(N - ddof, 1)``, ``N = max(count, 1)``,
  clamped to ``[0, ((U - L)/2)²]``.
* quantiles (``Series.dp.quantile`` Notes): candidates are the ``K + 1`` edges
  ``L + k (U - L)/K``; edge ``k`` scores ``|rank_k - q n|`` with ``rank_k`` the number of
  (clipped, non-missing) values strictly below the edge (every value is below the top edge
  ``U``: the last cell is closed).
  One row added below edge ``k`` raises ``rank_k`` by 1 and ``q n`` by ``q`` (the score moves
  by at most ``1 - q``); added above it, it raises only ``q n`` (at most ``q``). So the
  scores' sensitivity is ``Δ = max(q, 1 - q)`` per row (1/2 for the median), ``l1`` times
  that per privacy unit.
* the exponential mechanism: ``P(k) ∝ exp(-rate · score_k)``; the scores are not monotone, so
  ``rate = ε / (2Δ)`` (``ε / (2 max(q, 1 - q) l1)`` for a quantile).

All arithmetic here is exact (``fractions.Fraction``).
"""

from __future__ import annotations

import bisect
import math
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

from ..oracles.lattice import (
    Lattice,
    SquareLattice,
    as_fraction,
    ceil_log2,
    floor_log2,
    lattice_at,
    reference_lattice,
    square_lattice,
)

__all__ = ["SquareLattice", "as_fraction", "ceil_log2", "floor_log2", "square_lattice"]


def centred_lattice(lower: float, upper: float, epsilon: Fraction) -> Lattice:
    """The documented lattice rule for a centred sum released with ``epsilon``."""
    return reference_lattice(lower, upper, epsilon, centered=True)


def centred_lattice_at(lower: float, upper: float, exponent: int) -> Lattice:
    """The centred lattice of a given step (read from a release's measurement)."""
    return lattice_at(lower, upper, exponent, centered=True)


@dataclass(frozen=True)
class Moments:
    """Exact integer moments of one column, as the documented construction defines them."""

    count: int  # non-missing values
    centred_units: int  # S1 in steps of g
    square_units: int  # S2 in steps of 2**e
    lattice: Lattice
    squares: SquareLattice
    reach: Fraction  # (U - L)/2: the clamp is reach²

    def variance(self, ddof: int = 1, noise: int = 0) -> Fraction:
        """The documented post-processing with every measurement shifted by ``noise`` units."""
        n = max(Fraction(self.count + noise), Fraction(1))
        s1 = (self.centred_units + noise) * self.lattice.step
        s2 = (self.square_units + noise) * self.squares.step
        spread = (s2 - s1 * s1 / n) / max(n - ddof, Fraction(1))
        return min(max(spread, Fraction(0)), self.reach * self.reach)

    def mean(self, noise: int = 0, bounds: tuple[float, float] = (0.0, 0.0)) -> Fraction:
        n = max(Fraction(self.count + noise), Fraction(1))
        value = self.lattice.centre + (self.centred_units + noise) * self.lattice.step / n
        return min(max(value, Fraction(bounds[0])), Fraction(bounds[1]))

    def tolerance(self, ddof: int = 1, noise: int = 0, *, exact_rows: bool = False) -> float:
        """How far the float implementation may be from :meth:`variance`.

        Each row's square is computed in float64: the deviation ``x - c`` (error at most half
        an ulp), its square (relative error at most ``2**-52`` in all) and the scaling (exact)
        land within ``2**36 · 2**-51 = 2**-15`` steps of the exact value, so ``rint`` can move
        at most one step, and only for rows within ``2**-15`` of a half step: at most one
        step of ``2**e`` per row in ``S2``. The final formula costs a few float64 roundings
        of its terms: ``1e-14`` of their magnitudes covers them with a wide margin. With
        ``exact_rows`` (values whose squares float64 represents exactly) only that remains.
        """
        n = max(self.count + noise, 1)
        den = max(n - ddof, 1)
        s1 = float((self.centred_units + noise) * self.lattice.step)
        s2 = float((self.square_units + noise) * self.squares.step)
        rounding = 0.0 if exact_rows else self.count * float(self.squares.step) / den
        return rounding + 1e-14 * (abs(s2) + s1 * s1 / n) / den + 1e-300


def moments(values: Iterable[float], bounds: tuple[float, float], lattice: Lattice) -> Moments:
    """Exact documented moments; NaN values are skipped, ±inf land on the bounds."""
    lower, upper = bounds
    squares = square_lattice(lower, upper, lattice.centre)
    count = centred = squared = 0
    for value in values:
        if math.isnan(value):
            continue
        clipped = min(max(value, lower), upper)  # exact: a float clipped to float bounds
        deviation = Fraction(clipped) - lattice.centre
        count += 1
        centred += lattice.units(clipped)
        squared += min(round(deviation * deviation / squares.step), squares.cap)
    reach = (Fraction(upper) - Fraction(lower)) / 2
    return Moments(count, centred, squared, lattice, squares, reach)


# --- quantiles -------------------------------------------------------------------------------


def ranks(values: Iterable[float], bounds: tuple[float, float], cells: int) -> np.ndarray:
    """``rank_k``: clipped non-missing values strictly below edge ``k``; all are below ``U``.

    Exact: a value ``v`` lies strictly below edge ``k`` iff ``k > (v - L) K / (U - L)``,
    evaluated in rationals. Refuses data with a value within ``1e-9`` cells of an interior
    edge, where float64 cell arithmetic may legitimately put it on either side (tests must
    not depend on that), unless it sits exactly on the edge and float64 computes its
    position ``(v - L) / ((U - L) / K)`` exactly (dyadic grids), which leaves no ambiguity.
    """
    lower, upper = Fraction(bounds[0]), Fraction(bounds[1])
    first_above = np.zeros(cells + 2, dtype=np.int64)  # values by the first edge above them
    for value in values:
        if math.isnan(value):
            continue
        position = (Fraction(min(max(value, bounds[0]), bounds[1])) - lower) * cells
        position /= upper - lower
        nearest = round(position)
        if 0 < nearest < cells and abs(position - nearest) <= Fraction(1, 10**9):
            clipped = min(max(value, bounds[0]), bounds[1])
            in_float = (clipped - bounds[0]) / ((bounds[1] - bounds[0]) / cells)
            assert Fraction(in_float) == position == nearest, f"{value} is too near an edge"
        first_above[min(math.floor(position) + 1, cells)] += 1  # U counts below edge K
    return np.cumsum(first_above)[: cells + 1]


def rank_intervals(
    values: Iterable[float], bounds: tuple[float, float], cells: int
) -> tuple[np.ndarray, np.ndarray]:
    """``#{x < c_k}`` and ``#{x <= c_k}`` for the clipped non-missing values (exact, with the
    same refusal of values too near an interior edge as :func:`ranks`)."""
    kept = [v for v in values if not math.isnan(v)]
    ranks(kept, bounds, cells)  # the refusal
    lower, upper = Fraction(bounds[0]), Fraction(bounds[1])
    positions = sorted(
        (Fraction(min(max(v, bounds[0]), bounds[1])) - lower) * cells / (upper - lower)
        for v in kept
    )
    below = [bisect.bisect_left(positions, k) for k in range(cells + 1)]
    at_most = [bisect.bisect_right(positions, k) for k in range(cells + 1)]
    return np.array(below, dtype=np.int64), np.array(at_most, dtype=np.int64)


def quantile_scores(rank: np.ndarray, q: Fraction, at_most: np.ndarray | None = None) -> np.ndarray:
    """The distance from ``q n`` to ``[rank_k, at_most_k]`` (``#{x < c_k}``, ``#{x <= c_k}``),
    minus the depth of ``q n`` inside it, times the denominator of ``q`` (exact integers):
    ``|rank_k - q n|`` when no value lies on a candidate (``at_most`` None)."""
    at_most = rank if at_most is None else at_most
    n = int(at_most[-1])
    over = q.denominator * rank - q.numerator * n
    under = q.numerator * n - q.denominator * at_most
    return np.maximum(over, under)  # negative inside the interval: minus its depth


def quantile_sensitivity(q: Any, l1: int = 1) -> Fraction:
    """``Δ = max(q, 1 - q) · l1``: the most one privacy unit moves any ``|rank_k - q n|``."""
    level = as_fraction(q)
    return max(level, 1 - level) * l1


def quantile_rate(epsilon: Any, q: Any, l1: int = 1) -> Fraction:
    """``ε / (2Δ)``: the exact rate of the (non-monotone) quantile weights ``exp(-rate s)``."""
    return as_fraction(epsilon) / (2 * quantile_sensitivity(q, l1))


def candidate_values(bounds: tuple[float, float], cells: int) -> list[Fraction]:
    """A float column's quantile candidates, as documented: the grid's ``cells + 1`` edges,
    the multiples of the finest power of ten with at most ``2 cells`` of them within the
    bounds, and those of the finest power of two likewise (exact rationals, sorted)."""
    lower, upper = Fraction(bounds[0]), Fraction(bounds[1])
    found = {lower + k * (upper - lower) / cells for k in range(cells + 1)}
    for base in (10, 2):
        finest = None
        for j in range(40, -70, -1):
            step = Fraction(base) ** j
            if (upper - lower) / step > 2 * cells + 1:
                break
            finest = step
        if finest is not None:
            first, last = math.ceil(lower / finest), math.floor(upper / finest)
            found.update(k * finest for k in range(first, last + 1))
    return sorted(found)


def best_edges(
    values: Iterable[float], bounds: tuple[float, float], q: Any, cells: int
) -> list[float]:
    """The candidates (as floats) whose score is best: those whose rank interval holds
    ``q n`` deepest, or (none holds it) is closest to it (all of them, on ties)."""
    kept = [v for v in values if not math.isnan(v)]
    ranks(kept, bounds, cells)  # the refusal of values too near an interior edge
    clipped = sorted(Fraction(min(max(v, bounds[0]), bounds[1])) for v in kept)
    candidates = candidate_values(bounds, cells)
    below = np.array([bisect.bisect_left(clipped, c) for c in candidates], dtype=np.int64)
    at_most = np.array([bisect.bisect_right(clipped, c) for c in candidates], dtype=np.int64)
    scores = quantile_scores(below, as_fraction(q), at_most)
    return [float(candidates[k]) for k in np.flatnonzero(scores == scores.min())]


def edge_value(index: int, bounds: tuple[float, float], cells: int) -> float:
    lower, upper = Fraction(bounds[0]), Fraction(bounds[1])
    return float(lower + index * (upper - lower) / cells)


def assert_on_edges(
    released: float, best: Sequence[float], bounds: tuple[float, float], cells: int
) -> None:
    """``released`` is one of the given best candidates, to float64 precision of the grid."""
    tolerance = 1e-12 * (bounds[1] - bounds[0])
    gaps = [abs(released - value) for value in best]
    assert gaps, released
    assert min(gaps) <= tolerance, (released, best[:5], best[-5:])


def em_probabilities(scores: Sequence[float] | np.ndarray, rate: float) -> np.ndarray:
    """``P(k) ∝ exp(-rate (s_k - min s))`` in float64 (exact enough for χ² expectations)."""
    s = np.asarray(scores, dtype=np.float64)
    weights = np.exp(-rate * (s - s.min()))
    return weights / weights.sum()


# --- ledger ----------------------------------------------------------------------------------


def measurement(release: Any, label: str) -> Any:
    """The measurement of ``release`` with this label (exactly one)."""
    found = [m for m in release.measurements if m.label == label]
    assert len(found) == 1, [m.label for m in release.measurements]
    return found[0]


@pytest.fixture
def incomes(rng: np.random.Generator) -> pd.DataFrame:
    """Incomes with missing values, outliers beyond both bounds, ±inf and off-lattice reals."""
    values = rng.uniform(-20_000, 230_000, 400)
    values[::13] = np.nan
    values[[1, 2, 3, 4, 5]] = [1e9, -50.0, np.inf, -np.inf, 199_999.99999999997]
    ages = rng.integers(0, 100, 400)
    return pd.DataFrame({"income": values, "age": ages, "region": rng.choice(list("NSEW"), 400)})


@pytest.fixture
def rng() -> np.random.Generator:
    """Test data only (never noise): a fixed-seed numpy generator."""
    return np.random.default_rng(20260521)


@pytest.fixture(scope="session")
def ref() -> Any:
    """This module: the references above, for the tests of this folder."""
    return sys.modules[__name__]
