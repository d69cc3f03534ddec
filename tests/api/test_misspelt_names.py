"""Misspelt keywords, statistic names and columns: refused before any charge, with a hint.

Every message names the *public* method (``count()``, ``agg()`` ...) and the closest valid
name, never an internal function (``validate``, ``plan_...``, ``_release``); unknown
keywords are ``DPTypeError`` (a ``TypeError``), unknown statistics ``DPValueError``, unknown
columns ``DPKeyError``.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import pandas as pd
import pytest

import pandas_dp
from pandas_dp import DPKeyError, DPTypeError, DPValueError

INTERNAL = ("validate", "plan_", "_release", "_scalar", "_spread", "checked")

KEYS = ["a", "b", "c"]


@pytest.fixture
def priv() -> pd.DataFrame:
    data = pd.DataFrame({"x": [1.0, 2.0, 3.0] * 100, "g": KEYS * 100, "h": ["u", "v"] * 150})
    return data.dp.protect(epsilon=10.0, delta=1e-6)


def _refused(
    priv: pd.DataFrame,
    charges_nothing: Callable[[Any], AbstractContextManager[None]],
    call: Callable[[], object],
    error: type[Exception],
    *parts: str,
) -> str:
    """Run ``call``, assert it raises ``error`` holding every part, and charges nothing."""
    with charges_nothing(priv), pytest.raises(error) as raised:
        call()
    message = str(raised.value)
    for part in parts:
        assert part in message, message
    for internal in INTERNAL:
        assert internal not in message, message
    return message


KEYWORD_CASES = {
    "count": (
        lambda p: p.dp.count(epsilion=0.1),
        "count() got an unexpected keyword argument 'epsilion'; did you mean 'epsilon'?",
    ),
    "series count": (
        lambda p: p["x"].dp.count(epsilion=0.1),
        "count() got an unexpected keyword argument 'epsilion'; did you mean 'epsilon'?",
    ),
    "sum": (
        lambda p: p.dp.sum("x", bound=(0, 3), epsilon=0.1),
        "sum() got an unexpected keyword argument 'bound'; did you mean 'bounds'?",
    ),
    "mean": (
        lambda p: p.dp.mean("x", epsilon=0.1, bonds=(0, 3)),
        "mean() got an unexpected keyword argument 'bonds'; did you mean 'bounds'?",
    ),
    "crosstab": (
        lambda p: p.dp.crosstab(
            "g", "h", keys={"g": KEYS, "h": ["u", "v"]}, margin=True, epsilon=0.1
        ),
        "crosstab() got an unexpected keyword argument 'margin'; did you mean 'margins'?",
    ),
    "groupby count": (
        lambda p: p.dp.groupby("g", keys=KEYS).count(epsilion=0.1),
        "count() got an unexpected keyword argument 'epsilion'; did you mean 'epsilon'?",
    ),
    "groupby agg dict": (
        lambda p: p.dp.groupby("g", keys=KEYS).agg(
            m=("x", "mean"), bound={"x": (0, 3)}, epsilon=0.1
        ),
        "agg() got an unexpected keyword argument 'bound'; did you mean 'bounds'?",
    ),
    "agg misspelt epsilon": (
        lambda p: p.dp.agg(n="count", epsilion=0.1),
        "agg() got an unexpected keyword argument 'epsilion'; did you mean 'epsilon'?",
    ),
    "describe": (
        lambda p: p.dp.describe(percentile=[0.5], bounds={"x": (0, 3)}, epsilon=0.1),
        "describe() got an unexpected keyword argument 'percentile'; did you mean 'percentiles'?",
    ),
    "histogram": (
        lambda p: p["x"].dp.histogram(bins=3, rnage=(0, 3), epsilon=0.1),
        "histogram() got an unexpected keyword argument 'rnage'; did you mean 'range'?",
    ),
    # ols takes its options as a TypedDict, whose names are read from the signature's hints.
    "ols": (
        lambda p: p.dp.ols(y="x", x=[], bounds={"x": (0, 3)}, epsilion=0.1),
        "ols() got an unexpected keyword argument 'epsilion'; did you mean 'epsilon'?",
    ),
    "preview": (
        lambda p: p.dp.preview.count(epsilion=0.1),
        "count() got an unexpected keyword argument 'epsilion'; did you mean 'epsilon'?",
    ),
}


@pytest.mark.parametrize("case", list(KEYWORD_CASES))
def test_misspelt_keyword_is_a_type_error_naming_the_public_method(
    priv: pd.DataFrame, charges_nothing: Any, case: str
) -> None:
    call, expected = KEYWORD_CASES[case]
    _refused(priv, charges_nothing, lambda: call(priv), DPTypeError, expected)
    assert issubclass(DPTypeError, TypeError)


@pytest.mark.parametrize(
    ("how", "meant"),
    [("avg", "mean"), ("average", "mean"), ("stdev", "std"), ("sd", "std"),
     ("variance", "var"), ("distinct", "nunique")],
)  # fmt: skip
def test_statistic_synonym_suggests_the_pandas_name(
    priv: pd.DataFrame, charges_nothing: Any, how: str, meant: str
) -> None:
    _refused(
        priv, charges_nothing,
        lambda: priv.dp.agg(m=("x", how), bounds={"x": (0, 3)}, epsilon=0.1),
        DPValueError, f"unsupported statistic {how!r}; did you mean {meant!r}?",
    )  # fmt: skip


def test_statistic_synonym_in_a_groupby(priv: pd.DataFrame, charges_nothing: Any) -> None:
    _refused(
        priv, charges_nothing,
        lambda: priv.dp.groupby("g", keys=KEYS).agg(
            m=("x", "avg"), bounds={"x": (0, 3)}, epsilon=0.1
        ),
        DPValueError, "unsupported statistic 'avg'; did you mean 'mean'?",
    )  # fmt: skip


def test_count_synonym(priv: pd.DataFrame, charges_nothing: Any) -> None:
    _refused(
        priv, charges_nothing, lambda: priv.dp.agg(k="n", epsilon=0.1),
        DPValueError, "unsupported statistic 'n'; did you mean 'count'?",
    )  # fmt: skip


def test_tables_with_a_misspelt_column(priv: pd.DataFrame, charges_nothing: Any) -> None:
    message = _refused(
        priv, charges_nothing,
        lambda: priv.dp.tables([["gg"]], keys={"gg": KEYS}, epsilon=0.1),
        DPKeyError, "'gg'", "did you mean 'g'?",
    )  # fmt: skip
    assert "not found" in message


def test_named_statistics_are_still_accepted(priv: pd.DataFrame) -> None:
    """A named statistic whose name is close to an option is not taken for a misspelt one."""
    result = priv.dp.preview.agg(weight=("x", "sum"), n="count", bounds={"x": (0, 3)}, epsilon=0.1)
    assert result is not None


def test_refusals_are_dp_errors() -> None:
    assert issubclass(DPTypeError, pandas_dp.DPError)
    assert issubclass(DPValueError, ValueError)
    assert issubclass(DPKeyError, KeyError)
