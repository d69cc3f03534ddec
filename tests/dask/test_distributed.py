"""The Dask path on a ``dask.distributed`` cluster: two worker processes on this machine.

One ``LocalCluster`` serves the whole module (starting one takes seconds); the client is
closed before the cluster, both through their context managers, so no worker is left to
warn at interpreter exit.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import dask
import dask.dataframe as dd
import distributed
import pytest

from .conftest import COUNTRIES
from .test_bounding import CAP, OTHERS, heavy_data
from .test_bounding import COUNTRIES as HEAVY_COUNTRIES


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    with (
        distributed.LocalCluster(
            # a free port for the dashboard: another cluster on this machine may hold 8787
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


def test_every_query_agrees_on_a_cluster(client, query, twins, agree) -> None:
    dask_priv, pandas_priv = twins(npartitions=4)
    agree(query, dask_priv, pandas_priv, 2)


def test_caps_hold_after_a_shuffle_between_workers(client, noise) -> None:
    priv = dd.from_pandas(heavy_data(), npartitions=6).dp.protect(
        epsilon=10.0, privacy_unit="user_id", max_rows_per_unit=CAP
    )
    with noise(priv):
        assert priv.dp.count(epsilon=1.0) == OTHERS + CAP
        counts = priv.dp.groupby("country", keys=HEAVY_COUNTRIES, max_groups_per_unit=1).count(
            epsilon=1.0
        )
    assert sorted((counts - OTHERS // 4).tolist()) == [0, 0, 0, CAP]


def _seeded_release(protect_seeded: Any) -> Any:
    priv = protect_seeded(
        dd.from_pandas(heavy_data(), npartitions=6), seed=11, epsilon=10.0,
        privacy_unit="user_id", max_rows_per_unit=CAP,
    )  # fmt: skip
    return priv.dp.groupby("country", keys=HEAVY_COUNTRIES).agg(
        n="count", total=("amount", "sum"), bounds={"amount": (0, 50)}, epsilon=1.0
    )


def test_seeded_releases_match_across_schedulers(client, protect_seeded) -> None:
    on_cluster = _seeded_release(protect_seeded)
    with dask.config.set(scheduler="threads"):
        on_threads = _seeded_release(protect_seeded)
    dask.dataframe.utils.assert_eq(on_cluster, on_threads)
    assert on_cluster.equals(on_threads)


def _sessions_here() -> int:
    """Session and accountant objects alive in this process (run on each worker)."""
    gc.collect()
    names = {"Session", "Accountant", "SessionHandle"}
    return sum(type(obj).__name__ in names for obj in gc.get_objects())


def test_workers_never_hold_a_session(client, twins, noise) -> None:
    dask_priv, _ = twins(npartitions=4)
    with noise(dask_priv):
        dask_priv.dp.groupby("country", keys=COUNTRIES).agg(
            n="count", spend=("amount", "mean"), bounds={"amount": (0, 500)}, epsilon=1.0
        )
        dask_priv.dp.groupby("country", selection="threshold").count(epsilon=1.0)
    assert dask_priv.dp.session.releases  # the releases ran on the workers
    found = client.run(_sessions_here)
    assert len(found) == 2
    assert set(found.values()) == {0}


def test_row_level_and_partition_local_releases_on_a_cluster(client, noise) -> None:
    """Both shuffle-free paths on worker processes: one row per person (no unit column), and
    units capped within the partitions of a collection indexed by unit."""
    data = heavy_data()
    rows = dd.from_pandas(data, npartitions=4).dp.protect(epsilon=10.0)
    indexed = dd.from_pandas(data, npartitions=4).set_index("user_id", drop=False)
    units = indexed.dp.protect(epsilon=10.0, privacy_unit="user_id", max_rows_per_unit=CAP)
    with noise(rows):
        assert rows.dp.count(epsilon=1.0) == len(data)
        assert rows["amount"].dp.count(epsilon=1.0) == data["amount"].count()
    with noise(units):
        assert units.dp.count(epsilon=1.0) == OTHERS + CAP
        assert units["amount"].dp.count(epsilon=1.0) == OTHERS + CAP  # no missing amounts
