"""Who a row belongs to (issues 13 and 23): the canonical id the row holds, on every path.

Issue 13 pinned each row's id under its index label, which stopped rewritten unit columns but
moved rows to other people as soon as honest code renumbered the labels
(``sort_values().reset_index(drop=True)``: person 0's 50 rows took the ids of people 51-100).
Now a row's unit is its own canonical id (``1 = 1.0 = True``, normalised Decimals, UTC
instants, ``+0.0``; unhashable or missing: no unit), among the ids present at ``protect``:
relabelling cannot move a row, and a made-up id belongs to no one. Objects that do not carry
the unit column (a Series, a selection without it) cannot say whose rows they hold and are
refused before any charge.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd
import pytest

import pandas_dp
from pandas_dp import NotProtectedError
from pandas_dp.testing import capture_noise

PEOPLE = 50


def protected() -> pd.DataFrame:
    frame = pd.DataFrame({"pid": np.arange(PEOPLE), "x": 1.0, "g": ["a", "b"] * (PEOPLE // 2)})
    return frame.dp.protect(epsilon=100.0, privacy_unit="pid", max_rows_per_unit=1)


def exact(priv: Any, release: Callable[[Any], Any]) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
        with capture_noise(priv):
            return release(priv)


RELEASES = {
    "count": lambda p: p.dp.count(epsilon=1.0),
    "sum": lambda p: p.dp.sum("x", bounds=(0, 1), epsilon=1.0),
    "group count": lambda p: int(p.dp.groupby("g", keys=["a", "b"]).count(epsilon=1.0).sum()),
    "count of the unit column": lambda p: p["pid"].dp.count(epsilon=1.0),
}

#: Rewrites of the unit column, and how many units the rows then belong to.
REWRITES: dict[str, tuple[Callable[[Any], Any], int]] = {
    "R copies with made-up ids": (
        lambda t: pd.concat([t.assign(pid=t.pid * 10 + j + 1000) for j in range(10)]),
        0,
    ),
    "R copies, the first one unchanged": (
        lambda t: pd.concat([t.assign(pid=t.pid + 1000 * j) for j in range(10)]),
        PEOPLE,
    ),
    "made-up ids": (lambda t: t.assign(pid=np.arange(len(t)) + 1000), 0),
    "where": (lambda t: t.assign(pid=t["pid"].where(t["x"] > 5, -7)), 0),
    "two units merged": (lambda t: t.assign(pid=t["pid"].replace({0: 1})), PEOPLE - 1),
    "ids as floats": (lambda t: t.assign(pid=t["pid"].astype(float)), PEOPLE),
    "ids as objects": (lambda t: t.assign(pid=t["pid"].astype(object)), PEOPLE),
}


@pytest.mark.parametrize("rewrite", REWRITES.values(), ids=REWRITES.keys())
@pytest.mark.parametrize("release", RELEASES.values(), ids=RELEASES.keys())
def test_a_rewritten_unit_column_makes_no_new_person(rewrite: tuple, release: Callable) -> None:
    derive, units = rewrite
    assert exact(derive(protected()), release) == units  # one row per unit held at protect


RELABELLINGS: dict[str, Callable[[Any], Any]] = {
    "sort then reset": lambda t: t.sort_values("x").reset_index(drop=True),
    "descending sort then reset": lambda t: t.sort_values("x", ascending=False).reset_index(
        drop=True
    ),
    "set_axis(range)": lambda t: t.sort_values("x").set_axis(range(len(t))),
    "set_axis of an array": lambda t: t.sort_values("x").set_axis(np.arange(len(t))[::-1]),
    "index assigned": lambda t: t.sort_values("x").set_axis(pd.Index(np.arange(len(t)) * 7)),
    "filter then reset": lambda t: t[t["x"] >= 0].reset_index(drop=True),
    "shuffle then reset": lambda t: t.sample(frac=1.0, random_state=3).reset_index(drop=True),
    "concat then reset": lambda t: pd.concat([t, t]).reset_index(drop=True),
}


def audit_frame() -> pd.DataFrame:
    """The audit's shape: person 0 has 50 rows at x = 1, people 1-100 one row at x = 0."""
    return pd.DataFrame({"u": [0] * 50 + list(range(1, 101)), "x": [1.0] * 50 + [0.0] * 100})


