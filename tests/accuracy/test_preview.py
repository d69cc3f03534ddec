"""Previews: know before you spend.

A preview (``priv.dp.preview.<release>(...)``) must (1) spend nothing, (2) read no data and
draw no noise, and (3) say exactly what the release would do: the same mechanism and noise
scale, the same cost, and an ``error`` equal to the half-width of the interval the release
returns with ``ci``. (3) is checked with the ``noise`` fixture: with the noise replaced by a
constant 0 the released interval is ``exact ± half-width``, so its half-width is read off
without any randomness, and the mechanism objects the release drew from are recorded.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest

import pandas_dp
from pandas_dp import Budget, DPError
from pandas_dp.api.release import Preview
from pandas_dp.engines.pandas_engine import PandasEngine
from pandas_dp.planning.noise import NoiseSource

KEYS = list(range(20))
BOUNDS = (0.0, 2.0)


class DataReadError(Exception):
    pass


@pytest.fixture
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    return pd.DataFrame({"x": rng.uniform(-0.5, 2.5, 1000), "g": np.arange(1000) % 20})


@pytest.fixture
def no_data(monkeypatch: pytest.MonkeyPatch):
    """Make every read of the data, and every noise draw, raise."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise DataReadError

    monkeypatch.setattr(PandasEngine, "aggregate", refuse)
    monkeypatch.setattr("pandas_dp.engines.pandas_engine.aggregate_frame", refuse)
    monkeypatch.setattr(NoiseSource, "draw", refuse)


def all_previews(priv: pd.DataFrame) -> list[Any]:
    p = priv.dp.preview
    gauss = {"mechanism": "gaussian", "delta": 1e-7}
    grouped = priv.dp.preview.groupby("g", keys=KEYS)
    previews = [
        p.count(epsilon=0.5),
        p.count(epsilon=0.5, ci=0.9, **gauss),
        p.sum("x", bounds=BOUNDS, epsilon=0.5),
        p.sum("x", bounds=BOUNDS, epsilon=0.5, **gauss),
        p.mean("x", bounds=BOUNDS, epsilon=0.5),
        p.mean("x", bounds=BOUNDS, epsilon=0.5, **gauss),
        priv["x"].dp.preview.sum(bounds=BOUNDS, epsilon=0.5),
        grouped.count(epsilon=0.5),
        grouped.sum("x", bounds=BOUNDS, epsilon=0.5, **gauss),
        grouped.mean("x", bounds=BOUNDS, epsilon=0.5),
        grouped.agg(n="count", s=("x", "sum"), m=("x", "mean"), bounds={"x": BOUNDS}, epsilon=1),
    ]
    previews.append(priv.dp.epsilon_for("count", error=10))
    previews.append(priv.dp.epsilon_for("mean", error=0.1, bounds=BOUNDS, expected_rows=1000))
    return previews


# --- spends nothing, reads nothing -----------------------------------------------------------


def test_previews_spend_nothing_and_read_no_data(frame, protect_seeded, no_data) -> None:
    priv = protect_seeded(frame, epsilon=1.0, delta=1e-6)
    previews = all_previews(priv)
    assert all(isinstance(p, Preview) for p in previews[:-2])
    session = priv.dp.session
    assert session.spent == Budget(0)
    assert session.releases == ()
    assert len(session.ledger) == 0
    # The patch is live: a release reaches the data and fails (charged, as every failure
    # after the budget check is, so that it cannot be a free observation).
    with pytest.raises(pandas_dp.ReleaseFailedError):
        priv.dp.count(epsilon=0.5)
    assert session.spent == Budget.of(0.5, 0)


def test_previews_work_after_the_budget_is_spent(frame, protect_seeded) -> None:
    # A preview is not a release: it needs no budget, so it works on an exhausted session.
    priv = protect_seeded(frame, epsilon=0.5)
    priv.dp.count(epsilon=0.5)
    with pytest.raises(pandas_dp.BudgetExceededError):
        priv.dp.count(epsilon=0.5)
    preview = priv.dp.preview.count(epsilon=0.5)
    assert preview.table.loc["count", "error"] == 6.0  # discrete Laplace, scale 2: see below
    assert len(priv.dp.session.releases) == 1


def test_previews_draw_no_randomness(frame, protect_seeded) -> None:
    # Same seed, with and without previews in between: identical releases.
    plain = protect_seeded(frame, seed=9, epsilon=5.0, delta=1e-6)
    previewed = protect_seeded(frame, seed=9, epsilon=5.0, delta=1e-6)
    all_previews(previewed)
    values = [
        (
            priv.dp.count(epsilon=0.5),
            priv.dp.sum("x", bounds=BOUNDS, epsilon=0.5, mechanism="gaussian", delta=1e-7),
        )
        for priv in (plain, previewed)
    ]
    assert values[0] == values[1]


