"""Which statistic, which rule (issue 24): NaN below ``min_count``, a NoiseDominatedWarning
where the error dominates the value.

The table is in docs/how-to/groupby.md ("Small groups"). Rules are tested deterministically
with captured noise (a constant, in lattice units: a noisy count is the true count plus it);
the issue's examples run over many seeded releases; a differential check shows that the
decision reads the noisy values only: a frame and its neighbour given noise that makes their
noisy values equal get the same results and the same warnings.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

import pandas_dp
from pandas_dp.testing import capture_noise

BOUNDS = (0.0, 100.0)


def released(call: Callable[[], Any]) -> tuple[Any, list[str]]:
    """The result of ``call`` and the messages of the NoiseDominatedWarnings it raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", pandas_dp.NoiseDominatedWarning)
        result = call()
    mine = [w for w in caught if issubclass(w.category, pandas_dp.NoiseDominatedWarning)]
    for w in mine:  # stacklevel: every warning points at the caller's line (here: call())
        assert w.filename == __file__, w.filename
    return result, [str(w.message) for w in mine]


def frame(n: int, value: float = 40.0) -> pd.DataFrame:
    return pd.DataFrame({"x": np.full(n, value)})


def all_nan(n: int = 50) -> pd.DataFrame:
    return pd.DataFrame({"g": ["a"] * n, "x": np.full(n, np.nan)})


# --- counts and sums (the rule that existed) --------------------------------------------------


def test_count_and_sum(protect_seeded, noise):
    priv = protect_seeded(frame(3), epsilon=10)
    big = protect_seeded(frame(1000), epsilon=10)
    with noise(priv, value=0):
        (n, fired) = released(lambda: priv.dp.count(epsilon=0.5))  # half-width 6 > 3
        (s, fired_sum) = released(lambda: priv.dp.sum("x", bounds=BOUNDS, epsilon=0.5))
    assert n == 3
    assert len(fired) == 1
    assert "released counts and sums" in fired[0]
    assert s == pytest.approx(120.0)
    assert len(fired_sum) == 1
    with noise(big, value=0):
        assert released(lambda: big.dp.count(epsilon=0.5))[1] == []
        assert released(lambda: big.dp.sum("x", bounds=BOUNDS, epsilon=0.5))[1] == []


# --- means -----------------------------------------------------------------------------------


def test_mean_small_count_warns_large_does_not_empty_is_nan(protect_seeded, noise):
    small = protect_seeded(frame(3), epsilon=10)
    with noise(small, value=0):
        value, fired = released(lambda: small.dp.mean("x", bounds=BOUNDS, epsilon=1.0))
    assert value == pytest.approx(40.0, abs=0.01)  # right here, but a count of 3 ± 7
    assert len(fired) == 1
    assert "1 of 1 released mean values of mean" in fired[0]
    with noise(small, value=-5):  # noisy count -2: NaN, and NaN is not flagged again
        value, fired = released(lambda: small.dp.mean("x", bounds=BOUNDS, epsilon=1.0))
    assert np.isnan(value)
    assert fired == []
    big = protect_seeded(frame(1000), epsilon=10)
    with noise(big, value=0):
        value, fired = released(lambda: big.dp.mean("x", bounds=BOUNDS, epsilon=1.0))
    assert value == pytest.approx(40.0, abs=0.01)
    assert fired == []


def test_mean_wide_interval_warns_even_above_the_count_rule(protect_seeded, noise):
    # 20 rows at ε = 1 (1/2 to the count, scale 2: half-width about 6 < 20), but the centred
    # sum's noise (scale 100) over a count of 20 leaves an interval wider than half the bounds.
    priv = protect_seeded(frame(20), epsilon=10)
    with noise(priv, value=0):
        estimate, fired = released(lambda: priv.dp.mean("x", bounds=BOUNDS, epsilon=1.0, ci=0.95))
        _, count_fired = released(lambda: priv.dp.count(epsilon=0.5))
    assert estimate.upper - estimate.lower >= 50
    assert len(fired) == 1
    assert count_fired == []  # the count alone is not dominated
    with noise(priv, value=0):  # 40 times the ε: a narrow interval, no warning
        estimate, fired = released(lambda: priv.dp.mean("x", bounds=BOUNDS, epsilon=8.0, ci=0.95))
    assert estimate.upper - estimate.lower < 50
    assert fired == []


