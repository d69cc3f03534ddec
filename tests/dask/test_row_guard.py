"""Row-level privacy on Dask: ``ddf.dp.protect(epsilon=...)`` with no unit column, no shuffle.

Every release traces the collection's expression graph back to ``protect`` and refuses any
step that may repeat a row (:func:`pandas_dp.engines.dask.lineage.duplicating_step`). The
pandas guard's catalogue (``tests/api/test_duplicated_rows.py``) is replayed here case by
case: each operation is refused on Dask too, or Dask has no such operation at all.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from pandas_dp import DuplicatedRowsError, NotProtectedError

from ..api.test_duplicated_rows import AGGREGATIONS, DUPLICATIONS

PARTITIONS = 3


@pytest.fixture(autouse=True)
def threads() -> Any:
    with dask.config.set(scheduler="threads"):
        yield


@pytest.fixture
def priv(census: pd.DataFrame) -> Any:
    return dd.from_pandas(census, npartitions=PARTITIONS).dp.protect(epsilon=10.0)


def _absent(operation: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A pandas operation Dask does not offer: calling it must fail in Dask itself."""

    def check(p: Any) -> None:
        with pytest.raises((AttributeError, NotImplementedError)):
            operation(p)

    return check


def _pair(p: Any) -> Any:
    return p.assign(pair=p["age"].map(lambda _: [0, 1], meta=("pair", object)))


#: The pandas catalogue's cases, by the same names: the Dask spelling of each, or
#: ``_absent`` when Dask has no such operation (its test asserts that Dask refuses it).
DASK_DUPLICATIONS: dict[str, Callable[[Any], Any]] = {
    "concat with itself": lambda p: dd.concat([p, p]),
    "concat of overlapping filters": lambda p: dd.concat([p[p["age"] > 30], p[p["age"] > 50]]),
    "melt": lambda p: p.melt(id_vars=["sex"], value_vars=["age", "income"]),
    "transpose": _absent(lambda p: p.T),
    "explode": lambda p: _pair(p).explode("pair"),
    "loc with repeated labels": lambda p: p.loc[[0, 0, 1]],
    "iloc with repeated positions": lambda p: p.partitions[[0, 1, 0]],  # Dask's positions
    "set_index": lambda p: p.set_index("age"),
    "stack": _absent(lambda p: p[["age", "income"]].stack()),
    "describe": lambda p: p.describe(),
    "sample with replacement": lambda p: p.sample(frac=1.0, replace=True, random_state=0),
    "series resampled": lambda p: p["age"].sample(frac=1.0, replace=True, random_state=0),
    "series concat": lambda p: dd.concat([p["age"], p["age"]]),
    "reindex with repeats": _absent(lambda p: p.reindex([0, 1, 1, 2])),
}

DASK_AGGREGATIONS: dict[str, Callable[[Any], Any]] = {
    "groupby sum": lambda p: p.groupby("sex").sum(),
    "groupby sum on a string key": lambda p: (
        p.assign(g=p["sex"].map({0: "f", 1: "m"}, meta=("g", object))).groupby("g").sum()
    ),
    "groupby agg": lambda p: p.groupby("race").agg("max"),
    "pivot_table": lambda p: dd.pivot_table(
        p.categorize(columns=["race"]), index="sex", columns="race", values="income"
    ),
}


def _queries(obj: Any) -> list[Callable[[], Any]]:
    if isinstance(obj, dd.Series):
        return [lambda: obj.dp.count(epsilon=0.1), lambda: obj.dp.sum(bounds=(0, 100), epsilon=0.1)]
    column = obj.columns[0]
    return [
        lambda: obj.dp.count(epsilon=0.1),
        lambda: obj.dp.sum(column, bounds=(0, 100), epsilon=0.1),
    ]


def test_the_catalogue_is_the_pandas_one() -> None:
    assert list(DASK_DUPLICATIONS) == list(DUPLICATIONS)
    assert list(DASK_AGGREGATIONS) == list(AGGREGATIONS)


@pytest.mark.parametrize("duplicate", DASK_DUPLICATIONS.values(), ids=DASK_DUPLICATIONS.keys())
def test_duplicated_rows_are_refused(priv, duplicate, charges_nothing) -> None:
    duplicated = duplicate(priv)
    if duplicated is None:  # Dask has no such operation (asserted by the case)
        return
    with charges_nothing(priv):
        for query in _queries(duplicated):
            with pytest.raises(DuplicatedRowsError):
                query()


@pytest.mark.parametrize("aggregate", DASK_AGGREGATIONS.values(), ids=DASK_AGGREGATIONS.keys())
def test_aggregated_frames_are_refused(priv, aggregate, charges_nothing) -> None:
    aggregated = aggregate(priv)
    with charges_nothing(priv):
        for query in _queries(aggregated):
            with pytest.raises(NotProtectedError):
                query()


#: More ways to repeat rows that only the graph shows: differently derived inputs combined
#: by label, a self-merge, and a protect layer of another session.
MORE: dict[str, Callable[[Any], Any]] = {
    "sum of a filter and the frame": lambda p: p[p["age"] > 30]["age"] + p["age"],
    "add with fill_value after reset_index": lambda p: p["age"].add(
        p.reset_index(drop=True)["age"], fill_value=0
    ),
    "self-merge": lambda p: p.merge(p, on="sex"),
    "merge on index": lambda p: p.merge(p, left_index=True, right_index=True),
    "concat of disjoint filters": lambda p: dd.concat([p[p["sex"] == 0], p[p["sex"] == 1]]),
    "map_partitions": lambda p: p.map_partitions(lambda part: part),
    "persist after a step": lambda p: p[p["age"] > 0].persist(),
}