def test_preview_validates_like_the_release(frame, protect_seeded) -> None:
    priv = protect_seeded(frame, epsilon=1.0)
    for bad in (
        lambda: priv.dp.preview.count(epsilon=-1),
        lambda: priv.dp.preview.count(epsilon=0.5, ci=1.5),
        lambda: priv.dp.preview.sum("x", bounds=(2, 0), epsilon=0.5),
        lambda: priv.dp.preview.sum("missing", bounds=BOUNDS, epsilon=0.5),
        lambda: priv.dp.preview.count(epsilon=0.5, mechanism="cauchy"),
        lambda: priv.dp.preview.count(epsilon=0.5, mechanism="gaussian"),  # no δ anywhere
    ):
        with pytest.raises(DPError):
            bad()


# --- says exactly what the release does ------------------------------------------------------


def released(priv, noise, call, value: int = 0):
    """A release with constant noise, and the mechanisms it drew from."""
    with noise(priv, value=value) as calls:
        result = call()
    return result, [c.mechanism for c in calls]


def noise_scale(mechanism: Any) -> float:
    """The noise scale a mechanism samples with, in noise units (b for Laplace, σ rounded
    down for Gaussian noise)."""
    return float(getattr(mechanism, "effective_scale", mechanism.scale))


CASES = [
    ("count", {}, {}),
    ("count", {"mechanism": "gaussian", "delta": 1e-7}, {}),
    ("count", {}, {"ci": 0.8}),
    ("sum", {}, {}),
    ("sum", {"mechanism": "gaussian", "delta": 1e-7}, {}),
    ("sum", {"mechanism": "gaussian", "delta": 1e-9}, {"ci": 0.99}),
]


@pytest.mark.parametrize(("how", "noise_kw", "ci_kw"), CASES)
def test_preview_matches_the_release(frame, protect_seeded, noise, how, noise_kw, ci_kw):
    priv = protect_seeded(frame, epsilon=10.0, delta=1e-5)
    confidence = ci_kw.get("ci", 0.95)
    if how == "count":
        preview = priv.dp.preview.count(epsilon=0.5, **noise_kw, **ci_kw)

        def call() -> Any:
            return priv.dp.count(epsilon=0.5, ci=confidence, **noise_kw)

    else:
        preview = priv.dp.preview.sum("x", bounds=BOUNDS, epsilon=0.5, **noise_kw, **ci_kw)

        def call() -> Any:
            return priv.dp.sum("x", bounds=BOUNDS, epsilon=0.5, ci=confidence, **noise_kw)

    zero, mechanisms = released(priv, noise, call, 0)
    one, _ = released(priv, noise, call, 1)
    step = one.value - zero.value  # one noise unit, in the column's units
    row = preview.table.loc[how]
    assert len(mechanisms) == 1
    assert row["mechanism"] == mechanisms[0].name
    assert row["scale"] == noise_scale(mechanisms[0]) * step
    assert row["error"] == zero.upper - zero.value == zero.value - zero.lower
    assert preview.confidence == zero.confidence == confidence
    # The cost it announces is what the ledger records.
    cost = priv.dp.session.releases[-1].cost
    assert (preview.epsilon, preview.delta) == (float(cost.epsilon), float(cost.delta))
    assert row["epsilon"] == 0.5
    assert row["delta"] == noise_kw.get("delta", 0.0)


def test_count_preview_example_numbers(frame, protect_seeded) -> None:
    # Discrete Laplace with b = 2 (ε = 0.5): P(|Z| > k) = 2 q^(k+1) / (1 + q), q = e^-1/2,
    # is 0.0376 for k = 6 and 0.062 for k = 5, so the 95% error is 6.
    q = math.exp(-0.5)
    assert 2 * q**7 / (1 + q) <= 0.05 < 2 * q**6 / (1 + q)
    preview = protect_seeded(frame, epsilon=1.0).dp.preview.count(epsilon=0.5)
    row = preview.table.loc["count"]
    assert (row["mechanism"], row["scale"], row["error"]) == ("discrete_laplace", 2.0, 6.0)
    assert "discrete_laplace" in repr(preview)
    assert "ε=0.5" in repr(preview)


