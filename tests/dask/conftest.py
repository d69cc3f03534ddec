"""Fixtures for the Dask engine's tests: small event data, pandas and Dask twins of it, and
the catalogue of releases that both paths must agree on.

Every module here runs on the threaded scheduler, except ``test_distributed.py``, which
starts one ``LocalCluster`` (two worker processes) for the whole module.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pytest

from pandas_dp import Estimate, Preview

if importlib.util.find_spec("dask") is None:  # dask is the optional extra pandas-dp[dask]
    collect_ignore_glob = ["test_*.py"]

COUNTRIES = ["DE", "FR", "IT", "NL", "PL"]  # "IT" never occurs: a public key without rows
DEVICES = ["android", "ios", "web"]
MAX_ROWS = 5
PARTITIONS = 5


def make_events(users: int = 120, seed: int = 7) -> pd.DataFrame:
    """User ``i`` has ``i % 5 + 1`` rows (never more than MAX_ROWS), in random row order.

    Amounts include missing values and outliers on both sides; ages are integers.
    """
    gen = np.random.default_rng(seed)  # test data only, never noise
    user = np.repeat(np.arange(users), np.arange(users) % MAX_ROWS + 1)
    rows = user.size
    frame = pd.DataFrame(
        {
            "user_id": user,
            "country": np.array(["DE", "FR", "NL", "PL"])[gen.integers(0, 4, rows)],
            "device": np.array(DEVICES)[gen.integers(0, 3, rows)],
            "amount": np.round(gen.lognormal(4.0, 1.0, rows), 2),
            "age": gen.integers(18, 90, rows),
            "member": gen.random(rows) < 0.3,
        }
    )
    frame.loc[frame.index[::11], "amount"] = np.nan
    frame.loc[frame.index[[3, 5]], "amount"] = [1e9, -40.0]
    return frame.sample(frac=1.0, random_state=1).reset_index(drop=True)


@pytest.fixture(scope="session")
def events() -> pd.DataFrame:
    """The raw event data (do not mutate)."""
    return make_events()


@pytest.fixture
def twins(events: pd.DataFrame) -> Callable[..., tuple[Any, pd.DataFrame]]:
    """``twins(npartitions=PARTITIONS, **protect_kwargs)``: protected Dask and pandas frames.

    The pandas frame is the Dask collection computed, so both hold the same rows with the
    same dtypes; both are protected alike (unit ``user_id``, at most MAX_ROWS rows each).
    """
    import dask.dataframe as dd

    def make(npartitions: int = PARTITIONS, data: pd.DataFrame | None = None, **kw: Any) -> Any:
        raw = dd.from_pandas(events if data is None else data, npartitions=npartitions)
        options = {"epsilon": 50.0, "delta": 1e-6, "privacy_unit": "user_id"}
        options["max_rows_per_unit"] = MAX_ROWS
        options.update(kw)
        return raw.dp.protect(**options), raw.compute().dp.protect(**options)

    return make


@dataclass(frozen=True)
class Query:
    """One release, run the same way on a pandas and a Dask frame."""

    name: str
    run: Callable[[Any], Any]
    noise: int | None = None  # fixed "noise" to add instead of the test's value


BOUNDS = {"amount": (0, 500), "age": (0, 100)}


def _by_country(p: Any) -> Any:
    return p.dp.groupby("country", keys=COUNTRIES)


QUERIES = [
    Query("count", lambda p: p.dp.count(epsilon=1)),
    Query("count-ci", lambda p: p.dp.count(epsilon=1, ci=0.9)),
    Query("sum", lambda p: p.dp.sum("amount", bounds=(0, 500), epsilon=1)),
    Query("sum-fillna", lambda p: p.dp.sum("amount", bounds=(0, 500), epsilon=1, fillna=10)),
    Query("mean-ci", lambda p: p.dp.mean("amount", bounds=(0, 500), epsilon=1, ci=0.95)),
    Query("var", lambda p: p.dp.var("amount", bounds=(0, 500), epsilon=1)),
    Query("std", lambda p: p.dp.std("age", bounds=(0, 100), epsilon=1, ddof=0)),
    Query("quantiles", lambda p: p.dp.quantile("amount", [0.1, 0.5], bounds=(0, 500), epsilon=1)),
    Query("median", lambda p: p.dp.median("age", bounds=(0, 100), epsilon=1)),
    Query("mode", lambda p: p.dp.mode("country", candidates=COUNTRIES, epsilon=1)),
    Query("top_k", lambda p: p.dp.top_k("device", 2, candidates=DEVICES, epsilon=1)),
    Query("describe", lambda p: p.dp.describe(bounds=BOUNDS, epsilon=1)),
    Query("groupby-count", lambda p: _by_country(p).count(epsilon=1, ci=0.9)),
    Query("groupby-sum", lambda p: _by_country(p).sum("amount", bounds=(0, 500), epsilon=1)),
    Query("groupby-mean", lambda p: _by_country(p).mean("amount", bounds=(0, 500), epsilon=1)),
    Query(
        "groupby-agg",
        lambda p: _by_country(p).agg(
            n="count",
            spend=("amount", "mean"),
            total=("amount", "sum"),
            median=("amount", "median"),
            spread=("age", "std"),
            bounds=BOUNDS,
            epsilon=0.5,
        ),
    ),
    Query(
        "groupby-two-columns",
        lambda p: p.dp.groupby(
            ["country", "device"], keys={"country": COUNTRIES, "device": DEVICES}
        ).agg(n="count", avg=("age", "mean"), bounds=BOUNDS, epsilon=1),
    ),
    Query("groupby-bool", lambda p: p.dp.groupby("member", keys=[False, True]).count(epsilon=1)),
    Query("groupby-filtered", lambda p: _by_country(p[p["age"] > 80]).count(epsilon=1)),
    Query("histogram", lambda p: p.dp.histogram("age", bins=[0, 18, 30, 50, 70, 120], epsilon=1)),
    Query(
        "histogram-clip", lambda p: p.dp.histogram("amount", [0, 100, 200], epsilon=1, clip=True)
    ),
    Query(
        "private-keys",
        lambda p: p.dp.groupby("country", selection="threshold").count(epsilon=1),
        noise=1000,
    ),
    Query(
        "private-keys-two-columns",
        lambda p: p.dp.groupby(["device", "country"], selection="threshold").agg(
            n="count", total=("amount", "sum"), bounds=BOUNDS, epsilon=1
        ),
        noise=1000,
    ),
    Query(
        "private-keys-filtered",
        lambda p: p[p["age"] > 80].dp.groupby("country", selection="threshold").count(epsilon=1),
        noise=1000,
    ),
    Query(
        "gaussian",
        lambda p: _by_country(p).sum("amount", bounds=(0, 500), epsilon=1, mechanism="gaussian"),
    ),
    Query(
        "gaussian-mean",
        lambda p: p.dp.mean("amount", bounds=(0, 500), epsilon=1, mechanism="gaussian", ci=0.9),
    ),
    Query("preview", lambda p: p.dp.preview.mean("amount", bounds=(0, 500), epsilon=1)),
    Query(
        "preview-groupby",
        lambda p: p.dp.preview.groupby("country", keys=COUNTRIES).agg(
            n="count", spend=("amount", "mean"), bounds=BOUNDS, epsilon=1
        ),
    ),
    Query("epsilon_for", lambda p: p.dp.epsilon_for("sum", error=500, bounds=(0, 500))),
    Query(
        "tables",
        lambda p: pd.concat(
            [
                t.stack(future_stack=True) if isinstance(t, pd.DataFrame) else t
                for t in p.dp.tables(
                    [["country", "device"], ["device", "age"]],
                    keys={"country": COUNTRIES, "device": DEVICES},
                    bins={"age": [0, 30, 60, 120]},
                    epsilon=1,
                ).values()
            ]
        ),
    ),
]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run every test that takes a ``query`` once per entry of the catalogue."""
    if "query" in metafunc.fixturenames:
        metafunc.parametrize("query", QUERIES, ids=[q.name for q in QUERIES])


