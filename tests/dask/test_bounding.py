"""Contribution bounding across partitions: the caps hold whatever the partitioning.

A heavy unit's rows are scattered over every partition; after the shuffle by unit id its
rows meet in one partition and are capped there. With the noise fixed at 0 the released
counts and sums show exactly how many of its rows survived, so every check is exact.
"""

from __future__ import annotations

import pickle
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from pandas_dp.engines.bounding import SeededPriorities, SystemPriorities
from pandas_dp.engines.dask import engine as dask_engine
from pandas_dp.engines.dask.exchange import bucket_count

COUNTRIES = ["DE", "FR", "NL", "PL"]
HEAVY_ROWS = 40
OTHERS = 80
CAP = 3


@pytest.fixture(autouse=True)
def threads() -> Any:
    with dask.config.set(scheduler="threads"):
        yield


def heavy_data() -> pd.DataFrame:
    """Unit 0 has 40 rows (amounts 1..40, ten per country); units 1..80 one row each (10.0)."""
    heavy = pd.DataFrame(
        {
            "user_id": 0,
            "country": np.array(COUNTRIES)[np.arange(HEAVY_ROWS) % 4],
            "amount": np.arange(1.0, HEAVY_ROWS + 1),
        }
    )
    others = pd.DataFrame(
        {
            "user_id": np.arange(1, OTHERS + 1),
            "country": np.array(COUNTRIES)[np.arange(OTHERS) % 4],
            "amount": 10.0,
        }
    )
    mixed = pd.concat([heavy, others], ignore_index=True)
    return mixed.sample(frac=1.0, random_state=3).reset_index(drop=True)


def protect(npartitions: int = 6, data: pd.DataFrame | None = None, **kw: Any) -> Any:
    frame = dd.from_pandas(heavy_data() if data is None else data, npartitions=npartitions)
    assert frame.npartitions > 1
    return frame.dp.protect(epsilon=100.0, delta=1e-6, privacy_unit="user_id", **kw)


@pytest.mark.parametrize("npartitions", [2, 6, 13])
def test_a_unit_spread_over_partitions_keeps_at_most_its_cap(noise, npartitions) -> None:
    priv = protect(npartitions, max_rows_per_unit=CAP)
    with noise(priv):
        assert priv.dp.count(epsilon=1.0) == OTHERS + CAP
        kept = priv.dp.sum("amount", bounds=(0, 100), epsilon=1.0) - 10.0 * OTHERS
    assert 1 + 2 + 3 <= kept <= 38 + 39 + 40  # three of the heavy unit's amounts
    assert kept == int(kept)


def test_max_groups_per_unit_holds_across_partitions(noise) -> None:
    priv = protect(max_rows_per_unit=CAP)
    grouped = priv.dp.groupby("country", keys=COUNTRIES, max_groups_per_unit=1)
    with noise(priv):
        counts = grouped.count(epsilon=1.0)
    extra = counts - OTHERS // 4
    assert sorted(extra.tolist()) == [0, 0, 0, CAP]  # all three rows in one country


def test_max_rows_per_group_holds_across_partitions(noise) -> None:
    priv = protect(max_rows_per_unit=CAP)
    grouped = priv.dp.groupby("country", keys=COUNTRIES, max_rows_per_group=1)
    with noise(priv):
        counts = grouped.count(epsilon=1.0)
    extra = counts - OTHERS // 4
    assert sorted(extra.tolist()) == [0, 1, 1, 1]  # one row in each of three countries


def test_a_heavy_unit_proposes_at_most_its_groups_as_private_keys(noise) -> None:
    data = heavy_data()
    rare = data["user_id"] == 0
    data.loc[rare, "country"] = [f"rare{i}" for i in range(int(rare.sum()))]
    priv = protect(data=data, max_rows_per_unit=CAP)
    with noise(priv, value=1000):  # every candidate key passes the threshold
        counts = priv.dp.groupby("country", max_groups_per_unit=1, selection="threshold").count(
            epsilon=1.0
        )
    released = list(counts.index)
    assert [k for k in released if not k.startswith("rare")] == COUNTRIES
    assert sum(k.startswith("rare") for k in released) == 1


