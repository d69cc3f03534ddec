"""Frames derived from a protected frame share its one session and its one budget.

pandas deep-copies ``attrs`` when it propagates them; if the session were cloned, every
filter would mint a fresh budget. These tests derive frames in every common way and check
that each sees the *same* ``Session`` object and that spending anywhere is seen everywhere.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import pandas as pd
import pytest

DERIVATIONS: dict[str, Callable[[pd.DataFrame], Any]] = {
    "boolean filter": lambda p: p[p["age"] >= 40],
    "column": lambda p: p["income"],
    "columns": lambda p: p[["age", "income"]],
    "copy": lambda p: p.copy(),
    "shallow copy": lambda p: p.copy(deep=False),
    "copy.copy": copy.copy,
    "copy.deepcopy": copy.deepcopy,
    "query": lambda p: p.query("age < 30"),
    "assign": lambda p: p.assign(decade=p["age"] // 10),
    "head": lambda p: p.head(100),
    "tail": lambda p: p.tail(100),
    "sample without replacement": lambda p: p.sample(n=200, random_state=1),
    "shuffle": lambda p: p.sample(frac=1.0, random_state=2),
    "astype": lambda p: p.astype({"age": "float64"}),
    "dropna": lambda p: p.dropna(),
    "sort_values": lambda p: p.sort_values("income"),
    "groupby get_group": lambda p: p.groupby("sex").get_group(1),
    "loc slice": lambda p: p.loc[100:300],
    "loc filter and columns": lambda p: p.loc[p["sex"] == 0, ["age", "income"]],
    "iloc slice": lambda p: p.iloc[5:500:3],
    "reset_index of a filter": lambda p: p[p["married"] == 1].reset_index(drop=True),
    "where": lambda p: p.where(p["age"] > 50),
    "rename": lambda p: p.rename(columns={"income": "earnings"}),
    "series filter": lambda p: p["age"][p["age"] > 60],
    "series arithmetic": lambda p: p["income"] / 1000,
    "chained": lambda p: p.query("age > 20").assign(x=1)[["x", "age"]].head(50).copy(),
}


@pytest.fixture
def priv(census: pd.DataFrame, protect_seeded: Callable[..., Any]) -> pd.DataFrame:
    return protect_seeded(census, epsilon=1.0)


@pytest.mark.parametrize("derive", DERIVATIONS.values(), ids=DERIVATIONS.keys())
def test_derived_object_shares_the_session(priv: pd.DataFrame, derive: Callable) -> None:
    derived = derive(priv)
    assert derived.dp.session is priv.dp.session


@pytest.mark.parametrize("derive", DERIVATIONS.values(), ids=DERIVATIONS.keys())
def test_spending_through_a_derived_object_is_seen_by_the_original(
    priv: pd.DataFrame, derive: Callable
) -> None:
    derived = derive(priv)
    derived.dp.count(epsilon=0.25)
    assert priv.dp.session.spent.epsilon == Fraction(1, 4)
    assert priv.dp.session.remaining.epsilon == Fraction(3, 4)
    assert len(priv.dp.session.ledger) == 1


def test_two_derived_frames_drain_one_budget(priv: pd.DataFrame) -> None:
    young = priv[priv["age"] < 30]
    incomes = priv["income"]
    old = copy.deepcopy(priv.query("age >= 65"))
    young.dp.count(epsilon=0.4)
    assert incomes.dp.session.remaining.epsilon == Fraction(3, 5)
    incomes.dp.sum(bounds=(0, 100_000), epsilon=0.6)
    assert old.dp.session.remaining.epsilon == 0
    assert young.dp.session.spent.epsilon == 1
    assert [r.query for r in old.dp.session.releases] == ["count", "sum"]


def test_budget_is_not_renewed_by_deriving_again(priv: pd.DataFrame) -> None:
    from pandas_dp import BudgetExceededError

    priv.dp.count(epsilon=1.0)
    for derive in DERIVATIONS.values():
        with pytest.raises(BudgetExceededError):
            derive(priv).dp.count(epsilon=0.001)
    assert priv.dp.session.spent.epsilon == 1


def test_series_protected_directly_shares_with_its_derivatives(
    census: pd.DataFrame, protect_seeded: Callable[..., Any]
) -> None:
    ages = protect_seeded(census["age"], epsilon=1.0)
    derived = [ages[ages > 30], ages.copy(), copy.deepcopy(ages), ages.head(5), ages + 1]
    for i, series in enumerate(derived, start=1):
        assert series.dp.session is ages.dp.session
        series.dp.count(epsilon=0.1)
        assert ages.dp.session.spent.epsilon == Fraction(i, 10)
