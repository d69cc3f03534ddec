"""Glue of grouped releases: shapes, names, exact pre-noise values, ε split, scales, ledger.

With the ``noise`` fixture every noise variate is a constant, so each release returns its
exact (clipped, lattice-rounded) aggregate; it is compared with a reference computed with
plain pandas from the documented rules. The scale passed to the sampler is compared with
``sensitivity / ε_each`` computed independently (``lattices`` fixture, documented rule).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from pandas_dp.errors import DPValueError

from ..oracles import split

REGIONS = ["north", "south", "east", "west"]
INCOME = (0.0, 2e5)


def ref_counts(data: pd.DataFrame, by: list[str] | str, keys: pd.Index) -> pd.Series:
    """Rows per public key with plain pandas (NaN keys and unknown keys dropped)."""
    return data.groupby(by).size().reindex(keys, fill_value=0)


def ref_sums(
    data: pd.DataFrame, by: list[str] | str, keys: pd.Index, column: str, lattice, fill=None
) -> pd.Series:
    """Per key: clip, round to the lattice, sum (missing values skipped or filled), in lattice
    units. Exact: every partial sum is an integer below 2**53 held in float64."""
    values = data[column] if fill is None else data[column].fillna(fill)
    units = lattice.units_of(values)
    labels = [data[b] for b in ([by] if isinstance(by, str) else by)]
    return units.groupby(labels).sum().reindex(keys, fill_value=0.0)


def region_index() -> pd.Index:
    return pd.Index(REGIONS, name="region")


# --- shapes and keys -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "keys",
    [
        REGIONS,
        tuple(REGIONS),
        np.array(REGIONS, dtype=object),
        pd.Index(REGIONS),
        pd.Index(REGIONS, name="another name"),
        pd.Series(REGIONS),
        {"region": REGIONS},
    ],
    ids=["list", "tuple", "ndarray", "Index", "named Index", "Series", "dict"],
)
def test_count_single_column_key_forms(regional, protect_seeded, noise, keys):
    priv = protect_seeded(regional, epsilon=1.0)
    with noise(priv) as calls:
        counts = priv.dp.groupby("region", keys=keys).count(epsilon=0.5)
    pd.testing.assert_index_equal(counts.index, region_index())
    assert counts.name == "count"
    assert counts.dtype == np.int64
    expected = ref_counts(regional, "region", region_index())
    assert counts.tolist() == expected.tolist()
    assert counts["west"] == 0  # an empty group gets a (here zero) noisy count
    assert counts.sum() == len(regional) - 17  # the 'elsewhere' rows are dropped silently
    assert [(c.size, c.mechanism.scale) for c in calls] == [(4, Fraction(2))]


def test_keys_order_is_the_users_order(regional, protect_seeded, noise):
    priv = protect_seeded(regional, epsilon=1.0)
    order = ["west", "east", "north", "south"]
    with noise(priv):
        counts = priv.dp.groupby("region", keys=order).count(epsilon=0.5)
    assert counts.index.tolist() == order
    assert counts.tolist() == ref_counts(regional, "region", pd.Index(order)).tolist()


def test_numeric_keys_keep_their_dtype(regional, protect_seeded, noise):
    priv = protect_seeded(regional, epsilon=1.0)
    with noise(priv):
        counts = priv.dp.groupby("sex", keys=[1, 0, 7]).count(epsilon=0.5)
    pd.testing.assert_index_equal(counts.index, pd.Index([1, 0, 7], name="sex"))
    assert counts.index.dtype == np.int64
    assert counts.tolist() == [(regional.sex == 1).sum(), (regional.sex == 0).sum(), 0]


def multi_key_forms() -> dict[str, tuple[object, pd.MultiIndex]]:
    product = pd.MultiIndex.from_product([REGIONS, [0, 1]], names=["region", "sex"])
    tuples = [("west", 1), ("north", 0), ("east", 1), ("north", 1)]
    as_tuples = pd.MultiIndex.from_tuples(tuples, names=["region", "sex"])
    # A MultiIndex with other level names, unsorted, and a level value no key uses.
    other = pd.MultiIndex.from_tuples([("south", 1), ("east", 0), ("north", 9)], names=["a", "b"])
    renamed = other.set_names(["region", "sex"])
    return {
        "dict": ({"region": REGIONS, "sex": [0, 1]}, product),
        "tuples": (tuples, as_tuples),
        "MultiIndex": (other, renamed),
        "MultiIndex subset": (product[[5, 0, 2]], product[[5, 0, 2]]),
    }


@pytest.mark.parametrize("form", list(multi_key_forms()))
def test_count_multi_column_key_forms(regional, protect_seeded, noise, form):
    keys, expected_index = multi_key_forms()[form]
    priv = protect_seeded(regional, epsilon=1.0)
    with noise(priv) as calls:
        counts = priv.dp.groupby(["region", "sex"], keys=keys).count(epsilon=0.5)
    pd.testing.assert_index_equal(counts.index, expected_index, exact=True)
    assert list(counts.index.names) == ["region", "sex"]
    assert counts.name == "count"
    expected = ref_counts(regional, ["region", "sex"], expected_index)
    assert counts.tolist() == expected.tolist()
    assert [c.size for c in calls] == [len(expected_index)]
    entry = priv.dp.session.ledger.iloc[-1]
    assert (entry["groups"], entry["composition"]) == (len(expected_index), "parallel")


def test_dict_keys_are_a_cross_product_first_column_outermost(regional, protect_seeded, noise):
    priv = protect_seeded(regional, epsilon=1.0)
    with noise(priv):
        counts = priv.dp.groupby(["sex", "region"], keys={"region": REGIONS, "sex": [1, 0]}).count(
            epsilon=0.5
        )
    # The order of ``by`` decides the nesting; each level keeps its keys' order.
    assert counts.index.tolist() == [(s, r) for s in (1, 0) for r in REGIONS]
    assert list(counts.index.names) == ["sex", "region"]
    assert counts.loc[(1, "west")] == 0


def test_empty_protected_frame_gives_zeros_for_every_key(regional, protect_seeded, noise):
    priv = protect_seeded(regional, epsilon=4.0)
    empty = priv.iloc[:0]
    with noise(priv):
        counts = empty.dp.groupby("region", keys=REGIONS).count(epsilon=1)
        sums = empty.dp.groupby("region", keys=REGIONS).sum("income", bounds=INCOME, epsilon=1)
        means = empty.dp.groupby("region", keys=REGIONS).mean("income", bounds=INCOME, epsilon=1)
    assert counts.tolist() == [0] * 4
    assert sums.tolist() == [0.0] * 4
    # A zero noisy count gives no mean (NaN, as pandas for an empty group) ...
    assert means.isna().all()
    with noise(priv):
        shown = empty.dp.groupby("region", keys=REGIONS).mean(
            "income", bounds=INCOME, epsilon=1, min_count=0
        )
    # ... unless asked to show it, and then it never divides by zero: centre + 0 / max(0, 1).
    assert shown.tolist() == [1e5] * 4


# --- exact values and scales of sums and means ---------------------------------------------


@pytest.mark.parametrize("fill", [None, 50_000.0])
def test_grouped_sum_exact_value_and_scale(regional, protect_seeded, noise, lattices, fill):
    priv = protect_seeded(regional, epsilon=1.0)
    with noise(priv) as calls:
        sums = priv.dp.groupby("region", keys=REGIONS).sum(
            "income", bounds=INCOME, epsilon=0.5, fillna=fill
        )
    lat = lattices(*INCOME, Fraction(1, 2), plain=True, centred=False)["sum"]
    assert sums.name == "income"
    assert sums.dtype == np.float64
    pd.testing.assert_index_equal(sums.index, region_index())
    expected = ref_sums(regional, "region", region_index(), "income", lat, fill) * lat.granularity
    assert sums.tolist() == expected.tolist()
    (call,) = calls
    assert call.size == 4
    assert call.mechanism.scale == Fraction(lat.sensitivity) / Fraction(1, 2)
    (measurement,) = priv.dp.session.releases[-1].measurements
    assert (measurement.label, measurement.exponent) == ("sum(income)", lat.exponent)
    assert measurement.sensitivity == lat.sensitivity
    # One noise unit moves every group by exactly one lattice step.
    with noise(priv, value=1):
        plus_one = priv.dp.groupby("region", keys=REGIONS).sum(
            "income", bounds=INCOME, epsilon=0.5, fillna=fill
        )
    assert (plus_one - sums).tolist() == [lat.granularity] * 4


def test_grouped_mean_exact_value_scales_and_count_reuse(regional, protect_seeded, noise, lattices):
    priv = protect_seeded(regional, epsilon=1.0)
    with noise(priv) as calls:
        means = priv.dp.groupby("region", keys=REGIONS).mean("income", bounds=INCOME, epsilon=0.5)
    each = Fraction(1, 4)
    lat = lattices(*INCOME, each, plain=False, centred=True)["centred_sum"]
    centred = ref_sums(regional, "region", region_index(), "income", lat)
    nonmissing = regional["income"].notna().groupby(regional["region"]).sum()
    count = nonmissing.reindex(region_index(), fill_value=0)
    expected = (lat.centre_real + centred * lat.granularity / np.maximum(count, 1)).clip(*INCOME)
    expected = expected.where(count >= 1)  # NaN where the noisy count is below 1 (west)
    assert means.name == "income"
    pd.testing.assert_series_equal(means, expected.rename("income"), check_exact=True)
    release = priv.dp.session.releases[-1]
    labels = [m.label for m in release.measurements]
    assert labels == ["centred_sum(income)", "count(income)"]
    assert [m.epsilon for m in release.measurements] == [each, each]
    assert [c.mechanism.scale for c in calls] == [lat.sensitivity / each, 1 / each]
    assert [c.size for c in calls] == [4, 4]
    note = priv.dp.session.ledger["note"].iloc[-1]
    assert (
        "split equally: 1/2 to the centred sum of income, 1/2 to the count of non-missing" in note
    )


def test_mean_of_an_int_column_reuses_the_row_count(regional, protect_seeded, noise, lattices):
    priv = protect_seeded(regional, epsilon=1.0)
    with noise(priv) as calls:
        means = priv.dp.groupby("region", keys=REGIONS).mean("age", bounds=(0, 100), epsilon=0.5)
    release = priv.dp.session.releases[-1]
    assert [m.label for m in release.measurements] == ["centred_sum(age)", "count"]
    lat = lattices(0, 100, Fraction(1, 4), plain=False, centred=True)["centred_sum"]
    centred = ref_sums(regional, "region", region_index(), "age", lat)
    rows = ref_counts(regional, "region", region_index())
    expected = (lat.centre_real + centred * lat.granularity / np.maximum(rows, 1)).clip(0, 100)
    np.testing.assert_array_equal(means.to_numpy(), expected.where(rows >= 1).to_numpy())
    assert len(calls) == 2


AGG_NOTE = "ε 1 split for the least relative error: 0.369 to the row count, 0.233 to the centred"


def test_agg_table_measurements_split_and_exact_values(regional, protect_seeded, noise, lattices):
    priv = protect_seeded(regional, epsilon=2.0)
    with noise(priv) as calls:
        table = priv.dp.groupby("region", keys=REGIONS).agg(
            n="count", total=("income", "sum"), avg=("income", "mean"),
            nonmissing=("income", "count"), bounds={"income": INCOME}, epsilon=1.0,
        )  # fmt: skip
    assert list(table.columns) == ["n", "total", "avg", "nonmissing"]
    pd.testing.assert_index_equal(table.index, region_index())
    assert table.dtypes.tolist() == [np.int64, np.float64, np.float64, np.int64]

    # Three measurements: the mean, `nonmissing` and the derived total share one count of
    # non-missing incomes and one centred sum; ε is split by the documented rule.
    release = priv.dp.session.releases[-1]
    labels = [m.label for m in release.measurements]
    assert labels == ["count", "centred_sum(income)", "count(income)"]
    expected = split.shares(
        ["rows", "c", "nn"],
        [
            (1.0, {"rows": 1.0}),
            (1.0, split.derived_sum_model(INCOME, "c", "nn")),
            (1.0, split.mean_model(INCOME, "c", "nn")),
            (1.0, {"nn": 1.0}),
        ],
    )
    recorded = [m.epsilon for m in release.measurements]
    assert split.close(recorded, expected), (recorded, expected)
    assert sum(recorded) == 1
    ledger = priv.dp.session.ledger
    assert len(ledger) == 1
    assert ledger["note"].iloc[0].startswith(AGG_NOTE)
    assert "total = centre × count + centred sum (derived; no ε of its own)" in ledger["note"][0]
    assert "parallel composition over 4 disjoint groups" in ledger["note"].iloc[0]
    assert (ledger["epsilon"].iloc[0], ledger["groups"].iloc[0]) == (1.0, 4)
    assert (ledger["query"].iloc[0], ledger["columns"].iloc[0]) == ("groupby.agg", "region, income")
    assert ledger["bounds"].iloc[0] == "income: [0, 200000]"
    assert priv.dp.session.spent.epsilon == 1

    lat = lattices(*INCOME, recorded[1], plain=False, centred=True)["centred_sum"]
    scales = [1 / recorded[0], lat.sensitivity / recorded[1], 1 / recorded[2]]
    assert [c.mechanism.scale for c in calls] == scales
    assert [m.exponent for m in release.measurements] == [0, lat.exponent, 0]
    assert [c.size for c in calls] == [4] * 3

    keys = region_index()
    rows = ref_counts(regional, "region", keys)
    nonmissing = regional["income"].notna().groupby(regional["region"]).sum()
    nonmissing = nonmissing.reindex(keys, fill_value=0)
    centred = ref_sums(regional, "region", keys, "income", lat)
    avg = (lat.centre_real + centred * lat.granularity / np.maximum(nonmissing, 1)).clip(*INCOME)
    total = lat.centre_real * nonmissing + centred * lat.granularity
    assert table["n"].tolist() == rows.tolist()
    assert table["nonmissing"].tolist() == nonmissing.tolist()
    assert table["total"].tolist() == total.tolist()
    np.testing.assert_array_equal(table["avg"], avg.where(nonmissing >= 1))
    # Without noise, the derived total is the lattice-rounded sum of the clipped incomes.
    plain = lattices(*INCOME, recorded[1], plain=True, centred=False)["sum"]
    exact = ref_sums(regional, "region", keys, "income", plain) * plain.granularity
    assert np.allclose(total.to_numpy(dtype=float), exact.to_numpy(dtype=float), rtol=1e-9)


AGE = (0, 100)


@pytest.mark.parametrize(
    ("named", "fillna", "labels", "models"),
    [
        # An int column cannot hold NaN: its mean reuses the row count, and the sum is
        # derived from the mean's two measurements.
        (
            {"n": "count", "s": ("age", "sum"), "m": ("age", "mean")},
            None,
            ["count", "centred_sum(age)"],
            [
                (1.0, {"n": 1.0}),
                (1.0, split.derived_sum_model(AGE, "c", "n")),
                (1.0, split.mean_model(AGE, "c", "n")),
            ],
        ),
        # With fillna every row counts: the mean reuses the row count too.
        (
            {"n": "count", "m": ("income", "mean")},
            {"income": 0},
            ["count", "centred_sum(income)"],
            [(1.0, {"n": 1.0}), (1.0, split.mean_model(INCOME, "c", "n"))],
        ),
        # A float column's mean reuses the requested count of non-missing values.
        (
            {"c": ("income", "count"), "m": ("income", "mean")},
            None,
            ["count(income)", "centred_sum(income)"],
            [(1.0, {"n": 1.0}), (1.0, split.mean_model(INCOME, "c", "n"))],
        ),
        # Two means of one column share everything: half each, as one mean alone.
        (
            {"a": ("age", "mean"), "b": ("age", "mean")},
            None,
            ["centred_sum(age)", "count"],
            [(1.0, split.mean_model(AGE, "c", "n"))] * 2,
        ),
    ],
    ids=["int column", "fillna", "non-missing count", "repeated"],
)
def test_agg_shares_measurements(regional, protect_seeded, noise, named, fillna, labels, models):
    priv = protect_seeded(regional, epsilon=2.0)
    bounds = {"age": AGE, "income": INCOME}
    with noise(priv) as calls:
        table = priv.dp.groupby("region", keys=REGIONS).agg(
            epsilon=1.0, bounds=bounds, fillna=fillna, **named
        )
    release = priv.dp.session.releases[-1]
    assert [m.label for m in release.measurements] == labels
    order = ["n", "c"] if labels[0].startswith("count") else ["c", "n"]
    recorded = [m.epsilon for m in release.measurements]
    assert split.close(recorded, split.shares(order, models)), recorded
    assert sum(recorded) == 1
    assert len(calls) == len(labels)
    note = priv.dp.session.ledger["note"].iloc[-1]
    equal = len(set(recorded)) == 1
    assert note.startswith("ε 1 split " + ("equally: " if equal else "for the least relative"))
    assert list(table.columns) == list(named)
    if "n" in named and "m" in named:
        # The mean's count *is* the released row count: recompute it from n.
        assert (table["n"] == ref_counts(regional, "region", region_index()).to_numpy()).all()


def test_accuracy_weights_move_the_split(regional, protect_seeded):
    priv = protect_seeded(regional, epsilon=3.0)
    grouped = priv.dp.groupby("region", keys=REGIONS)
    named = {"n": "count", "m": ("age", "mean"), "bounds": {"age": AGE}, "epsilon": 1.0}
    grouped.agg(**named)
    grouped.agg(**named, accuracy={"m": 4})
    default, favoured = (r.measurements for r in priv.dp.session.releases)
    # The mean weighs 4×: the centred sum (the mean's alone) gets more, the count less.
    assert favoured[1].epsilon > default[1].epsilon
    expected = split.shares(["n", "c"], [(1.0, {"n": 1.0}), (4.0, split.mean_model(AGE, "c", "n"))])
    assert split.close([m.epsilon for m in favoured], expected)
    with pytest.raises(DPValueError, match="accuracy names 'x'"):
        grouped.agg(**named, accuracy={"x": 1})
    with pytest.raises(DPValueError, match="positive"):
        grouped.agg(**named, accuracy={"m": 0})
    assert len(priv.dp.session.releases) == 2  # refusals charge nothing


@pytest.mark.parametrize("bounds", [(0.0, 2e5), (-3e4, 5e4), (-1.0, 1.0), (1e5, 100001.0)])
def test_sum_next_to_a_mean_is_derived(protect_seeded, noise, lattices, bounds):
    rng = np.random.default_rng(7)
    data = pd.DataFrame(
        {"g": rng.choice(["a", "b"], 300), "x": rng.uniform(bounds[0] - 1, bounds[1] + 1, 300)}
    )
    priv = protect_seeded(data, epsilon=1.0)
    with noise(priv) as calls:
        table = priv.dp.groupby("g", keys=["a", "b"]).agg(
            s=("x", "sum"), m=("x", "mean"), bounds={"x": bounds}, epsilon=0.9
        )
    measurements = priv.dp.session.releases[-1].measurements
    assert [m.label for m in measurements] == ["centred_sum(x)", "count(x)"]
    expected = split.shares(
        ["c", "n"],
        [
            (1.0, split.derived_sum_model(bounds, "c", "n")),
            (1.0, split.mean_model(bounds, "c", "n")),
        ],
    )
    shares = [m.epsilon / Fraction(9, 10) for m in measurements]
    assert split.close(shares, expected)
    centred = lattices(*bounds, measurements[0].epsilon, plain=False, centred=True)["centred_sum"]
    assert measurements[0].exponent == centred.exponent
    assert [c.mechanism.scale for c in calls] == [
        centred.sensitivity / measurements[0].epsilon,
        1 / measurements[1].epsilon,
    ]
    keys = pd.Index(["a", "b"], name="g")
    units = ref_sums(data, "g", keys, "x", centred)
    n = data.groupby("g").size().reindex(keys)
    assert table["s"].tolist() == (centred.centre_real * n + units * centred.granularity).tolist()
    means = (centred.centre_real + units * centred.granularity / n).clip(*bounds)
    assert table["m"].tolist() == means.tolist()


def test_multi_column_sum_matches_reference(regional, protect_seeded, noise, lattices):
    priv = protect_seeded(regional, epsilon=1.0)
    keys = pd.MultiIndex.from_product([REGIONS, [0, 1]], names=["region", "sex"])
    with noise(priv):
        sums = priv.dp.groupby(["region", "sex"], keys=keys).sum("age", bounds=(20, 80), epsilon=1)
    lat = lattices(20, 80, Fraction(1), plain=True, centred=False)["sum"]
    expected = ref_sums(regional, ["region", "sex"], keys, "age", lat) * lat.granularity
    pd.testing.assert_index_equal(sums.index, keys)
    assert sums.tolist() == expected.tolist()
    assert sums.name == "age"


# --- parallel composition ------------------------------------------------------------------


def test_fifty_groups_are_charged_once(census, protect_seeded, noise):
    priv = protect_seeded(census, epsilon=1.0)
    keys = list(range(20, 70))
    with noise(priv) as calls:
        counts = priv.dp.groupby("age", keys=keys).count(epsilon=0.5)
    assert counts.tolist() == census.groupby("age").size().reindex(keys, fill_value=0).tolist()
    session = priv.dp.session
    assert session.spent.epsilon == Fraction(1, 2)
    assert session.spent.delta == 0
    ledger = session.ledger
    assert len(ledger) == 1
    row = ledger.iloc[0]
    assert (row["query"], row["epsilon"], row["delta"]) == ("groupby.count", 0.5, 0.0)
    assert (row["composition"], row["groups"]) == ("parallel", 50)
    assert row["columns"] == "age"
    assert "parallel composition over 50 disjoint groups" in row["note"]
    # One noise draw of 50 variates, all at scale Δ/ε = 1/0.5.
    assert [(c.size, c.mechanism.scale) for c in calls] == [(50, Fraction(2))]


@pytest.mark.parametrize(
    "release",
    [
        lambda p: p.dp.groupby("region", keys=REGIONS).count(epsilon=0.5),
        lambda p: p.dp.groupby("region", keys=REGIONS).sum("income", bounds=INCOME, epsilon=0.5),
        lambda p: p.dp.groupby("region", keys=REGIONS).mean("income", bounds=INCOME, epsilon=0.5),
        lambda p: p.dp.groupby("region", keys=REGIONS).agg(
            n="count", a=("age", "mean"), bounds={"age": (0, 99)}, epsilon=0.5
        ),
        lambda p: p["region"].dp.value_counts(keys=REGIONS, epsilon=0.5),
        lambda p: p["age"].dp.histogram(bins=[0, 18, 30, 45, 65, 120], epsilon=0.5),
    ],
    ids=["count", "sum", "mean", "agg", "value_counts", "histogram"],
)
def test_every_grouped_release_charges_its_epsilon_once(regional, protect_seeded, release):
    priv = protect_seeded(regional, epsilon=1.0)
    release(priv)
    release(priv)
    session = priv.dp.session
    assert session.spent.epsilon == 1  # two releases of 0.5, whatever the number of groups
    assert session.remaining.epsilon == 0
    assert (session.ledger["composition"] == "parallel").all()
    assert (session.ledger["epsilon"] == 0.5).all()
    assert len(session.ledger) == 2


def test_repr_of_a_grouping_shows_public_facts_only(regional, protect_seeded):
    priv = protect_seeded(regional, epsilon=1.0)
    assert repr(priv.dp.groupby("region", keys=REGIONS)) == (
        "<DPGroupBy by=['region'], 4 public keys>"
    )


def test_nullable_and_arrow_dtypes_give_the_same_release(regional, protect_seeded, noise):
    """The same data as numpy, nullable and pyarrow dtypes: identical exact releases."""
    base = regional[["region", "sex", "age", "income"]].copy()
    variants = {
        "numpy": base,
        "nullable": base.astype({"region": "string", "sex": "Int64", "income": "Float64"}),
        "arrow": base.astype(
            {
                "region": "string[pyarrow]",
                "sex": "int64[pyarrow]",
                "age": "int64[pyarrow]",
                "income": "double[pyarrow]",
            }
        ),
    }
    tables = {}
    for name, frame in variants.items():
        priv = protect_seeded(frame, epsilon=1.0)
        grouped = priv.dp.groupby(["region", "sex"], keys={"region": REGIONS, "sex": [0, 1]})
        with noise(priv) as calls:
            tables[name] = grouped.agg(
                n="count", c=("income", "count"), s=("income", "sum"), m=("income", "mean"),
                a=("age", "mean"), bounds={"income": INCOME, "age": (0, 100)}, epsilon=1,
            )  # fmt: skip
        labels = [m.label for m in priv.dp.session.releases[-1].measurements]
        tables[name + " labels"] = labels
        assert len(calls) == len(labels)
    pd.testing.assert_frame_equal(tables["nullable"], tables["numpy"], check_index_type=False)
    pd.testing.assert_frame_equal(tables["arrow"], tables["numpy"], check_index_type=False)
    # Arrow ints can hold missing values, so the mean of age uses its own non-missing count
    # there; the numbers agree because no age is missing.
    assert "count(age)" not in tables["numpy labels"]
