"""DP partition selection: releasing only keys whose noisy row count clears a threshold τ.

Documented mechanism: every key observed in the data gets a discrete Laplace row count of
scale ``b = L1/ε_rows``; a key is released when ``count + Z >= τ`` with
``τ = selection_threshold(b, δ, Δ0 = max_groups_per_unit, Δ∞ = max_rows_per_group)``, so a
key held by one unit is released with probability at most δ (``keep_probability``). The
call's δ defaults to ``session δ × ε / session ε``; keys come back sorted.
"""

from __future__ import annotations

import re
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from pandas_dp.errors import BudgetExceededError, DPError, DPValueError
from pandas_dp.mechanisms.random import SeededRandomSource
from pandas_dp.mechanisms.selection import keep_probability, selection_threshold

THRESHOLD = re.compile(r"noisy row count is ≥ (\d+) \(δ = ([0-9.e+-]+) for ≤ (\d+) keys per unit")


def threshold_in_note(priv: pd.DataFrame) -> int:
    note = priv.dp.session.ledger["note"].iloc[-1]
    match = THRESHOLD.search(note)
    assert match, note
    return int(match[1])


def lonely_frame(big: int = 500) -> pd.DataFrame:
    """One key with ``big`` rows, one held by a single row."""
    return pd.DataFrame({"city": ["big"] * big + ["lonely"], "x": 1.0})


# --- refusals --------------------------------------------------------------------------------

NO_KEYS = {
    "count": lambda p: p.dp.groupby("city", selection="threshold").count(epsilon=0.5),
    "sum": lambda p: p.dp.groupby("city", selection="threshold").sum(
        "x", bounds=(0, 1), epsilon=0.5
    ),
    "mean": lambda p: p.dp.groupby("city", selection="threshold").mean(
        "x", bounds=(0, 1), epsilon=0.5
    ),
    "agg": lambda p: p.dp.groupby("city", selection="threshold").agg(n="count", epsilon=0.5),
    "value_counts": lambda p: p["city"].dp.value_counts(epsilon=0.5, selection="threshold"),
}


@pytest.mark.parametrize("name", list(NO_KEYS))
def test_pure_epsilon_session_without_keys_names_both_ways_out(name, charges_nothing):
    priv = lonely_frame().dp.protect(epsilon=1.0)
    with charges_nothing(priv), pytest.raises(DPValueError) as caught:
        NO_KEYS[name](priv)
    message = str(caught.value)
    assert "keys=" in message
    assert "delta" in message
    assert "lonely" not in message


@pytest.mark.parametrize("delta", [1e-7, 0.0])
def test_delta_with_public_keys_is_refused(delta, charges_nothing):
    priv = lonely_frame().dp.protect(epsilon=1.0, delta=1e-5)
    grouped = priv.dp.groupby("city", keys=["big", "other"])
    with charges_nothing(priv), pytest.raises(DPValueError, match="delta"):
        grouped.count(epsilon=0.5, delta=delta)
    with charges_nothing(priv), pytest.raises(DPValueError, match="delta"):
        grouped.sum("x", bounds=(0, 1), epsilon=0.5, delta=delta)
    with charges_nothing(priv), pytest.raises(DPValueError, match="delta"):
        priv["city"].dp.value_counts(keys=["big"], epsilon=0.5, delta=delta)


@pytest.mark.parametrize("delta", [0, 0.0, -1e-9, 1.0, float("nan"), "1e-6", True])
def test_bad_explicit_delta_is_refused(delta, charges_nothing):
    priv = lonely_frame().dp.protect(epsilon=1.0, delta=1e-5)
    with charges_nothing(priv), pytest.raises(DPError):
        priv.dp.groupby("city", selection="threshold").count(epsilon=0.5, delta=delta)


def test_delta_beyond_what_remains_is_refused(charges_nothing):
    priv = lonely_frame().dp.protect(epsilon=1.0, delta=1e-6)
    with charges_nothing(priv), pytest.raises(BudgetExceededError):
        priv.dp.groupby("city", selection="threshold").count(epsilon=0.5, delta=2e-6)


# --- a key held by one row is (almost) never released -------------------------------------