def test_grouped_mean(protect_seeded, noise):
    data = pd.DataFrame({"g": ["big"] * 200 + ["small"] * 3, "x": [40.0] * 200 + [90.0] * 3})
    priv = protect_seeded(data, epsilon=10)
    grouped = priv.dp.groupby("g", keys=["big", "small", "empty"])
    with noise(priv, value=0):
        means, fired = released(lambda: grouped.mean("x", bounds=BOUNDS, epsilon=1.0))
    assert np.isnan(means["empty"])
    assert means[["big", "small"]].notna().all()
    assert len(fired) == 1
    assert "1 of 2 released mean values of groupby.mean" in fired[0]
    with noise(priv, value=0):
        big, fired = released(
            lambda: priv.dp.groupby("g", keys=["big"]).mean("x", bounds=BOUNDS, epsilon=1.0)
        )
    assert big["big"] == pytest.approx(40.0, abs=0.01)
    assert fired == []


# --- var, std, sem -----------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["var", "std", "sem"])
def test_spreads(protect_seeded, noise, how):
    gen = np.random.default_rng(1)
    small = protect_seeded(pd.DataFrame({"x": [20.0, 40.0, 60.0]}), epsilon=10)
    big = protect_seeded(pd.DataFrame({"x": gen.uniform(20, 60, 2000)}), epsilon=10)

    def spread(priv: Any) -> tuple[float, list[str]]:
        table, fired = released(
            lambda: priv.dp.agg(s=("x", how), bounds={"x": BOUNDS}, epsilon=1.0)
        )
        return float(table["s"].iloc[0]), fired

    with noise(small, value=0):
        value, fired = spread(small)
    assert not np.isnan(value)
    assert len(fired) == 1
    assert f"released {how} values" in fired[0]
    with noise(small, value=-5):  # noisy count below 1
        value, fired = spread(small)
    assert np.isnan(value)
    assert fired == []
    with noise(big, value=0):
        value, fired = spread(big)
    assert value > 0
    assert fired == []


def test_grouped_spreads_follow_the_count(protect_seeded, noise):
    data = pd.DataFrame({"g": ["big"] * 500 + ["small"] * 3, "x": [20.0, 60.0] * 250 + [1.0] * 3})
    priv = protect_seeded(data, epsilon=10)
    grouped = priv.dp.groupby("g", keys=["big", "small", "empty"])
    with noise(priv, value=0):
        table, fired = released(
            lambda: grouped.agg(s=("x", "std"), v=("x", "var"), bounds={"x": BOUNDS}, epsilon=1.0)
        )
    assert table.loc["empty"].isna().all()
    assert table.loc[["big", "small"]].notna().all(axis=None)
    assert len(fired) == 1
    assert "2 of 4 released std/var values" in fired[0]


