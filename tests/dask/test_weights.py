"""Weighted releases on Dask: the same exact aggregates as pandas, and as pandas' own formula.

The event data gets a weight column (missing, negative, infinite and huge weights among
ordinary ones); each weighted query runs on the protected pandas frame and on the same rows
as a Dask collection (under the unit ``user_id``: rows are shuffled by unit), with the noise
replaced by a constant, and must give identical results and ledger rows. Before noise, the
weighted sum also matches ``(x.clip(L, U) * w.clip(0, W)).sum()`` to within the lattice's
rounding (half a step per row).
"""

from __future__ import annotations

from typing import Any

import dask
import numpy as np
import pandas as pd
import pytest

from .conftest import COUNTRIES, Query

W = {"weights": "weight", "weight_bounds": (0, 8)}
WEIGHTED = [
    Query("count", lambda p: p.dp.count(epsilon=1, **W)),
    Query("sum", lambda p: p.dp.sum("amount", bounds=(0, 500), epsilon=1, **W)),
    Query("mean-ci", lambda p: p.dp.mean("amount", bounds=(0, 500), epsilon=1, ci=0.9, **W)),
    Query("histogram", lambda p: p.dp.histogram("age", [0, 30, 60, 120], epsilon=1, **W)),
    Query(
        "groupby-agg",
        lambda p: p.dp.groupby("country", keys=COUNTRIES).agg(
            n="count",
            total=("amount", "sum"),
            avg=("amount", "mean"),
            bounds={"amount": (0, 500)},
            epsilon=1,
            **W,
        ),
    ),
    Query(
        "gaussian-groupby-sum",
        lambda p: p.dp.groupby("country", keys=COUNTRIES).sum(
            "amount", bounds=(0, 500), epsilon=1, mechanism="gaussian", **W
        ),
    ),
]


@pytest.fixture(autouse=True)
def threads() -> Any:
    with dask.config.set(scheduler="threads"):
        yield


@pytest.fixture
def weighted_events(events: pd.DataFrame) -> pd.DataFrame:
    gen = np.random.default_rng(3)  # test data only, never noise
    data = events.assign(weight=np.round(gen.gamma(2.0, 2.0, len(events)), 3))
    data.loc[data.index[::13], "weight"] = np.nan
    data.loc[data.index[[2, 4, 6]], "weight"] = [-3.0, np.inf, 1e300]
    return data


@pytest.mark.parametrize("weighted", WEIGHTED, ids=[q.name for q in WEIGHTED])
@pytest.mark.parametrize("npartitions", [1, 4])
def test_weighted_queries_agree_before_noise(
    weighted: Query, twins: Any, agree: Any, weighted_events: pd.DataFrame, npartitions: int
) -> None:
    dask_priv, pandas_priv = twins(npartitions=npartitions, data=weighted_events)
    agree(weighted, dask_priv, pandas_priv, 2)


def test_weighted_sum_matches_the_pandas_formula(
    twins: Any, weighted_events: pd.DataFrame, noise: Any
) -> None:
    dask_priv, pandas_priv = twins(npartitions=3, data=weighted_events)
    twin = (weighted_events["amount"].clip(0, 500) * weighted_events["weight"].clip(0, 8)).sum()
    for priv in (dask_priv, pandas_priv):
        with noise(priv):
            released = priv.dp.sum("amount", bounds=(0, 500), epsilon=1, **W)
        step = 2.0 ** priv.dp.session.releases[-1].measurements[0].exponent
        assert released == pytest.approx(twin, abs=len(weighted_events) * step / 2)
