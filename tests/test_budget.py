"""Exact budgets: ten spends of 0.1 fill 1.0, every ε and δ is validated, arithmetic is exact."""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pandas_dp import Budget, BudgetExceededError, DPTypeError, DPValueError


@pytest.fixture
def priv(census: pd.DataFrame, protect_seeded: Callable[..., Any]) -> pd.DataFrame:
    return protect_seeded(census, epsilon=1.0)


def test_ten_spends_of_a_tenth_fill_one_exactly(priv: pd.DataFrame) -> None:
    for _ in range(10):
        priv.dp.count(epsilon=0.1)
    session = priv.dp.session
    assert session.spent.epsilon == 1
    assert session.remaining.epsilon == 0
    with pytest.raises(BudgetExceededError):
        priv.dp.count(epsilon=0.1)
    with pytest.raises(BudgetExceededError):
        priv.dp.count(epsilon=1e-9)
    assert len(session.ledger) == 10


def test_mixed_queries_fill_the_budget_exactly(priv: pd.DataFrame) -> None:
    priv.dp.count(epsilon=0.1)
    priv.dp.sum("income", bounds=(0, 1e5), epsilon=0.2)
    priv["age"].dp.mean(bounds=(0, 100), epsilon=0.3)
    priv[priv["sex"] == 1].dp.count(epsilon=0.3)
    with pytest.raises(BudgetExceededError):
        priv.dp.count(epsilon=0.1000000001)
    priv["income"].dp.sum(bounds=(0, 1e5), epsilon=0.1)
    assert priv.dp.session.remaining == Budget(Fraction(0))


BAD_EPSILONS = [
    (math.nan, DPValueError),
    (np.nan, DPValueError),
    (np.float32("nan"), DPValueError),
    (Decimal("NaN"), DPValueError),
    (math.inf, DPValueError),
    (-math.inf, DPValueError),
    (Decimal("Infinity"), DPValueError),
    (0, DPValueError),
    (0.0, DPValueError),
    (-1, DPValueError),
    (-0.5, DPValueError),
    (1e-10, DPValueError),
    (True, DPTypeError),
    (False, DPTypeError),
    (np.bool_(True), DPTypeError),
    ("1.0", DPTypeError),
    (b"1", DPTypeError),
    (None, DPTypeError),
    (1 + 0j, DPTypeError),
    ([1.0], DPTypeError),
    (np.array([1.0]), DPTypeError),
]

BAD_DELTAS = [
    (math.nan, DPValueError),
    (math.inf, DPValueError),
    (-math.inf, DPValueError),
    (1, DPValueError),
    (1.0, DPValueError),
    (1.5, DPValueError),
    (-1e-9, DPValueError),
    (Decimal("1"), DPValueError),
    (True, DPTypeError),
    ("0", DPTypeError),
    (None, DPTypeError),
    (0j, DPTypeError),
]


@pytest.mark.parametrize(("epsilon", "error"), BAD_EPSILONS, ids=repr)
def test_protect_rejects_bad_epsilon(census: pd.DataFrame, epsilon: Any, error: type) -> None:
    with pytest.raises(error, match="epsilon"):
        census.dp.protect(epsilon=epsilon)
    with pytest.raises(error, match="epsilon"):
        census["age"].dp.protect(epsilon=epsilon)
    with pytest.raises(error):
        Budget.of(epsilon)
    assert "pandas_dp" not in census.attrs


@pytest.mark.parametrize(("delta", "error"), BAD_DELTAS, ids=repr)
def test_protect_rejects_bad_delta(census: pd.DataFrame, delta: Any, error: type) -> None:
    with pytest.raises(error, match="delta"):
        census.dp.protect(epsilon=1.0, delta=delta)
    with pytest.raises(error):
        Budget.of(1.0, delta)


@pytest.mark.parametrize(("epsilon", "error"), BAD_EPSILONS, ids=repr)
def test_queries_reject_bad_epsilon(priv: pd.DataFrame, epsilon: Any, error: type) -> None:
    for query in (
        lambda: priv.dp.count(epsilon=epsilon),
        lambda: priv["age"].dp.sum(bounds=(0, 100), epsilon=epsilon),
        lambda: priv.dp.mean("age", bounds=(0, 100), epsilon=epsilon),
    ):
        with pytest.raises(error, match="epsilon"):
            query()
    assert priv.dp.session.spent.epsilon == 0
    assert len(priv.dp.session.ledger) == 0


GOOD_EPSILONS = [
    (1, Fraction(1)),
    (np.int64(2), Fraction(2)),
    (np.float64(0.1), Fraction(1, 10)),
    (np.float32(0.25), Fraction(1, 4)),
    (Decimal("0.1"), Fraction(1, 10)),
    (Fraction(1, 3), Fraction(1, 3)),
    (0.3, Fraction(3, 10)),
    (1e-9, Fraction(1, 10**9)),
]


@pytest.mark.parametrize(("epsilon", "exact"), GOOD_EPSILONS, ids=repr)
def test_real_numbers_of_any_kind_are_read_exactly(
    census: pd.DataFrame, epsilon: Any, exact: Fraction
) -> None:
    priv = census.dp.protect(epsilon=epsilon, delta=np.float64(1e-6))
    total = priv.dp.session.total
    assert total.epsilon == exact
    assert total.delta == Fraction(1, 10**6)
    priv.dp.count(epsilon=epsilon)
    assert priv.dp.session.spent.epsilon == exact
    assert priv.dp.session.remaining.epsilon == 0