def test_rows_without_a_unit_id_are_dropped(noise) -> None:
    data = heavy_data()
    data["user_id"] = data["user_id"].astype("float64")
    data.loc[data.index[:5], "user_id"] = np.nan
    dask_priv = protect(data=data, max_rows_per_unit=HEAVY_ROWS)
    pandas_priv = data.dp.protect(epsilon=1.0, privacy_unit="user_id", max_rows_per_unit=HEAVY_ROWS)
    counts = []
    for priv in (dask_priv, pandas_priv):
        with noise(priv):
            counts.append(priv.dp.count(epsilon=0.5))
    assert counts[0] == counts[1] == HEAVY_ROWS + OTHERS - 5


def test_a_unit_within_its_row_cap_is_held_to_its_group_cap(noise) -> None:
    # Unit 0 has 4 rows, one per country (under max_rows_per_unit = 50), spread over the
    # partitions: its rows must meet in one place to be held to one group.
    data = heavy_data()
    data = data[(data["user_id"] != 0) | (data["amount"] <= 4)]
    priv = protect(data=data, max_rows_per_unit=50)
    grouped = priv.dp.groupby("country", keys=COUNTRIES, max_groups_per_unit=1)
    with noise(priv):
        counts = grouped.count(epsilon=1.0)
    assert sorted((counts - OTHERS // 4).tolist()) == [0, 0, 0, 1]


def _recorded_boundings(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    seen: list[Any] = []
    original = dask_engine.aggregate_partition

    def spy(frame: Any, measures: Any, grouping: Any, bounding: Any, division: Any) -> Any:
        seen.append(bounding)
        return original(frame, measures, grouping, bounding, division)

    monkeypatch.setattr(dask_engine, "aggregate_partition", spy)
    return seen


def test_partitions_draw_from_the_os_csprng_and_never_see_the_session(monkeypatch, noise) -> None:
    seen = _recorded_boundings(monkeypatch)
    priv = protect(max_rows_per_unit=CAP)
    with noise(priv):
        priv.dp.count(epsilon=1.0)
    assert len(seen) == bucket_count(6)  # one per bucket
    for bounding in seen:
        assert type(bounding.priorities) is SystemPriorities
        assert bounding.spawn is None
        shipped = pickle.dumps(bounding)
        assert b"Session" not in shipped
        assert b"ccountant" not in shipped
    words = SystemPriorities()(4)
    assert words.dtype == np.uint64
    assert words.shape == (4,)


def test_seeded_sessions_give_each_partition_its_own_stream(monkeypatch, protect_seeded) -> None:
    seen = _recorded_boundings(monkeypatch)
    priv = protect_seeded(
        dd.from_pandas(heavy_data(), npartitions=6), seed=4, epsilon=100.0,
        privacy_unit="user_id", max_rows_per_unit=CAP,
    )  # fmt: skip
    priv.dp.count(epsilon=1.0)
    entropies = {bounding.priorities.entropy for bounding in seen}
    assert all(type(b.priorities) is SeededPriorities for b in seen)
    assert len(entropies) == bucket_count(6)  # one stream per bucket the rows are bounded in


def _seeded_sum(protect_seeded: Any, noise: Any, seed: int) -> float:
    """What survives of the heavy unit (one row of 40) in a seeded session, without noise."""
    priv = protect_seeded(
        dd.from_pandas(heavy_data(), npartitions=6), seed=seed, epsilon=100.0,
        privacy_unit="user_id", max_rows_per_unit=1,
    )  # fmt: skip
    with noise(priv):
        total: float = priv.dp.sum("amount", bounds=(0, 100), epsilon=1.0)
    return total - 10.0 * OTHERS


def test_seeded_choices_are_reproducible_and_vary_with_the_seed(protect_seeded, noise) -> None:
    kept = [_seeded_sum(protect_seeded, noise, seed) for seed in range(12)]
    assert kept == [_seeded_sum(protect_seeded, noise, seed) for seed in range(12)]
    assert all(1 <= k <= HEAVY_ROWS for k in kept)
    assert len(set(kept)) >= 6  # 12 uniform draws among 40 rows: far from one choice


@pytest.mark.parametrize("option", ["max_groups_per_unit", "max_rows_per_group"])
def test_partitions_left_empty_by_the_shuffle_are_bounded(noise, option) -> None:
    # Two units over 13 partitions: the shuffle by unit leaves most partitions empty.
    data = heavy_data()
    data = data[data["user_id"] <= 1]
    priv = protect(13, data=data, max_rows_per_unit=CAP)
    with noise(priv):
        counts = priv.dp.groupby("country", keys=COUNTRIES, **{option: 1}).count(epsilon=1.0)
    assert counts.sum() == 1 + CAP  # unit 1 keeps its one row, unit 0 three of its 40
