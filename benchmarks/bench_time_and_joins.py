"""Resample and merge (issue 29): the DP twins next to plain pandas, in the same run.

``priv.dp.resample("D", on="t", range=...).size(...)`` against
``df.resample("D", on="t").size()``, and ``priv.dp.merge(public, on=...)`` followed by a
grouped count against ``df.merge(public, on=...).groupby(...).size()``, on ``ROWS`` rows.
Seconds, best of 3 runs, the two sides timed in turn (a shared machine slows both alike);
the ratio is pandas-dp over plain pandas.

``merge-1m`` joins a public table with two rows per code (a one-to-many join without a
unit: stability 2), and ``unit-join`` two protected tables about the same people on the
privacy unit (``ROWS / 10`` people, ``ROWS`` visits), each then a grouped count, against
pandas' merge and ``groupby().size()``.

``dask-merge`` (needs ``pandas-dp[dask]``) does the same on Dask: ``ddf.dp.merge(public,
on=...)`` then a grouped count, against plain Dask's
``ddf.merge(public, on=...).groupby(...).size().compute()``, on ``DASK_ROWS`` rows in
``PARTITIONS`` partitions (threaded scheduler) of a collection already in memory.

``python bench_time_and_joins.py [CASE ...] [ROWS]``: only the named cases (of ``CASES``), on
``ROWS`` rows (10^7 by default, dask-merge on ``DASK_ROWS``; ``ROWS`` sets both).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

import pandas_dp  # noqa: F401  (registers the accessors)
from _util import table

ROWS = 10_000_000
DASK_ROWS = 10_000_000  # about 15 s for both sides on 2 cores
PARTITIONS = 8
CASES = ("resample", "merge", "merge-1m", "unit-join", "dask-merge")
DAYS = 365
CODES = 1_000
REGIONS = 20


def make_frames(rows: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``rows`` events over a year with an integer code; a public table of the codes."""
    gen = np.random.default_rng(9)  # test-only: generates benchmark data, never noise
    start = pd.Timestamp("2024-01-01")
    seconds = gen.integers(0, DAYS * 86_400, rows)
    events = pd.DataFrame(
        {
            "t": start + pd.to_timedelta(seconds, unit="s"),
            "code": gen.integers(0, CODES, rows),
        }
    )
    public = pd.DataFrame(
        {"code": np.arange(CODES), "region": [f"r{i % REGIONS:02d}" for i in range(CODES)]}
    )
    return events, public


def interleaved(ours: Callable[[], Any], base: Callable[[], Any], repeat: int = 3) -> list[float]:
    """Best wall-clock seconds of each, after a warm-up of each, timed alternately."""
    ours(), base()
    best = [float("inf"), float("inf")]
    for _ in range(repeat):
        for i, fn in enumerate((ours, base)):
            start = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - start)
    return best


def run(
    rows: int = ROWS, only: tuple[str, ...] = ("resample", "merge"), dask_rows: int = DASK_ROWS
) -> str:
    """Time each twin next to pandas (the cases named in ``only``); a markdown report."""
    events, public = make_frames(rows)
    priv = events.dp.protect(epsilon=1e6)
    span = (pd.Timestamp("2024-01-01"), pd.Timestamp("2024-01-01") + pd.Timedelta(days=DAYS))
    regions = sorted(public["region"].unique())
    cases = [
        (
            "resample",
            f"resample('D').size(), {rows:,} rows",
            lambda: priv.dp.resample("D", on="t", range=span).size(epsilon=1.0),
            lambda: events.resample("D", on="t").size(),
        ),
        (
            "merge",
            f"merge (m:1) + grouped count, {rows:,} rows",
            lambda: (
                priv.dp.merge(public, on="code")
                .dp.groupby("region", keys=regions)
                .count(epsilon=1.0)
            ),
            lambda: events.merge(public, on="code").groupby("region").size(),
        ),
    ]
    if "merge-1m" in only:
        cases.append(_one_to_many(events, priv, regions))
    if "unit-join" in only:
        cases.append(_unit_join(rows, regions))
    if "dask-merge" in only:
        cases.append(_dask_merge(dask_rows, public, regions))
    rows_out: list[list[object]] = []
    for case, name, ours, base in cases:
        if case in only:
            t_ours, t_base = interleaved(ours, base, repeat=3)
            rows_out.append([name, t_ours, t_base, t_ours / t_base])
    return "\n".join(
        [
            "### Resample and merge (s, best of 3; Dask: plain Dask)",
            "",
            table(["release", "pandas-dp", "plain pandas", "ratio"], rows_out),
        ]
    )


