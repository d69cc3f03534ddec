"""A derived frame with a stability is a view of its session: one budget, its own lineage.

The view shares the budget, ledger and randomness with the session it came from; frames
derived from it by pandas keep the view (and so the stability); combining it with other
frames drops the session (fails closed); pickling keeps it within the process; its row guard
lets a protected row's label repeat as often as the stability allows, and no more.
"""

from __future__ import annotations

import pickle

import pandas as pd
import pytest

from pandas_dp import DuplicatedRowsError, NotProtectedError

PUBLIC = pd.DataFrame({"code": [1, 2, 2, 3, 3, 3], "day": ["Mo", "Tu", "We", "Mo", "We", "Fr"]})


def joined() -> tuple[pd.DataFrame, pd.DataFrame]:
    data = pd.DataFrame({"code": [1, 2, 3, 3], "x": [1.0, 2.0, 3.0, 4.0]})
    priv = data.dp.protect(epsilon=10.0)
    return priv, priv.dp.merge(PUBLIC, on="code")


def test_a_view_shares_the_budget_and_ledger() -> None:
    priv, view = joined()
    assert view.dp.session.root is priv.dp.session
    assert view.dp.session is not priv.dp.session
    view.dp.count(epsilon=1.0)
    priv.dp.count(epsilon=2.0)
    assert priv.dp.session.spent.epsilon == view.dp.session.spent.epsilon == 3
    assert len(priv.dp.session.ledger) == len(view.dp.session.ledger) == 2
    with pytest.raises(Exception, match="budget"):
        view.dp.count(epsilon=7.5)  # 3 + 7.5 > 10: refused by the shared budget
    assert priv.dp.session.spent.epsilon == 3


def test_frames_derived_by_pandas_keep_the_stability() -> None:
    _, view = joined()
    for derived in (view[view["x"] > 1], view[["day"]], view.assign(y=1), view.head(3)):
        assert derived.dp.session is view.dp.session
        assert derived.dp.session.stability == 3
    assert view["x"].dp.session.stability == 3  # a column too


def test_pickling_keeps_the_view_in_this_process() -> None:
    _, view = joined()
    again = pickle.loads(pickle.dumps(view))
    assert again.dp.session is view.dp.session
    assert again.dp.session.stability == 3


def test_mixing_a_view_with_its_source_drops_the_session() -> None:
    priv, view = joined()
    mixed = pd.concat([priv, view])
    with pytest.raises(NotProtectedError):
        mixed.dp.count(epsilon=1.0)


def test_the_row_guard_allows_the_stability_and_no_more() -> None:
    priv, view = joined()
    assert view.index.value_counts().max() == 3  # code 3 matched three public rows
    view.dp.count(epsilon=0.1)
    with pytest.raises(DuplicatedRowsError):
        pd.concat([view, view]).dp.count(epsilon=0.1)
    twice_more = pd.concat([view[view["code"] == 1]] * 3)  # label 0 three times: allowed
    twice_more.dp.count(epsilon=0.1)
    with pytest.raises(DuplicatedRowsError):
        pd.concat([view[view["code"] == 1]] * 4).dp.count(epsilon=0.1)
    with pytest.raises(DuplicatedRowsError):  # the protected frame itself still allows one
        pd.concat([priv, priv]).dp.count(epsilon=0.1)


def test_views_compose_their_stabilities() -> None:
    _, view = joined()
    again = view.dp.merge(PUBLIC.rename(columns={"day": "day2"}), on="code")
    assert again.dp.session.stability == 9
    assert again.dp.session.root is view.dp.session.root
    assert len(again.dp.session.lineage.steps) == 2
