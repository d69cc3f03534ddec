"""User-level bounding without a shuffle when the collection is split by unit.

The index must be the unit column with known, sorted, non-overlapping divisions (checked on
the client, from metadata); each partition then drops any row whose id lies outside its own
division and caps its units locally. The caps hold even when the divisions lie.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from pandas_dp.engines.dask.divisions import Division, unit_divisions

CAP = 2
PEOPLE = 40


@pytest.fixture(autouse=True)
def threads() -> Any:
    with dask.config.set(scheduler="threads"):
        yield


def _rows() -> pd.DataFrame:
    """Person ``i`` has ``i % 4 + 1`` rows, so persons with 3 or 4 rows are capped at 2."""
    pid = np.repeat(np.arange(PEOPLE), np.arange(PEOPLE) % 4 + 1)
    return pd.DataFrame({"pid": pid, "x": 1.0, "g": np.where(pid % 2, "a", "b")})


def _capped_count() -> int:
    return int(np.minimum(np.arange(PEOPLE) % 4 + 1, CAP).sum())


def _protect(collection: Any) -> Any:
    return collection.dp.protect(epsilon=100.0, privacy_unit="pid", max_rows_per_unit=CAP)


def test_a_collection_indexed_by_unit_is_bounded_without_a_shuffle(noise, moved) -> None:
    from pandas_dp.engines.dask import engine as dask_engine

    indexed = dd.from_pandas(_rows(), npartitions=4).set_index("pid", drop=False)
    assert unit_divisions(indexed, "pid") is not None
    assert dask_engine.unit_divisions is unit_divisions
    priv = _protect(indexed)
    with noise(priv):
        assert priv.dp.count(epsilon=1) == _capped_count()
        assert priv["x"].dp.sum(bounds=(0, 1), epsilon=1) == _capped_count()  # a Series too
    assert moved == []
    plain = _protect(dd.from_pandas(_rows(), npartitions=4))  # not indexed by unit: exchanged
    with noise(plain):
        assert plain.dp.count(epsilon=1) == _capped_count()
    assert moved == ["exchange"]


def test_divisions_that_lie_cannot_count_a_unit_twice(noise) -> None:
    """Divisions claimed without sorting: each unit's rows outside its division are
    dropped, so no unit is counted above the cap in two partitions."""
    rows = _rows().sample(frac=1.0, random_state=0)  # units spread over every partition
    parts = np.array_split(np.arange(len(rows)), 4)
    pieces = [rows.iloc[p].set_index("pid", drop=False) for p in parts]
    lying = dd.from_map(
        lambda i: pieces[i], range(4), divisions=[0, 10, 20, 30, 39], meta=pieces[0].iloc[:0]
    )
    assert unit_divisions(lying, "pid") is not None  # the claim is taken up ...
    priv = _protect(lying)
    with noise(priv):
        released = priv.dp.groupby("g", keys=["a", "b"]).count(epsilon=1)
    # Each unit keeps at most CAP rows, all in its own division's partition (counting its
    # rows in every partition it sits in would exceed this).
    assert 0 < int(released.sum()) <= _capped_count()


@pytest.mark.parametrize(
    ("divisions", "split"),
    [((0, 5, 9), True), ((0, 5, 5), True), ((0, 5, 5, 9), False), ((3, 1, 9), False)],
    ids=["sorted", "last two equal", "repeated inside", "unsorted"],
)
def test_divisions_must_be_sorted_and_non_overlapping(divisions, split) -> None:
    frame = pd.DataFrame({"pid": range(10), "x": 1.0}).set_index("pid", drop=False)
    meta = SimpleNamespace(_meta=frame.iloc[:0], known_divisions=True, divisions=divisions)
    assert (unit_divisions(meta, "pid") is not None) is split


def test_division_membership_is_total() -> None:
    ids = pd.Series([0, 5, 9, np.nan, 10, -1], dtype="float64")
    assert Division(0, 5, closed=False).holds(ids).tolist() == [1, 0, 0, 0, 0, 0]
    assert Division(5, 9, closed=True).holds(ids).tolist() == [0, 1, 1, 0, 0, 0]
    mixed = pd.Series([1, "a", None, 3, object()], dtype=object)
    assert Division(0, 5, closed=False).holds(mixed).tolist() == [1, 0, 0, 1, 0]
    assert unit_divisions(dd.from_pandas(_rows(), npartitions=2), "pid") is None  # index ≠ unit