def test_a_key_held_by_one_row_is_never_released(protect_seeded, noise):
    priv = protect_seeded(lonely_frame(), epsilon=1.0, delta=1e-6)
    with noise(priv) as calls:
        exact = priv.dp.groupby("city", selection="threshold").count(epsilon=1.0)
    (call,) = calls
    mechanism = call.mechanism
    tau = threshold_in_note(priv)
    delta = Fraction(1, 10**6)  # the whole session δ: the call takes all of ε
    assert priv.dp.session.spent.delta == delta
    assert tau == selection_threshold(mechanism.effective_scale, delta, 1, 1)
    assert call.size == 2  # one variate per observed key
    assert exact.to_dict() == {"big": 500}  # zero noise: 1 < τ
    # The documented guarantee, exactly: P(1 + Z >= τ) <= δ, and τ is the smallest such.
    assert keep_probability(1, tau, mechanism.effective_scale) <= 1e-6
    assert keep_probability(1, tau - 1, mechanism.effective_scale) > 1e-6

    # 10,000 trials, vectorised. A release draws one independent variate per observed key
    # from this very mechanism object and keeps a key iff exact count + variate >= τ; the
    # lonely key's fate depends on its own variate only. So 10,000 variates from the same
    # object give the outcomes of 10,000 releases exactly. Expected number of releases
    # <= 10,000 · 1e-6 = 0.01, so with a fixed seed this assertion fails with p <= 1%.
    variates = mechanism.sample(10_000, SeededRandomSource(424242))
    assert np.count_nonzero(1 + variates >= tau) == 0
    # The same draws keep the 500-row key every time (P(miss) = P(Z < τ - 500) < 1e-100).
    assert np.all(500 + variates >= tau)

    # And a few real releases through the public API agree.
    priv = protect_seeded(lonely_frame(), seed=7, epsilon=50.0, delta=5e-5)
    for _ in range(50):
        released = priv.dp.groupby("city", selection="threshold").count(epsilon=1.0)
        assert released.index.tolist() == ["big"]
    assert priv.dp.session.spent == priv.dp.session.total


def test_keep_probability_of_keys_near_the_threshold(protect_seeded, noise):
    epsilon, delta = Fraction(1, 2), Fraction(1, 10**6)
    tau = selection_threshold(Fraction(2), delta, 1, 1)
    sizes = {"below": tau - 1, "at": tau, "above": tau + 3}
    data = pd.DataFrame({"city": np.repeat(list(sizes), list(sizes.values()))})
    trials = 2_000
    priv = protect_seeded(data, seed=11, epsilon=float(epsilon) * trials, delta=2.1e-3)
    with noise(priv) as calls:
        priv.dp.groupby("city", selection="threshold").count(epsilon=0.5, delta=1e-6)
    mechanism = calls[0].mechanism
    assert mechanism.effective_scale == 2
    assert threshold_in_note(priv) == tau
    expected = {k: keep_probability(n, tau, mechanism.effective_scale) for k, n in sizes.items()}
    # P(Z >= 1) = q/(1+q), P(Z >= 0) = 1/(1+q), P(Z >= -3) = 1 - q^4/(1+q), q = e^(-1/2).
    q = np.exp(-0.5)
    assert expected["below"] == pytest.approx(q / (1 + q), rel=1e-12)
    assert expected["at"] == pytest.approx(1 / (1 + q), rel=1e-12)
    assert expected["above"] == pytest.approx(1 - q**4 / (1 + q), rel=1e-12)

    kept = dict.fromkeys(sizes, 0)
    for _ in range(trials - 1):
        released = priv.dp.groupby("city", selection="threshold").count(epsilon=0.5, delta=1e-6)
        assert released.index.is_monotonic_increasing
        for key in released.index:
            kept[key] += 1
    # Each key is kept independently with its probability: Binomial(trials - 1, p). The
    # central interval of probability 1 - 1e-6 fails for an honest mechanism with p <= 1e-6.
    for key, p in expected.items():
        low, high = stats.binom.interval(1 - 1e-6, trials - 1, p)
        assert low <= kept[key] <= high, (key, kept[key], p)

    # The same, vectorised with 10^6 draws of the planner's mechanism (see the test above
    # for why this is equivalent); the binomial standard error is below 5e-4.
    variates = mechanism.sample(1_000_000, SeededRandomSource(77))
    for key, n in sizes.items():
        low, high = stats.binom.interval(1 - 1e-6, 1_000_000, expected[key])
        assert low <= np.count_nonzero(n + variates >= tau) <= high


# --- what is released ---------------------------------------------------------------------


