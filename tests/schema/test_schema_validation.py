"""``protect(schema=..., validate=...)``: failing rows never reach a message.

pandera's own errors quote the failing cell values. An error message is a release, so with
``validate=True`` pandas-dp raises its own error naming only columns and checks (both from
the schema), with no chained exception; with ``validate=False`` it protects the data as it
is and every release clips to the schema's bounds and drops unknown keys silently.
"""

from __future__ import annotations

import logging
import traceback
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pandera.pandas as pa
import pytest

import pandas_dp
from pandas_dp.errors import DPTypeError, DPValueError, NotProtectedError

from .conftest import AGE, INCOME, REGIONS, People

#: Values planted in failing rows, and the forms in which a message might quote them.
PLANTED = {"age": 987654, "income": -31415.9265, "region": "SECRET-XYZ"}
TELLTALES = [
    "987654", "987,654", "9.87654", "9.8765", "SECRET", "XYZ",
    "31415", "31,415", "3.14159", "3.1415", "9265",
]  # fmt: skip


def planted(people: pd.DataFrame) -> pd.DataFrame:
    """``people`` with one row that fails all three checks, and two more failing one each."""
    data = people.copy()
    for column, value in PLANTED.items():
        data.loc[17, column] = value
    data.loc[400, "age"] = PLANTED["age"]
    data.loc[401, "region"] = PLANTED["region"]
    return data


def assert_no_telltale(text: str) -> None:
    for telltale in TELLTALES:
        assert telltale not in text, f"{telltale!r} leaked into: {text[:2000]}"


def test_failing_rows_never_appear_in_any_message(
    people: pd.DataFrame, people_schema: Any, caplog: pytest.LogCaptureFixture
) -> None:
    data = planted(people)
    caplog.set_level(logging.DEBUG)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(DPValueError) as raised:
            data.dp.protect(epsilon=1.0, schema=people_schema)
    error = raised.value

    # Nothing chained, nothing attached: pandera's error (which quotes values) is gone.
    assert error.__cause__ is None
    assert error.__context__ is None
    assert getattr(error, "__notes__", []) == []
    texts = [
        str(error),
        repr(error),
        *map(str, error.args),
        *map(repr, error.args),
        "".join(traceback.format_exception(error)),
        "".join(traceback.format_exception_only(type(error), error)),
        caplog.text,
        *(str(w.message) for w in caught),
    ]
    for text in texts:
        assert_no_telltale(text)

    # The message names each failing column and check, and the way out.
    message = str(error)
    for column, check in [
        ("age", "in_range"),
        ("income", "greater_than_or_equal_to"),
        ("region", "isin"),
    ]:
        assert f"column {column}: check {check}" in message
    assert "validate=False" in message
    assert caught == []
    # Nothing was protected: the data owner fixes the data or opts out of validation.
    assert data.attrs == {}
    with pytest.raises(NotProtectedError):
        _ = data.dp.session


@pytest.mark.parametrize(
    ("column", "value", "check"),
    [
        ("age", PLANTED["age"], "in_range"),
        ("income", PLANTED["income"], "greater_than_or_equal_to"),
        ("region", PLANTED["region"], "isin"),
        ("age", np.nan, "not_nullable"),
    ],
    ids=["age", "income", "region", "missing age"],
)
def test_each_failing_check_is_named_alone(
    people: pd.DataFrame, people_schema: Any, column: str, value: Any, check: str
) -> None:
    data = people.copy()
    if isinstance(value, float) and np.isnan(value):
        data[column] = data[column].astype("float64")
    data.loc[17, column] = value
    with pytest.raises(DPValueError) as raised:
        data.dp.protect(epsilon=1.0, schema=people_schema)
    message = str(raised.value)
    assert f"column {column}: check {check}" in message
    others = {"age", "income", "region"} - {column}
    assert not any(f"column {other}:" in message for other in others)
    assert_no_telltale("".join(traceback.format_exception(raised.value)))