def _one_to_many(
    events: pd.DataFrame, priv: pd.DataFrame, regions: list[str]
) -> tuple[str, str, Callable[[], Any], Callable[[], Any]]:
    """A public table with two rows per code (stability 2, row-level) + a grouped count."""
    codes = np.arange(CODES)
    public = pd.DataFrame(
        {
            "code": np.repeat(codes, 2),
            "region": [f"r{(i // 2 + i % 2) % REGIONS:02d}" for i in range(2 * CODES)],
        }
    )
    return (
        "merge-1m",
        f"merge (1:m, 2 rows per key, stability 2) + grouped count, {len(events):,} rows",
        lambda: (
            priv.dp.merge(public, on="code").dp.groupby("region", keys=regions).count(epsilon=1.0)
        ),
        lambda: events.merge(public, on="code").groupby("region").size(),
    )


def _unit_join(
    rows: int, regions: list[str]
) -> tuple[str, str, Callable[[], Any], Callable[[], Any]]:
    """Two protected tables joined on the unit: ``rows/10`` people, ``rows`` visits.

    ``people.dp.merge(visits, on="pid")`` then a grouped count over the people's region,
    against ``people.merge(visits, on="pid").groupby("region").size()``. The caps (1 row per
    person, 20 visits per person) never bind here, so both count the same rows.
    """
    gen = np.random.default_rng(10)  # test-only: generates benchmark data, never noise
    n_people = max(rows // 10, 1)
    people = pd.DataFrame(
        {"pid": np.arange(n_people), "region": gen.choice(np.asarray(regions), n_people)}
    )
    visits = pd.DataFrame(
        {"pid": gen.integers(0, n_people, rows), "cost": gen.uniform(0, 100, rows)}
    )
    priv_people = people.dp.protect(epsilon=1e6, privacy_unit="pid", max_rows_per_unit=1)
    priv_visits = visits.dp.protect(
        session=priv_people.dp.session, privacy_unit="pid", max_rows_per_unit=40
    )
    return (
        "unit-join",
        f"join of two protected tables on the unit + grouped count, {n_people:,} people, "
        f"{rows:,} visits",
        lambda: (
            priv_people.dp.merge(priv_visits, on="pid")
            .dp.groupby("region", keys=regions)
            .count(epsilon=1.0)
        ),
        lambda: people.merge(visits, on="pid").groupby("region").size(),
    )


def _dask_merge(
    rows: int, public: pd.DataFrame, regions: list[str]
) -> tuple[str, str, Callable[[], Any], Callable[[], Any]]:
    """The Dask twins: merge + grouped count on a collection in memory, threaded scheduler."""
    import dask
    import dask.dataframe as dd

    dask.config.set(scheduler="threads")
    events, _ = make_frames(rows)
    ddf = dd.from_pandas(events, npartitions=PARTITIONS).persist()  # both read the same
    priv = ddf.dp.protect(epsilon=1e6)
    return (
        "dask-merge",
        f"Dask merge (m:1) + grouped count, {rows:,} rows, {PARTITIONS} partitions",
        lambda: (
            priv.dp.merge(public, on="code").dp.groupby("region", keys=regions).count(epsilon=1.0)
        ),
        lambda: ddf.merge(public, on="code").groupby("region").size().compute(),
    )


if __name__ == "__main__":
    named = tuple(a for a in sys.argv[1:] if a in CASES) or ("resample", "merge")
    sizes = [int(a) for a in sys.argv[1:] if a.isdigit()]
    if sizes:
        print(run(sizes[0], named, dask_rows=sizes[0]))
    else:
        print(run(ROWS, named))
