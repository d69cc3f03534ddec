"""Property tests: random frames and random public keys, zero noise, independent reference.

For any frame and any set of public keys (in any order, including keys absent from the data,
with data values outside the keys and missing keys), the exact grouped counts, sums and
means equal a plain-pandas computation of the documented rules, for exactly those keys in
that order. Hypothesis runs derandomised so the suite is deterministic.
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pandas_dp
from pandas_dp.testing import capture_noise

SETTINGS = settings(
    derandomize=True,
    max_examples=60,
    deadline=None,
    database=None,
    # The `lattices` fixture is a pure function; sharing it across examples is safe.
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
LETTERS = ["a", "b", "c", "d"]
NUMBERS = [0, 1, 2]
SPECIAL = [math.nan, math.inf, -math.inf, 0.0, 100.0, 50.0]

values_strategy = st.one_of(
    st.floats(-60, 160, allow_nan=False, width=32).map(float), st.sampled_from(SPECIAL)
)


@st.composite
def frames(draw) -> pd.DataFrame:
    n = draw(st.integers(0, 40))
    letter = draw(st.lists(st.sampled_from([*LETTERS, "zz", None]), min_size=n, max_size=n))
    number = draw(st.lists(st.sampled_from(NUMBERS), min_size=n, max_size=n))
    value = draw(st.lists(values_strategy, min_size=n, max_size=n))
    return pd.DataFrame(
        {
            "letter": pd.Series(letter, dtype=object),
            "number": pd.Series(number, dtype="int64"),
            "value": pd.Series(value, dtype="float64"),
        }
    )


letter_keys = st.lists(st.sampled_from([*LETTERS, "absent"]), min_size=1, max_size=5, unique=True)
pair_keys = st.lists(
    st.tuples(st.sampled_from([*LETTERS, "absent"]), st.sampled_from([*NUMBERS, 7])),
    min_size=1,
    max_size=8,
    unique=True,
)
bounds_strategy = st.sampled_from([(0.0, 100.0), (-10.0, 10.0), (0.5, 2.5), (-1e3, 1e4)])


#: The centred sum's ε in the last exact release (set by :func:`exact_releases`).
CENTRED_SHARE: list[Fraction] = [Fraction(0)]


def exact_releases(frame: pd.DataFrame, release):
    priv = frame.dp.protect(epsilon=1e6)  # the OS CSPRNG: no seed warning
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
        with capture_noise(priv):
            result = release(priv)
    for m in priv.dp.session.releases[-1].measurements:
        if m.label.startswith("centred_sum"):
            CENTRED_SHARE[0] = m.epsilon
    return result


@SETTINGS
@given(frame=frames(), keys=letter_keys)
def test_single_key_counts_and_sums_match_pandas(lattices, frame, keys):
    def release(priv):
        grouped = priv.dp.groupby("letter", keys=keys)
        return (
            grouped.count(epsilon=1),
            grouped.sum("value", bounds=(0, 100), epsilon=1),
            priv["letter"].dp.value_counts(keys=keys, epsilon=1, sort=False),
        )

    counts, sums, value_counts = exact_releases(frame, release)
    index = pd.Index(keys, name="letter")
    pd.testing.assert_index_equal(counts.index, index)
    pd.testing.assert_index_equal(sums.index, index)
    expected_counts = frame.groupby("letter").size().reindex(index, fill_value=0)
    assert counts.tolist() == expected_counts.tolist()
    assert value_counts.tolist() == expected_counts.tolist()
    lat = lattices(0, 100, Fraction(1), plain=True, centred=False)["sum"]
    units = lat.units_of(frame["value"])
    expected_sums = units.groupby(frame["letter"]).sum().reindex(index, fill_value=0.0)
    assert sums.tolist() == (expected_sums * lat.granularity).tolist()


@SETTINGS
@given(frame=frames(), keys=pair_keys, bounds=bounds_strategy)
def test_two_key_agg_matches_pandas(lattices, frame, keys, bounds):
    def release(priv):
        return priv.dp.groupby(["letter", "number"], keys=keys).agg(
            n="count", s=("value", "sum"), m=("value", "mean"), bounds={"value": bounds}, epsilon=1
        )

    table = exact_releases(frame, release)
    index = pd.MultiIndex.from_tuples(keys, names=["letter", "number"])
    pd.testing.assert_index_equal(table.index, index)
    by = [frame["letter"], frame["number"]]
    rows = frame.groupby(["letter", "number"]).size().reindex(index, fill_value=0)
    assert table["n"].tolist() == rows.tolist()
    # Three measurements (rows, centred sum, non-missing count); the sum is derived from the
    # mean's two: centre × count + centred sum. The centred sum's lattice follows its share.
    nonmissing = frame["value"].notna().groupby(by).sum().reindex(index, fill_value=0)
    centred = lattices(*bounds, CENTRED_SHARE[0], plain=False, centred=True)["centred_sum"]
    units = centred.units_of(frame["value"]).groupby(by).sum()
    units = units.reindex(index, fill_value=0.0)
    sums = centred.centre_real * nonmissing + units * centred.granularity
    np.testing.assert_allclose(table["s"].to_numpy(), sums.to_numpy(), rtol=1e-14, atol=1e-9)
    means = (centred.centre_real + units * centred.granularity / np.maximum(nonmissing, 1)).clip(
        *bounds
    )
    means = means.where(nonmissing >= 1)  # no mean where the (noise-free) count is 0
    np.testing.assert_allclose(table["m"].to_numpy(), means.to_numpy(), rtol=1e-14, atol=0)
    table = table.dropna(subset=["m"])
    assert ((table["m"] >= bounds[0]) & (table["m"] <= bounds[1])).all()


@SETTINGS
@given(
    frame=frames(),
    levels=st.tuples(
        st.lists(st.sampled_from([*LETTERS, "absent"]), min_size=1, max_size=4, unique=True),
        st.lists(st.sampled_from([*NUMBERS, 9]), min_size=1, max_size=3, unique=True),
    ),
    outer=st.booleans(),
)
def test_dict_keys_are_the_cross_product_in_order(frame, levels, outer):
    letters, numbers = levels
    by = ["letter", "number"] if outer else ["number", "letter"]
    counts = exact_releases(
        frame,
        lambda p: p.dp.groupby(by, keys={"letter": letters, "number": numbers}).count(epsilon=1),
    )
    ordered = {"letter": letters, "number": numbers}
    index = pd.MultiIndex.from_product([ordered[b] for b in by], names=by)
    pd.testing.assert_index_equal(counts.index, index)
    assert counts.tolist() == frame.groupby(by).size().reindex(index, fill_value=0).tolist()


@SETTINGS
@given(
    values=st.lists(values_strategy, max_size=40),
    edges=st.lists(
        st.sampled_from([-50.0, -1.0, 0.0, 0.5, 1.0, 10.0, 100.0, 150.0]),
        min_size=2,
        max_size=6,
        unique=True,
    ).map(sorted),
    right=st.booleans(),
    include_lowest=st.booleans(),
)
def test_histogram_matches_pd_cut(values, edges, right, include_lowest):
    series = pd.Series(values, dtype="float64", name="v")
    hist = exact_releases(
        series,
        lambda p: p.dp.histogram(edges, epsilon=1, right=right, include_lowest=include_lowest),
    )
    cut = pd.cut(series, edges, right=right, include_lowest=include_lowest)
    assert hist.tolist() == cut.value_counts(sort=False).tolist()


@pytest.mark.parametrize("seed", range(3))
def test_keys_order_is_kept_for_shuffled_public_keys(protect_seeded, noise, seed):
    rng = np.random.default_rng(seed)
    keys = rng.permutation(200).tolist()
    frame = pd.DataFrame({"k": rng.integers(0, 250, 2000)})
    priv = protect_seeded(frame, epsilon=1.0)
    with noise(priv):
        counts = priv.dp.groupby("k", keys=keys).count(epsilon=1)
    assert counts.index.tolist() == keys
    assert counts.tolist() == frame.groupby("k").size().reindex(keys, fill_value=0).tolist()