def test_wrong_dtype_is_named_without_values(people: pd.DataFrame) -> None:
    data = people.copy()
    data["age"] = data["age"].astype(str)
    data.loc[5, "age"] = "SECRET-XYZ"
    with pytest.raises(DPValueError) as raised:
        data.dp.protect(epsilon=1.0, schema=pa.DataFrameSchema({"age": pa.Column(int)}))
    assert "column age: check dtype" in str(raised.value)
    assert_no_telltale("".join(traceback.format_exception(raised.value)))


def test_custom_and_dataframe_checks_are_named_without_values(people: pd.DataFrame) -> None:
    schema = pa.DataFrameSchema(
        {"age": pa.Column(int, pa.Check(lambda s: s < 200, name="plausible_age"))},
        checks=[pa.Check(lambda df: df["age"] >= 0, name="non_negative_age")],
        name="Census",
    )
    data = people.copy()
    data.loc[[3, 4], "age"] = [PLANTED["age"], -PLANTED["age"]]
    with pytest.raises(DPValueError) as raised:
        data.dp.protect(epsilon=1.0, schema=schema)
    message = str(raised.value)
    assert "check plausible_age" in message
    assert "check non_negative_age" in message
    assert_no_telltale("".join(traceback.format_exception(raised.value)))


def test_validate_false_protects_and_releases_clip(
    people: pd.DataFrame, people_schema: Any, noise: Callable
) -> None:
    data = planted(people)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning about the bad rows either
        priv = data.dp.protect(epsilon=2.0, schema=people_schema, validate=False)
    with noise(priv):
        mean_age = priv["age"].dp.mean(epsilon=0.2)
        total = priv.dp.sum("income", epsilon=0.2)
        counts = priv.dp.groupby("region").count(epsilon=0.2)

    clipped_age = data["age"].clip(*AGE)
    assert mean_age == pytest.approx(clipped_age.mean(), rel=1e-12)
    assert total == pytest.approx(data["income"].clip(*INCOME).sum(), rel=1e-12)
    assert list(counts.index) == REGIONS  # "SECRET-XYZ" dropped silently
    expected = data["region"].value_counts().reindex(REGIONS, fill_value=0)
    assert counts.tolist() == expected.tolist()
    assert counts.sum() == len(data) - 2  # the two planted regions are not counted
    ledger = priv.dp.session.ledger
    assert_no_telltale(ledger.to_string())
    assert_no_telltale(repr(priv.dp.session.releases))


def test_validate_true_keeps_the_callers_frame_and_data(people: pd.DataFrame) -> None:
    original = people.copy()
    priv = people.dp.protect(epsilon=1.0, schema=pa.DataFrameSchema({"age": pa.Column(int)}))
    pd.testing.assert_frame_equal(people, original)
    assert people.attrs == {}
    pd.testing.assert_frame_equal(priv, original, check_flags=False)


@pytest.mark.parametrize("validate", ["yes", 1, None])
def test_validate_must_be_a_bool(people: pd.DataFrame, validate: Any) -> None:
    with pytest.raises(DPTypeError, match="validate"):
        people.dp.protect(epsilon=1.0, schema=pa.DataFrameSchema(), validate=validate)
    assert people.attrs == {}


def test_seeded_protect_with_schema_still_warns(people: pd.DataFrame) -> None:
    with pytest.warns(pandas_dp.PrivacyLeakWarning, match="seeded rng"):
        priv = people.dp.protect(epsilon=1.0, rng=3, schema=pa.DataFrameSchema())
    assert priv.dp.rules.empty


def test_pandera_own_error_would_leak(people: pd.DataFrame) -> None:
    # The premise of the sanitised error, and a check that the detector above works:
    # pandera's message quotes the planted values.
    with pytest.raises(pa.errors.SchemaErrors) as raised:
        People.validate(planted(people), lazy=True)
    with pytest.raises(AssertionError, match="leaked"):
        assert_no_telltale(str(raised.value))
