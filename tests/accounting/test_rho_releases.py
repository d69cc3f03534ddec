"""ρ as a first-class budget (issue 24): releases priced in ρ, Gaussian noise without a δ.

Under ``protect(rho=...)`` a release may pass ``rho=`` (its measurements share ρ, each with
the ε whose ε²/2 is its share), and Gaussian noise is calibrated from ρ directly:
``σ² >= coordinates · Δ² / (2ρ)``, with no δ. ``epsilon=e`` with Gaussian noise costs
``e²/2``, as Laplace noise of that ε does. The ledger shows each release's exact ρ.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from pandas_dp import DPTypeError, DPValueError
from pandas_dp.budget import epsilon_for_rho
from pandas_dp.mechanisms.gaussian.discrete import DiscreteGaussian, plan_gaussian_rho

KEYS = ["a", "b"]


def frame() -> pd.DataFrame:
    return pd.DataFrame({"g": np.repeat(KEYS, 50), "x": np.linspace(0.0, 10.0, 100)})


def test_the_issue_example_releases_gaussian_counts_in_a_rho_session(noise) -> None:
    """``groupby(...).count(epsilon=0.5, mechanism="gaussian")`` said "needs a δ"."""
    priv = frame().dp.protect(rho=0.5)
    with noise(priv) as calls:
        counts = priv.dp.groupby("g", keys=KEYS).count(epsilon=0.5, mechanism="gaussian")
    assert counts.tolist() == [50, 50]
    (call,) = calls
    assert call.mechanism.sigma2 == 4  # Δ² / (2ρ) with ρ = 0.5² / 2
    assert priv.dp.session.spent.rho == Fraction(1, 8)
    row = priv.dp.session.ledger.iloc[0]
    assert row["rho"] == 0.125
    assert math.isnan(row["epsilon"])  # a ρ session charges ρ only (issue 38)
    assert math.isnan(row["delta"])
    assert row["asked"] == "epsilon=0.5"
    assert "ρ=0.125" in row["noise"]


def test_a_count_priced_in_rho_spends_at_most_rho(noise) -> None:
    priv = frame().dp.protect(rho=0.5)
    with noise(priv) as calls:
        assert priv.dp.count(rho=0.1) == 100
    (call,) = calls
    # rho= in a ρ session: discrete Gaussian noise with σ² >= Δ²/(2ρ) (issue 38; it was
    # Laplace at the ε whose ε²/2 is ρ).
    assert isinstance(call.mechanism, DiscreteGaussian)
    assert call.mechanism.sigma2 >= 5  # Δ²/(2ρ) = 1/(2 · 0.1)
    spent = priv.dp.session.spent.rho
    assert Fraction(1, 10) * Fraction(999, 1000) < spent <= Fraction(1, 10)  # σ² rounded up


def test_gaussian_measurements_share_rho_in_proportion(noise) -> None:
    """A mean's two Gaussian measurements split ρ linearly, each σ² covering its share."""
    priv = frame().dp.protect(rho=1.0)
    with noise(priv) as calls:
        priv.dp.groupby("g", keys=KEYS).agg(
            m=("x", "mean"), bounds={"x": (0, 10)}, rho=0.2, mechanism="gaussian"
        )
    measurements = priv.dp.session.releases[-1].measurements
    assert len(calls) == len(measurements) == 2
    for call, measured in zip(calls, measurements, strict=True):
        assert call.mechanism.sigma2 == measured.sigma2
        assert measured.delta == 0
        assert measured.is_gaussian
    spent = priv.dp.session.spent.rho
    assert spent == sum(m.rho for m in measurements)
    # Each σ² is rounded up for the exact sampler, by under 0.1% (exact_sigma2).
    assert Fraction(1, 5) * Fraction(999, 1000) < spent <= Fraction(1, 5)


@pytest.mark.parametrize(
    ("protect", "release", "error", "match"),
    [
        ({"epsilon": 1.0}, {"rho": 0.1}, DPValueError, "rho= prices a release"),
        ({"rho": 1.0}, {"rho": 0.1, "epsilon": 0.1}, DPValueError, "not both"),
        ({"rho": 1.0}, {}, DPTypeError, r"needs a budget: epsilon=\.\.\. \(or rho="),
        ({"epsilon": 1.0}, {}, DPTypeError, "needs a budget: epsilon=...$"),
        ({"rho": 1.0}, {"rho": 0.1, "delta": 1e-6}, DPValueError, "needs no delta"),
        ({"rho": 1.0}, {"epsilon": 0.1, "delta": 1e-6, "mechanism": "gaussian"}, DPValueError,
         "priced in rho"),
        ({"rho": 1.0}, {"rho": -1}, DPValueError, "rho"),
    ],
    ids=["rho in an ε session", "both", "neither (ρ)", "neither (ε)", "rho and delta",
         "gaussian with a delta in a ρ session", "negative rho"],
)  # fmt: skip
def test_refusals_charge_nothing(charges_nothing, protect, release, error, match) -> None:
    priv = frame().dp.protect(**protect)
    with charges_nothing(priv), pytest.raises(error, match=match):
        priv.dp.count(**release)


