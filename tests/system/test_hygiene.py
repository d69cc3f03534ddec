"""Nothing that leaves the library carries a cell value or a count read from the data.

Distinctive values are planted in a frame of 4,321 rows; every error path, every warning,
the ledger and the session's repr are searched for them. Error messages may echo what the
*user* passed (bounds, ε, a column name) but never what the data holds.
"""

from __future__ import annotations

import pickle
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from pandas_dp import DPError

ROWS = 4321
SECRET_VALUE = 987654321.5
SECRET_TEXT = "SECRET-XYZ"
SECRETS = ("987654321", SECRET_TEXT, str(ROWS), "4,321", "4_321")


def _planted() -> pd.DataFrame:
    rng = np.random.default_rng(42)
    data = pd.DataFrame(
        {
            "age": rng.integers(18, 90, ROWS),
            "sex": rng.integers(0, 2, ROWS),
            "income": rng.integers(0, 10**5, ROWS).astype("float64"),
            "note": ["ordinary"] * ROWS,
        }
    )
    data.loc[17, "income"] = SECRET_VALUE
    data.loc[23, "note"] = SECRET_TEXT
    data["label"] = pd.Categorical(data["note"])
    data["text"] = data["note"].astype("string")
    return data


@pytest.fixture
def priv(protect_seeded: Callable[..., Any]) -> pd.DataFrame:
    return protect_seeded(_planted(), epsilon=1.0)


def _assert_clean(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret!r} leaked into: {text}"


def _parquet_copy(priv: pd.DataFrame, tmp_path: Path) -> pd.DataFrame:
    path = tmp_path / "planted.parquet"
    priv.to_parquet(path)
    return pd.read_parquet(path)


def _exhaust(priv: pd.DataFrame) -> Any:
    priv.dp.count(epsilon=0.9)
    return priv.dp.sum("income", bounds=(0, 10**9), epsilon=0.5)


ERROR_PATHS: dict[str, Callable[[pd.DataFrame, Path], Any]] = {
    "missing column": lambda p, _: p.dp.sum("salary", bounds=(0, 1), epsilon=0.1),
    "object column": lambda p, _: p.dp.sum("note", bounds=(0, 1), epsilon=0.1),
    "category column": lambda p, _: p.dp.mean("label", bounds=(0, 1), epsilon=0.1),
    "string series": lambda p, _: p["text"].dp.sum(bounds=(0, 1), epsilon=0.1),
    "reversed bounds": lambda p, _: p.dp.sum("income", bounds=(10, 0), epsilon=0.1),
    "nan bounds": lambda p, _: p.dp.mean("income", bounds=(np.nan, 1), epsilon=0.1),
    "string bounds": lambda p, _: p.dp.sum("income", bounds=("a", "b"), epsilon=0.1),
    "no bounds": lambda p, _: p["income"].dp.mean(bounds=None, epsilon=0.1),
    "bad epsilon": lambda p, _: p.dp.count(epsilon=-1),
    "nan epsilon": lambda p, _: p.dp.sum("income", bounds=(0, 1), epsilon=np.nan),
    "bad fillna": lambda p, _: p.dp.sum("income", bounds=(0, 1), epsilon=0.1, fillna="x"),
    "over budget": lambda p, _: _exhaust(p),
    "laundered": lambda p, _: pd.DataFrame(p).dp.count(epsilon=0.1),
    "merged": lambda p, _: p.merge(pd.DataFrame({"sex": [0, 1]}), on="sex").dp.count(epsilon=1),
    "duplicated": lambda p, _: pd.concat([p, p]).dp.count(epsilon=0.1),
    "duplicated filter": lambda p, _: p.loc[[17, 23, 17]].dp.count(epsilon=0.1),
    "filter then set_index": lambda p, _: (
        p[p["note"] == SECRET_TEXT].set_index("income").dp.count(epsilon=0.1)
    ),
    "read from parquet": lambda p, tmp: _parquet_copy(p, tmp).dp.count(epsilon=0.1),
    "already protected": lambda p, _: p.dp.protect(epsilon=1.0),
    "bad protect epsilon": lambda p, _: p.dp.protect(epsilon=np.inf, replace=True),
    "index with repeated secret labels": lambda p, _: pd.DataFrame(
        {"x": [1, 2]}, index=[SECRET_TEXT, SECRET_TEXT]
    ).dp.protect(epsilon=1.0),
    "laundered then pickled": lambda p, _: pickle.loads(
        pickle.dumps(pd.DataFrame(p)[["income"]])
    ).dp.count(epsilon=0.1),
}


@pytest.mark.parametrize("path", ERROR_PATHS.values(), ids=ERROR_PATHS.keys())
def test_error_messages_hold_no_data(priv: pd.DataFrame, tmp_path: Path, path: Callable) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(DPError) as error:
            path(priv, tmp_path)
    _assert_clean(str(error.value))
    _assert_clean(repr(error.value))
    _assert_clean(" ".join(map(str, error.value.args)))
    for warning in caught:
        _assert_clean(str(warning.message))


def test_missing_column_message_does_not_list_data_derived_labels(priv: pd.DataFrame) -> None:
    # pivot_table keeps the session; its columns are values found only in the data.
    wide = priv.pivot_table(index="sex", columns="note", values="income", aggfunc="count")
    with pytest.raises(DPError) as error:
        wide.dp.sum("ordinary-typo", bounds=(0, 1), epsilon=0.1)
    _assert_clean(str(error.value))


def test_ledger_repr_and_warnings_hold_no_data(priv: pd.DataFrame) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        priv.dp.count(epsilon=0.1)
        priv["income"].dp.count(epsilon=0.1)
        priv.dp.sum("income", bounds=(0, 10**9), epsilon=0.1)
        priv.dp.mean("income", bounds=(0, 10**9), epsilon=0.1, fillna=5)
        priv[priv["note"] == SECRET_TEXT].dp.sum("income", bounds=(-1, 1e9), epsilon=0.1)
        priv[priv["income"] > 10**8]["income"].dp.mean(bounds=(0, 1e9), epsilon=0.1)
    for warning in caught:
        _assert_clean(str(warning.message))
    session = priv.dp.session
    # The timestamps are public (when, not what) but their digits could spell anything.
    _assert_clean(session.ledger.drop(columns=["time"]).to_string())
    _assert_clean(repr(session).replace(session.id[:8], ""))
    _assert_clean(str(session.spent) + str(session.remaining) + repr(session.total))
    _assert_clean(repr(session.releases))
