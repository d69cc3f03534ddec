"""Histograms follow ``pd.cut`` exactly; ``value_counts`` mirrors ``Series.value_counts``.

With the ``noise`` fixture the releases are exact, so they can be compared with pandas on
many random data sets, including values exactly on the edges, NaN and ±inf.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pandas_dp.errors import DPError, DPTypeError, DPValueError

AGES = [0, 18, 30, 45, 65, 120]


def cut_counts(series: pd.Series, edges, right: bool, include_lowest: bool) -> list[int]:
    cut = pd.cut(series, edges, right=right, include_lowest=include_lowest)
    return cut.value_counts(sort=False).tolist()


def random_case(rng: np.random.Generator) -> tuple[pd.Series, list[float]]:
    pool = np.array([-7.5, -2.0, -1.0, 0.0, 0.1, 0.5, 1.0, 2.5, 3.0, 10.0, 1e6])
    edges = sorted(rng.choice(pool, size=rng.integers(2, 7), replace=False).tolist())
    specials = [np.nan, np.inf, -np.inf, edges[0] - 1, edges[-1] + 1]
    candidates = np.r_[edges, specials, rng.uniform(edges[0] - 1, edges[-1] + 1, 5)]
    values = rng.choice(candidates, size=rng.integers(0, 60))
    return pd.Series(values, name="x"), edges


def test_histogram_matches_pd_cut_on_random_data(protect_seeded, noise):
    rng = np.random.default_rng(20240607)
    for _ in range(150):
        series, edges = random_case(rng)
        priv = protect_seeded(series, epsilon=100.0)
        with noise(priv) as calls:
            for right in (True, False):
                for include_lowest in (False, True):
                    hist = priv.dp.histogram(
                        edges, epsilon=1, right=right, include_lowest=include_lowest
                    )
                    expected = cut_counts(series, edges, right, include_lowest)
                    assert hist.tolist() == expected, (edges, series.tolist(), right)
                    closed = "right" if right else "left"
                    breaks = pd.IntervalIndex.from_breaks(edges, closed=closed, name="x")
                    pd.testing.assert_index_equal(hist.index, breaks)
                    assert (hist.name, hist.dtype) == ("count", np.int64)
        # One draw per release, one variate per bin, all at scale Δ/ε = 1/1.
        assert [(c.size, c.mechanism.scale) for c in calls] == [(len(edges) - 1, 1)] * 4


@pytest.mark.parametrize("dtype", ["int64", "Int64", "float32", "bool"])
def test_histogram_of_other_numeric_dtypes_matches_pd_cut(protect_seeded, noise, dtype):
    rng = np.random.default_rng(3)
    values = pd.Series(rng.integers(-3, 12, 300), name="v")
    if dtype == "bool":
        values = values > 4
    series = values.astype(dtype)
    if dtype == "Int64":
        series[::10] = pd.NA
    edges = [-1.0, 0.0, 0.5, 1.0, 4.0, 10.0]
    priv = protect_seeded(series, epsilon=10.0)
    with noise(priv):
        for right in (True, False):
            hist = priv.dp.histogram(edges, epsilon=1, right=right, include_lowest=True)
            assert hist.tolist() == cut_counts(series.astype("float64"), edges, right, True)


def test_census_age_histogram(census, protect_seeded, noise):
    priv = protect_seeded(census, epsilon=1.0)
    with noise(priv):
        hist = priv["age"].dp.histogram(bins=AGES, epsilon=0.5)
    reference = pd.cut(census["age"], AGES).value_counts(sort=False)
    assert hist.tolist() == reference.tolist()
    # The same intervals as pd.cut's categories (float breaks), as a plain IntervalIndex.
    assert [str(i) for i in hist.index] == [
        str(i) for i in pd.cut([], np.array(AGES, float)).categories
    ]
    assert isinstance(hist.index, pd.IntervalIndex)
    assert (hist.name, hist.index.name) == ("count", "age")
    row = priv.dp.session.ledger.iloc[0]
    assert (row["query"], row["groups"], row["composition"], row["epsilon"]) == (
        "histogram",
        5,
        "parallel",
        0.5,
    )


@pytest.mark.parametrize("right", [True, False])
def test_clip_counts_outliers_in_the_edge_bins(protect_seeded, noise, right):
    rng = np.random.default_rng(11)
    edges = [0.0, 1.0, 2.0, 5.0]
    for _ in range(40):
        candidates = np.r_[edges, [-np.inf, np.inf, np.nan, -3.0, 9.0], rng.uniform(-2, 7, 4)]
        series = pd.Series(rng.choice(candidates, 50), name="x")
        priv = protect_seeded(series, epsilon=10.0)
        with noise(priv):
            clipped = priv.dp.histogram(edges, epsilon=1, right=right, clip=True)
        # Reference: pd.cut drops exactly the non-missing values at or beyond the outer
        # edges; with clip they land in the first (<= e0) or last (>= eN) bin.
        expected = cut_counts(series, edges, right, include_lowest=False)
        inside = pd.cut(series, edges, right=right).notna()
        outside = series[~inside & series.notna()]
        expected[0] += int((outside <= edges[0]).sum())
        expected[-1] += int((outside >= edges[-1]).sum())
        assert clipped.tolist() == expected
        assert clipped.sum() == series.notna().sum()


@pytest.mark.parametrize(
    ("bins", "error"),
    [
        ([0, 10, 5], DPValueError),
        ([0, 5, 5, 10], DPValueError),
        ([5], DPValueError),
        ([], DPValueError),
        ([0, np.nan, 10], DPValueError),
        ([0, 10, np.inf], DPValueError),
        ([-np.inf, 0, 10], DPValueError),
        (["0", "10"], DPTypeError),
        ([0, "10"], DPTypeError),
        ("0,10", DPTypeError),
        (5, DPTypeError),
        ([False, True], DPTypeError),
        ([0, None], DPTypeError),
        (None, DPTypeError),
    ],
    ids=lambda value: repr(value),
)
def test_invalid_edges_are_refused_before_any_charge(protect_seeded, charges_nothing, bins, error):
    priv = protect_seeded(pd.Series([1.0, 2.0, 3.0], name="x"), epsilon=1.0)
    with charges_nothing(priv), pytest.raises(error):
        priv.dp.histogram(bins, epsilon=0.5)


@pytest.mark.parametrize(
    "values",
    [
        pd.Series(["a", "b"], name="s"),
        pd.Series(["a", "b"], name="s", dtype=object),
        pd.Series(pd.Categorical([1, 2]), name="s"),
    ],
    ids=["str", "object", "categorical"],
)
def test_histogram_needs_a_numeric_column(protect_seeded, charges_nothing, values):
    priv = protect_seeded(values, epsilon=1.0)
    with charges_nothing(priv), pytest.raises(DPTypeError):
        priv.dp.histogram([0, 1, 2], epsilon=0.5)


@pytest.mark.parametrize("epsilon", [0, -1, np.nan, "1", None])
def test_histogram_bad_epsilon(protect_seeded, charges_nothing, epsilon):
    priv = protect_seeded(pd.Series([1.0], name="x"), epsilon=1.0)
    with charges_nothing(priv), pytest.raises(DPError):
        priv.dp.histogram([0, 1, 2], epsilon=epsilon)


def test_unnamed_series_histogram_is_indexed_like_pd_cut(protect_seeded, noise):
    series = pd.Series([0.5, 1.5, 1.7])
    priv = protect_seeded(series, epsilon=1.0)
    with noise(priv):
        hist = priv.dp.histogram([0, 1, 2], epsilon=0.5)
    reference = pd.cut(series, [0, 1, 2]).value_counts(sort=False)
    assert hist.tolist() == reference.tolist()
    assert hist.index.name == reference.index.name  # None: no invented column name


# --- value_counts ---------------------------------------------------------------------------


def letters() -> pd.Series:
    """Distinct counts (no ties, so the sort order is unambiguous), and missing values."""
    values = ["c"] * 50 + ["a"] * 20 + ["d"] * 35 + ["b"] * 5 + [None] * 7
    return pd.Series(values, name="letter").sample(frac=1, random_state=1)


@pytest.mark.parametrize("sort", [True, False])
@pytest.mark.parametrize("ascending", [False, True])
@pytest.mark.parametrize("normalize", [False, True])
def test_value_counts_mirrors_pandas(protect_seeded, noise, sort, ascending, normalize):
    series = letters()
    keys = ["a", "b", "c", "d"]
    priv = protect_seeded(series, epsilon=1.0)
    options = {"sort": sort, "ascending": ascending, "normalize": normalize}
    with noise(priv) as calls:
        released = priv.dp.value_counts(keys=keys, epsilon=0.5, **options)
    # normalize: one more cell, the rows outside the keys (none here), for the total
    assert [(c.size, c.mechanism.scale) for c in calls] == [(5 if normalize else 4, 2)]
    expected = series.value_counts(**options)
    if not sort:  # pandas keeps the data's order of first appearance; pandas-dp the keys'
        expected = expected.reindex(keys)
    pd.testing.assert_series_equal(released, expected, check_exact=True)
    assert released.name == ("proportion" if normalize else "count")
    assert released.index.name == "letter"


def test_value_counts_keys_absent_or_outside(protect_seeded, noise):
    series = letters()
    priv = protect_seeded(series, epsilon=1.0)
    with noise(priv):
        released = priv.dp.value_counts(keys=["d", "zz", "c"], epsilon=0.5)
        shares = priv.dp.value_counts(keys=["d", "zz", "c"], epsilon=0.5, normalize=True)
    # Sorted by count; the absent key comes last with 0; "a" and "b" are dropped silently.
    assert released.to_dict() == {"c": 50, "d": 35, "zz": 0}
    assert released.index.tolist() == ["c", "d", "zz"]
    # Shares of all (non-missing) rows, as pandas (issue 38): "a" and "b" are in the total.
    assert shares.to_dict() == pytest.approx({"c": 50 / 110, "d": 35 / 110, "zz": 0.0}, rel=1e-15)
    assert shares.to_dict() == pytest.approx(
        series.value_counts(normalize=True).reindex(["c", "d", "zz"], fill_value=0.0).to_dict()
    )


def test_value_counts_sorts_the_noisy_counts(protect_seeded, noise):
    priv = protect_seeded(letters(), epsilon=1.0)
    with noise(priv, value=-40):
        released = priv.dp.value_counts(keys=["a", "b", "c", "d"], epsilon=0.5)
        proportions = priv.dp.value_counts(keys=["a", "b", "c", "d"], epsilon=0.5, normalize=True)
    assert released.to_dict() == {"c": 10, "d": -5, "a": -20, "b": -35}
    assert released.index.tolist() == ["c", "d", "a", "b"]
    # normalize clamps negative counts at 0 first: proportions stay in [0, 1] and sum to 1.
    assert proportions.to_dict() == {"c": 1.0, "a": 0.0, "b": 0.0, "d": 0.0}
    assert proportions.index[0] == "c"


def test_value_counts_of_numbers_and_categoricals(protect_seeded, noise):
    series = pd.Series(pd.Categorical(["x"] * 3 + ["y"], categories=["y", "x", "HIDDEN"]))
    series.name = "cat"
    priv = protect_seeded(series, epsilon=2.0)
    with noise(priv):
        released = priv.dp.value_counts(keys=["x", "y"], epsilon=0.5)
    assert released.to_dict() == {"x": 3, "y": 1}
    assert not isinstance(released.index.dtype, pd.CategoricalDtype)
    numbers = pd.Series([3, 1, 3, 3, 2], name="n")
    priv = protect_seeded(numbers, epsilon=2.0)
    with noise(priv):
        released = priv.dp.value_counts(keys=[1, 2, 3], epsilon=0.5)
    pd.testing.assert_series_equal(released, numbers.value_counts())


def test_unnamed_series_value_counts_like_pandas(protect_seeded, noise):
    series = pd.Series(["a", "b", "a"])
    priv = protect_seeded(series, epsilon=1.0)
    with noise(priv):
        released = priv.dp.value_counts(keys=["a", "b"], epsilon=0.5)
    expected = series.value_counts()
    assert released.tolist() == expected.tolist()
    assert released.index.name == expected.index.name  # None, like pandas