@pytest.mark.parametrize("delta", [0, 0.0, Decimal("0"), Fraction(0), np.float64(0)])
def test_zero_delta_means_pure_dp(census: pd.DataFrame, delta: Any) -> None:
    assert census.dp.protect(epsilon=1.0, delta=delta).dp.session.total.is_pure


def test_budget_arithmetic() -> None:
    tenth = Budget.of(0.1)
    assert tenth * 10 == Budget.of(1.0)
    assert sum([tenth] * 10, Budget(Fraction(0))) == Budget(Fraction(1))
    assert Budget.of(0.1, 1e-7) + Budget.of(0.2, 2e-7) == Budget.of(0.3, 3e-7)
    assert Budget.of(1.0) - Budget.of(0.3) == Budget(Fraction(7, 10))
    assert Budget.of(0.1) - Budget.of(0.3) == Budget(Fraction(0))  # never negative
    assert Budget.of(1.0, 1e-6).covers(Budget.of(1.0, 1e-6))
    assert not Budget.of(1.0).covers(Budget.of(0.5, 1e-9))
    assert not Budget.of(0.3).covers(Budget.of(0.1) + Budget.of(0.2) + Budget.of(1e-9))
    assert Budget.of(0.3).covers(Budget.of(0.1) + Budget.of(0.2))
    assert Budget.of(1.0).is_pure
    assert not Budget.of(1.0, 1e-9).is_pure
    assert repr(Budget.of(0.1)) == "Budget(epsilon=1/10, delta=0)"


@pytest.mark.parametrize(
    ("epsilon", "delta"),
    [(Fraction(-1), Fraction(0)), (Fraction(1), Fraction(1)), (Fraction(1), Fraction(-1, 10))],
)
def test_budget_checks_itself(epsilon: Fraction, delta: Fraction) -> None:
    with pytest.raises(DPValueError):
        Budget(epsilon, delta)


def test_budget_is_frozen_and_hashable() -> None:
    budget = Budget.of(0.5)
    with pytest.raises(AttributeError):
        budget.epsilon = Fraction(10)  # type: ignore[misc]
    assert len({Budget.of(0.5), Budget(Fraction(1, 2))}) == 1


@settings(max_examples=60, derandomize=True, database=None, deadline=None)
@given(
    total=st.integers(1, 300),
    spends=st.lists(st.integers(1, 60), min_size=1, max_size=25),
)
def test_refusals_follow_the_exact_running_total(total: int, spends: list[int]) -> None:
    """Hundredths typed as floats (0.07, 0.13, ...) are refused exactly when they overflow."""
    from pandas_dp.accounting import Accountant, Measurement, Release

    accountant = Accountant(Budget.of(total / 100))
    running = 0
    for cents in spends:
        eps = Fraction(str(cents / 100))
        release = Release("q", (), (Measurement("q", "t", eps, 1, Fraction(1)),))
        if running + cents <= total:
            accountant.charge(release)
            running += cents
        else:
            with pytest.raises(BudgetExceededError):
                accountant.charge(release)
    assert accountant.spent.epsilon == Fraction(running, 100)


@pytest.mark.parametrize("epsilon", [10**400, Decimal("1e400")], ids=["int", "Decimal"])
def test_epsilon_beyond_float_range_is_refused_cleanly(
    census: pd.DataFrame, epsilon: Any, charges_nothing: Any
) -> None:
    """An ε beyond float range is refused as a DPValueError; nothing overflows."""
    with pytest.raises(DPValueError, match=r"1e-9, 1e6"):
        census.dp.protect(epsilon=epsilon)
    priv = census.dp.protect(epsilon=1e6)  # the largest budget accepted
    queries = (
        lambda eps: priv.dp.count(epsilon=eps),
        lambda eps: priv.dp.sum("income", bounds=(0, 1e5), epsilon=eps),
        lambda eps: priv["age"].dp.mean(bounds=(0, 100), epsilon=eps),
    )
    for query in queries:
        with charges_nothing(priv), pytest.raises(DPValueError, match=r"1e-9, 1e6"):
            query(epsilon)
    for query in queries:  # the largest ε a query accepts works and is charged
        query(Fraction(10**6, 4))
    assert priv.dp.session.spent.epsilon == Fraction(3 * 10**6, 4)


# --- budget kinds never mix --------------------------------------------------------------------


@pytest.mark.parametrize(
    "operation",
    [
        lambda a, b: a + b,
        lambda a, b: a - b,
        lambda a, b: a.covers(b),
        lambda a, b: b + a,
        lambda a, b: b - a,
        lambda a, b: b.covers(a),
    ],
    ids=["add", "subtract", "covers", "rho add", "rho subtract", "rho covers"],
)
def test_an_epsilon_budget_and_a_rho_budget_do_not_mix(operation: Any) -> None:
    """Once ``Budget.of(1.0) + Budget.of_rho(0.5)`` gave ρ = 1/2 and dropped the ε."""
    with pytest.raises(DPTypeError, match="ρ-zCDP"):
        operation(Budget.of(1.0), Budget.of_rho(0.5))


def test_rho_budgets_are_exact_and_have_no_epsilon_or_delta() -> None:
    from pandas_dp.budget import RhoBudget

    total = Budget.of_rho(0.5)
    assert isinstance(total, RhoBudget)
    assert total - RhoBudget.of(0.1) * 5 == RhoBudget(Fraction(0))
    assert total.covers(RhoBudget.of(0.5))
    assert not total.covers(RhoBudget(Fraction(1, 2) + Fraction(1, 10**30)))
    assert (total.epsilon, total.delta, total.is_zcdp, total.is_pure) == (0, 0, True, False)
    assert Budget.of(1.0).rho is None
    with pytest.raises(DPValueError):
        RhoBudget(Fraction(-1))