def test_grouped_preview_matches_the_release(frame, protect_seeded, noise) -> None:
    priv = protect_seeded(frame, epsilon=10.0, delta=1e-5)
    spec = {"n": "count", "s": ("x", "sum"), "m": ("x", "mean")}
    grouped = priv.dp.preview.groupby("g", keys=KEYS)
    preview = grouped.agg(**spec, bounds={"x": BOUNDS}, epsilon=1.0)

    def call() -> pd.DataFrame:
        return priv.dp.groupby("g", keys=KEYS).agg(
            **spec, bounds={"x": BOUNDS}, epsilon=1.0, ci=0.95
        )

    table, mechanisms = released(priv, noise, call, 0)
    # Row count, centred sum and the count of non-missing x (x is a float column, so the mean
    # divides by that count rather than by the rows); the sum is derived from the last two.
    assert len(mechanisms) == 3
    for name in ("n", "s"):
        widths = table[f"{name}_upper"] - table[name]  # equal up to the float subtraction
        assert np.allclose(widths, preview.table.loc[name, "error"], rtol=1e-12, atol=0)
    assert math.isnan(preview.table.loc["m", "error"])
    assert preview.epsilon == 1.0
    # The mean's half-width at the released count never exceeds the preview's worst case.
    counts = table["n"].to_numpy()
    mean_widths = np.maximum(table["m_upper"] - table["m"], table["m"] - table["m_lower"])
    for count, width in zip(counts, mean_widths, strict=True):
        assert width <= preview.mean_error(count)["m"] + 1e-12


@pytest.mark.parametrize("level", [0.125, 0.25, 0.5, 1.0, 1.75])
@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
def test_mean_preview_matches_the_released_interval(protect_seeded, noise, level, mechanism):
    # n rows all at `level` (a lattice point): with zero noise the release is exactly
    # `level` and its interval's half-width is what mean_error(n, mean=level) announces; the
    # default (worst case over the bounds) is never smaller.
    n = 500
    gauss = {"mechanism": "gaussian", "delta": 1e-7} if mechanism == "gaussian" else {}
    priv = protect_seeded(pd.DataFrame({"x": [level] * n}), epsilon=10.0, delta=1e-5)
    preview = priv.dp.preview.mean("x", bounds=BOUNDS, epsilon=0.5, **gauss)

    def call() -> Any:
        return priv.dp.mean("x", bounds=BOUNDS, epsilon=0.5, ci=0.95, **gauss)

    result, mechanisms = released(priv, noise, call, 0)
    assert result.value == pytest.approx(level, abs=1e-12)
    width = max(result.upper - result.value, result.value - result.lower)
    assert width == pytest.approx(preview.mean_error(n, mean=level)["mean"], rel=1e-12)
    assert width <= preview.mean_error(n)["mean"] * (1 + 1e-12)
    assert preview.table.loc["mean", "scale"] > 0
    assert len(mechanisms) == 2


@pytest.mark.parametrize("epsilon", [5e-5, 50.0, 1000.0])
def test_gaussian_preview_and_release_at_extreme_epsilon(frame, protect_seeded, noise, epsilon):
    # Tiny ε: σ about 43,000 noise units for a count, where σ² rounded up to t·m must stay
    # inside the exact sampler's range. Huge ε: e^ε overflows a float beyond ε = 709.8.
    # Both must preview, release and agree, like any other ε.
    priv = protect_seeded(frame, epsilon=1e4, delta=1e-3)
    gauss = {"mechanism": "gaussian", "delta": 1e-6}
    preview = priv.dp.preview.count(epsilon=epsilon, **gauss)
    result, mechanisms = released(
        priv, noise, lambda: priv.dp.count(epsilon=epsilon, ci=0.95, **gauss), 0
    )
    assert result.upper - result.value == preview.table.loc["count", "error"]
    assert preview.table.loc["count", "scale"] == float(mechanisms[0].scale)
    real = priv.dp.count(epsilon=epsilon, ci=0.95, **gauss)  # the sampler itself, seeded
    assert isinstance(real.value, int)


def test_a_preview_accepts_exactly_what_the_release_accepts(frame, protect_seeded) -> None:
    """The preview accessor is the release accessor with another executor (issue 14): the
    ``nonnegative`` that ``agg`` takes once raised in the hand-mirrored preview."""
    priv = protect_seeded(frame, epsilon=1.0)
    preview = priv.dp.preview.agg(n="count", epsilon=0.1, nonnegative=True)
    assert isinstance(preview, Preview)
    grouped = priv.dp.preview.groupby("g", keys=list(range(20))).agg(
        n="count", s=("x", "sum"), bounds={"x": (0, 2)}, epsilon=0.1, nonnegative=True
    )
    assert list(grouped.table.index) == ["n", "s"]
    assert priv.dp.session.spent == Budget(0)
    released = priv.dp.agg(n="count", epsilon=0.1, nonnegative=True)
    assert preview.release.measurements == priv.dp.session.releases[0].measurements
    assert released["n"].iloc[0] >= 0
