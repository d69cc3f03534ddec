"""The exchange by unit at hundreds and thousands of partitions (issue 28).

Past :data:`~pandas_dp.engines.dask.exchange.MAX_ONE_STAGE` partitions the exchange routes rows in
stages. What must hold at any partition count:

- after the exchange, every unit's rows meet in exactly one frame (a unit split over two
  would be capped twice), whatever form its ids take (``1``, ``1.0``, ``True``) and however
  the partitions spread it; no row is lost or doubled;
- relabelled ids still tell apart exactly the units of their frame;
- the graph grows like ``P·sqrt(P)``, not ``P²``;
- releases equal the pandas engine's before noise, and Dask's shuffle is never used.
"""

from __future__ import annotations

import math
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from dask.delayed import delayed

from pandas_dp.engines.canonical import canonical_unit_ids
from pandas_dp.engines.dask import engine as dask_engine
from pandas_dp.engines.dask.exchange import MAX_ONE_STAGE, bucket_count, exchange, stage_radices

from .conftest import COUNTRIES, DEVICES, QUERIES, make_events


@pytest.fixture(autouse=True)
def threads() -> Any:
    # Dask would turn object columns into text ("1", "1.0", "True": three ids, in Dask's
    # data as in the pandas twin); kept as objects, the ids reach the engine as written.
    with dask.config.set({"scheduler": "threads", "dataframe.convert-string": False}):
        yield


def mixed_ids(rows: int, units: int, seed: int = 3) -> pd.Series:
    """Ids of ``units`` units, each row spelling its unit as an int, a float or a bool."""
    gen = np.random.default_rng(seed)  # test data only
    unit = gen.integers(0, units, rows)
    spelling = gen.integers(0, 3, rows)
    values: list[Any] = []
    for u, how in zip(unit.tolist(), spelling.tolist(), strict=True):
        if how == 0:
            values.append(u)
        elif how == 1:
            values.append(float(u))
        else:  # 1 / 1.0 / True (and 0 / 0.0 / False) are one unit
            values.append(bool(u) if u in (0, 1) else np.int64(u))
    values[:6] = [1, 1.0, True, 0, 0.0, False]  # each form at least once
    return pd.Series(values, dtype=object)


def _exchanged(frame: pd.DataFrame, npartitions: int, relabel: bool) -> list[pd.DataFrame]:
    """The frame's rows after the engine's own steps: canonical ids, then the exchange."""
    lazy = dd.from_pandas(frame, npartitions=npartitions, sort=False)
    assert lazy.npartitions == npartitions
    assert lazy["u"].dtype == frame["u"].dtype  # (objects stay objects)
    canonical = dask_engine._canonical_ids(lazy, "u").optimize()
    outputs = exchange(canonical.to_delayed(optimize_graph=False), "u", relabel)
    assert len(outputs) == bucket_count(npartitions)
    return list(dask.compute(*outputs))