@pytest.mark.parametrize("relabel", RELABELLINGS.values(), ids=RELABELLINGS.keys())
def test_relabelling_never_moves_a_row_to_another_unit(relabel: Callable) -> None:
    """The audit's reproducer 1 (pre-noise sum 50 before, 1 now) and its relatives."""
    priv = audit_frame().dp.protect(epsilon=100, privacy_unit="u", max_rows_per_unit=1)
    derived = relabel(priv)
    assert exact(derived, lambda p: p.dp.sum("x", bounds=(0, 1), epsilon=0.1)) == 1.0
    assert exact(derived, lambda p: p.dp.count(epsilon=0.1)) == 101


def test_the_audit_series_is_refused_before_any_charge(charges_nothing: Any) -> None:
    """``pv["x"].sort_values().reset_index(drop=True)``: its labels are renumbered and it has
    no unit column, so nothing can say whose rows it holds."""
    pv = audit_frame().dp.protect(epsilon=1, privacy_unit="u", max_rows_per_unit=1)
    relabelled = pv["x"].sort_values().reset_index(drop=True)
    with charges_nothing(pv), pytest.raises(NotProtectedError, match="Release from the DataFrame"):
        relabelled.dp.sum(bounds=(0, 1), epsilon=0.1)
    with charges_nothing(pv), pytest.raises(NotProtectedError, match="Release from the DataFrame"):
        pv["x"].dp.sum(bounds=(0, 1), epsilon=0.1)  # refused alike: labels tell nothing
    with charges_nothing(pv), pytest.raises(NotProtectedError, match="lacks the privacy-unit"):
        pv[["x"]].dp.sum("x", bounds=(0, 1), epsilon=0.1)


def test_protect_under_a_unit_accepts_repeated_labels() -> None:
    frame = pd.DataFrame({"pid": [1, 2, 2], "x": [1.0, 2.0, 3.0]}, index=[0, 0, 1])
    priv = frame.dp.protect(epsilon=10.0, privacy_unit="pid", max_rows_per_unit=1)
    assert exact(priv, lambda p: p.dp.count(epsilon=1.0)) == 2


def test_missing_ids_belong_to_no_one() -> None:
    frame = pd.DataFrame({"pid": [1.0, np.nan, 2.0, 2.0], "x": 1.0})
    priv = frame.dp.protect(epsilon=10.0, privacy_unit="pid", max_rows_per_unit=1)
    assert exact(priv, lambda p: p.dp.count(epsilon=1.0)) == 2


FORMS = {
    "1, 1.0, True": [1, 1.0, True, np.int8(1), np.float32(1.0)],
    "Decimals": [Decimal("1"), Decimal("1.0"), Decimal("1.00"), 1],
    "one instant in two zones": [
        pd.Timestamp("2020-01-01 00:00", tz="UTC"),
        pd.Timestamp("2020-01-01 01:00", tz="Europe/Paris"),
        pd.Timestamp("2019-12-31 19:00", tz="America/New_York"),
    ],
    "0.0 and -0.0": [0.0, -0.0, 0],
}


@pytest.mark.parametrize("forms", FORMS.values(), ids=FORMS.keys())
def test_one_id_in_several_forms_is_one_unit(forms: list) -> None:
    others = list(range(100, 130))
    frame = pd.DataFrame({"u": pd.Series(forms + others, dtype=object), "x": 1.0})
    priv = frame.dp.protect(epsilon=100, privacy_unit="u", max_rows_per_unit=1)
    assert exact(priv, lambda p: p.dp.count(epsilon=1.0)) == len(others) + 1


