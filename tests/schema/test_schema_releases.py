"""Releases that take their bounds, keys and null rules from a pandera schema.

Every test runs the issue's calls with the ``People`` schema in each style (DataFrameModel,
DataFrameSchema, YAML file path, schema loaded from YAML text) and checks, with the noise
replaced by zero, the exact released values (so the clipping at the schema's bounds), the
bounds behind each noise scale, the measurement labels and the ledger's sources.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pandera.pandas as pa
import pytest

from pandas_dp.accounting.events import Measurement
from pandas_dp.errors import DPValueError

from .conftest import (
    AGE,
    AGE_SOURCE,
    INCOME,
    INCOME_SOURCE,
    REGION_SOURCE,
    REGIONS,
    People,
)


def clipped_mean(values: Iterable[float], bounds: tuple[float, float], count: int) -> float:
    """The documented zero-noise mean: midpoint + sum of centred clipped values / count.

    Missing values add nothing to the sum; ``count`` is whichever count the mean uses.
    """
    lower, upper = Fraction(bounds[0]), Fraction(bounds[1])
    centre = (lower + upper) / 2
    total = sum(
        (min(max(Fraction(v), lower), upper) - centre for v in values if not math.isnan(v)),
        Fraction(0),
    )
    return float(min(max(centre + total / max(count, 1), lower), upper))


def measurements(priv: pd.DataFrame) -> dict[str, Measurement]:
    """The measurements of the latest release, by ledger label."""
    return {m.label: m for m in priv.dp.session.releases[-1].measurements}


def in_column_units(m: Measurement) -> Fraction:
    """A measurement's sensitivity in the column's own units."""
    return m.sensitivity * Fraction(2) ** m.exponent


def assert_centred_sum_on(m: Measurement, bounds: tuple[float, float]) -> None:
    """A centred clipped sum over ``bounds``: sensitivity (U - L)/2, scale Δ/ε."""
    assert in_column_units(m) == (Fraction(bounds[1]) - Fraction(bounds[0])) / 2
    assert m.scale == Fraction(m.sensitivity) / m.epsilon


def last_note(priv: pd.DataFrame) -> str:
    return str(priv.dp.session.ledger["note"].iloc[-1])


def last_row(priv: pd.DataFrame) -> dict[str, Any]:
    return priv.dp.session.ledger.iloc[-1].to_dict()


# -- the calls, per schema style ------------------------------------------------------


def test_mean_takes_bounds_from_schema(
    people: pd.DataFrame, people_schema: Any, noise: Callable
) -> None:
    data = people.copy()
    data.loc[[0, 1], "age"] = [150, 121]  # above the schema's 120: clipped, not refused
    priv = data.dp.protect(epsilon=1.0, schema=people_schema, validate=False)
    with noise(priv) as calls:
        result = priv["age"].dp.mean(epsilon=0.2)

    # age is a non-nullable int: the mean reuses the row count
    assert result == pytest.approx(clipped_mean(data["age"], AGE, len(data)), rel=1e-12)
    assert result != pytest.approx(data["age"].mean(), rel=1e-9)  # the clipping mattered
    found = measurements(priv)
    assert set(found) == {"centred_sum(age)", "count"}
    assert_centred_sum_on(found["centred_sum(age)"], AGE)
    assert found["centred_sum(age)"].epsilon == found["count"].epsilon == Fraction(1, 10)
    assert found["count"].scale == 10
    assert sorted(c.mechanism.scale for c in calls) == sorted(m.scale for m in found.values())
    row = last_row(priv)
    assert row["query"] == "mean"
    assert row["bounds"] == "age: [0, 120]"
    assert AGE_SOURCE in row["note"]
    assert row["epsilon"] == 0.2
    assert row["delta"] == 0.0


def test_groupby_count_takes_keys_from_schema(
    people: pd.DataFrame, people_schema: Any, noise: Callable
) -> None:
    priv = people.dp.protect(epsilon=1.0, schema=people_schema)
    with noise(priv) as calls:
        counts = priv.dp.groupby("region").count(epsilon=0.5)

    assert list(counts.index) == REGIONS  # the schema's order, west included (no rows)
    expected = people["region"].value_counts().reindex(REGIONS, fill_value=0)
    assert counts.tolist() == expected.tolist()
    assert counts["west"] == 0
    assert [(c.mechanism.scale, c.size) for c in calls] == [(2, len(REGIONS))]
    assert set(measurements(priv)) == {"count"}
    row = last_row(priv)
    assert row["query"] == "groupby.count"
    assert row["groups"] == len(REGIONS)
    assert row["composition"] == "parallel"
    assert REGION_SOURCE in row["note"]


def test_groupby_mean_takes_keys_and_bounds_from_schema(
    people: pd.DataFrame, people_schema: Any, noise: Callable
) -> None:
    data = people.copy()
    data.loc[[2, 3], "income"] = [250_000.0, 900_000.0]  # clipped at 200,000
    priv = data.dp.protect(epsilon=1.0, schema=people_schema, validate=False)
    with noise(priv) as calls:
        means = priv.dp.groupby("region").mean("income", epsilon=0.5)

    assert list(means.index) == REGIONS
    for region in REGIONS:
        incomes = data.loc[data["region"] == region, "income"]
        if not incomes.notna().any():
            continue
        # income is nullable: each mean divides by the group's non-missing count
        expected = clipped_mean(incomes, INCOME, int(incomes.notna().sum()))
        assert means[region] == pytest.approx(expected, rel=1e-12), region
    assert np.isnan(means["west"])  # no rows: no mean, as in pandas
    found = measurements(priv)
    assert set(found) == {"centred_sum(income)", "count(income)"}
    assert_centred_sum_on(found["centred_sum(income)"], INCOME)
    assert {c.size for c in calls} == {len(REGIONS)}
    row = last_row(priv)
    assert row["bounds"] == "income: [0, 200000]"
    assert REGION_SOURCE in row["note"]
    assert INCOME_SOURCE in row["note"]
    assert row["groups"] == len(REGIONS)


def test_bounds_table_says_what_the_schema_supplies(
    people: pd.DataFrame, people_schema: Any
) -> None:
    table = people.dp.protect(epsilon=1.0, schema=people_schema).dp.rules

    assert list(table.index) == ["age", "income", "region"]
    assert table.index.name == "column"
    assert list(table.columns) == [
        "lower", "upper", "bounds_from", "keys", "keys_from", "nullable"
    ]  # fmt: skip
    age, income, region = (table.loc[c] for c in ["age", "income", "region"])
    assert (age["lower"], age["upper"]) == AGE
    assert age["bounds_from"] == "schema (in_range)"
    assert (income["lower"], income["upper"]) == INCOME
    assert income["bounds_from"] == "schema (greater_than_or_equal_to, less_than_or_equal_to)"
    assert region["keys"] == REGIONS
    assert region["keys_from"] == "schema (isin)"
    assert pd.isna(region["lower"])
    assert pd.isna(region["upper"])
    assert pd.isna(region["bounds_from"])
    for row in (age, income):
        assert row["keys"] is None
        assert pd.isna(row["keys_from"])
    assert table["nullable"].tolist() == [False, True, False]


def test_bounds_table_is_shared_by_derived_frames(people: pd.DataFrame) -> None:
    priv = people.dp.protect(epsilon=1.0, schema=People)
    derived = priv[priv["age"] > 40][["age", "region"]]
    pd.testing.assert_frame_equal(derived.dp.rules, priv.dp.rules)


def test_bounds_table_without_schema_is_empty(people: pd.DataFrame) -> None:
    table = people.dp.protect(epsilon=1.0).dp.rules
    assert table.empty
    assert list(table.columns) == [
        "lower", "upper", "bounds_from", "keys", "keys_from", "nullable"
    ]  # fmt: skip


# -- explicit arguments override the schema ---------------------------------------------------


def test_explicit_bounds_override_schema(people: pd.DataFrame, noise: Callable) -> None:
    priv = people.dp.protect(epsilon=1.0, schema=People)
    with noise(priv):
        result = priv["age"].dp.mean(epsilon=0.2, bounds=(20, 50))

    assert result == pytest.approx(clipped_mean(people["age"], (20, 50), len(people)), rel=1e-12)
    assert_centred_sum_on(measurements(priv)["centred_sum(age)"], (20, 50))
    row = last_row(priv)
    assert row["bounds"] == "age: [20, 50]"
    assert "from the schema" not in row["note"]


def test_explicit_keys_override_schema(people: pd.DataFrame, noise: Callable) -> None:
    priv = people.dp.protect(epsilon=1.0, schema=People)
    with noise(priv):
        counts = priv.dp.groupby("region", keys=["east", "north"]).count(epsilon=0.5)

    assert list(counts.index) == ["east", "north"]
    assert counts.tolist() == people["region"].value_counts()[["east", "north"]].tolist()
    note = last_note(priv)
    assert "from the schema" not in note
    row = last_row(priv)
    assert row["groups"] == 2


def test_explicit_bounds_for_one_column_schema_for_the_other(
    people: pd.DataFrame, noise: Callable
) -> None:
    priv = people.dp.protect(epsilon=1.0, schema=People)
    with noise(priv):
        table = priv.dp.groupby("region").agg(
            age=("age", "mean"),
            income=("income", "mean"),
            bounds={"income": (0, 50_000)},
            epsilon=0.5,
        )

    assert list(table.index) == REGIONS
    for region in ["north", "south", "east"]:
        rows = people[people["region"] == region]
        assert table.loc[region, "age"] == pytest.approx(
            clipped_mean(rows["age"], AGE, len(rows)), rel=1e-12
        )
        assert table.loc[region, "income"] == pytest.approx(
            clipped_mean(rows["income"], (0, 50_000), int(rows["income"].notna().sum())),
            rel=1e-12,
        )
    note = last_note(priv)
    assert AGE_SOURCE in note
    assert REGION_SOURCE in note
    assert "income from the schema" not in note
    row = last_row(priv)
    assert row["bounds"] == "age: [0, 120]; income: [0, 50000]"


def test_explicit_bounds_wider_than_schema_are_used_as_given(
    people: pd.DataFrame, noise: Callable
) -> None:
    # The caller's public bounds win even when they are looser than the schema's.
    priv = people.dp.protect(epsilon=1.0, schema=People)
    with noise(priv):
        priv.dp.sum("income", epsilon=0.5, bounds=(0, 400_000))
    (m,) = measurements(priv).values()
    assert in_column_units(m) == 400_000
    row = last_row(priv)
    assert row["bounds"] == "income: [0, 400000]"


# -- schema keys are public: pure ε, even when the session has a δ ---------------------------


def test_schema_keys_charge_only_epsilon_in_a_delta_session(
    people: pd.DataFrame, people_schema: Any, noise: Callable
) -> None:
    priv = people.dp.protect(epsilon=2.0, delta=1e-6, schema=people_schema)
    with noise(priv):
        priv.dp.groupby("region").count(epsilon=0.5)
        priv.dp.groupby("region").mean("income", epsilon=0.5)

    session = priv.dp.session
    assert session.spent.epsilon == 1
    assert session.spent.delta == 0
    assert session.ledger["delta"].tolist() == [0.0, 0.0]
    for release in session.releases:
        for m in release.measurements:
            assert m.extra_delta == 0
            assert m.delta == 0
            assert "selection" not in m.label
    assert not session.ledger["note"].str.contains("chosen privately").any()


def test_a_column_without_isin_still_needs_partition_selection(
    people: pd.DataFrame, noise: Callable
) -> None:
    # The contrast: "age" has no isin check, so its keys come from the data, when asked.
    priv = people.dp.protect(epsilon=2.0, delta=1e-6, schema=People)
    with pytest.raises(DPValueError, match=r"groupby\(\) got no keys for 'age'"):
        priv.dp.groupby("age")
    assert priv.dp.session.spent.delta == 0
    with noise(priv):
        priv.dp.groupby("age", selection="threshold").count(epsilon=0.5)
    assert priv.dp.session.spent.delta > 0
    note = last_note(priv)
    assert "chosen privately" in note
    assert "from the schema" not in note


def test_keys_of_several_columns_come_from_their_isin_checks(
    people: pd.DataFrame, noise: Callable
) -> None:
    class Typed(People):
        sex: int = pa.Field(isin=[1, 0])

    data = people.assign(sex=np.arange(len(people)) % 2)
    priv = data.dp.protect(epsilon=1.0, schema=Typed)
    with noise(priv):
        counts = priv.dp.groupby(["region", "sex"]).count(epsilon=0.5)
    assert list(counts.index) == [(r, s) for r in REGIONS for s in (1, 0)]
    expected = data.groupby(["region", "sex"]).size()
    for key, value in counts.items():
        assert value == expected.get(key, 0), key
    note = last_note(priv)
    assert "keys of region, sex from the schema (isin)" in note


def test_value_counts_takes_keys_from_schema(people: pd.DataFrame, noise: Callable) -> None:
    priv = people.dp.protect(epsilon=1.0, schema=People)
    with noise(priv):
        counts = priv["region"].dp.value_counts(epsilon=0.5, sort=False)
    assert list(counts.index) == REGIONS
    assert (
        counts.tolist() == people["region"].value_counts().reindex(REGIONS, fill_value=0).tolist()
    )
    note = last_note(priv)
    assert REGION_SOURCE in note


# -- nullability: the schema says which count a mean uses -------------------------------------


def _income_schema(nullable: bool) -> pa.DataFrameSchema:
    return pa.DataFrameSchema(
        {"income": pa.Column(float, pa.Check.in_range(*INCOME), nullable=nullable)}
    )


def test_non_nullable_float_mean_uses_the_row_count(people: pd.DataFrame, noise: Callable) -> None:
    data = people.dropna(subset=["income"])
    priv = data.dp.protect(epsilon=1.0, schema=_income_schema(nullable=False))
    with noise(priv):
        result = priv["income"].dp.mean(epsilon=0.5)
    assert set(measurements(priv)) == {"centred_sum(income)", "count"}
    note = last_note(priv)
    assert "the row count" in note
    assert result == pytest.approx(clipped_mean(data["income"], INCOME, len(data)), rel=1e-12)


def test_nullable_float_mean_uses_the_non_missing_count(
    people: pd.DataFrame, noise: Callable
) -> None:
    priv = people.dp.protect(epsilon=1.0, schema=_income_schema(nullable=True))
    with noise(priv):
        result = priv["income"].dp.mean(epsilon=0.5)
    nonmissing = int(people["income"].notna().sum())
    assert nonmissing < len(people)
    assert set(measurements(priv)) == {"centred_sum(income)", "count(income)"}
    note = last_note(priv)
    assert "the count of non-missing income" in note
    assert result == pytest.approx(clipped_mean(people["income"], INCOME, nonmissing), rel=1e-12)


@pytest.mark.parametrize("nullable", [False, True])
def test_unvalidated_missing_values_follow_the_schema_rule(
    people: pd.DataFrame, noise: Callable, nullable: bool
) -> None:
    # With validate=False a "non-nullable" column may still hold NaN: the mean keeps the
    # schema's rule (row count, the NaN adding nothing to the centred sum), never the data's.
    priv = people.dp.protect(epsilon=1.0, schema=_income_schema(nullable=nullable), validate=False)
    with noise(priv):
        result = priv["income"].dp.mean(epsilon=0.5)
    count = int(people["income"].notna().sum()) if nullable else len(people)
    assert result == pytest.approx(clipped_mean(people["income"], INCOME, count), rel=1e-12)
    assert ("count(income)" in measurements(priv)) is nullable


def test_schema_nullable_overrides_an_integer_dtype(people: pd.DataFrame, noise: Callable) -> None:
    schema = pa.DataFrameSchema({"age": pa.Column(int, pa.Check.in_range(*AGE), nullable=True)})
    priv = people.dp.protect(epsilon=1.0, schema=schema)
    with noise(priv):
        priv["age"].dp.mean(epsilon=0.5)
    assert set(measurements(priv)) == {"centred_sum(age)", "count(age)"}


def test_grouped_mean_of_non_nullable_column_uses_group_row_counts(
    people: pd.DataFrame, noise: Callable
) -> None:
    priv = people.dp.protect(epsilon=1.0, schema=People)
    with noise(priv):
        means = priv.dp.groupby("region").mean("age", epsilon=0.5)
    assert set(measurements(priv)) == {"centred_sum(age)", "count"}
    for region in ["north", "south", "east"]:
        ages = people.loc[people["region"] == region, "age"]
        assert means[region] == pytest.approx(clipped_mean(ages, AGE, len(ages)), rel=1e-12)


# -- statistics beyond count/sum/mean ---------------------------------------------------------


def test_median_takes_bounds_from_schema(people: pd.DataFrame, noise: Callable) -> None:
    priv = people.dp.protect(epsilon=1.0, schema=People)
    with noise(priv):
        median = priv["age"].dp.median(epsilon=0.5)
    assert AGE[0] <= median <= AGE[1]
    assert abs(median - people["age"].median()) <= (AGE[1] - AGE[0]) / 100  # grid cell
    row = last_row(priv)
    assert row["bounds"] == "age: [0, 120]"
    note = last_note(priv)
    assert AGE_SOURCE in note


def test_describe_covers_the_columns_with_schema_bounds(
    people: pd.DataFrame, noise: Callable
) -> None:
    priv = people.dp.protect(epsilon=1.0, schema=People)
    with noise(priv):
        table = priv.dp.describe(epsilon=0.5)
    assert list(table.columns) == ["age", "income"]
    assert table.loc["mean", "age"] == pytest.approx(people["age"].mean(), rel=1e-12)
    row = last_row(priv)
    assert row["bounds"] == "age: [0, 120]; income: [0, 200000]"


def test_describe_ledger_says_bounds_came_from_schema(
    people: pd.DataFrame, noise: Callable
) -> None:
    priv = people.dp.protect(epsilon=1.0, schema=People)
    with noise(priv):
        priv.dp.describe(epsilon=0.5)
    note = last_note(priv)
    assert AGE_SOURCE in note
    assert INCOME_SOURCE in note


@pytest.mark.parametrize("how", ["mode", "top_k"])
def test_mode_and_top_k_take_candidates_from_schema(
    people: pd.DataFrame, noise: Callable, how: str
) -> None:
    priv = people.dp.protect(epsilon=1.0, schema=People)
    with noise(priv) as calls:
        if how == "mode":
            chosen = priv["region"].dp.mode(epsilon=0.5)
            assert chosen == people["region"].mode()[0]
        else:
            chosen = priv["region"].dp.top_k(2, epsilon=0.5)
            assert chosen == people["region"].value_counts().index[:2].tolist()
    assert len(calls) == (1 if how == "mode" else 2)  # one choice per round
    note = last_note(priv)
    assert f"over {len(REGIONS)} public candidates" in note


@pytest.mark.parametrize("how", ["mode", "top_k"])
def test_mode_and_top_k_ledger_says_candidates_came_from_schema(
    people: pd.DataFrame, noise: Callable, how: str
) -> None:
    priv = people.dp.protect(epsilon=1.0, schema=People)
    with noise(priv):
        if how == "mode":
            priv["region"].dp.mode(epsilon=0.5)
        else:
            priv["region"].dp.top_k(2, epsilon=0.5)
    note = last_note(priv)
    assert "from the schema" in note, note


def test_explicit_candidates_override_schema(people: pd.DataFrame, noise: Callable) -> None:
    priv = people.dp.protect(epsilon=1.0, schema=People)
    with noise(priv) as calls:
        chosen = priv["region"].dp.mode(candidates=["west", "north"], epsilon=0.5)
    assert chosen == "north"
    assert {c.size for c in calls} == {1}
    note = last_note(priv)
    assert "over 2 public candidates" in note
    assert "from the schema" not in note
