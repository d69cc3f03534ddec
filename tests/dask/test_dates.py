"""Datetime and timedelta releases on Dask equal the pandas ones, given the same noise.

The events gain an instant (``when``, tz-aware, with missing values), a duration and a
month (``dt.to_period``); each date query runs on the pandas frame and on the same rows as
a Dask collection protected with a privacy unit, and results (types, dtypes, index) and
ledger rows must be identical (see ``test_agreement.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import dask
import numpy as np
import pandas as pd
import pytest

from .conftest import COUNTRIES, Query, make_events

YEAR = (pd.Timestamp("2020-01-01", tz="UTC"), pd.Timestamp("2021-01-01", tz="UTC"))
HOUR = (pd.Timedelta(0), pd.Timedelta(hours=1))
MONTHS = pd.period_range("2020-01", "2020-12", freq="M")


def _dated() -> pd.DataFrame:
    events = make_events()
    seconds = np.random.default_rng(3).integers(0, 366 * 86_400, len(events))
    when = pd.Series(YEAR[0] + pd.to_timedelta(seconds, unit="s"), index=events.index)
    when[::13] = pd.NaT
    return events.assign(
        when=when,
        duration=pd.to_timedelta(events["age"] * 30, unit="s"),
        month=when.dt.tz_convert(None).dt.to_period("M"),
    )


DATE_QUERIES = [
    Query("mean", lambda p: p.dp.mean("when", bounds=YEAR, epsilon=1)),
    Query("median-ci", lambda p: p.dp.median("when", bounds=YEAR, epsilon=1, ci=0.9)),
    Query("quantiles", lambda p: p.dp.quantile("when", [0.25, 0.75], bounds=YEAR, epsilon=1)),
    Query("std", lambda p: p.dp.std("when", bounds=YEAR, epsilon=1)),
    Query("min", lambda p: p.dp.min("when", bounds=YEAR, epsilon=1)),
    Query("duration-sum", lambda p: p.dp.sum("duration", bounds=HOUR, epsilon=1)),
    Query("histogram", lambda p: p.dp.histogram("when", freq="MS", range=YEAR, epsilon=1)),
    Query(
        "groupby-agg",
        lambda p: p.dp.groupby("country", keys=COUNTRIES).agg(
            first=("when", "min"),
            middle=("when", "median"),
            spent=("duration", "sum"),
            bounds={"when": YEAR, "duration": HOUR},
            epsilon=1,
            ci=0.9,
        ),
    ),
    Query("months", lambda p: p.dp.groupby("month", keys=MONTHS).count(epsilon=1)),
    Query("resample-size", lambda p: p.dp.resample("MS", on="when", range=YEAR).size(epsilon=1)),
    Query(
        "running-totals",
        lambda p: p.dp.resample("MS", on="when", range=YEAR).size(epsilon=1, cumulative=True),
    ),
    Query(
        "resample-agg",
        lambda p: p.dp.resample("W", on="when", range=YEAR).agg(
            n="count", spent=("duration", "sum"), bounds={"duration": HOUR}, epsilon=1, ci=0.9
        ),
    ),
    Query(
        "grouper-size",
        lambda p: p.dp.groupby(pd.Grouper(key="when", freq="MS"), range=YEAR).size(epsilon=1),
    ),
    Query(
        "grouper-mixed-agg",
        lambda p: p.dp.groupby(
            ["country", pd.Grouper(key="when", freq="QS")], keys=COUNTRIES, range=YEAR
        ).agg(n="count", spent=("duration", "sum"), bounds={"duration": HOUR}, epsilon=1, ci=0.9),
    ),
    Query(
        "private-months",
        lambda p: p.dp.groupby("month", selection="threshold").count(epsilon=1),
        noise=1000,
    ),
]


@pytest.fixture(autouse=True)
def threads() -> Any:
    with dask.config.set(scheduler="threads"):
        yield


@pytest.mark.parametrize("date_query", DATE_QUERIES, ids=[q.name for q in DATE_QUERIES])
def test_date_releases_agree_on_dask(
    date_query: Query, twins: Callable[..., Any], agree: Callable[..., Any]
) -> None:
    query = date_query  # not "query": conftest parametrizes that name with its catalogue
    dask_priv, pandas_priv = twins(npartitions=4, data=_dated())
    result = agree(query, dask_priv, pandas_priv, 0)
    if isinstance(result, pd.Series | pd.DataFrame):
        dtypes = result.dtypes if isinstance(result, pd.DataFrame) else [result.dtype]
        kinds = {dtype.kind for dtype in dtypes}
        assert kinds & {"M", "m", "i"}  # datetimes, timedeltas or counts: never floats of ns
    elif query.name != "median-ci":
        assert isinstance(result, pd.Timestamp | pd.Timedelta)