# --- quantiles ---------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["median", "quantile"])
def test_quantile_with_a_count(protect_seeded, noise, how):
    def run(priv: Any, **options: Any) -> tuple[Any, list[str]]:
        method = getattr(priv.dp, how)
        args = ("x",) if how == "median" else ("x", 0.25)
        return released(lambda: method(*args, bounds=BOUNDS, epsilon=1.0, **options))

    spread = np.linspace(20.0, 60.0, 1000)
    small = protect_seeded(frame(10), epsilon=10)
    big = protect_seeded(pd.DataFrame({"x": spread}), epsilon=10)
    with noise(small, value=0):
        value, fired = run(small, min_count=1)  # 10 rows: the rank error is larger than 5
        plain, unchecked = run(small)  # nothing measured but the choice: no rule
    assert not np.isnan(value)
    assert len(fired) == 1
    assert "released quantile values" in fired[0]
    assert not np.isnan(plain)
    assert unchecked == []
    with noise(small, value=-10):  # noisy count 0: NaN (ungrouped quantiles too)
        value, fired = run(small, min_count=1)
    assert np.isnan(value)
    assert fired == []
    with noise(big, value=0):
        value, fired = run(big, min_count=1)
    level = 0.5 if how == "median" else 0.25
    assert value == pytest.approx(np.quantile(spread, level), abs=0.1)
    assert fired == []
    note = big.dp.session.ledger["note"].iloc[-1]
    assert "NaN where the noisy count is below 1 (min_count)" in note


def test_quantile_interval_rule(protect_seeded):
    gen = np.random.default_rng(2)
    priv = protect_seeded(pd.DataFrame({"x": gen.uniform(35, 45, 2000)}), seed=3, epsilon=100)
    estimate, fired = released(lambda: priv.dp.median("x", bounds=BOUNDS, epsilon=2.0, ci=0.95))
    assert estimate.upper - estimate.lower < 50
    assert fired == []
    few = protect_seeded(pd.DataFrame({"x": [10.0, 90.0]}), seed=3, epsilon=100)
    for _ in range(10):  # two values: the interval spans most of the bounds
        estimate, fired = released(lambda: few.dp.median("x", bounds=BOUNDS, epsilon=1.0, ci=0.95))
        wide = estimate.upper - estimate.lower >= 50
        assert wide == bool(fired), (estimate, fired)


def test_grouped_quantiles_with_min_count(protect_seeded, noise):
    data = pd.DataFrame({"g": ["big"] * 1000 + ["small"] * 5, "x": [40.0] * 1000 + [70.0] * 5})
    priv = protect_seeded(data, epsilon=10)
    grouped = priv.dp.groupby("g", keys=["big", "small", "empty"])
    with noise(priv, value=0):
        medians, fired = released(
            lambda: grouped.median("x", bounds=BOUNDS, epsilon=1.0, min_count=1)
        )
    assert np.isnan(medians["empty"])
    assert medians[["big", "small"]].notna().all()
    assert len(fired) == 1
    assert "1 of 2 released median values" in fired[0]


# --- describe ----------------------------------------------------------------------------------


def test_describe(protect_seeded, noise):
    nothing = protect_seeded(all_nan()[["x"]], epsilon=10)
    with noise(nothing, value=0):
        table, fired = released(lambda: nothing.dp.describe(bounds={"x": BOUNDS}, epsilon=1.0))
    assert table.loc["count", "x"] == 0
    assert table["x"].drop("count").isna().all()  # mean, std, percentiles: NaN
    assert len(fired) == 1
    assert "released counts and sums" in fired[0]
    assert "values of describe" not in fired[0]  # NaN is not flagged again
    few = protect_seeded(frame(4), epsilon=10)
    with noise(few, value=0):
        table, fired = released(lambda: few.dp.describe(bounds={"x": BOUNDS}, epsilon=1.0))
    assert table["x"].notna().all()
    assert len(fired) == 1
    assert "values of describe are dominated" in fired[0]
    gen = np.random.default_rng(4)
    many = protect_seeded(pd.DataFrame({"x": gen.uniform(20, 60, 5000)}), epsilon=10)
    with noise(many, value=0):
        assert released(lambda: many.dp.describe(bounds={"x": BOUNDS}, epsilon=2.0))[1] == []


# --- the issue's examples, over many seeded releases ---------------------------------------------


def _never_plain(
    release: Callable[[Any], Any], protect_seeded: Any, seeds: int, allowed: int = 0
) -> int:
    """How many releases came back NaN; fails if more than ``allowed`` are plain numbers
    without a warning."""
    hidden, plain = 0, []
    for seed in range(seeds):
        priv = protect_seeded(all_nan(), seed=seed, epsilon=1e6)
        value, fired = released(lambda p=priv: release(p))
        value = float(np.asarray(value).ravel()[0])
        if not (np.isnan(value) or fired):
            plain.append((seed, value))
        hidden += bool(np.isnan(value))
    assert len(plain) <= allowed, plain
    return hidden