@pytest.mark.parametrize("derive", MORE.values(), ids=MORE.keys())
def test_steps_whose_rows_the_graph_cannot_vouch_for_are_refused(priv, derive) -> None:
    derived = derive(priv)
    with pytest.raises(NotProtectedError):
        _queries(derived)[0]()
    assert priv.dp.session.spent.epsilon == 0


def _query_then_loc(p: Any) -> Any:
    """A query, then ``loc`` by a mask of the queried frame itself (not of ``p``: a mask of
    another frame is refused, see ``test_row_guard_meaning.py``)."""
    adults = p.query("age > 30")
    return adults.loc[adults["sex"] == 1, ["age", "income"]]


ACCEPTED: dict[str, Callable[[Any], Any]] = {
    "filter": lambda p: p[p["income"] > 50_000],
    "query and loc": _query_then_loc,
    "assign and elementwise": lambda p: p.assign(r=(p["income"] / 1000).clip(0, 100).round()),
    "series arithmetic": lambda p: (p["age"] * 2 + p["income"]).fillna(0),
    "sample without replacement": lambda p: p.sample(frac=0.5, random_state=3),
    "sort_values": lambda p: p.sort_values("age"),
    "head": lambda p: p.head(100, compute=False),
    "repartition and partitions": lambda p: p.repartition(npartitions=5).partitions[[4, 0, 2]],
    "persist": lambda p: p.persist(),
    "to_frame and rename": lambda p: p["age"].rename("years").to_frame(),
}


@pytest.mark.parametrize("derive", ACCEPTED.values(), ids=ACCEPTED.keys())
def test_duplicate_free_derivations_are_accepted(priv, census, derive, noise) -> None:
    derived = derive(priv)
    with noise(priv):
        released = _queries(derived)[0]()
    rows = derived.compute()
    assert released == (rows.count() if isinstance(rows, pd.Series) else len(rows))
    assert priv.dp.session.spent.epsilon == Fraction(1, 10)


def test_releases_match_pandas_without_a_shuffle(priv, census, noise, moved) -> None:
    """Exact aggregates (fake noise) equal those of the same rows in pandas, and no row is
    moved (neither shuffled nor exchanged)."""
    pandas_priv = census.dp.protect(epsilon=10.0)
    results = []
    for p in (priv, pandas_priv):
        with noise(p):
            results.append(
                [
                    p.dp.count(epsilon=1),
                    p[p["age"] > 40]["income"].dp.sum(bounds=(0, 100_000), epsilon=1),
                    p.dp.groupby("sex", keys=[0, 1]).mean("income", bounds=(0, 1e5), epsilon=1),
                ]
            )
    assert results[0][:2] == results[1][:2]
    pd.testing.assert_series_equal(results[0][2], results[1][2])
    assert moved == []


def test_the_client_receives_one_aggregate_per_group_whatever_the_partitions(
    census, noise, monkeypatch
) -> None:
    """The per-partition step returns one integer per measure and group, and only their
    exact sum reaches the client: the data returned grows with the partitions (on the
    workers) and the groups, never with the rows."""
    from pandas_dp.engines.dask import engine as dask_engine

    sizes: list[int] = []
    received: list[int] = []
    aggregate, combine = dask_engine.aggregate_partition, dask_engine.combine

    def per_partition(*args: Any) -> Any:
        result = aggregate(*args)
        sizes.append(sum(np.size(v) for v in result.values))
        return result

    def combined(parts: Any, observed: bool) -> Any:
        result = combine(parts, observed)
        received.append(sum(np.size(v) for v in result.values))
        return result

    monkeypatch.setattr(dask_engine, "aggregate_partition", per_partition)
    monkeypatch.setattr(dask_engine, "combine", combined)
    big = pd.concat([census] * 20, ignore_index=True)  # 20,000 rows
    priv = dd.from_pandas(big, npartitions=8).dp.protect(epsilon=10.0)
    with noise(priv):
        priv.dp.groupby("race", keys=range(1, 7)).agg(
            n="count", total=("income", "sum"), bounds={"income": (0, 1e5)}, epsilon=1
        )
    assert len(sizes) == 8
    assert set(sizes) == {2 * 6}  # count and sum, six keys: per partition, whatever its rows
    assert received == [2 * 6]


def test_the_lineage_check_costs_nothing_like_the_rows(census) -> None:
    """The check reads the graph: as fast for 200 partitions as for 2 (no compute)."""
    times = []
    for partitions in (2, 200):
        priv = dd.from_pandas(census, npartitions=partitions).dp.protect(epsilon=1.0)
        derived = priv[priv["age"] > 30].assign(r=priv["income"] * 2)["r"]
        start = time.perf_counter()
        derived.dp.preview.sum(bounds=(0, 1), epsilon=0.5)
        times.append(time.perf_counter() - start)
    assert times[1] < 0.5  # generous: the graph has the same handful of steps
