"""A refused query charges nothing; a successful one, or one that fails after reading the data,
charges exactly once.

Every refusal below must raise the documented exception (also catchable as the standard
exception a pandas user expects) and leave the budget and the ledger untouched. A failure
after the budget check (injected here; the library's own steps are total) is charged, so it
can never be a free observation of the data, and it raises one data-free error.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

from pandas_dp import (
    BudgetExceededError,
    DPError,
    DPKeyError,
    DPTypeError,
    DPValueError,
    ReleaseFailedError,
)
from pandas_dp.engines.pandas_engine import PandasEngine
from pandas_dp.planning.noise import NoiseSource
from pandas_dp.planning.statistics import moments


@pytest.fixture
def priv(protect_seeded: Callable[..., Any]) -> pd.DataFrame:
    n = 8
    data = pd.DataFrame(
        {
            "age": np.arange(20, 20 + n),
            "income": np.linspace(0.0, 7000.0, n),
            "flag": [True, False] * (n // 2),
            "name": [f"person {i}" for i in range(n)],
            "text": pd.array([f"t{i}" for i in range(n)], dtype="string"),
            "when": pd.date_range("2020-01-01", periods=n),
            "span": pd.to_timedelta(np.arange(n), unit="D"),
            "cat": pd.Categorical(["a", "b"] * (n // 2)),
            "z": np.arange(n) + 1j,
        }
    )
    return protect_seeded(data, epsilon=1.0)


def _sum(column: Any, **kwargs: Any) -> Callable[[pd.DataFrame], Any]:
    kwargs = {"bounds": (0, 100), "epsilon": 0.1, **kwargs}
    return lambda p: p.dp.sum(column, **kwargs)


def _mean(column: Any, **kwargs: Any) -> Callable[[pd.DataFrame], Any]:
    kwargs = {"bounds": (0, 100), "epsilon": 0.1, **kwargs}
    return lambda p: p.dp.mean(column, **kwargs)


def _series_sum(column: Any, **kwargs: Any) -> Callable[[pd.DataFrame], Any]:
    kwargs = {"bounds": (0, 100), "epsilon": 0.1, **kwargs}
    return lambda p: p[column].dp.sum(**kwargs)


def _series_mean(column: Any, **kwargs: Any) -> Callable[[pd.DataFrame], Any]:
    kwargs = {"bounds": (0, 100), "epsilon": 0.1, **kwargs}
    return lambda p: p[column].dp.mean(**kwargs)


MISSING_COLUMNS = {
    "sum": _sum("salary"),
    "mean": _mean("salary"),
    "sum of a list with a missing column": _sum(["age", "salary"]),
    "sum of None": _sum(None),
    "mean of a case variant": _mean("Age"),
}


@pytest.mark.parametrize("call", MISSING_COLUMNS.values(), ids=MISSING_COLUMNS.keys())
def test_missing_column(priv: pd.DataFrame, call: Callable, charges_nothing: Callable) -> None:
    with charges_nothing(priv), pytest.raises(DPKeyError, match="not found"):
        call(priv)
    with charges_nothing(priv), pytest.raises(KeyError):
        call(priv)


NON_NUMERIC = ["name", "text", "when", "span", "cat", "z"]


@pytest.mark.parametrize("make", [_sum, _mean, _series_sum, _series_mean])
@pytest.mark.parametrize("column", NON_NUMERIC)
def test_non_numeric_dtype_is_refused(
    priv: pd.DataFrame, column: str, make: Callable, charges_nothing: Callable
) -> None:
    # Datetime and timedelta columns are refused numeric bounds (or a datetime sum) with a
    # hint of their own, naming their dtype in words.
    with (
        charges_nothing(priv),
        pytest.raises(DPTypeError, match=r"dtype|datetimes|timedeltas") as caught,
    ):
        make(column)(priv)
    assert isinstance(caught.value, TypeError)
    assert "to_numeric" not in str(caught.value) or column not in ("when", "span")


@pytest.mark.parametrize("column", NON_NUMERIC)
def test_count_works_on_any_dtype(priv: pd.DataFrame, column: str) -> None:
    assert isinstance(priv[column].dp.count(epsilon=0.1), int)


BAD_BOUNDS = {
    "None": (None, DPValueError),
    "reversed": ((100, 0), DPValueError),
    "equal": ((5, 5), DPValueError),
    "nan lower": ((math.nan, 1), DPValueError),
    "nan upper": ((0, np.nan), DPValueError),
    "inf upper": ((0, math.inf), DPValueError),
    "-inf lower": ((-np.inf, 0), DPValueError),
    "beyond 1e150": ((0, 1e151), DPValueError),
    "strings": (("0", "100"), DPTypeError),
    "a string": ("0,100", DPTypeError),
    "bools": ((False, True), DPTypeError),
    "bool lower": ((True, 5), DPTypeError),
    "None inside": ((0, None), DPTypeError),
    "pd.NA inside": ((0, pd.NA), DPTypeError),
    "complex": ((0, 1j), DPTypeError),
    "three values": ((0, 50, 100), DPValueError),
    "one value": ((100,), DPValueError),
    "scalar": (100, DPTypeError),
    "dict": ({0: 0, 1: 100}, DPTypeError),
}


@pytest.mark.parametrize("make", [_sum, _mean, _series_sum, _series_mean])
@pytest.mark.parametrize(("bounds", "error"), BAD_BOUNDS.values(), ids=BAD_BOUNDS.keys())
def test_bad_bounds_are_refused(
    priv: pd.DataFrame, make: Callable, bounds: Any, error: type, charges_nothing: Callable
) -> None:
    with charges_nothing(priv), pytest.raises(error):
        make("age", bounds=bounds)(priv)


def test_bounds_in_an_unordered_container_are_a_dp_type_error(
    priv: pd.DataFrame, charges_nothing: Callable
) -> None:
    for make in (_sum, _series_mean):
        with charges_nothing(priv), pytest.raises(DPTypeError):
            make("age", bounds={0, 100})(priv)  # a set has no lower and upper


@pytest.mark.parametrize("bounds", [(0, 100), [0, 100], np.array([0.0, 100.0]), (np.int8(0), 100)])
def test_bounds_as_any_pair_of_reals(bounds: Any) -> None:
    # ε large enough that 8 rows' noisy count is never below 1 (a mean is NaN there): the
    # test is about the forms of bounds, not the noise (count scale 0.04: P(|noise| >= 7) ~ 0)
    priv = pd.DataFrame({"age": np.arange(20, 28)}).dp.protect(epsilon=50.0)
    assert 0 <= priv.dp.mean("age", bounds=bounds, epsilon=50.0) <= 100


BAD_EPSILONS = {
    "nan": (math.nan, DPValueError),
    "numpy nan": (np.float64("nan"), DPValueError),
    "Decimal nan": (Decimal("NaN"), DPValueError),
    "inf": (math.inf, DPValueError),
    "-inf": (-math.inf, DPValueError),
    "zero": (0, DPValueError),
    "negative": (-0.1, DPValueError),
    "below the floor": (1e-10, DPValueError),
    "True": (True, DPTypeError),
    "numpy bool": (np.bool_(True), DPTypeError),
    "string": ("0.1", DPTypeError),
    "None": (None, DPTypeError),
    "complex": (0.1 + 0j, DPTypeError),
    "list": ([0.1], DPTypeError),
}

QUERIES = {
    "count": lambda p, eps: p.dp.count(epsilon=eps),
    "series count": lambda p, eps: p["age"].dp.count(epsilon=eps),
    "sum": lambda p, eps: p.dp.sum("income", bounds=(0, 10), epsilon=eps),
    "series mean": lambda p, eps: p["income"].dp.mean(bounds=(0, 10), epsilon=eps),
    "mean": lambda p, eps: p.dp.mean("age", bounds=(0, 10), epsilon=eps),
}


@pytest.mark.parametrize("query", QUERIES.values(), ids=QUERIES.keys())
@pytest.mark.parametrize(("epsilon", "error"), BAD_EPSILONS.values(), ids=BAD_EPSILONS.keys())
def test_bad_epsilon_is_refused(
    priv: pd.DataFrame, query: Callable, epsilon: Any, error: type, charges_nothing: Callable
) -> None:
    with charges_nothing(priv), pytest.raises(error):
        query(priv, epsilon)


@pytest.mark.parametrize("query", QUERIES.values(), ids=QUERIES.keys())
def test_over_budget_is_refused_and_the_rest_stays_spendable(
    priv: pd.DataFrame, query: Callable, charges_nothing: Callable
) -> None:
    query(priv, 0.7)
    with charges_nothing(priv), pytest.raises(BudgetExceededError, match="Nothing was charged"):
        query(priv, 0.31)
    query(priv, 0.3)
    assert priv.dp.session.remaining.epsilon == 0


BAD_FILLS = {
    "nan": (math.nan, DPValueError),
    "inf": (math.inf, DPValueError),
    "string": ("0", DPTypeError),
    "bool": (True, DPTypeError),
    "pd.NA": (pd.NA, DPTypeError),
}


@pytest.mark.parametrize("make", [_sum, _mean, _series_sum, _series_mean])
@pytest.mark.parametrize(("fill", "error"), BAD_FILLS.values(), ids=BAD_FILLS.keys())
def test_bad_fillna_is_refused(
    priv: pd.DataFrame, make: Callable, fill: Any, error: type, charges_nothing: Callable
) -> None:
    with charges_nothing(priv), pytest.raises(error):
        make("income", fillna=fill)(priv)


def test_duplicated_column_label_is_refused(
    protect_seeded: Callable[..., Any], charges_nothing: Callable
) -> None:
    data = pd.DataFrame([[1.0, 2.0]], columns=["x", "x"])
    priv = protect_seeded(data, epsilon=1.0)
    with charges_nothing(priv), pytest.raises(DPValueError, match="more than once"):
        priv.dp.sum("x", bounds=(0, 1), epsilon=0.1)


def _boom(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("injected failure holding a secret: 12345")


INJECTIONS = {
    "engine aggregate": lambda mp, priv: mp.setattr(PandasEngine, "aggregate", _boom),
    "noise sampler": lambda mp, priv: mp.setattr(NoiseSource, "draw", _boom),
    "post-processing": lambda mp, priv: mp.setattr(moments, "mean_from", _boom),
}


#: Every query with every injection that lies on its path (only means call mean_from).
FAILURES = [
    (inject, query)
    for inject in INJECTIONS
    for query in QUERIES
    if inject != "post-processing" or query in ("mean", "series mean")
]


@pytest.mark.parametrize(("inject", "query"), FAILURES, ids=[f"{i}-{q}" for i, q in FAILURES])
def test_failure_after_the_check_is_charged_and_data_free(
    priv: pd.DataFrame, inject: str, query: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = priv.dp.session
    with monkeypatch.context() as mp:
        INJECTIONS[inject](mp, priv)
        with pytest.raises(ReleaseFailedError, match="charged") as caught:
            QUERIES[query](priv, 0.5)
    error = caught.value
    assert isinstance(error, RuntimeError)
    assert "12345" not in str(error)
    assert "injected" not in str(error)
    assert error.__context__ is None
    assert error.__cause__ is None
    assert session.spent.epsilon == Fraction(1, 2)
    assert len(session.releases) == len(session.ledger) == 1
    QUERIES[query](priv, 0.5)  # the rest of the budget is still there
    assert session.spent.epsilon == 1


def test_a_failure_the_budget_cannot_cover_is_refused_before_the_data(
    priv: pd.DataFrame, monkeypatch: pytest.MonkeyPatch, charges_nothing: Callable
) -> None:
    monkeypatch.setattr(PandasEngine, "aggregate", _boom)
    with charges_nothing(priv), pytest.raises(BudgetExceededError):
        QUERIES["sum"](priv, 2.0)


def test_warnings_inside_a_release_do_not_escape(
    priv: pd.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = PandasEngine.aggregate

    def warns(*args: Any, **kwargs: Any) -> Any:
        import warnings

        warnings.warn("depends on the data", UserWarning, stacklevel=1)
        np.log(np.zeros(1))  # a numpy floating-point warning too
        return original(*args, **kwargs)

    monkeypatch.setattr(PandasEngine, "aggregate", warns)
    QUERIES["sum"](priv, 0.5)  # pytest turns an escaping warning into an error
    assert priv.dp.session.spent.epsilon == Fraction(1, 2)


@pytest.mark.parametrize("query", QUERIES.values(), ids=QUERIES.keys())
def test_successful_query_charges_exactly_once(priv: pd.DataFrame, query: Callable) -> None:
    session = priv.dp.session
    for i in range(1, 4):
        query(priv, 0.2)
        assert session.spent.epsilon == Fraction(i, 5)
        assert len(session.releases) == len(session.ledger) == i
    assert list(session.ledger["sequence"]) == [1, 2, 3]


def test_partial_label_of_multiindex_columns_is_a_dp_error(
    protect_seeded: Callable[..., Any], charges_nothing: Callable
) -> None:
    columns = pd.MultiIndex.from_tuples([("a", "x"), ("a", "y"), ("b", "x")])
    priv = protect_seeded(pd.DataFrame(np.ones((3, 3)), columns=columns), epsilon=1.0)
    with charges_nothing(priv), pytest.raises(DPError):
        priv.dp.sum("a", bounds=(0, 1), epsilon=0.1)  # names two columns, not one
    with charges_nothing(priv), pytest.raises(DPKeyError):
        priv.dp.sum(("a", "z"), bounds=(0, 1), epsilon=0.1)
    assert 0 <= priv.dp.mean(("a", "x"), bounds=(0, 1), epsilon=0.1) <= 1


@pytest.mark.parametrize("bounds", [(0.3, 0.7), (-0.7, -0.3), (0.25, 0.75), (1.0, 2.0)])
@pytest.mark.parametrize("make", [_mean, _series_mean])
def test_smallest_epsilon_with_narrow_bounds_releases_or_refuses_cleanly(
    priv: pd.DataFrame, make: Callable, bounds: tuple[float, float]
) -> None:
    """ε = 1e-9 and these bounds are documented as valid; only a DPError may refuse them."""
    session = priv.dp.session
    try:
        result = make("income", bounds=bounds, epsilon=1e-9)(priv)
    except DPValueError:
        assert session.spent.epsilon == 0
    else:  # NaN when the noisy count is below 1 (almost always at this ε)
        assert math.isnan(result) or bounds[0] <= result <= bounds[1]
        assert session.spent.epsilon == Fraction(1, 10**9)