def test_rho_in_an_epsilon_delta_session_accounted_by_zcdp() -> None:
    priv = frame().dp.protect(epsilon=1.0, delta=1e-6, accounting="zcdp")
    priv.dp.count(rho=0.01, mechanism="gaussian")
    spent = priv.dp.session.spent
    assert 0 < spent.epsilon < 1
    assert spent.delta <= Fraction(1, 10**6)


@pytest.mark.parametrize("rho", ["1e-9", "1/3", "0.125", "2", "12345.678"])
def test_epsilon_for_rho_is_the_largest_dyadic_below_sqrt_two_rho(rho: str) -> None:
    exact = Fraction(rho)
    epsilon = epsilon_for_rho(exact)
    assert epsilon**2 / 2 <= exact  # never costs more than asked
    assert (epsilon + Fraction(1, 2**40)) ** 2 / 2 > exact  # and the next step would


@pytest.mark.parametrize("coordinates", [1, 3])
@pytest.mark.parametrize("sensitivity", [1, 7, 10**6])
@pytest.mark.parametrize("rho", [Fraction(1, 1000), Fraction(1, 8), Fraction(5)])
def test_plan_gaussian_rho_covers_its_rho_exactly(sensitivity, coordinates, rho) -> None:
    plan = plan_gaussian_rho(sensitivity, coordinates, rho)
    sigma2 = plan.mechanism.sigma2
    assert Fraction(coordinates * plan.sensitivity**2) / (2 * sigma2) <= rho  # exact zCDP
    assert sigma2 < Fraction(coordinates * plan.sensitivity**2) / (2 * rho) * Fraction(1001, 1000)
    assert plan.shift >= 0
    assert math.isfinite(float(sigma2))


def _families(priv: pd.DataFrame) -> dict[str, Callable[[], object]]:
    g = priv.dp.groupby("g", keys=KEYS)
    b = {"bounds": (0, 10)}
    return {
        "count": lambda: priv.dp.count(rho=0.01),
        "sum": lambda: priv.dp.sum("x", **b, rho=0.01),
        "mean": lambda: priv["x"].dp.mean(**b, rho=0.01),
        "std": lambda: priv["x"].dp.std(**b, rho=0.01),
        "median": lambda: priv["x"].dp.median(**b, rho=0.01),
        "quantile": lambda: priv.dp.quantile("x", 0.5, **b, rho=0.01),
        "describe": lambda: priv[["x"]].dp.describe(bounds={"x": (0, 10)}, rho=0.01),
        "agg": lambda: priv.dp.agg(n="count", rho=0.01),
        "groupby count": lambda: g.count(rho=0.01),
        "groupby mean": lambda: g["x"].mean(**b, rho=0.01),
        "groupby agg": lambda: g.agg(n="count", rho=0.01),
        "groupby median": lambda: g.median("x", **b, rho=0.01),
        "groupby describe": lambda: g["x"].describe(**b, rho=0.01),
        "crosstab": lambda: priv.dp.crosstab("g", "h", keys={"g": KEYS, "h": KEYS}, rho=0.01),
        "histogram": lambda: priv.dp.histogram("x", bins=5, range=(0, 10), rho=0.01),
        "value_counts": lambda: priv["g"].dp.value_counts(keys=KEYS, rho=0.01),
        "nunique": lambda: priv["g"].dp.nunique(rho=0.01),
    }


FAMILIES = list(_families(frame().dp.protect(rho=1.0)))


@pytest.mark.parametrize("family", FAMILIES)
def test_every_release_family_is_priced_in_rho(family: str) -> None:
    priv = frame().assign(h=lambda f: np.tile(KEYS, len(f) // 2)).dp.protect(rho=1.0)
    _families(priv)[family]()
    spent = priv.dp.session.spent.rho
    assert Fraction(1, 100) * Fraction(999, 1000) < spent <= Fraction(1, 100)
