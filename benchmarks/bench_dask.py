"""A grouped release on 5·10**7 rows of parquet with Dask, against plain Dask.

Writes ``rows`` synthetic events (``user_id``, ``country``, ``amount``) as parquet files to a
temporary directory, then runs each of these in a fresh Python process:

- plain Dask: ``read_parquet(...).groupby("country").agg(count, sum, mean)`` of the clipped
  amounts;
- pandas-dp: ``protect(privacy_unit="user_id", max_rows_per_unit=50)`` and
  ``dp.groupby("country", keys=...).agg(n="count", total=("amount", "sum"),
  spend=("amount", "mean"))``, which also shuffles the three columns by ``user_id`` to cap
  each user's rows;

first on a ``LocalCluster`` (two worker processes, peer-to-peer shuffle spilling to disk):
the client's peak RSS (``resource.getrusage``; it also hosts the scheduler) shows that no rows
come back, and the workers' peak memory (``distributed.diagnostics.MemorySampler``) what the
computation needs; then on the threaded scheduler, where the client process does all the
work (and Dask shuffles through ``partd`` on disk), so its peak RSS is the whole cost.

Opt-in from ``benchmarks/run.py`` with ``--dask`` (it writes about a gigabyte); on its own:
``python benchmarks/bench_dask.py [rows]``.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from _util import table

ROWS = 50_000_000
FILES = 50
ROWS_PER_USER = 10
COUNTRIES = [f"C{i:02d}" for i in range(20)]
BOUNDS = (0.0, 500.0)


def write_events(directory: Path, rows: int, files: int = FILES) -> int:
    """Write ``rows`` events in ``files`` parquet files, one file in memory at a time.

    Returns the bytes the three columns take in memory (int64, float64 and the countries
    as pyarrow strings), the size a pandas frame of all rows would have.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    gen = np.random.default_rng(5)  # test-only: generates benchmark data, never noise
    users = max(rows // ROWS_PER_USER, 1)
    weights = 1.0 / np.arange(1, len(COUNTRIES) + 1)
    names = np.array(COUNTRIES)
    per_file = -(-rows // files)
    in_memory = 0
    for index, start in enumerate(range(0, rows, per_file)):
        n = min(per_file, rows - start)
        table_ = pa.table(
            {
                "user_id": gen.integers(0, users, n),
                "country": names[gen.choice(len(names), n, p=weights / weights.sum())],
                "amount": np.round(gen.lognormal(3.5, 1.2, n), 2),
            }
        )
        in_memory += table_.nbytes
        pq.write_table(table_, directory / f"part-{index:04d}.parquet")
    return in_memory


def _plain(path: str) -> object:
    import dask.dataframe as dd

    frame = dd.read_parquet(path, filesystem="arrow")
    clipped = frame.assign(amount=frame["amount"].clip(*BOUNDS))
    return (
        clipped.groupby("country")
        .agg(n=("amount", "size"), total=("amount", "sum"), spend=("amount", "mean"))
        .compute()
    )


def _private(path: str) -> object:
    import dask.dataframe as dd

    import pandas_dp  # noqa: F401

    priv = dd.read_parquet(path, filesystem="arrow").dp.protect(
        epsilon=1.0, privacy_unit="user_id", max_rows_per_unit=50
    )
    return priv.dp.groupby("country", keys=COUNTRIES).agg(
        n="count", total=("amount", "sum"), spend=("amount", "mean"),
        bounds={"amount": BOUNDS}, epsilon=0.5,
    )  # fmt: skip


def phase(name: str, scheduler: str, path: str) -> dict[str, float]:
    """Run one phase in this process: wall time, peak client RSS and peak worker memory."""
    import dask.dataframe  # noqa: F401  imports are not part of the measurement

    import pandas_dp  # noqa: F401

    query = {"plain": _plain, "private": _private}[name]
    before = _peak_rss()
    workers = float("nan")
    if scheduler == "cluster":
        from distributed import Client, LocalCluster
        from distributed.diagnostics import MemorySampler

        sampler = MemorySampler()
        with (
            LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster,
            Client(cluster),
        ):
            start = time.perf_counter()
            with sampler.sample("run", interval=0.25):
                result = query(path)
            seconds = time.perf_counter() - start
        workers = float(sampler.to_pandas()["run"].max())
    else:
        start = time.perf_counter()
        result = query(path)
        seconds = time.perf_counter() - start
    assert isinstance(result, pd.DataFrame)
    assert len(result) == len(COUNTRIES)
    return {"seconds": seconds, "peak_rss": _peak_rss(), "rss_before": before, "workers": workers}


def _peak_rss() -> float:
    """Peak resident memory of this process so far, in bytes (Linux reports KiB)."""
    scale = 1 if sys.platform == "darwin" else 1024
    return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale)


def _in_fresh_process(name: str, scheduler: str, path: Path) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, __file__, "--phase", name, scheduler, str(path)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    measured: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return measured


def _rows(private: dict[str, float], plain: dict[str, float]) -> list[list[object]]:
    mib = 2.0**20
    measures = [
        ("wall time (s)", private["seconds"], plain["seconds"]),
        ("peak client RSS (MiB)", private["peak_rss"] / mib, plain["peak_rss"] / mib),
    ]
    if plain["workers"] == plain["workers"]:  # not NaN: measured on a cluster
        measures.append(
            ("peak memory of both workers (MiB)", private["workers"] / mib, plain["workers"] / mib)
        )
    measures.append(
        ("client RSS after imports (MiB)", private["rss_before"] / mib, plain["rss_before"] / mib)
    )
    return [[name, ours, base, ours / base] for name, ours, base in measures]


def run(rows: int = ROWS) -> str:
    """Write the data, time both queries on both schedulers, and return a markdown report."""
    with tempfile.TemporaryDirectory(prefix="pandas-dp-bench-dask-") as tmp:
        directory = Path(tmp)
        start = time.perf_counter()
        in_memory = write_events(directory, rows)
        written = time.perf_counter() - start
        on_disk = sum(f.stat().st_size for f in directory.glob("*.parquet"))
        measured = {
            (name, scheduler): _in_fresh_process(name, scheduler, directory)
            for scheduler in ("cluster", "threads")
            for name in ("plain", "private")
        }
    mib = 2.0**20
    headers = ["measure", "pandas-dp", "plain Dask", "ratio"]
    return "\n".join(
        [
            f"### Dask: grouped count/sum/mean over {rows:,} rows in {FILES} parquet files "
            f"({len(COUNTRIES)} public keys)",
            "",
            f"Data: {on_disk / mib:,.0f} MiB of parquet, {in_memory / mib:,.0f} MiB as columns "
            f"in memory (written in {written:.0f} s). Each run is a fresh process.",
            "",
            "LocalCluster, two worker processes of one thread (the client also hosts the "
            "scheduler):",
            "",
            table(headers, _rows(measured["private", "cluster"], measured["plain", "cluster"])),
            "",
            "Threaded scheduler (the client process does all the work):",
            "",
            table(headers, _rows(measured["private", "threads"], measured["plain", "threads"])),
            "",
            "pandas-dp also shuffles the three columns by `user_id` to cap each user's rows "
            "(the plain query does no such thing).",
        ]
    )


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--phase":
        print(json.dumps(phase(sys.argv[2], sys.argv[3], sys.argv[4])))
    else:
        print(run(int(sys.argv[1]) if len(sys.argv) > 1 else ROWS))
