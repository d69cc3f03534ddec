"""Operations that drop the session fail closed: never a fresh budget, always a clear refusal.

Also: ``protect`` refuses frames that already carry a session unless ``replace=True``, and
never modifies the caller's frame.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

from pandas_dp import DPValueError, NotProtectedError

OTHER = pd.DataFrame({"sex": [0, 1], "label": ["a", "b"]})

LAUNDERINGS: dict[str, Callable[[pd.DataFrame], Any]] = {
    "merge with another frame": lambda p: p.merge(OTHER, on="sex"),
    "join with another frame": lambda p: p.join(pd.DataFrame({"k": range(len(p))})),
    "concat with an unprotected frame": lambda p: pd.concat([p.head(5), OTHER]),
    "concat unprotected first": lambda p: pd.concat([OTHER, p.head(5)]),
    "pd.DataFrame(priv)": pd.DataFrame,
    "pd.Series(priv[col])": lambda p: pd.Series(p["age"]),
    "numpy round trip": lambda p: pd.DataFrame(p.to_numpy(), columns=p.columns),
    "series numpy round trip": lambda p: pd.Series(p["age"].to_numpy()),
    "value_counts": lambda p: p["race"].value_counts(),
    "frame value_counts": lambda p: p[["sex", "race"]].value_counts(),
    "groupby size": lambda p: p.groupby("educ").size(),
    "groupby transform": lambda p: p.groupby("sex")["income"].transform("mean"),
    "rolling": lambda p: p["income"].rolling(5).sum(),
    "frame rolling": lambda p: p[["age", "income"]].rolling(3).mean(),
    "to_dict round trip": lambda p: pd.DataFrame(p.to_dict()),
}

QUERIES: dict[str, Callable[[Any], Any]] = {
    "count": lambda obj: obj.dp.count(epsilon=0.1),
    "session": lambda obj: obj.dp.session,
}


@pytest.fixture
def priv(census: pd.DataFrame, protect_seeded: Callable[..., Any]) -> pd.DataFrame:
    return protect_seeded(census, epsilon=1.0)


@pytest.mark.parametrize("query", QUERIES.values(), ids=QUERIES.keys())
@pytest.mark.parametrize("launder", LAUNDERINGS.values(), ids=LAUNDERINGS.keys())
def test_laundered_object_is_refused_with_instructions(
    priv: pd.DataFrame, launder: Callable, query: Callable
) -> None:
    laundered = launder(priv)
    with pytest.raises(NotProtectedError, match=r"protect\(epsilon=") as caught:
        query(laundered)
    assert caught.type is NotProtectedError
    assert priv.dp.session.spent.epsilon == 0


@pytest.mark.parametrize("launder", LAUNDERINGS.values(), ids=LAUNDERINGS.keys())
def test_laundered_frame_sum_and_mean_are_refused(priv: pd.DataFrame, launder: Callable) -> None:
    laundered = launder(priv)
    if isinstance(laundered, pd.Series):
        calls = [lambda: laundered.dp.sum(bounds=(0, 1), epsilon=0.1)]
        calls.append(lambda: laundered.dp.mean(bounds=(0, 1), epsilon=0.1))
    else:
        calls = [lambda: laundered.dp.sum("age", bounds=(0, 1), epsilon=0.1)]
        calls.append(lambda: laundered.dp.mean("age", bounds=(0, 1), epsilon=0.1))
    for call in calls:
        with pytest.raises(NotProtectedError):
            call()


def test_unprotected_frame_is_refused(census: pd.DataFrame) -> None:
    with pytest.raises(NotProtectedError, match="protect"):
        census.dp.count(epsilon=0.1)
    with pytest.raises(NotProtectedError, match="protect"):
        census["age"].dp.sum(bounds=(0, 100), epsilon=0.1)


def test_reprotecting_a_protected_frame_is_refused(priv: pd.DataFrame) -> None:
    with pytest.raises(DPValueError, match="replace=True"):
        priv.dp.protect(epsilon=1.0)
    with pytest.raises(DPValueError, match="replace=True"):
        priv[priv["age"] > 30].dp.protect(epsilon=1.0)
    with pytest.raises(DPValueError, match="replace=True"):
        priv["age"].dp.protect(epsilon=1.0)


def test_replace_true_gives_a_separate_session(
    priv: pd.DataFrame, protect_seeded: Callable[..., Any]
) -> None:
    old = priv.dp.session
    fresh = protect_seeded(priv, epsilon=2.0, replace=True)
    assert fresh.dp.session is not old
    assert fresh.dp.session.total.epsilon == 2
    fresh.dp.count(epsilon=0.5)
    assert old.spent.epsilon == 0
    assert priv.dp.session is old  # the frame it was made from keeps its own session
    priv.dp.count(epsilon=0.25)
    assert fresh.dp.session.spent.epsilon == Fraction(1, 2)
    assert fresh[fresh["age"] > 50].dp.session is fresh.dp.session


def test_protect_does_not_modify_the_callers_frame(census: pd.DataFrame) -> None:
    census.attrs["source"] = "survey"
    before = census.copy(deep=True)
    attrs_before = dict(census.attrs)
    priv = census.dp.protect(epsilon=1.0)
    assert census.attrs == attrs_before
    assert "pandas_dp" not in census.attrs
    pd.testing.assert_frame_equal(census, before)
    assert priv.attrs["source"] == "survey"  # user attrs travel with the protected copy
    with pytest.raises(NotProtectedError):
        census.dp.count(epsilon=0.1)


def test_protect_does_not_modify_the_callers_series(census: pd.DataFrame) -> None:
    ages = census["age"].copy()
    priv = ages.dp.protect(epsilon=1.0)
    assert "pandas_dp" not in ages.attrs
    assert priv.dp.session.total.epsilon == 1
    with pytest.raises(NotProtectedError):
        ages.dp.count(epsilon=0.1)


def test_protect_with_replace_leaves_the_old_frame_alone(priv: pd.DataFrame) -> None:
    handle = priv.attrs["pandas_dp"]
    priv.dp.protect(epsilon=3.0, replace=True)
    assert priv.attrs["pandas_dp"] is handle


def test_session_of_a_frame_from_numpy_is_refused(priv: pd.DataFrame) -> None:
    rebuilt = pd.DataFrame(np.asarray(priv[["age", "income"]]))
    with pytest.raises(NotProtectedError):
        rebuilt.dp.session  # noqa: B018


@pytest.mark.parametrize("replace", ["yes", 1, None])
def test_replace_must_be_a_bool(priv: pd.DataFrame, replace: Any) -> None:
    from pandas_dp import DPTypeError

    with pytest.raises(DPTypeError, match="replace"):
        priv.dp.protect(epsilon=1.0, replace=replace)
    assert priv.dp.session.total.epsilon == 1


MIXES: dict[str, Callable[[pd.DataFrame, pd.DataFrame], Any]] = {
    "series arithmetic": lambda a, b: a["income"] + b["income"],
    "frame arithmetic": lambda a, b: a[["income"]] - b[["income"]],
    "assign a column of the other": lambda a, b: a.assign(other=b["income"]),
}


@pytest.mark.parametrize("mix", MIXES.values(), ids=MIXES.keys())
def test_limit_mixing_two_sessions_charges_only_the_carrier(
    census: pd.DataFrame, protect_seeded: Callable[..., Any], mix: Callable
) -> None:
    """Known limit (docs/privacy-model.md, "Known limits"): values combined from two
    protected frames carry one session, and a release from them is charged to that session
    only. pandas gives ``attrs`` no way to see the other operand. This pins the documented
    behaviour; if it ever fails closed instead, update the docs and this test."""
    first = protect_seeded(census, epsilon=1.0, seed=1)
    second = protect_seeded(census.sample(frac=1.0, random_state=0), epsilon=1.0, seed=2)
    for a, b in ((first, second), (second, first)):
        mix(a, b).dp.count(epsilon=0.1)
    spent = sorted([first.dp.session.spent.epsilon, second.dp.session.spent.epsilon])
    # Two releases, each charged to exactly one session (which one depends on pandas).
    assert sum(spent) == Fraction(2, 10)
    assert all(s in (0, Fraction(1, 10), Fraction(2, 10)) for s in spent)
