"""Noise never passes for data: hidden ratios of (near-)empty groups, sorted percentiles.

Deterministic: noise is captured at 0 (so a noisy count is the true count) where the test
is about the rule, and seeded where it is about real releases.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import pandas_dp
from pandas_dp.errors import DPTypeError, DPValueError

KEYS = ["big", "small", "empty"]
BOUNDS = {"x": (0.0, 100.0)}


@pytest.fixture
def groups() -> pd.DataFrame:
    return pd.DataFrame({"g": ["big"] * 200 + ["small"] * 3, "x": [40.0] * 200 + [90.0] * 3})


def test_a_mean_is_nan_where_its_group_looks_empty(groups, protect_seeded, noise):
    priv = protect_seeded(groups, epsilon=10)
    with noise(priv, value=0):
        table = priv.dp.groupby("g", keys=KEYS).agg(
            n=("x", "count"), m=("x", "mean"), s=("x", "std"), bounds=BOUNDS, epsilon=1.0, ci=0.9
        )
    # A noisy count below 1 (here the true 0) hides the group's ratios and their intervals,
    # as pandas hides an empty group's mean; counts are never hidden.
    assert table.loc["big", "m"] == pytest.approx(40.0)
    assert table.loc["small", "m"] == pytest.approx(90.0, abs=0.01)
    hidden = table[["m", "m_lower", "m_upper", "s", "s_lower", "s_upper"]]
    assert hidden.loc["empty"].isna().all()
    assert hidden.loc[["big", "small"]].notna().all(axis=None)
    assert table["n"].tolist() == [200, 3, 0]
    note = priv.dp.session.ledger["note"].iloc[-1]
    assert "m, s: NaN where the noisy count is below 1 (min_count)" in note
    # With real noise the rule reads the noisy count only: a negative one hides too.
    with noise(priv, value=-5):
        low = priv.dp.groupby("g", keys=KEYS).mean("x", bounds=BOUNDS["x"], epsilon=1.0)
    assert low.isna().tolist() == [False, True, True]


def test_min_count_moves_the_floor_or_keeps_everything(groups, protect_seeded, noise):
    priv = protect_seeded(groups, epsilon=10)
    grouped = priv.dp.groupby("g", keys=KEYS)
    with noise(priv, value=0):
        kept = grouped.mean("x", bounds=BOUNDS["x"], epsilon=1.0, min_count=0)
        strict = grouped.mean("x", bounds=BOUNDS["x"], epsilon=1.0, min_count=201)
        loose = grouped.mean("x", bounds=BOUNDS["x"], epsilon=1.0, min_count=2)
    assert kept.notna().all()  # the empty group shows the centre, as before: the user asked
    assert strict.isna().all()
    assert loose.notna().tolist() == [True, True, False]
    assert "below 2 (min_count)" in priv.dp.session.ledger["note"].iloc[-1]


@pytest.mark.parametrize(
    ("bad", "error"), [(-1, DPValueError), ("5", DPTypeError), (True, DPTypeError)]
)
def test_bad_min_count_is_refused_before_anything_is_charged(
    groups, protect_seeded, charges_nothing, bad, error
):
    priv = protect_seeded(groups, epsilon=10)
    with charges_nothing(priv), pytest.raises(error, match="min_count"):
        priv.dp.groupby("g", keys=KEYS).mean("x", bounds=BOUNDS["x"], epsilon=1.0, min_count=bad)


def test_an_ungrouped_mean_of_an_empty_selection_is_nan(protect_seeded, noise):
    priv = protect_seeded(pd.DataFrame({"x": [1.0, 2.0, 3.0]}), epsilon=10)
    with noise(priv, value=0):
        assert np.isnan(priv[priv["x"] > 10].dp.mean("x", bounds=(0, 10), epsilon=1.0))
        assert priv.dp.mean("x", bounds=(0, 10), epsilon=1.0, min_count=0) == pytest.approx(2.0)


def test_describe_and_several_quantiles_are_monotone(protect_seeded):
    # Small noisy data at a small ε: independent quantiles often cross before sorting.
    gen = np.random.default_rng(5)
    priv = protect_seeded(pd.DataFrame({"x": gen.uniform(0, 100, 30)}), seed=6, epsilon=1e4)
    for _ in range(60):
        table = priv.dp.describe(
            bounds=BOUNDS, epsilon=0.2, percentiles=[0.75, 0.1, 0.5, 0.25, 0.9]
        )
        levels = [0.1, 0.25, 0.5, 0.75, 0.9]
        values = table.loc[[f"{100 * p:g}%" for p in levels], "x"].to_numpy()
        # All hidden together (NaN) when the shared noisy count is below 1, else sorted.
        hidden = np.isnan(values)
        assert hidden.all() == np.isnan(table.loc["mean", "x"]) == hidden.any()
        assert hidden.all() or (np.diff(values) >= 0).all(), values
        quantiles = priv["x"].dp.quantile([0.9, 0.1, 0.5], bounds=(0, 100), epsilon=0.1)
        assert quantiles.loc[0.1] <= quantiles.loc[0.5] <= quantiles.loc[0.9]


def test_a_count_below_its_noise_warns_after_the_charge(groups, protect_seeded, noise):
    priv = protect_seeded(groups, epsilon=10)
    grouped = priv.dp.groupby("g", keys=KEYS)
    with noise(priv, value=0), pytest.warns(pandas_dp.NoiseDominatedWarning) as caught:
        counts = grouped.count(epsilon=0.5)  # half-width 6: "small" (3) and "empty" (0)
    assert counts.tolist() == [200, 3, 0]
    (warning,) = caught
    message = str(warning.message)
    assert "2 of 3 released counts and sums of groupby.count" in message
    assert "95% half-width (up to 6)" in message
    assert len(priv.dp.session.releases) == 1  # charged before it warned
    # Large groups only: no warning (warnings are errors in the tests).
    with noise(priv, value=0), warnings.catch_warnings():
        warnings.simplefilter("error", pandas_dp.NoiseDominatedWarning)
        priv.dp.groupby("g", keys=["big"]).count(epsilon=0.5)
        priv.dp.mean("x", bounds=(0, 100), epsilon=0.5)  # nor a mean of 203 rows (see the rules)
    # The documented way to silence it.
    with noise(priv, value=0), warnings.catch_warnings():
        warnings.simplefilter("error", pandas_dp.NoiseDominatedWarning)
        warnings.filterwarnings("ignore", category=pandas_dp.NoiseDominatedWarning)
        grouped.count(epsilon=0.5)


def test_relative_error_columns(groups, protect_seeded, noise, charges_nothing):
    priv = protect_seeded(groups, epsilon=10)
    grouped = priv.dp.groupby("g", keys=KEYS)
    with noise(priv, value=0):
        table = grouped.agg(n="count", m=("x", "mean"), bounds=BOUNDS, epsilon=1.0, ci=0.9,
                            relative_error=True)  # fmt: skip
    assert list(table.columns) == [
        "n", "n_lower", "n_upper", "n_rel_error", "m", "m_lower", "m_upper", "m_rel_error",
    ]  # fmt: skip
    half = np.maximum(table["n"] - table["n_lower"], table["n_upper"] - table["n"])
    expected = np.where(table["n"] == 0, np.inf, half / table["n"].abs())
    np.testing.assert_array_equal(table["n_rel_error"], expected)
    assert table.loc["big", "n_rel_error"] < 0.1 < table.loc["small", "n_rel_error"]
    assert np.isinf(table.loc["empty", "n_rel_error"])
    assert np.isnan(table.loc["empty", "m_rel_error"])  # a hidden mean stays hidden
    with charges_nothing(priv), pytest.raises(DPValueError, match="ci="):
        grouped.agg(n="count", epsilon=1.0, relative_error=True)