def test_released_keys_are_sorted_and_only_observed(protect_seeded, noise):
    city = pd.Categorical(
        ["zeta"] * 3 + ["alpha"] * 2 + [None] + ["mid"],
        categories=["mid", "zeta", "alpha", "UNSEEN"],
    )
    data = pd.DataFrame({"city": city, "sex": [1, 0, 1, 0, 0, 1, 1]})
    priv = protect_seeded(data, epsilon=3.0, delta=1e-6)
    with noise(priv, value=10**6):  # every observed key passes any threshold
        counts = priv.dp.groupby("city", selection="threshold").count(epsilon=1)
        pairs = priv.dp.groupby(["sex", "city"], selection="threshold").count(epsilon=1)
    assert counts.index.tolist() == ["alpha", "mid", "zeta"]
    assert counts.index.name == "city"
    assert not isinstance(counts.index.dtype, pd.CategoricalDtype)
    assert (counts - 10**6).tolist() == [2, 1, 3]
    pairs_seen = zip(data.sex, data.city, strict=True)
    observed = sorted({(s, c) for s, c in pairs_seen if isinstance(c, str)})
    assert pairs.index.tolist() == observed
    assert list(pairs.index.names) == ["sex", "city"]
    for level in pairs.index.levels:
        assert "UNSEEN" not in list(level)
    with noise(priv, value=-(10**6)):  # nothing passes
        nothing = priv.dp.groupby("city", selection="threshold").count(epsilon=1)
    assert len(nothing) == 0
    assert (nothing.name, nothing.index.name) == ("count", "city")
    # Releasing nothing still costs the full (ε, δ): the charge must not depend on the data.
    assert priv.dp.session.spent.epsilon == 3
    groups = priv.dp.session.ledger["groups"].tolist()
    assert groups[:2] == [3, 4]
    assert groups[2] in (0, 1)  # the released number of keys (or 1 as a floor)
    assert "UNSEEN" not in priv.dp.session.ledger.to_string()


def test_delta_charged_as_documented(protect_seeded, noise):
    priv = protect_seeded(lonely_frame(), epsilon=2.0, delta=1e-5)
    with noise(priv) as calls:
        priv.dp.groupby("city", selection="threshold").count(epsilon=0.5)  # default: 1e-5 · 0.5/2
        priv.dp.groupby("city", selection="threshold").count(epsilon=0.5, delta=3e-7)  # explicit
        priv.dp.groupby("city", selection="threshold").agg(
            s=("x", "sum"), bounds={"x": (0, 1)}, epsilon=1.0
        )
    session = priv.dp.session
    default = Fraction(1, 10**5) * Fraction(1, 4)
    explicit = Fraction(3, 10**7)
    third = Fraction(1, 10**5) * Fraction(1, 2)
    assert session.spent.delta == default + explicit + third
    assert session.spent.epsilon == 2
    ledger = session.ledger
    assert ledger["delta"].tolist() == [float(default), float(explicit), float(third)]
    # τ in each note is the documented threshold for that call's scale and δ.
    notes = ledger["note"].tolist()
    scales = [calls[0].mechanism.effective_scale, calls[1].mechanism.effective_scale]
    for note, scale, delta in zip(notes, scales, (default, explicit), strict=False):
        tau = selection_threshold(scale, delta, 1, 1)
        assert f"noisy row count is ≥ {tau} (δ = {float(delta):.3g}" in note
    # A sum without keys adds the row count that selects them, and splits ε with it; the
    # δ is carried by the row count's measurement.
    measurements = session.releases[2].measurements
    assert [m.label for m in measurements] == ["sum(x)", "count+selection"]
    assert [m.epsilon for m in measurements] == [Fraction(1, 2)] * 2
    assert [m.cost.delta for m in measurements] == [0, third]
    assert [c.mechanism.scale for c in calls[2:]][1] == 2


def test_selection_threshold_under_a_privacy_unit(protect_seeded, noise):
    # Many people hold one row each in "common"; one person holds 1,000 rows of "private".
    data = pd.DataFrame(
        {
            "pid": np.r_[np.arange(300), np.full(1000, 999)],
            "city": ["common"] * 300 + ["private"] * 1000,
        }
    )
    priv = protect_seeded(data, epsilon=1.0, delta=1e-6, privacy_unit="pid", max_rows_per_unit=10)
    with noise(priv) as calls:
        counts = priv.dp.groupby(
            "city", max_groups_per_unit=2, max_rows_per_group=3, selection="threshold"
        ).count(epsilon=1.0)
    scale = calls[0].mechanism.effective_scale
    assert scale == 6  # L1 = min(k, g·r) = min(10, 2·3)
    tau = selection_threshold(scale, Fraction(1, 10**6), 2, 3)
    assert threshold_in_note(priv) == tau
    note = priv.dp.session.ledger["note"].iloc[-1]
    assert "≤ 2 keys per unit, ≤ 3 rows each" in note
    # The heavy person's key holds at most r = 3 rows after bounding: below τ, not released.
    assert tau > 3
    assert counts.to_dict() == {"common": 300}


