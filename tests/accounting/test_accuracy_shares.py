"""ε split by ``accuracy=`` weights: the shares are exact, positive and never exceed ε.

A release's measurements each get a share of its ε (:mod:`pandas_dp.planning.measurement.split`);
the ledger charges the sum of what each measurement records, and each sampler's noise is
calibrated from that recorded ε (and δ). These tests check the sum against the ε asked for,
exactly, including releases with so many measurements (or such extreme weights) that a
share falls below one rounding step, and that the samplers' scales match the ledger.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pandas_dp.mechanisms.gaussian.discrete import DiscreteGaussian, plan_gaussian
from pandas_dp.mechanisms.laplace import DiscreteLaplace
from pandas_dp.planning.measurement.split import optimal_shares

KEYS = ["a", "b"]
BOUNDS = (0.0, 10.0)


def _wide(columns: int) -> pd.DataFrame:
    """``columns`` float columns (nullable dtype: each mean has its own count) by group."""
    rng = np.random.default_rng(0)
    data = {f"x{i}": rng.uniform(*BOUNDS, 50) for i in range(columns)}
    return pd.DataFrame({"g": rng.choice(KEYS, 50), **data})


def _weighted_means(priv: Any, columns: int, favoured: int, **options: Any) -> Any:
    """One mean per column, all but ``favoured`` of them weighted 1e-9 (two measurements
    each: the column's non-missing count and its centred sum)."""
    named = {f"m{i}": (f"x{i}", "mean") for i in range(columns)}
    accuracy = {f"m{i}": 1.0 if i >= columns - favoured else 1e-9 for i in range(columns)}
    bounds = {f"x{i}": BOUNDS for i in range(columns)}
    return priv.dp.groupby("g", keys=KEYS).agg(
        **named, accuracy=accuracy, bounds=bounds, epsilon=1.0, **options
    )


# --- (1) the over-charge with many measurements --------------------------------------------


def test_many_weighted_measurements_charge_at_most_epsilon(protect_seeded):
    # 150 measurements, 136 of them weighted 1e-9: their shares fall below 1/10,000, which
    # rounding once raised to 1/10,000 each (and then handed out more steps): ε = 1 charged
    # 1.015.
    priv = protect_seeded(_wide(75), epsilon=10.0)
    _weighted_means(priv, 75, favoured=7)
    session = priv.dp.session
    (release,) = session.releases
    assert len(release.measurements) == 150
    recorded = [m.epsilon for m in release.measurements]
    assert all(isinstance(e, Fraction) and e > 0 for e in recorded)
    assert sum(recorded) <= 1
    assert sum(recorded) == 1  # the whole ε, exactly
    assert release.cost.epsilon == 1
    assert session.spent.epsilon == 1
    assert session.ledger["epsilon"].iloc[-1] == 1.0
    # The favoured means' measurements get far more than the others.
    assert min(recorded[-14:]) > 100 * max(recorded[:-14])


def test_many_weighted_gaussian_measurements_charge_at_most_epsilon_and_delta(
    protect_seeded,
):
    priv = protect_seeded(_wide(75), epsilon=10.0, delta=1e-5)
    _weighted_means(priv, 75, favoured=7, mechanism="gaussian", delta=1e-6)
    (release,) = priv.dp.session.releases
    assert len(release.measurements) == 150
    assert sum(m.epsilon for m in release.measurements) == 1
    # δ is split equally, exactly.
    assert {m.delta for m in release.measurements} == {Fraction(1, 10**6) / 150}
    assert priv.dp.session.spent.epsilon == 1
    assert priv.dp.session.spent.delta == Fraction(1, 10**6)


def test_many_weighted_measurements_in_a_rho_session(protect_seeded):
    # In a ρ session a release of ε spends at most ε²/2 (Σ ε_i²/2 <= (Σ ε_i)²/2).
    priv = protect_seeded(_wide(75), rho=10.0)
    _weighted_means(priv, 75, favoured=7)
    (release,) = priv.dp.session.releases
    assert sum(m.epsilon for m in release.measurements) == 1
    assert all(m.rho <= m.epsilon**2 / 2 for m in release.measurements)
    assert priv.dp.session.spent.rho == sum(m.rho for m in release.measurements)
    assert priv.dp.session.spent.rho <= Fraction(1, 2)


# --- (2) the split itself, over any weights and any number of measurements ------------------

EXTREME = [1e-9, 1e-6, 1e-3, 1.0, 2.0, 1e3, 1e6, 1e9]
weights_st = st.one_of(
    st.sampled_from(EXTREME),
    st.floats(min_value=1e-9, max_value=1e9, allow_nan=False, allow_infinity=False),
    st.integers(min_value=1, max_value=10**9),
)


@st.composite
def releases(draw: st.DrawFn) -> tuple[list[int], list[tuple[float, dict[int, float]]]]:
    """``n`` measurements (1 to 20,000) and statistics over them: each a priority and one or
    two error weights, drawn from a small palette so that large releases stay cheap."""
    n = draw(st.one_of(st.integers(1, 200), st.integers(1, 20_000), st.sampled_from([150, 12_000])))
    palette = draw(st.lists(weights_st, min_size=1, max_size=6))
    zero = draw(st.booleans())  # a weight of 0 (a count times a centre of 0)
    stride = draw(st.integers(1, 7))
    pairs = draw(st.booleans())  # statistics with two measurements (a mean), or one each
    weights: list[tuple[float, dict[int, float]]] = []
    step = 2 if pairs else 1
    for start in range(0, n, step):
        priority = palette[(start // stride) % len(palette)]
        scale = palette[(start // step + 1) % len(palette)]
        model = {key: scale for key in range(start, min(start + step, n))}
        if zero and start % 3 == 0:
            model[start] = 0.0
        weights.append((float(priority), model))
    return list(range(n)), weights


@settings(derandomize=True, max_examples=200, deadline=None, database=None)
@given(
    release=releases(),
    epsilon=st.fractions(min_value=Fraction(1, 10**6), max_value=100).filter(lambda e: e > 0),
)
def test_shares_are_positive_and_never_exceed_epsilon(release, epsilon):
    needs, weights = release
    shares = optimal_shares(needs, weights)
    assert len(shares) == len(needs)
    assert all(isinstance(s, Fraction) and s > 0 for s in shares)
    charged = sum((epsilon * s for s in shares), Fraction(0))
    assert charged <= epsilon
    assert charged == epsilon  # all of it, exactly


@pytest.mark.parametrize(("n", "small"), [(150, 136), (12_000, 6_000), (20_000, 19_999)])
def test_shares_when_steps_run_short(n, small):
    # The cases that over-charged: shares below a step of 1/10,000, or more measurements
    # than steps.
    weights = [(1e-9 if i < small else 1.0, {i: 1.0}) for i in range(n)]
    shares = optimal_shares(list(range(n)), weights)
    assert sum(shares) == 1
    assert min(shares) > 0
    assert min(shares[small:]) > max(shares[:small])


# --- (3) the sampler's scale is calibrated from the share the ledger charges ----------------


@pytest.mark.parametrize("columns", [1, 75])
def test_laplace_scales_match_the_charged_shares(protect_seeded, noise, columns):
    data = _wide(columns)
    priv = protect_seeded(data, epsilon=10.0)
    named: dict[str, Any] = {"n": "count"}
    accuracy: dict[str, float] = {"n": 1}
    for i in range(columns):
        named |= {f"m{i}": (f"x{i}", "mean"), f"s{i}": (f"x{i}", "std")}
        accuracy |= {f"m{i}": 2 if i % 2 else 1e-9, f"s{i}": 1}
    with noise(priv) as calls:
        priv.dp.groupby("g", keys=KEYS).agg(
            **named, accuracy=accuracy, bounds={f"x{i}": BOUNDS for i in range(columns)},
            epsilon=Fraction(3, 7),
        )  # fmt: skip
    (release,) = priv.dp.session.releases
    measurements = release.measurements
    assert len(calls) == len(measurements)
    assert sum(m.epsilon for m in measurements) == Fraction(3, 7)
    assert priv.dp.session.spent.epsilon == Fraction(3, 7)
    assert len({m.epsilon for m in measurements}) > 1  # the weights moved the split
    expected = sorted(Fraction(m.sensitivity) / m.epsilon for m in measurements)
    assert sorted(call.mechanism.scale for call in calls) == expected
    for m in measurements:  # the ledger records the scale the sampler really uses
        assert m.scale == DiscreteLaplace(Fraction(m.sensitivity) / m.epsilon).effective_scale
    assert all(call.size == len(KEYS) for call in calls)


def test_gaussian_sigmas_match_the_charged_shares(protect_seeded, noise):
    data = _wide(3)
    priv = protect_seeded(data, epsilon=2.0, delta=1e-5)
    named = {f"n{i}": (f"x{i}", "count") for i in range(3)}
    accuracy = {"n0": 1e-3, "n1": 1, "n2": 1e3}
    with noise(priv) as calls:
        priv.dp.groupby("g", keys=KEYS).agg(
            **named, accuracy=accuracy, epsilon=1.0, delta=1e-6, mechanism="gaussian"
        )
    (release,) = priv.dp.session.releases
    measurements = release.measurements
    assert sum(m.epsilon for m in measurements) == 1
    assert sum(m.delta for m in measurements) == Fraction(1, 10**6)
    assert measurements[0].epsilon < measurements[1].epsilon < measurements[2].epsilon
    assert len(calls) == len(measurements) == 3
    for call, m in zip(calls, measurements, strict=True):
        assert isinstance(call.mechanism, DiscreteGaussian)
        recalibrated = plan_gaussian(1, m.coordinates, m.epsilon, m.delta).mechanism
        assert call.mechanism.sigma2 == recalibrated.sigma2 == m.sigma2
