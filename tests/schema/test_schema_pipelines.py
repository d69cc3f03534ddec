"""Typed pipelines: ``@pa.check_types`` (and ``check_input``/``check_output``) functions work on
protected frames and keep their session, so every release inside them is charged to the
data owner's budget; and failed releases charge nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
import pandera.pandas as pa
import pytest
from pandera.typing import DataFrame

from pandas_dp.errors import (
    BudgetExceededError,
    DPKeyError,
    DPTypeError,
    DPValueError,
    NotProtectedError,
)

from .conftest import PEOPLE_SCHEMA, REGIONS, People


@pa.check_types
def release(df: DataFrame[People]) -> pd.DataFrame:
    """A typed release step: the issue's two group-by releases."""
    counts = df.dp.groupby("region").count(epsilon=0.25)
    means = df.dp.groupby("region").mean("income", epsilon=0.25)
    return pd.DataFrame({"n": counts, "mean_income": means})


@pa.check_types
def adults(df: DataFrame[People]) -> DataFrame[People]:
    """A typed transformation: a filtered frame of the same schema."""
    return df[df["age"] >= 40]


@pa.check_input(PEOPLE_SCHEMA)
@pa.check_output(PEOPLE_SCHEMA)
def northerners(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["region"] == "north"]


def test_typed_release_charges_the_owners_session(people: pd.DataFrame) -> None:
    priv = people.dp.protect(epsilon=1.0, schema=People)
    table = release(priv)
    assert list(table.index) == REGIONS
    session = priv.dp.session
    assert session.spent.epsilon == 0.5
    assert session.ledger["query"].tolist() == ["groupby.count", "groupby.mean"]


def test_typed_transformation_keeps_the_session(people: pd.DataFrame, noise: Callable) -> None:
    priv = people.dp.protect(epsilon=1.0, schema=People)
    older = adults(priv)
    assert older.dp.session is priv.dp.session
    pd.testing.assert_frame_equal(older.dp.rules, priv.dp.rules)
    with noise(priv):
        n = older.dp.count(epsilon=0.5)
        release(older)
    assert n == int((people["age"] >= 40).sum())
    assert priv.dp.session.spent.epsilon == 1
    with pytest.raises(BudgetExceededError):
        adults(priv).dp.count(epsilon=0.01)
    assert len(priv.dp.session.releases) == 3


def test_check_input_and_output_keep_the_session(people: pd.DataFrame) -> None:
    priv = people.dp.protect(epsilon=1.0, schema=PEOPLE_SCHEMA)
    north = northerners(priv)
    assert north.dp.session is priv.dp.session
    north["age"].dp.mean(epsilon=0.5)
    assert priv.dp.session.spent.epsilon == 0.5


def test_typed_pipeline_does_not_protect_raw_data(people: pd.DataFrame) -> None:
    # Validation is not protection: a raw frame through a typed step has no session.
    with pytest.raises(NotProtectedError):
        release(people)
    with pytest.raises(NotProtectedError):
        _ = adults(people).dp.session


# -- a failed release charges nothing ---------------------------------------------------------


def _calls(priv: pd.DataFrame) -> dict[str, Callable[[], Any]]:
    return {
        "half bound": lambda: priv["x"].dp.mean(epsilon=0.1),
        "no rules": lambda: priv["y"].dp.sum(epsilon=0.1),
        "keys of the wrong type": lambda: priv.dp.groupby("code").count(epsilon=0.1),
        "missing column": lambda: priv.dp.groupby("nope").count(epsilon=0.1),
        "bad epsilon": lambda: priv.dp.groupby("region").mean("income", epsilon=-1),
        "no delta for selection": lambda: priv.dp.groupby("y").count(epsilon=0.1),
        "schema bounds, bad explicit ones": lambda: priv["income"].dp.mean(
            epsilon=0.1, bounds=(5, 1)
        ),
        "over budget": lambda: priv.dp.groupby("region").mean("income", epsilon=5),
    }


ERRORS = {
    "half bound": DPValueError,
    "no rules": DPValueError,
    "keys of the wrong type": DPTypeError,
    "missing column": DPKeyError,
    "bad epsilon": DPValueError,
    "no delta for selection": DPValueError,
    "schema bounds, bad explicit ones": DPValueError,
    "over budget": BudgetExceededError,
}


@pytest.mark.parametrize("case", ERRORS)
def test_failed_releases_charge_nothing(people: pd.DataFrame, case: str) -> None:
    class Extended(People):
        x: float = pa.Field(ge=0)  # a lower bound only: no clipping interval
        y: float
        code: int = pa.Field(isin=["1", "2"])  # text keys for a numeric column

    data = people.assign(x=1.0, y=2.0, code=1)
    priv = data.dp.protect(epsilon=1.0, schema=Extended, validate=False)
    priv.dp.count(epsilon=0.5)
    session = priv.dp.session
    spent, ledger = session.spent, session.ledger.copy()
    with pytest.raises(ERRORS[case]):
        _calls(priv)[case]()
    assert session.spent == spent
    pd.testing.assert_frame_equal(session.ledger, ledger)
