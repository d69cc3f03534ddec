"""Messages a new user hit in their first hour, round 2 (issue 44, item 3).

Each is refused before anything is charged, with our own words: no terminal escapes, no
third-party typo, the dtype named, one brace per brace, "did you mean" for a misspelt column
wherever one is named, and the right word for the argument given.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

from pandas_dp import DPKeyError, DPTypeError, DPValueError


@pytest.fixture
def data() -> pd.DataFrame:
    rows = 200
    return pd.DataFrame(
        {
            "y": np.arange(rows, dtype=np.float64),
            "x": np.arange(rows) % 7,
            "subject": ["math", "biology"] * (rows // 2),
            "SRCID": np.arange(rows),
            "when": pd.date_range("2024-01-01", periods=rows, freq="D").as_unit("us"),
        }
    )


@pytest.fixture
def priv(data: pd.DataFrame) -> pd.DataFrame:
    return data.dp.protect(epsilon=10.0)


LOOKUP = pd.DataFrame({"subject": ["math", "biology"], "room": [1, 2]})

CASES: dict[str, tuple[Callable[[pd.DataFrame], Any], type[Exception], str]] = {
    "formula ending in +": (
        lambda p: p.dp.ols("y ~ x +", bounds={"y": (0, 200), "x": (0, 7)}, epsilon=1.0),
        DPValueError,
        "formula 'y ~ x +' cannot be read: the operator '+' needs a term on each side, "
        "e.g. 'y ~ x + z'",
    ),
    "resample on a number column": (
        lambda p: p.dp.resample("MS", on="y", range=("2024-01-01", "2025-01-01")),
        DPTypeError,
        "resample bins time: column 'y' holds numbers (float64); for numbers use "
        "groupby(pd.cut(...)) over public edges or Series.dp.histogram",
    ),
    "C() without keys": (
        lambda p: p.dp.ols("y ~ C(subject)", bounds={"y": (0, 200)}, epsilon=1.0),
        DPValueError,
        "'subject' holds categories: give its public levels with keys={'subject': [...]} "
        "(or a schema's isin); pandas-dp never reads them off the data",
    ),
    "misspelt merge key": (
        lambda p: p.dp.merge(LOOKUP, on="subjct"),
        DPKeyError,
        "merge key 'subjct' is not a column of the protected frame (did you mean 'subject'?)",
    ),
    "data passed to ols": (
        lambda p: p.dp.ols("y ~ x", p, bounds={"y": (0, 200), "x": (0, 7)}, epsilon=1.0),
        DPTypeError,
        "ols() takes no data (got a DataFrame): the data is the protected frame itself, the "
        "one .dp is called on. statsmodels' ols('y ~ x', data=df) is priv.dp.ols('y ~ x', "
        "bounds=..., epsilon=...) here",
    ),
    "numbers as a date range": (
        lambda p: p.dp.resample("MS", on="when", range=(2024, 2025)),
        DPTypeError,
        "range must be a Timestamp: column 'when' holds datetimes (datetime64[us]), got int. "
        "Give range as ('2020-01-01', '2021-01-01'), or as pd.Timestamps",
    ),
}


@pytest.mark.parametrize(("call", "error", "expected"), CASES.values(), ids=CASES.keys())
def test_message_reads_well_and_nothing_is_charged(
    priv: pd.DataFrame, charges_nothing: Callable, call: Callable, error: type, expected: str
) -> None:
    with charges_nothing(priv), pytest.raises(error) as caught:
        call(priv)
    message = str(caught.value)
    assert message == expected
    assert "\x1b" not in message
    assert "insuffient" not in message
    assert "FrameModelling" not in message


def test_data_given_by_keyword_to_ols_is_refused_too(priv: pd.DataFrame) -> None:
    with pytest.raises(DPTypeError, match=r"^ols\(\) takes no data \(got a DataFrame\)"):
        priv.dp.ols("y ~ x", data=priv, bounds={"y": (0, 200), "x": (0, 7)}, epsilon=1.0)
    assert isinstance(DPTypeError("x"), TypeError)  # what statsmodels users catch


def test_a_misspelt_privacy_unit_gets_a_suggestion(data: pd.DataFrame) -> None:
    with pytest.raises(DPKeyError) as caught:
        data.dp.protect(epsilon=1.0, privacy_unit="SRCDI", max_rows_per_unit=2)
    assert str(caught.value) == (
        "privacy_unit column 'SRCDI' not found in this frame (did you mean 'SRCID'?)"
    )


@pytest.mark.parametrize(
    ("formula", "expected"),
    [
        ("y ~ (x", "a parenthesis is not matched"),
        ("y ~ x ~ z", "'~' comes once, between the response and the terms: 'y ~ x + z'"),
        ("y ~ x + `a", "a quote or bracket is not closed (add '`')"),
        ("y ~ x $ z", "'$' is not a formula operator (terms are joined by +, -, *, :, / and **)"),
    ],
)
def test_other_unreadable_formulas_are_in_our_words(
    priv: pd.DataFrame, formula: str, expected: str
) -> None:
    with pytest.raises(DPValueError) as caught:
        priv.dp.ols(formula, bounds={"y": (0, 200), "x": (0, 7)}, epsilon=1.0)
    assert str(caught.value) == f"formula {formula!r} cannot be read: {expected}"
    assert "\x1b" not in str(caught.value)