UNHASHABLE = {
    "list": [1],
    "dict": {"a": 1},
    "array": np.array([1, 2]),
    "set": {1},
}


@pytest.mark.parametrize("value", UNHASHABLE.values(), ids=UNHASHABLE.keys())
def test_an_unhashable_id_belongs_to_no_one_and_protect_raises_nothing(value: Any) -> None:
    """The audit's reproducer 6: a Parquet list column named as the unit raised a raw
    TypeError at protect on D' only (one bit per run). Now D and D' protect alike."""
    ids = pd.Series([1, 2, 3], dtype=object)
    d = pd.DataFrame({"u": ids, "x": 1.0})
    d2 = pd.concat([d, pd.DataFrame({"u": pd.Series([value], dtype=object), "x": 1.0})])
    counts = []
    for frame in (d, d2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            priv = frame.dp.protect(epsilon=10, privacy_unit="u", max_rows_per_unit=1)
        assert not caught
        counts.append(exact(priv, lambda p: p.dp.count(epsilon=1.0)))
    assert counts == [3, 3]


DASK_REWRITES = {
    "assign": lambda t: t.assign(pid=t.pid * 10),
    "copies with new ids": lambda t: __import__("dask.dataframe").dataframe.concat(
        [t, t.assign(pid=t.pid + 1000)]
    ),
    "rename onto the id": lambda t: t.rename(columns={"pid": "old", "x": "pid"}),
}


@pytest.mark.parametrize("rewrite", DASK_REWRITES.values(), ids=DASK_REWRITES.keys())
def test_dask_refuses_a_rewritten_unit_column(rewrite: Callable, charges_nothing: Any) -> None:
    import dask.dataframe as dd

    frame = pd.DataFrame({"pid": np.arange(PEOPLE), "x": 1.0})
    priv = dd.from_pandas(frame, npartitions=3).dp.protect(
        epsilon=10.0, privacy_unit="pid", max_rows_per_unit=1
    )
    with charges_nothing(priv), pytest.raises(NotProtectedError, match="'pid'"):
        rewrite(priv).dp.count(epsilon=1.0)
    assert exact(priv[priv.x > 0].assign(y=priv.x), lambda p: p.dp.count(epsilon=1.0)) == PEOPLE


def _dask_count(
    frame: pd.DataFrame, partitions: int, by_unit: bool = False, texts: bool = False
) -> Any:
    """The zero-noise count of ``frame`` on Dask, one row per unit, object ids kept as such
    (``texts``: written as texts by Dask's default string conversion)."""
    import dask
    import dask.dataframe as dd

    with dask.config.set({"dataframe.convert-string": texts, "scheduler": "sync"}):
        if by_unit:  # indexed by the unit with known divisions: partition-local caps
            collection = dd.from_pandas(frame.set_index("u", drop=False).sort_index(), partitions)
            assert collection.known_divisions
        else:
            collection = dd.from_pandas(frame, npartitions=partitions, sort=False)
        priv = collection.dp.protect(epsilon=100, privacy_unit="u", max_rows_per_unit=1)
        return exact(priv, lambda p: p.dp.count(epsilon=1.0))


#: Ten people, each spelt several ways (1 is also True): ten units on every route.
MANY_FORMS = {
    "numbers": [
        form
        for i in range(1, 11)
        for form in (i, float(i), Decimal(i), Decimal(f"{i}.0"), *((True,) if i == 1 else ()))
    ],
    "instants": [
        pd.Timestamp(f"2020-01-{i:02d} 12:00", tz=zone).tz_convert(shown)
        for i in range(1, 11)
        for zone, shown in (("UTC", "UTC"), ("UTC", "Europe/Paris"), ("UTC", "Asia/Tokyo"))
    ],
}


@pytest.mark.parametrize("forms", MANY_FORMS.values(), ids=MANY_FORMS.keys())
@pytest.mark.parametrize("partitions", [3, 300], ids=["exchange", "Dask's shuffle"])
def test_dask_routes_tell_units_apart_as_pandas_does(forms: list, partitions: int) -> None:
    """The audit's reproducer 2: 1, 1.0 and True were three units in the exchange (41 where
    pandas gives 39) and in Dask's shuffle past 256 partitions (520 instead of 518)."""
    others = list(range(100, 100 + 2 * partitions))
    frame = pd.DataFrame({"u": pd.Series(forms + others, dtype=object), "x": 1.0})
    priv = frame.dp.protect(epsilon=100, privacy_unit="u", max_rows_per_unit=1)
    assert exact(priv, lambda p: p.dp.count(epsilon=1.0)) == len(others) + 10  # pandas
    assert _dask_count(frame, partitions) == len(others) + 10


def test_partition_local_caps_with_object_ids_keep_their_rows() -> None:
    """The audit's partition-local case: Dask turns an object id column into text but keeps
    the integer divisions, every id compared with no division, and the count was 0, not 40."""
    import dask
    import dask.dataframe as dd

    frame = pd.DataFrame({"u": pd.Series(range(40), dtype=object), "x": 1.0})
    with dask.config.set(scheduler="sync"):  # the default: object columns become text
        collection = dd.from_pandas(frame.set_index("u", drop=False).sort_index(), npartitions=3)
        priv = collection.dp.protect(epsilon=100, privacy_unit="u", max_rows_per_unit=1)
        assert exact(priv, lambda p: p.dp.count(epsilon=1.0)) == 40
    assert _dask_count(frame, 3, by_unit=True) == 40  # object ids kept: partition-local


#: Ten people, each one instant shown in three zones, and people who are one instant each.
ZONED = MANY_FORMS["instants"]
ZONED_OTHERS = [pd.Timestamp("2021-06-01", tz="UTC") + pd.Timedelta(hours=h) for h in range(600)]


@pytest.mark.parametrize("route", ["exchange", "Dask's shuffle", "partition-local"])
def test_one_instant_written_in_several_zones_is_one_unit_on_dask(route: str) -> None:
    """Issue 37: Dask's default string conversion writes an object column of tz-aware
    Timestamps as texts in their own zones ("2020-01-01 12:00:00+00:00", "2020-01-01
    13:00:00+01:00"), and each person was capped three times: 630 rows counted, not 610."""
    frame = pd.DataFrame({"u": pd.Series(ZONED + ZONED_OTHERS, dtype=object), "x": 1.0})
    partitions = {"exchange": 3, "Dask's shuffle": 300, "partition-local": 3}[route]
    by_unit = route == "partition-local"
    expected = len(ZONED_OTHERS) + 10
    assert _dask_count(frame, partitions, by_unit=by_unit, texts=True) == expected
    assert _dask_count(frame, partitions, by_unit=by_unit) == expected  # objects kept


@pytest.mark.parametrize("dtype", ["object", "str", "string[pyarrow]"])
def test_one_instant_written_in_several_zones_is_one_unit_on_pandas(dtype: str) -> None:
    """Timestamps in an object column, or the texts Dask writes of them, in any string
    dtype: the same units on the pandas engine as on every Dask route."""
    for ids in (ZONED + ZONED_OTHERS, [str(stamp) for stamp in ZONED + ZONED_OTHERS]):
        if dtype != "object" and not isinstance(ids[0], str):
            continue
        frame = pd.DataFrame({"u": pd.Series(ids, dtype=dtype), "x": 1.0})
        priv = frame.dp.protect(epsilon=100, privacy_unit="u", max_rows_per_unit=1)
        assert exact(priv, lambda p: p.dp.count(epsilon=1.0)) == len(ZONED_OTHERS) + 10
