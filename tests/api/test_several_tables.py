"""Several tables about the same people in one budget, and their join on the privacy unit.

``visits.dp.protect(session=people.dp.session, privacy_unit="pid", max_rows_per_unit=k)``
adds a table to an existing budget; ``people.dp.merge(visits, on="pid")`` joins two such
tables on the unit into a view capped at ``k_people · k_visits`` rows per unit (issue 40).
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import pandas_dp
from pandas_dp import BudgetExceededError, DPTypeError, DPValueError

K_PEOPLE, K_VISITS = 1, 3


def raw_tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    people = pd.DataFrame(
        {"pid": [1, 2, 3, 4, 5], "age": [30, 40, 50, 60, 70], "city": list("ababa")}
    )
    visits = pd.DataFrame(
        {
            "pid": [1, 1, 2, 3, 3, 3, 5, 9],  # pid 9 has no person row; pid 4 no visit
            "cost": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0],
            "city": list("abbaabba"),
        }
    )
    return people, visits


def protected(
    people: pd.DataFrame, visits: pd.DataFrame, epsilon: float = 10.0
) -> tuple[pd.DataFrame, pd.DataFrame]:
    priv = people.dp.protect(
        epsilon=epsilon, privacy_unit="pid", max_rows_per_unit=K_PEOPLE, name="people"
    )
    seen = visits.dp.protect(
        session=priv.dp.session, privacy_unit="pid", max_rows_per_unit=K_VISITS, name="visits"
    )
    return priv, seen


# --- protect(session=...) ---------------------------------------------------------------------


def test_a_second_table_shares_the_budget_and_the_ledger_names_each_table(noise) -> None:
    people, visits = protected(*raw_tables())
    session = people.dp.session
    assert visits.dp.session.root is session
    with noise(people) as calls:
        assert people.dp.count(epsilon=1.0) == 5
        assert visits.dp.count(epsilon=2.0) == 8  # pid 9 is a unit of the visits table
    assert [call.mechanism.scale for call in calls] == [K_PEOPLE, Fraction(K_VISITS, 2)]
    assert session.remaining.epsilon == 7
    assert visits.dp.session.remaining.epsilon == 7
    notes = list(session.ledger["note"])
    assert "table 'people'; privacy unit pid: ≤ 1 rows" in notes[0]
    assert "table 'visits'; privacy unit pid: ≤ 3 rows" in notes[1]
    assert visits.dp.session.unit.max_rows == K_VISITS  # the table's own unit and columns
    assert visits.dp.session.columns == ("pid", "cost", "city")


def test_a_single_table_keeps_its_ledger_note() -> None:
    people, _ = raw_tables()
    priv = people.dp.protect(epsilon=1.0, privacy_unit="pid", max_rows_per_unit=1)
    priv.dp.count(epsilon=0.5)
    note = priv.dp.session.ledger["note"].iloc[0]
    assert "table" not in note
    assert note.endswith("privacy unit pid: ≤ 1 rows (extra rows dropped at random)")


def test_default_names_and_row_level_tables(noise) -> None:
    people, visits = raw_tables()
    priv = people.drop(columns="pid").dp.protect(epsilon=4.0)
    other = visits.dp.protect(session=priv.dp.session)
    third = visits.dp.protect(session=other.dp.session)  # any view of the budget will do
    with noise(priv):
        assert other.dp.count(epsilon=1.0) == 8
        assert third.dp.count(epsilon=1.0) == 8
        assert priv.dp.count(epsilon=1.0) == 5
    notes = list(priv.dp.session.ledger["note"])
    assert "table 'table 2'; privacy unit: one row" in notes[0]
    assert "table 'table 3'; privacy unit: one row" in notes[1]
    assert "table 'table 1'; privacy unit: one row" in notes[2]
    assert priv.dp.session.remaining.epsilon == 1
    # row-level: the table's own row guard refuses its duplicated rows
    with pytest.raises(pandas_dp.DuplicatedRowsError):
        pd.concat([other, other]).dp.count(epsilon=0.1)


def test_refusals_of_protect_with_a_session() -> None:
    people, visits = raw_tables()
    priv = people.dp.protect(epsilon=1.0, privacy_unit="pid", max_rows_per_unit=1)
    session = priv.dp.session
    for extra in ({"epsilon": 1.0}, {"rho": 0.1}, {"delta": 1e-6}, {"rng": 1}):
        with pytest.raises(DPValueError, match="takes no budget of its own"):
            visits.dp.protect(session=session, privacy_unit="pid", max_rows_per_unit=2, **extra)
    with pytest.raises(DPValueError, match="drop accounting"):
        visits.dp.protect(session=session, accounting="zcdp", privacy_unit="pid",
                          max_rows_per_unit=2)  # fmt: skip
    with pytest.raises(DPTypeError, match="got str"):
        visits.dp.protect(session="not a session", privacy_unit="pid", max_rows_per_unit=2)
    with pytest.raises(DPValueError, match="protects units"):
        visits.dp.protect(session=session)
    row_level = people.dp.protect(epsilon=1.0)
    with pytest.raises(DPValueError, match="protects rows"):
        visits.dp.protect(session=row_level.dp.session, privacy_unit="pid", max_rows_per_unit=2)
    with pytest.raises(pandas_dp.DPKeyError, match="'person' not found"):
        visits.dp.protect(session=session, privacy_unit="person", max_rows_per_unit=2)
    with pytest.raises(DPValueError, match="already has a table named 'table 1'"):
        visits.dp.protect(session=session, privacy_unit="pid", max_rows_per_unit=2, name="table 1")
    with pytest.raises(DPValueError, match="already protected"):
        priv.dp.protect(session=session, privacy_unit="pid", max_rows_per_unit=2)
    assert session.spent.epsilon == 0
    assert len(session.table_names) == 1


# --- the join on the unit ---------------------------------------------------------------------


def test_join_on_the_unit_equals_pandas_at_zero_noise(noise) -> None:
    people, visits = raw_tables()
    priv, seen = protected(people, visits)
    joined = priv.dp.merge(seen, on="pid")
    expected = people.merge(visits, on="pid")
    pd.testing.assert_frame_equal(pd.DataFrame(joined), expected)
    session = joined.dp.session
    assert session.root is priv.dp.session
    assert session.unit.max_rows == K_PEOPLE * K_VISITS
    with noise(joined) as calls:
        assert joined.dp.count(epsilon=1.0) == len(expected)
        total = joined.dp.sum("cost", bounds=(0, 10), epsilon=1.0)
        by_city = joined.dp.groupby("city_y", keys=["a", "b"]).count(epsilon=1.0)
    assert total == expected["cost"].sum()
    pd.testing.assert_series_equal(
        by_city, expected.groupby("city_y").size().reindex(["a", "b"]), check_names=False,
        check_dtype=False,
    )  # fmt: skip
    assert calls[0].mechanism.scale == 3  # the cap 1 · 3 per unit, at ε = 1
    note = session.ledger["note"].iloc[-3]
    assert "tables 'people', 'visits'" in note
    assert "merge on 'pid': ≤ 1·3 rows per unit" in note
    assert "stability" not in note  # under a unit the caps bound each unit's rows


def test_join_on_the_unit_and_another_key_and_canonical_ids(noise) -> None:
    people, visits = raw_tables()
    visits = visits.assign(pid=visits["pid"].astype("float64"))  # 1.0 is unit 1
    priv, seen = protected(people, visits)
    joined = priv.dp.merge(seen, on=["pid", "city"], suffixes=("_p", "_v"))
    expected = people.merge(visits, on=["pid", "city"], suffixes=("_p", "_v"))
    pd.testing.assert_frame_equal(pd.DataFrame(joined), expected, check_dtype=False)
    with noise(joined):
        assert joined.dp.count(epsilon=1.0) == len(expected)


def test_unpinned_ids_are_dropped_before_the_join(noise) -> None:
    people, visits = raw_tables()
    priv, seen = protected(people, visits)
    made_up = seen.assign(pid=seen["pid"] + 100)  # ids no visits row held at protect
    joined = priv.assign(pid=priv["pid"] + 100).dp.merge(made_up, on="pid")
    with noise(joined):
        assert joined.dp.count(epsilon=1.0) == 0


def test_one_budget_for_tables_and_joins(noise, charges_nothing) -> None:
    priv, seen = protected(*raw_tables(), epsilon=3.0)
    joined = priv.dp.merge(seen, on="pid")
    root = priv.dp.session
    with noise(priv):
        priv.dp.count(epsilon=1.0)
        seen.dp.count(epsilon=1.0)
        joined.dp.count(epsilon=0.5)
    assert root.remaining.epsilon == Fraction(1, 2)
    for frame in (priv, seen, joined):
        with charges_nothing(priv), pytest.raises(BudgetExceededError):
            frame.dp.count(epsilon=1.0)
    joined.dp.count(epsilon=0.5)
    assert root.remaining.epsilon == 0
    assert len(root.ledger) == 4


def exact_releases(people: pd.DataFrame, visits: pd.DataFrame, noise) -> tuple[int, float]:
    priv, seen = protected(people, visits)
    joined = priv.dp.merge(seen, on="pid")
    with noise(joined):
        count = joined.dp.count(epsilon=1.0)
        total = joined.dp.sum("cost", bounds=(0, 10), epsilon=1.0)
    return count, total


@pytest.mark.filterwarnings("ignore::pandas_dp.PrivacyLeakWarning")
def test_removing_a_unit_from_every_table_moves_the_join_within_the_caps(noise) -> None:
    """Brute force: each unit removed from both tables (and a unit with too many rows)."""
    people, visits = raw_tables()
    extra = pd.DataFrame({"pid": [3] * 4, "cost": [10.0] * 4, "city": ["a"] * 4})
    heavy = pd.concat([visits, extra], ignore_index=True)  # unit 3: 7 visits, capped at 3
    cap = K_PEOPLE * K_VISITS
    for tables in ((people, visits), (people, heavy)):
        count, total = exact_releases(*tables, noise)
        ids = set(tables[0]["pid"]) | set(tables[1]["pid"])
        for pid in ids:
            without = [table[table["pid"] != pid].reset_index(drop=True) for table in tables]
            count2, total2 = exact_releases(*without, noise)
            assert abs(count - count2) <= cap * 1  # a count's sensitivity: one row
            assert abs(total - total2) <= cap * 10  # a sum's: max(|L|, |U|)


def test_refusals_before_any_charge(charges_nothing) -> None:
    people, visits = raw_tables()
    priv, seen = protected(people, visits)
    other = visits.dp.protect(epsilon=1.0, privacy_unit="pid", max_rows_per_unit=3)
    with charges_nothing(priv):
        with pytest.raises(DPValueError, match="different sessions"):
            priv.dp.merge(other, on="pid")
        for how in ("left", "right", "outer"):
            with pytest.raises(DPValueError, match=f"how='{how}' is refused"):
                priv.dp.merge(seen, on="pid", how=how)
        with pytest.raises(DPValueError, match="must be on it"):
            priv.dp.merge(seen, on="city")
        with pytest.raises(DPValueError, match="max_rows_per_key truncates a row-level"):
            priv.dp.merge(seen, on="pid", max_rows_per_key=2)
        with pytest.raises(DPValueError, match="would read the data"):
            priv.dp.merge(seen, on="pid", validate="one_to_many")
        with pytest.raises(pandas_dp.DPKeyError, match="'age' is not a column of the right"):
            priv.dp.merge(seen, on=["pid", "age"])
    renamed = visits.rename(columns={"pid": "person"}).dp.protect(
        session=priv.dp.session, privacy_unit="person", max_rows_per_unit=3
    )
    with pytest.raises(DPValueError, match="named differently"):
        priv.dp.merge(renamed.assign(pid=renamed["person"]), on="pid")


def test_joined_columns_and_index_as_pandas() -> None:
    people, visits = raw_tables()
    priv, seen = protected(people, visits)
    joined = priv.dp.merge(seen, on="pid")
    assert isinstance(joined.index, pd.RangeIndex)
    assert list(joined.columns) == ["pid", "age", "city_x", "cost", "city_y"]
    # every combination of a filter of each side joins as pandas does
    for a, b in itertools.product((slice(None), slice(1, 4)), (slice(None), slice(2, None))):
        got = priv.iloc[a].dp.merge(seen.iloc[b], on="pid")
        want = people.iloc[a].merge(visits.iloc[b], on="pid")
        np.testing.assert_array_equal(got.to_numpy(), want.to_numpy())
