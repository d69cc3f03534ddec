"""A sum derived from a centred sum and a count: its interval and its ε split.

The interval of ``step_x X + step_y Y`` (two independent discrete Laplace noises) is checked
against a brute-force convolution of the two laws (exact on small scales) and by coverage
over seeded draws; the split against the closed form of the optimum.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from pandas_dp.mechanisms.accuracy import combined_laplace_halfwidth
from pandas_dp.planning.measurement.split import optimal_shares


def _pmf(scale: float, reach: int) -> tuple[np.ndarray, np.ndarray]:
    q = math.exp(-1 / scale)
    z = np.arange(-reach, reach + 1)
    return z, (1 - q) / (1 + q) * q ** np.abs(z)


def brute_force_smallest(alpha: float, sx: float, ax: float, sy: float, ay: float) -> float:
    """The smallest t with P(|ax X + ay Y| > t) <= alpha, from the joint law summed over a
    wide box (written from the definition of the discrete Laplace law, independently of
    the code under test). The tail only drops at atoms, so t is an atom."""
    x, px = _pmf(sx, int(60 * sx) + 5)
    y, py = _pmf(sy, int(60 * sy) + 5)
    values = np.abs(ax * x[:, None] + ay * y[None, :]).ravel()
    mass = (px[:, None] * py[None, :]).ravel()
    order = np.argsort(values)
    values, mass = values[order], mass[order]
    above = 1.0 - np.cumsum(mass)  # P(|.| > values[i]), up to ties (resolved below)
    last_of_tie = np.r_[values[1:] != values[:-1], True]
    ok = (above <= alpha) & last_of_tie
    return float(values[np.argmax(ok)])


@pytest.mark.parametrize(
    ("sx", "ax", "sy", "ay"),
    [(2.0, 1.0, 2.0, 1.0), (3.0, 0.5, 1.5, 7.0), (1.0, 1.0, 8.0, 0.25), (5.0, 2.0, 0.7, 3.0)],
)
@pytest.mark.parametrize("alpha", [0.05, 0.01, 0.2])
def test_halfwidth_is_the_smallest_valid_one(sx, ax, sy, ay, alpha):
    t = combined_laplace_halfwidth(sx, ax, sy, ay, alpha)
    assert t is not None
    smallest = brute_force_smallest(alpha, sx, ax, sy, ay)
    assert smallest <= t <= smallest * (1 + 1e-8) + 1e-12


def test_halfwidth_beats_the_union_bound_and_covers():
    rng = np.random.default_rng(1)
    sx, sy, ay, alpha = 100.0, 2.0, 50.0, 0.05
    t = combined_laplace_halfwidth(sx, 1.0, sy, ay, alpha)
    assert t is not None
    union = sx * math.log(2 / alpha) + ay * sy * math.log(2 / alpha)  # α/2 each (continuous)
    assert t < 0.8 * union
    # Coverage over 10^6 seeded draws (continuous Laplace is close enough for the tails at
    # these scales: the discrete law's atoms are 1/100 of a scale apart).
    n = 1_000_000
    draws = np.round(rng.laplace(0, sx, n)) + ay * np.round(rng.laplace(0, sy, n))
    rate = float(np.mean(np.abs(draws) <= t))
    sd = math.sqrt(alpha * (1 - alpha) / n)
    assert abs(rate - (1 - alpha)) < 6 * sd + 2e-3


def test_too_many_terms_falls_back():
    assert combined_laplace_halfwidth(1e7, 1.0, 1e7, 1.0, 0.05) is None


def test_split_alone_and_together():
    # One statistic alone gets its own best split: ε_i ∝ c_i^(2/3).
    assert optimal_shares(["a"], [(1.0, {"a": 3.0})]) == (Fraction(1),)
    assert optimal_shares(["c", "n"], [(1.0, {"c": 50.0, "n": 50.0})]) == (
        Fraction(1, 2),
        Fraction(1, 2),
    )
    shares = optimal_shares(["c", "n"], [(1.0, {"c": 8.0, "n": 1.0})])
    assert abs(float(shares[0]) - 4 / 5) < 1e-4  # 8^(2/3) : 1 = 4 : 1
    # A count next to a mean: A_n = 1 + 1/8, A_c = 1/8 (bounds (0, 100)); ε ∝ A^(1/3).
    shares = optimal_shares(["n", "c"], [(1.0, {"n": 1.0}), (1.0, {"c": 50.0, "n": 50.0})])
    expected = 1.125 ** (1 / 3) / (1.125 ** (1 / 3) + 0.125 ** (1 / 3))
    assert abs(float(shares[0]) - expected) < 1e-4
    assert sum(shares) == 1


def test_split_minimises_the_objective():
    # Brute force over a grid: no split does better than the planner's (to grid accuracy).
    models = [(1.0, {"n": 1.0}), (2.0, {"c": 30.0, "n": 70.0}), (1.0, {"s": 5.0})]
    needs = ["n", "c", "s"]

    def objective(eps: dict[str, float]) -> float:
        total = 0.0
        for w, model in models:
            best = sum(abs(c) ** (2 / 3) for c in model.values()) ** 3
            total += w * sum(c * c / eps[k] ** 2 for k, c in model.items()) / best
        return total

    planned = dict(zip(needs, map(float, optimal_shares(needs, models)), strict=True))
    grid = np.linspace(0.02, 0.96, 95)
    best = min(
        objective({"n": a, "c": b, "s": 1 - a - b}) for a in grid for b in grid if a + b < 0.99
    )
    assert objective(planned) <= best * (1 + 1e-3)


def test_split_never_gives_zero():
    shares = optimal_shares(["c", "n"], [(1.0, {"c": 50.0, "n": 0.0})])
    assert all(s > 0 for s in shares)
    assert sum(shares) == 1
