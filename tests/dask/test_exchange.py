"""The exchange that gathers each unit's rows in one bucket (``engines/dask/exchange.py``).

Every unit's rows must land in exactly one bucket whatever partition holds them; relabelled
integer ids must still tell units apart (and only units); a release that reads the unit
column as values must see the ids unchanged; collections past one stage are exchanged in
stages, with the same result (``test_exchange_stages.py`` tests the stages themselves).
"""

from __future__ import annotations

from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from pandas_dp.engines.dask.exchange import (
    MAX_ONE_STAGE,
    bucket_count,
    concatenated,
    split_by_unit,
)


@pytest.fixture(autouse=True)
def threads() -> Any:
    with dask.config.set(scheduler="threads"):
        yield


def ids_of_every_kind() -> dict[str, pd.Series]:
    rng = np.random.default_rng(2)  # test data only
    ints = rng.integers(-50, 50, 400)
    return {
        "int64": pd.Series(ints),
        "beyond int32": pd.Series(ints * 10**12),
        "uint8": pd.Series((ints + 50).astype(np.uint8)),
        "strided": pd.Series(ints * 64),
        "str": pd.Series([f"u{i}" for i in ints]),
        "float with NaN": pd.Series(np.where(ints % 7 == 0, np.nan, ints / 2)),
        "nullable Int64": pd.Series(ints, dtype="Int64"),
    }


@pytest.mark.parametrize("kind", list(ids_of_every_kind()))
@pytest.mark.parametrize("relabel", [True, False])
def test_every_unit_lands_in_one_bucket_and_stays_itself(kind, relabel):
    ids = ids_of_every_kind()[kind]
    frame = pd.DataFrame({"u": ids, "row": np.arange(len(ids))})
    parts = [frame.iloc[i::3] for i in range(3)]  # every unit spread over three partitions
    buckets = bucket_count(3)
    pieces = [split_by_unit(p, "u", buckets, relabel) for p in parts]
    gathered = [concatenated([piece[j] for piece in pieces]) for j in range(buckets)]
    assert sorted(pd.concat(gathered)["row"]) == list(range(len(ids)))  # no row lost or doubled
    home: dict[Any, int] = {}
    for j, bucket in enumerate(gathered):
        original = frame.set_index("row").loc[bucket["row"], "u"]
        for unit in original:
            key = "missing" if pd.isna(unit) else unit
            assert home.setdefault(key, j) == j  # one bucket per unit
        # Within the bucket, the labels tell the same units apart as the ids do.
        labels, units = _codes(bucket["u"]), _codes(original)
        assert ((labels[:, None] == labels[None, :]) == (units[:, None] == units[None, :])).all()
        if not (relabel and kind in ("int64", "beyond int32", "uint8", "strided")):
            pd.testing.assert_series_equal(
                bucket["u"].reset_index(drop=True), original.reset_index(drop=True),
                check_names=False,
            )  # fmt: skip


def _codes(values: pd.Series) -> np.ndarray:
    """Equal values (missing ones included) get equal codes."""
    return pd.factorize(values, use_na_sentinel=False)[0]


def test_strided_ids_spread_over_the_buckets():
    """Ids that are all multiples of 64 fill every bucket evenly (the bucket count is prime)."""
    ids = pd.Series(np.arange(6400) * 64)
    buckets = bucket_count(3)
    sizes = [len(p) for p in split_by_unit(pd.DataFrame({"u": ids}), "u", buckets, True)]
    assert max(sizes) <= 2 * len(ids) / buckets


def test_relabelled_ids_are_narrow_where_they_fit():
    pieces = split_by_unit(pd.DataFrame({"u": np.arange(1000) * 10**6}), "u", 17, True)
    assert {p["u"].dtype for p in pieces} == {np.dtype(np.int32)}
    wide = split_by_unit(pd.DataFrame({"u": np.arange(10) * 2**60}), "u", 17, True)
    assert {p["u"].dtype for p in wide} == {np.dtype(np.int64)}


def _protect(frame: Any) -> Any:
    return frame.dp.protect(epsilon=100.0, privacy_unit="user_id", max_rows_per_unit=2)


def test_a_release_that_reads_the_ids_sees_them_unchanged(noise, moved):
    """Summing the unit column itself: the ids must not be relabelled on the way."""
    rng = np.random.default_rng(8)  # test data only
    data = pd.DataFrame({"user_id": rng.integers(0, 40, 300), "x": 1.0})
    capped = data.groupby("user_id").head(2)  # two rows each (fake noise: any two)
    expected = float(capped["user_id"].sum())
    lazy = _protect(dd.from_pandas(data, npartitions=7))
    with noise(lazy):
        total = lazy["user_id"].dp.sum(bounds=(0, 40), epsilon=1)
    assert total == expected
    assert moved == ["exchange"]


def test_past_one_stage_the_exchange_takes_stages_with_the_same_result(noise, moved):
    data = pd.DataFrame({"user_id": np.arange(600) % 150, "x": 1.0})
    lazy = _protect(dd.from_pandas(data, npartitions=MAX_ONE_STAGE + 1))
    assert lazy.npartitions > MAX_ONE_STAGE
    eager = _protect(data)
    with noise(lazy), noise(eager):
        assert lazy.dp.count(epsilon=1) == eager.dp.count(epsilon=1) == 300
    assert moved == ["exchange"]  # never Dask's shuffle, at any partition count