def test_value_counts_without_keys_selects_then_sorts(protect_seeded, noise):
    series = pd.Series(["b"] * 80 + ["a"] * 120 + ["c"] * 100 + ["rare"], name="letter")
    priv = protect_seeded(series, epsilon=1.0, delta=1e-6)
    with noise(priv):
        counts = priv.dp.value_counts(epsilon=1.0, selection="threshold")
    assert counts.index.tolist() == ["a", "c", "b"]
    assert counts.tolist() == [120, 100, 80]
    assert (counts.name, counts.index.name) == ("count", "letter")
    assert priv.dp.session.spent.delta == Fraction(1, 10**6)


@pytest.mark.parametrize(("g", "r"), [(None, None), (2, 3)])
def test_keys_of_one_heavy_unit_are_released_with_probability_at_most_delta(
    protect_seeded, noise, g, r
):
    """Neighbours D (three rows without a unit id) and D' = D plus one person with 1,000
    rows, each under a key of its own. Under D none of that person's keys can appear, so
    (ε, δ)-DP requires P(some key of theirs is released | D') <= δ.

    That probability is computed exactly: a key is released iff its bounded count plus an
    independent variate reaches τ, so P = 1 - Π (1 - keep_probability(count, τ, b)) over
    every key that gets a variate. The keys that get a variate and their bounded counts are
    read with the noise fixture set to a huge constant (every such key is then released
    with count + constant). Keys whose rows were all dropped by the caps, or that only
    rows without a unit id hold, must not be candidates at all: each would be released
    with probability P(Z >= τ), and a person can hold arbitrarily many of them."""
    heavy = pd.DataFrame({"pid": 7.0, "city": [f"k{i:04d}" for i in range(1000)]})
    anonymous = pd.DataFrame({"pid": np.nan, "city": ["no-id"] * 3}, index=[1000, 1001, 1002])
    data = pd.concat([heavy, anonymous])
    delta = Fraction(1, 10**6)
    priv = protect_seeded(data, epsilon=4.0, delta=4e-6, privacy_unit="pid", max_rows_per_unit=10)
    caps = {"max_groups_per_unit": g, "max_rows_per_group": r}
    huge = 10**6
    with noise(priv, value=huge) as calls:
        released = priv.dp.groupby("city", **caps, selection="threshold").count(
            epsilon=1.0, delta=1e-6
        )
    tau = threshold_in_note(priv)
    scale = calls[0].mechanism.effective_scale
    bounded = (released - huge).to_dict()
    heavy_counts = [count for key, count in bounded.items() if key.startswith("k")]
    assert sum(heavy_counts) <= (10 if g is None else g * r)  # the caps held
    p_released = 1 - np.prod([1 - keep_probability(c, tau, scale) for c in heavy_counts])
    assert p_released <= delta, (
        f"P(heavy unit's key released) = {p_released:.3g} > δ = 1e-6: "
        f"{len(heavy_counts)} candidate keys, {heavy_counts.count(0)} with no kept row"
    )
    assert all(count > 0 for count in heavy_counts)
    assert "no-id" not in bounded  # rows without a unit id are dropped, keys and all


def test_released_multiindex_carries_no_unreleased_level_values(protect_seeded, noise):
    """A MultiIndex stores its levels apart from its codes: slicing the observed keys down to
    the released ones keeps every observed value in ``index.levels`` unless the unused
    levels are removed. Those values are data that no threshold protected."""
    data = pd.DataFrame({"sex": [0] * 100 + [1], "city": ["paris"] * 100 + ["lonely"]})
    priv = protect_seeded(data, epsilon=1.0, delta=1e-6)
    with noise(priv):
        counts = priv.dp.groupby(["sex", "city"], selection="threshold").count(epsilon=1.0)
    assert counts.index.tolist() == [(0, "paris")]
    assert [list(level) for level in counts.index.levels] == [[0], ["paris"]]