def test_issue_all_nan_mean_is_nan_or_flagged(protect_seeded):
    hidden = _never_plain(
        lambda priv: priv.dp.mean("x", bounds=BOUNDS, epsilon=1.0), protect_seeded, 200
    )
    assert 0 < hidden < 200  # both happen: the decision reads the noise


def test_issue_all_nan_median_is_nan_or_flagged(protect_seeded):
    # With min_count the median measures its count (discrete Laplace, scale 5 here): an
    # empty column passes unflagged only when that count's noise is at least 29, whose
    # probability is 0.17% per release (the discrete Laplace tail at scale 5). The rule is a rule
    # on noisy values, so it can be fooled that rarely, by design; over 100 releases more
    # than 3 such (expected 0.17) has probability below 1e-4, so more means a broken rule.
    _never_plain(
        lambda priv: priv.dp.median("x", bounds=BOUNDS, epsilon=1.0, min_count=1),
        protect_seeded,
        100,
        allowed=3,
    )
    _never_plain(
        lambda priv: priv.dp.median("x", bounds=BOUNDS, epsilon=1.0, ci=0.95),
        protect_seeded,
        50,
        allowed=3,
    )


def test_issue_lone_groupby_mean_over_an_empty_key_is_nan_or_flagged(protect_seeded):
    # As for the median below: the rule reads noisy values, so an empty group passes
    # unflagged when its count's noise is large and its interval narrow, by design, in 5 of
    # 4,000 seeded releases (0.13%). Over 300, more than 3 such (expected 0.4) would mean a
    # broken rule: a Poisson(0.45) exceeds 3 with probability about 1e-3.
    hidden = _never_plain(
        lambda priv: priv.dp.groupby("g", keys=["nobody"]).mean("x", bounds=BOUNDS, epsilon=1.0),
        protect_seeded,
        300,
        allowed=3,
    )
    assert 0 < hidden < 300


# --- differential: the decision reads noisy values only -----------------------------------------


@pytest.mark.parametrize("count_noise", [-3, 0, 2, 5, 9, 30])
def test_neighbours_with_equal_noisy_values_warn_alike(count_noise):
    # D: group "a" has no values of x; D': one more row in "a" at the centre of the bounds
    # (its centred value is 0, so the centred sums are equal). Noise c on D's count and
    # c - 1 on D''s makes every noisy value equal: results and warnings must be too, even
    # where a rule on the exact counts (0 against 1) would tell them apart.
    rows = pd.DataFrame({"g": ["b"] * 40, "x": np.linspace(10, 90, 40)})
    d = pd.concat([rows, pd.DataFrame({"g": ["a"], "x": [np.nan]})], ignore_index=True)
    d_prime = pd.concat([d, pd.DataFrame({"g": ["a"], "x": [50.0]})], ignore_index=True)
    outcomes = []
    for data, shift in ((d, 0), (d_prime, -1)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
            priv = data.dp.protect(epsilon=100)
        grouped = priv.dp.groupby("g", keys=["a", "b"])
        release = lambda g=grouped: g.agg(  # noqa: E731
            n=("x", "count"), m=("x", "mean"), s=("x", "std"), bounds={"x": BOUNDS}, epsilon=1.0
        )
        # Draws: the count, the centred sum, the squares (the release's order); groups a, b.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)  # scripted noise
            script = [[count_noise + shift, 0], [3, -2], [5, 1]]
            with capture_noise(priv, script=script):
                outcomes.append(released(release))
    (table, fired), (table_prime, fired_prime) = outcomes
    pd.testing.assert_frame_equal(table, table_prime)
    assert fired == fired_prime