@pytest.mark.parametrize("npartitions", [300, 1000])
def test_every_units_rows_meet_in_exactly_one_partition(npartitions):
    rows = 6 * npartitions
    ids = mixed_ids(rows, units=rows // 20)  # each unit in about 20 rows, spread everywhere
    frame = pd.DataFrame({"u": ids, "row": np.arange(rows)})
    unit_of_row = canonical_unit_ids(frame["u"]).to_numpy()
    gathered = _exchanged(frame, npartitions, relabel=False)
    assert sorted(pd.concat(gathered)["row"]) == list(range(rows))  # none lost or doubled
    homes: dict[Any, set[int]] = {}
    for j, part in enumerate(gathered):
        for unit in unit_of_row[part["row"].to_numpy()]:
            homes.setdefault(unit, set()).add(j)
    assert {1, 0} <= homes.keys()
    assert all(len(where) == 1 for where in homes.values()), "a unit split over partitions"
    spread = pd.Series(np.arange(rows) % npartitions).groupby(unit_of_row).nunique()
    assert spread.min() > 1  # (each unit came from several partitions)


@pytest.mark.parametrize("npartitions", [300, 1000])
def test_relabelled_ids_tell_apart_exactly_the_units_of_their_partition(npartitions):
    rows = 5 * npartitions
    gen = np.random.default_rng(4)  # test data only
    ids = gen.integers(-(10**12), 10**12, rows // 10)[gen.integers(0, rows // 10, rows)]
    frame = pd.DataFrame({"u": ids, "row": np.arange(rows)})
    gathered = _exchanged(frame, npartitions, relabel=True)
    assert sorted(pd.concat(gathered)["row"]) == list(range(rows))
    homes: dict[int, set[int]] = {}
    for j, part in enumerate(gathered):
        original = ids[part["row"].to_numpy()]
        for unit in original.tolist():
            homes.setdefault(unit, set()).add(j)
        labels = part["u"].to_numpy()
        same_label = labels[:, None] == labels[None, :]
        assert (same_label == (original[:, None] == original[None, :])).all()
    assert all(len(where) == 1 for where in homes.values())


def _graph_size(npartitions: int) -> int:
    parts = [delayed(pd.DataFrame, pure=True)(i) for i in range(npartitions)]
    outputs = exchange(parts, "u", relabel=True)
    return len(outputs[0].dask) - npartitions  # the exchange's own tasks


def test_the_graph_grows_like_p_sqrt_p():
    for npartitions in (MAX_ONE_STAGE + 1, 300, 1000, 3000):
        assert _graph_size(npartitions) <= 1.5 * npartitions**1.5
    assert _graph_size(1000) < _graph_size(300) * 8  # (P² would give 11 times)


@pytest.mark.parametrize("npartitions", [1, 16, MAX_ONE_STAGE, 129, 300, 1000, 10**4, 10**5])
def test_the_stages_reach_every_bucket(npartitions):
    buckets = bucket_count(npartitions)
    radices = stage_radices(npartitions, buckets)
    assert math.prod(radices) >= buckets
    assert len(radices) <= 4
    assert (len(radices) == 1) == (npartitions <= MAX_ONE_STAGE)


def _twins(twins: Any, npartitions: int, **kw: Any) -> tuple[Any, Any]:
    data = make_events(users=4 * npartitions)
    dask_priv, pandas_priv = twins(npartitions=npartitions, data=data, **kw)
    assert dask_priv.npartitions == npartitions
    return dask_priv, pandas_priv


def test_every_query_agrees_before_noise_at_300_partitions(query, twins, agree, moved) -> None:
    dask_priv, pandas_priv = _twins(twins, 300)
    agree(query, dask_priv, pandas_priv, 0)
    assert set(moved) <= {"exchange"}


AT_A_THOUSAND = ["count", "groupby-agg", "private-keys-two-columns", "tables", "quantiles"]


@pytest.mark.parametrize("name", AT_A_THOUSAND)
def test_queries_agree_before_noise_at_1000_partitions(name, twins, agree, moved) -> None:
    query = next(q for q in QUERIES if q.name == name)
    dask_priv, pandas_priv = _twins(twins, 1000)
    agree(query, dask_priv, pandas_priv, 1)
    assert moved == ["exchange"]


@pytest.mark.parametrize("npartitions", [300, 1000])
def test_ids_of_mixed_forms_are_capped_once_at_any_partition_count(twins, noise, npartitions):
    """One row per unit: the count is the number of units, however they spell their ids."""
    rows = 8 * npartitions
    gen = np.random.default_rng(5)  # test data only
    data = pd.DataFrame(
        {
            "user_id": mixed_ids(rows, units=rows // 16),
            "country": np.array(COUNTRIES)[gen.integers(0, len(COUNTRIES), rows)],
            "device": np.array(DEVICES)[gen.integers(0, len(DEVICES), rows)],
        }
    )
    units = canonical_unit_ids(data["user_id"])
    dask_priv, pandas_priv = twins(npartitions=npartitions, data=data, max_rows_per_unit=1)
    assert dask_priv.npartitions == npartitions
    with noise(dask_priv), noise(pandas_priv):
        assert dask_priv.dp.count(epsilon=1) == pandas_priv.dp.count(epsilon=1) == units.nunique()
        by_country = dask_priv.dp.groupby("country", keys=COUNTRIES).count(epsilon=1)
    assert by_country.sum() == units.nunique()
