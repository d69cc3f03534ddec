"""What ``read_schema`` takes from each pandera check, and the errors of a bad schema.

Bounds come from ``in_range``, ``ge``, ``le``, ``gt`` and ``lt`` (intersected; strict bounds
become closed clipping bounds), keys from ``isin`` (the schema's order, sorted for a set),
null handling from ``nullable``; custom checks supply nothing. An empty interval or
conflicting checks raise an error that names the column and the checks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pandera.pandas as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pandas_dp.errors import DPError, DPTypeError, DPValueError, NotProtectedError
from pandas_dp.schema import ColumnRules, read_schema

from .conftest import PEOPLE_SCHEMA, REGIONS, People, schema_in_style


def rules(*checks: Any, dtype: Any = float, nullable: bool = False) -> ColumnRules:
    """The rules ``read_schema`` reads for one column ``x`` with ``checks``."""
    schema = pa.DataFrameSchema({"x": pa.Column(dtype, list(checks), nullable=nullable)})
    return read_schema(schema).rules("x")


# -- bounds -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("checks", "bounds", "names"),
    [
        ([pa.Check.in_range(0, 120)], (0, 120), "in_range"),
        (
            [pa.Check.ge(0), pa.Check.le(10)],
            (0, 10),
            "greater_than_or_equal_to, less_than_or_equal_to",
        ),
        ([pa.Check.gt(0), pa.Check.lt(1)], (0, 1), "greater_than, less_than"),
        ([pa.Check.in_range(0, 5, include_min=False, include_max=False)], (0, 5), "in_range"),
        (
            [pa.Check.in_range(0, 100), pa.Check.ge(10), pa.Check.lt(50), pa.Check.le(70)],
            (10, 50),
            "in_range, greater_than_or_equal_to, less_than, less_than_or_equal_to",
        ),
        ([pa.Check.ge(-2.5), pa.Check.ge(-7), pa.Check.le(3), pa.Check.lt(8)], (-2.5, 3), None),
    ],
    ids=["in_range", "ge le", "strict gt lt", "strict in_range", "intersected", "repeated"],
)
def test_bounds_from_range_checks(
    checks: list[Any], bounds: tuple[float, float], names: str | None
) -> None:
    found = rules(*checks)
    assert found.bounds == bounds
    assert all(isinstance(b, float) for b in found.bounds)
    if names is not None:
        assert found.bounds_from == f"schema ({names})"


@pytest.mark.parametrize(
    "checks",
    [
        [],
        [pa.Check.ge(0)],
        [pa.Check.lt(5)],
        [pa.Check.ge(0), pa.Check.le(float("inf"))],
        [pa.Check(lambda s: s >= 0), pa.Check(lambda s: s <= 1, name="at_most_one")],
        [pa.Check(lambda s: s.between(0, 1), element_wise=False)],
        [pa.Check.notin([3]), pa.Check.ne(0)],
    ],
    ids=["none", "lower only", "upper only", "infinite", "custom", "custom between", "notin"],
)
def test_checks_that_supply_no_bounds(checks: list[Any]) -> None:
    found = rules(*checks)
    assert found.bounds is None
    assert found.bounds_from == ""
    assert found.keys is None


@pytest.mark.parametrize(
    ("checks", "names"),
    [
        ([pa.Check.ge(50), pa.Check.le(10)], ["greater_than_or_equal_to", "less_than_or_equal_to"]),
        ([pa.Check.in_range(0, 10), pa.Check.gt(20)], ["in_range", "greater_than"]),
        ([pa.Check.gt(5), pa.Check.lt(5)], ["greater_than", "less_than"]),
        ([pa.Check.in_range(3, 3)], ["in_range"]),
    ],
    ids=["reversed", "disjoint", "strict point", "point"],
)
def test_empty_interval_names_column_and_checks(checks: list[Any], names: list[str]) -> None:
    schema = pa.DataFrameSchema({"weight_kg": pa.Column(float, checks)})
    with pytest.raises(DPValueError, match="weight_kg") as raised:
        read_schema(schema)
    for name in names:
        assert name in str(raised.value)


RANGE_CHECKS = st.one_of(
    st.tuples(st.sampled_from(["ge", "gt", "le", "lt"]), st.integers(-50, 50)),
    st.tuples(st.just("in_range"), st.integers(-50, 50), st.integers(-50, 50)),
)


def _check(spec: tuple[Any, ...]) -> Any:
    kind, *values = spec
    if kind == "in_range":
        return pa.Check.in_range(min(values), max(values))
    return getattr(pa.Check, kind)(values[0])


@settings(max_examples=60, deadline=None)
@given(st.lists(RANGE_CHECKS, max_size=5))
def test_bounds_are_the_intersection_of_all_range_checks(specs: list[tuple[Any, ...]]) -> None:
    lows = [s[1] for s in specs if s[0] in ("ge", "gt")]
    highs = [s[1] for s in specs if s[0] in ("le", "lt")]
    for s in specs:
        if s[0] == "in_range":
            lows.append(min(s[1:]))
            highs.append(max(s[1:]))
    schema = pa.DataFrameSchema({"x": pa.Column(float, [_check(s) for s in specs])})
    if not lows or not highs:
        assert read_schema(schema).rules("x").bounds is None
    elif max(lows) < min(highs):
        assert read_schema(schema).rules("x").bounds == (max(lows), min(highs))
    else:
        with pytest.raises(DPValueError, match="'x'"):
            read_schema(schema)


@pytest.mark.parametrize(
    ("dtype", "low", "high"),
    [
        ("datetime64[ns]", pd.Timestamp("2020-01-01"), pd.Timestamp("2021-01-01")),
        (str, "a", "m"),
    ],
    ids=["dates", "strings"],
)
def test_range_checks_on_non_numeric_columns_do_not_break_the_schema(
    dtype: Any, low: Any, high: Any
) -> None:
    # A real schema describes date and text columns too; their ranges are not clipping
    # bounds for a numeric release, but they must not make the whole schema unusable.
    schema = pa.DataFrameSchema(
        {
            "age": pa.Column(int, pa.Check.in_range(0, 120)),
            "other": pa.Column(dtype, [pa.Check.ge(low), pa.Check.le(high)]),
        }
    )
    frame = pd.DataFrame({"age": [30, 40]})
    priv = frame.dp.protect(epsilon=1.0, schema=schema, validate=False)
    assert priv.dp.rules.loc["age", "upper"] == 120


# -- keys -------------------------------------------------------------------------------------


def test_keys_keep_the_schemas_order() -> None:
    found = rules(pa.Check.isin(["west", "north", "east"]), dtype=str)
    assert found.keys == ("west", "north", "east")
    assert found.keys_from == "schema (isin)"
    assert found.bounds is None


def test_keys_of_an_unordered_set_are_sorted() -> None:
    assert rules(pa.Check.isin({"b", "c", "a"}), dtype=str).keys == ("a", "b", "c")
    assert rules(pa.Check.isin(frozenset({3, 1, 2})), dtype=int).keys == (1, 2, 3)


def test_repeated_keys_are_kept_once() -> None:
    assert rules(pa.Check.isin(["a", "b", "a"]), dtype=str).keys == ("a", "b")


def test_several_isin_checks_intersect_in_the_first_ones_order() -> None:
    found = rules(pa.Check.isin(["c", "b", "a"]), pa.Check.isin(["a", "b", "z"]), dtype=str)
    assert found.keys == ("b", "a")


def test_disjoint_isin_checks_name_the_column() -> None:
    schema = pa.DataFrameSchema(
        {"colour": pa.Column(str, [pa.Check.isin(["red"]), pa.Check.isin(["blue"])])}
    )
    with pytest.raises(DPValueError, match=r"'colour'.*isin|isin.*'colour'"):
        read_schema(schema)


def test_field_isin_and_range_on_one_column() -> None:
    found = rules(pa.Check.isin([1, 2, 3]), pa.Check.in_range(1, 3), dtype=int)
    assert found.keys == (1, 2, 3)
    assert found.bounds == (1, 3)


def test_dataframe_level_and_index_checks_supply_nothing() -> None:
    schema = pa.DataFrameSchema(
        {"x": pa.Column(float)},
        checks=[pa.Check(lambda df: df["x"] <= 1)],
        index=pa.Index(int, pa.Check.in_range(0, 10)),
    )
    found = read_schema(schema)
    assert [label for label, _ in found.columns] == ["x"]
    assert found.rules("x") == ColumnRules(nullable=False)
    assert found.rules("not a column") == ColumnRules()


# -- nullability ------------------------------------------------------------------------------


@pytest.mark.parametrize("nullable", [False, True])
def test_nullable_is_read(nullable: bool) -> None:
    assert rules(pa.Check.ge(0), nullable=nullable).nullable is nullable


# -- schema styles ----------------------------------------------------------------------------


@pytest.mark.parametrize("style", ["model", "schema", "yaml path", "yaml loaded"])
def test_every_style_reads_the_same_rules(style: str, tmp_path: Path) -> None:
    found = read_schema(schema_in_style(style, tmp_path))
    assert found.name == "People"
    assert found.columns == read_schema(People).columns
    assert found.rules("region").keys == tuple(REGIONS)
    assert found.rules("age").bounds == (0, 120)
    assert found.rules("income").nullable is True


def test_yaml_path_may_be_a_string(tmp_path: Path) -> None:
    path = tmp_path / "people.yaml"
    PEOPLE_SCHEMA.to_yaml(path)
    assert read_schema(str(path)).columns == read_schema(People).columns


def test_yaml_text_from_to_yaml_is_accepted() -> None:
    # ``schema.to_yaml()`` returns YAML text; pandera's own from_yaml accepts it as well.
    frame = pd.DataFrame({"age": [30, 40], "income": [1.0, 2.0], "region": ["north", "east"]})
    priv = frame.dp.protect(epsilon=1.0, schema=People.to_yaml())
    assert priv.dp.rules.loc["age", "upper"] == 120


def test_missing_yaml_file_is_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-schema.yaml"
    frame = pd.DataFrame({"age": [30, 40]})
    with pytest.raises((DPError, OSError), match=r"no-such-schema\.yaml"):
        frame.dp.protect(epsilon=1.0, schema=missing)


@pytest.mark.parametrize(
    "schema",
    [42, {"age": (0, 120)}, pa.SeriesSchema(int), People.to_schema().columns["age"]],
    ids=["int", "dict", "series schema", "column"],
)
def test_other_objects_are_refused_with_a_type_error(schema: Any) -> None:
    frame = pd.DataFrame({"age": [30, 40]})
    with pytest.raises(DPTypeError, match="DataFrameModel"):
        frame.dp.protect(epsilon=1.0, schema=schema)
    with pytest.raises(NotProtectedError):
        _ = frame.dp.session


# -- a bad schema fails at protect time, before any budget exists -----------------------------


@pytest.mark.parametrize("validate", [True, False])
def test_conflicting_schema_fails_protect_and_leaves_frame_unprotected(validate: bool) -> None:
    class Broken(pa.DataFrameModel):
        age: int = pa.Field(ge=130, le=120)

    frame = pd.DataFrame({"age": [30, 40]})
    with pytest.raises(DPValueError, match="'age'") as raised:
        frame.dp.protect(epsilon=1.0, schema=Broken, validate=validate)
    assert "greater_than_or_equal_to" in str(raised.value)
    assert "less_than_or_equal_to" in str(raised.value)
    assert frame.attrs == {}
    with pytest.raises(NotProtectedError):
        _ = frame.dp.session


def test_rules_are_read_once_at_protect_time(tmp_path: Path) -> None:
    # The rules are public parameters of the session: editing the file later changes nothing.
    path = tmp_path / "people.yaml"
    People.to_yaml(path)
    frame = pd.DataFrame({"age": [30, 40], "income": [1.0, 2.0], "region": ["north", "east"]})
    priv = frame.dp.protect(epsilon=1.0, schema=path)
    path.write_text(path.read_text(encoding="utf-8").replace("120", "99"), encoding="utf-8")
    assert priv.dp.rules.loc["age", "upper"] == 120
    assert frame.dp.protect(epsilon=1.0, schema=path).dp.rules.loc["age", "upper"] == 99