def assert_same(expected: Any, actual: Any) -> None:
    """Exactly equal results: same type, same values, same index and dtypes."""
    assert type(actual) is type(expected)
    if isinstance(expected, pd.DataFrame):
        pd.testing.assert_frame_equal(actual, expected, check_exact=True)
    elif isinstance(expected, pd.Series):
        pd.testing.assert_series_equal(actual, expected, check_exact=True)
    elif isinstance(expected, Preview):
        pd.testing.assert_frame_equal(actual.table, expected.table, check_exact=True)
        assert (actual.epsilon, actual.delta) == (expected.epsilon, expected.delta)
    elif isinstance(expected, Estimate | list):
        assert list(actual) == list(expected)
    else:
        assert actual == expected


def ledger_of(priv: Any) -> pd.DataFrame:
    """The session's ledger without its clock."""
    ledger: pd.DataFrame = priv.dp.session.ledger.drop(columns=["time"])
    return ledger


@pytest.fixture
def agree(noise: Callable[..., Any]) -> Callable[..., Any]:
    """``agree(query, dask_priv, pandas_priv, value)``: both paths, same noise, same result."""

    def check(query: Query, dask_priv: Any, pandas_priv: Any, value: int) -> Any:
        value = query.noise if query.noise is not None else value
        results = []
        for priv in (pandas_priv, dask_priv):
            with noise(priv, value=value):
                results.append(query.run(priv))
        assert_same(*results)
        pd.testing.assert_frame_equal(ledger_of(dask_priv), ledger_of(pandas_priv))
        return results[1]

    return check


@pytest.fixture
def moved(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records how rows were gathered by unit: ``"exchange"`` or ``"shuffle"``, per release."""
    import dask.dataframe as dd

    from pandas_dp.engines.dask import engine as dask_engine

    calls: list[str] = []
    shuffle, exchange = dd.DataFrame.shuffle, dask_engine.exchange

    def spy_shuffle(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append("shuffle")
        return shuffle(self, *args, **kwargs)

    def spy_exchange(*args: Any, **kwargs: Any) -> Any:
        calls.append("exchange")
        return exchange(*args, **kwargs)

    monkeypatch.setattr(dd.DataFrame, "shuffle", spy_shuffle)
    monkeypatch.setattr(dask_engine, "exchange", spy_exchange)
    return calls
