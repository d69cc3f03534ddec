"""Grouped releases on 5·10**7 rows of parquet with Dask, against plain Dask.

Writes ``rows`` synthetic events (``user_id``, ``country``, ``amount``) as parquet files to a
temporary directory, then runs each of these in a fresh Python process:

- plain Dask: ``read_parquet(...).groupby("country").agg(count, sum, mean)`` of the clipped
  amounts, reading the files as they are, and with ``user_id`` as index (divisions from the
  files' statistics);
- pandas-dp: ``dp.groupby("country", keys=...).agg(n="count", total=("amount", "sum"),
  spend=("amount", "mean"))`` after ``protect`` with one row per person (no unit column:
  nothing is moved), with ``privacy_unit="user_id", max_rows_per_unit=50`` (the user
  ids, amounts and key codes are exchanged by ``user_id``, so that each user's rows meet
  and are capped in one bucket), and with the same unit on the frame indexed by
  ``user_id`` (each partition caps its own users: nothing is moved);
- the Dask idiom for the same capped answer, without privacy: ``shuffle("user_id")``, then
  ``map_partitions`` of ``groupby("user_id", sort=False).head(50)`` (each user's first 50
  rows, not a random 50), then the plain group-by of the clipped amounts; on the frame
  indexed by ``user_id``, the same without the shuffle (files read through fsspec: see
  :func:`_read`). The releases under a unit are
  reported against it (``× idiom``) as well as against the plain query, which does not cap;

first on a ``LocalCluster`` (two worker processes, pieces moved between them as task results):
the client's peak RSS (``resource.getrusage``; it also hosts the scheduler) shows that no rows
come back, and the workers' peak memory (``distributed.diagnostics.MemorySampler``) what the
computation needs; then on the threaded scheduler, where the client process does all the
work (and holds every piece of the exchange in memory), so its peak RSS is the whole cost.

A second part (:func:`run_partitions`) holds the data fixed and raises the partition count:
``3·10^5`` rows in memory (``from_pandas``) in 200, 300 and 1,000 partitions, threaded
scheduler, each run in a fresh process: the same releases against the same plain Dask
group-by. Under a unit, past 128 partitions the exchange routes rows in stages, so its graph
grows like ``P·sqrt(P)`` rather than ``P²`` (before, Dask's shuffle took over past 256
partitions: 71-108 s at 300 partitions against 3.4-4.3 s for the plain query).

Opt-in from ``benchmarks/run.py`` with ``--dask`` (it writes about a gigabyte); on its own:
``python benchmarks/bench_dask.py [rows [repeats]]`` (``repeats``: median of that many runs
of each query), ``python benchmarks/bench_dask.py --partitions`` for the second part only, or
``python benchmarks/bench_dask.py --scaling [sizes...]`` (:func:`run_scaling`: each query once
at each size, default ``10^6 10^7 5e7 1e8``, then per query its times, its ratios to plain Dask,
the log-log slope of time against rows, and its ratios at ``10^8``, measured or extrapolated).
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

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
        first, last = (
            users * start // rows,
            max(users * (start + n) // rows, users * start // rows + 1),
        )
        table_ = pa.table(
            {
                "user_id": gen.integers(first, last, n),  # each file: its own range of users
                "country": names[gen.choice(len(names), n, p=weights / weights.sum())],
                "amount": np.round(gen.lognormal(3.5, 1.2, n), 2),
            }
        )
        in_memory += table_.nbytes
        # one row group a file: row groups' user ranges overlap, so more (pyarrow's default
        # caps them at 1,048,576 rows) would leave Dask no divisions from the statistics
        pq.write_table(table_, directory / f"part-{index:04d}.parquet", row_group_size=n)
    return in_memory


def _read(path: str, indexed: bool, arrow: bool = True) -> Any:
    """The events; ``indexed``: with ``user_id`` as index too, divisions from the files.

    ``arrow=False`` reads through fsspec: a LocalCluster cannot send Dask's P2P shuffle of
    a ``filesystem="arrow"`` read to its scheduler (pyarrow's ``FileInfo`` does not pickle).
    """
    import dask.dataframe as dd

    if not indexed:
        return dd.read_parquet(path, **({"filesystem": "arrow"} if arrow else {}))
    # (dask's "arrow" filesystem reads no divisions from the statistics: fsspec here)
    frame = dd.read_parquet(path, index="user_id", calculate_divisions=True)
    assert frame.known_divisions
    return frame.assign(user_id=frame.index)


def _plain(path: str, indexed: bool = False) -> object:
    frame = _read(path, indexed)
    clipped = frame.assign(amount=frame["amount"].clip(*BOUNDS))
    return (
        clipped.groupby("country")
        .agg(n=("amount", "size"), total=("amount", "sum"), spend=("amount", "mean"))
        .compute()
    )


def _capped_head(partition: pd.DataFrame, indexed: bool) -> pd.DataFrame:
    """Each user's first 50 rows of the partition (grouped by the index when it is the id)."""
    by: Any = {"level": "user_id"} if indexed else {"by": "user_id"}
    capped: pd.DataFrame = partition.groupby(**by, sort=False).head(50)
    return capped


def _idiom(path: str, indexed: bool = False) -> object:
    """The capped answer as a Dask user would write it, without privacy.

    Each user's rows are gathered by ``shuffle("user_id")`` (unless the frame is indexed by
    ``user_id`` with known divisions: each partition holds its users already), each user
    keeps their first 50 rows of the partition (``groupby("user_id").head(50)``: not a
    random choice, which would cost more), then the clipped amounts are aggregated.
    """
    frame = _read(path, indexed, arrow=False)
    if not indexed:
        frame = frame.shuffle("user_id")
    capped = frame.map_partitions(_capped_head, indexed, meta=frame._meta)
    clipped = capped.assign(amount=capped["amount"].clip(*BOUNDS))
    return (
        clipped.groupby("country")
        .agg(n=("amount", "size"), total=("amount", "sum"), spend=("amount", "mean"))
        .compute()
    )


def _private(path: str, unit: bool, indexed: bool = False) -> object:
    import pandas_dp  # noqa: F401

    frame = _read(path, indexed)
    units = {"privacy_unit": "user_id", "max_rows_per_unit": 50} if unit else {}
    priv = frame.dp.protect(epsilon=1.0, **units)
    return priv.dp.groupby("country", keys=COUNTRIES).agg(
        n="count", total=("amount", "sum"), spend=("amount", "mean"),
        bounds={"amount": BOUNDS}, epsilon=0.5,
    )  # fmt: skip


#: Each phase: a query, and the plain Dask query it is compared with.
QUERIES: dict[str, Callable[[str], object]] = {
    "plain": _plain,
    "plain, indexed by user": partial(_plain, indexed=True),
    "idiom: shuffle, head(50)": _idiom,
    "idiom, indexed: head(50)": partial(_idiom, indexed=True),
    "rows": partial(_private, unit=False),
    "users, exchanged": partial(_private, unit=True),
    "users, partition-local": partial(_private, unit=True, indexed=True),
}
BASELINE = {
    "rows": "plain",
    "users, exchanged": "plain",
    "users, partition-local": "plain, indexed by user",
}
#: The releases under a unit, and the non-private Dask idiom that gives the same capped answer.
IDIOM = {
    "users, exchanged": "idiom: shuffle, head(50)",
    "users, partition-local": "idiom, indexed: head(50)",
}


def phase(name: str, scheduler: str, path: str) -> dict[str, float]:
    """Run one phase in this process: wall time, peak client RSS and peak worker memory."""
    import dask.dataframe  # noqa: F401  imports are not part of the measurement

    import pandas_dp  # noqa: F401

    query = QUERIES[name]
    before = _peak_rss()
    workers = float("nan")
    if scheduler == "cluster":
        from distributed import Client, LocalCluster
        from distributed.diagnostics import MemorySampler

        sampler = MemorySampler()
        with (
            LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster,
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


def _memory(measured: dict[str, float]) -> float:
    """Peak memory of the computation (MiB): both workers on a cluster, else the client."""
    peak = (
        measured["workers"] if measured["workers"] == measured["workers"] else measured["peak_rss"]
    )
    return peak / 2.0**20


def _table(measured: dict[str, dict[str, float]]) -> str:
    """One row per release: time and peak memory next to its plain-Dask baseline.

    Releases under a unit are also set against the Dask idiom that caps each user's rows
    (:func:`_idiom`): ``× idiom`` columns; ``-`` where there is none (one row per person).
    """
    rows = []
    for name, baseline in BASELINE.items():
        ours, base = measured[name], measured[baseline]
        idiom = measured[IDIOM[name]] if name in IDIOM else None
        rows.append(
            [
                name, baseline, ours["seconds"], base["seconds"], ours["seconds"] / base["seconds"],
                "-" if idiom is None else idiom["seconds"],
                "-" if idiom is None else ours["seconds"] / idiom["seconds"],
                _memory(ours), _memory(base), _memory(ours) / _memory(base),
                "-" if idiom is None else _memory(idiom),
                "-" if idiom is None else _memory(ours) / _memory(idiom),
                ours["peak_rss"] / base["peak_rss"],
            ]
        )  # fmt: skip
    headers = [
        "pandas-dp release", "plain Dask query", "time (s)", "plain (s)", "time ratio",
        "idiom (s)", "time × idiom", "peak memory (MiB)", "plain (MiB)", "memory ratio",
        "idiom (MiB)", "memory × idiom", "client RSS ratio",
    ]  # fmt: skip
    return table(headers, rows)


def _measure(
    rows: int, repeats: int = 1, schedulers: tuple[str, ...] = ("cluster", "threads")
) -> tuple[dict[str, dict[str, dict[str, float]]], tuple[int, int, float]]:
    """Write ``rows`` events and time every query on each scheduler in fresh processes.

    Returns the medians over ``repeats`` runs (scheduler -> query -> figure), and the data's
    bytes in memory, bytes on disk and seconds to write.
    """
    with tempfile.TemporaryDirectory(prefix="pandas-dp-bench-dask-") as tmp:
        directory = Path(tmp)
        start = time.perf_counter()
        in_memory = write_events(directory, rows)
        written = time.perf_counter() - start
        on_disk = sum(f.stat().st_size for f in directory.glob("*.parquet"))
        measured: dict[str, dict[str, dict[str, float]]] = {}
        for scheduler in schedulers:
            runs: dict[str, list[dict[str, float]]] = {}
            for _ in range(repeats):
                for name in QUERIES:
                    runs.setdefault(name, []).append(_in_fresh_process(name, scheduler, directory))
            measured[scheduler] = {
                name: {k: float(np.median([r[k] for r in done])) for k in done[0]}
                for name, done in runs.items()
            }
    return measured, (in_memory, on_disk, written)


def run(rows: int = ROWS, repeats: int = 1) -> str:
    """Write the data, time every query on both schedulers, and return a markdown report.

    With ``repeats`` above one, the queries run in turn (plain, rows, ..., then again), each
    in a fresh process, and every figure is the median of its ``repeats`` runs: on a shared
    machine one run of each can be off by a factor of two.
    """
    measured, (in_memory, on_disk, written) = _measure(rows, repeats)
    mib = 2.0**20
    medians = "" if repeats == 1 else f"; each figure the median of {repeats}, queries interleaved"
    return "\n".join(
        [
            f"### Dask: grouped count/sum/mean over {rows:,} rows in {FILES} parquet files "
            f"({len(COUNTRIES)} public keys)",
            "",
            f"Data: {on_disk / mib:,.0f} MiB of parquet, {in_memory / mib:,.0f} MiB as columns "
            f"in memory (written in {written:.0f} s), each file holding its own range of users. "
            f"Each run is a fresh process{medians}. "
            "Releases: `rows` protects with one row per person (no unit column, nothing "
            "moved); `users, exchanged` caps each user at 50 rows "
            "after exchanging the user ids, amounts and key codes by `user_id`; "
            "`users, partition-local` reads the files with `user_id` as index (divisions "
            "from the parquet statistics) and caps each user within its partition. "
            "`idiom`: the same cap without privacy, as a Dask user would write it "
            '(`shuffle("user_id")`, or nothing when indexed, then '
            '`groupby("user_id").head(50)` per partition, then the group-by).',
            "",
            "LocalCluster, two worker processes of one thread (peak memory: both workers, "
            "sampled; the client also hosts the scheduler):",
            "",
            _table(measured["cluster"]),
            "",
            "Threaded scheduler (the client process does all the work; peak memory: its RSS):",
            "",
            _table(measured["threads"]),
        ]
    )


#: The sizes of the scaling part (rows), and the size its ratios are given at.
SCALING_SIZES = (10**6, 10**7, 5 * 10**7, 10**8)
SCALING_TARGET = 10**8
#: Every query's plain Dask counterpart in the scaling table (the idioms' too).
PLAIN = {
    **BASELINE,
    "idiom: shuffle, head(50)": "plain",
    "idiom, indexed: head(50)": "plain, indexed by user",
}


def run_scaling(
    sizes: tuple[int, ...] = SCALING_SIZES, schedulers: tuple[str, ...] = ("cluster", "threads")
) -> str:
    """How each query's time grows with the rows: a markdown table per scheduler.

    For each scheduler and size, :func:`_measure` writes fresh data and times every query
    once (fresh processes, as :func:`run`); the figures also go to stderr as a JSON line. The
    table gives, per query, its time at each size, its ratio to the plain Dask query at each
    size, the slope ``b`` of ``time ∝ rows**b`` (least squares on log time against log rows
    over all sizes), and the ratios to plain Dask and to the idiom at ``SCALING_TARGET``
    rows: measured if that size ran, otherwise each query's fitted time there, extrapolated.
    """
    measured: dict[int, dict[str, dict[str, dict[str, float]]]] = {n: {} for n in sizes}
    for scheduler in schedulers:  # all sizes on the cluster first: the data is written twice
        for rows in sizes:
            measured[rows][scheduler] = _measure(rows, 1, (scheduler,))[0][scheduler]
            line = {"rows": rows, "scheduler": scheduler, "measured": measured[rows][scheduler]}
            print(json.dumps(line), file=sys.stderr, flush=True)
    parts = [
        f"### Dask: time against rows ({', '.join(f'{n:,}' for n in sizes)}), one run each",
        "",
    ]
    for scheduler in schedulers:
        parts += [f"{scheduler}:", "", _scaling_table(measured, scheduler), ""]
    return "\n".join(parts)


def _scaling_table(
    measured: dict[int, dict[str, dict[str, dict[str, float]]]], scheduler: str
) -> str:
    sizes = sorted(measured)
    seconds = {q: np.array([measured[n][scheduler][q]["seconds"] for n in sizes]) for q in QUERIES}
    fits = {q: np.polyfit(np.log(sizes), np.log(t), 1) for q, t in seconds.items()}
    at_target = {  # measured at the target size, else extrapolated along each fit
        q: t[sizes.index(SCALING_TARGET)]
        if SCALING_TARGET in sizes
        else float(np.exp(np.polyval(fits[q], np.log(SCALING_TARGET))))
        for q, t in seconds.items()
    }
    how = "measured" if SCALING_TARGET in sizes else "extrapolated"
    rows = []
    for q, t in seconds.items():
        base = PLAIN.get(q)
        ratios = ["-"] * len(sizes) if base is None else list(t / seconds[base])
        rows.append(
            [q, *t, *ratios, fits[q][0],
             "-" if base is None else at_target[q] / at_target[base],
             at_target[q] / at_target[IDIOM[q]] if q in IDIOM else "-"]
        )  # fmt: skip
    target = f"{SCALING_TARGET:.0e}".replace("e+0", "e")
    headers = [
        "query", *(f"s @ {n:.0e}".replace("e+0", "e") for n in sizes),
        *(f"× plain @ {n:.0e}".replace("e+0", "e") for n in sizes), "slope b",
        f"× plain @ {target} ({how})", f"× idiom @ {target} ({how})",
    ]  # fmt: skip
    return table(headers, rows)


#: The partition counts of the second part, and its rows (all in memory).
PARTITIONS = (200, 300, 1000)
PARTITION_ROWS = 300_000
#: Its runs: each release, and the plain Dask query, in a fresh process this many times.
PARTITION_REPEATS = 3


def _events_in_memory(rows: int) -> pd.DataFrame:
    gen = np.random.default_rng(5)  # test-only: generates benchmark data, never noise
    return pd.DataFrame(
        {
            "user_id": gen.integers(0, max(rows // ROWS_PER_USER, 1), rows),
            "country": np.array(COUNTRIES)[gen.integers(0, len(COUNTRIES), rows)],
            "amount": np.round(gen.lognormal(3.5, 1.2, rows), 2),
        }
    )


def partition_phase(name: str, partitions: int, rows: int) -> dict[str, float]:
    """One query on ``rows`` in-memory rows in ``partitions`` partitions (threaded)."""
    import dask
    import dask.dataframe as dd

    import pandas_dp

    frame = dd.from_pandas(_events_in_memory(rows), npartitions=partitions)
    assert frame.npartitions == partitions
    if name == "plain":
        clipped = frame.assign(amount=frame["amount"].clip(*BOUNDS))
        query: Callable[[], object] = (
            clipped.groupby("country")
            .agg(n=("amount", "size"), total=("amount", "sum"), spend=("amount", "mean"))
            .compute
        )
    else:
        units = {"privacy_unit": "user_id", "max_rows_per_unit": 50} if name != "rows" else {}
        priv = frame.dp.protect(epsilon=1e6, **units)  # (one budget for the warm-up too)

        def query() -> object:
            return priv.dp.groupby("country", keys=COUNTRIES).agg(
                n="count", total=("amount", "sum"), spend=("amount", "mean"),
                bounds={"amount": BOUNDS}, epsilon=1.0,
            )  # fmt: skip

    import warnings

    with dask.config.set(scheduler="threads"), warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
        before = _peak_rss()
        start = time.perf_counter()
        result = query()
        seconds = time.perf_counter() - start
    assert isinstance(result, pd.DataFrame)
    assert len(result) == len(COUNTRIES)
    return {"seconds": seconds, "peak_rss": _peak_rss(), "rss_before": before}


def _partition_run(name: str, partitions: int, rows: int) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, __file__, "--partition-phase", name, str(partitions), str(rows)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    measured: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return measured


def run_partitions(
    rows: int = PARTITION_ROWS,
    partitions: tuple[int, ...] = PARTITIONS,
    repeats: int = PARTITION_REPEATS,
) -> str:
    """Releases against plain Dask as the partition count grows: a markdown report.

    Runs are interleaved (plain, rows, users; plain, rows, users; ...) so that load on the
    machine weighs alike on all three; each figure is the median over ``repeats`` fresh
    processes. Memory: the peak RSS, and its growth during the query (the peak minus the
    RSS once the data and the imports are in memory).
    """
    names = {"plain": "plain Dask group-by", "rows": "rows", "users": "users, exchanged"}
    lines = []
    for count in partitions:
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in names}
        for _ in range(repeats):
            for name in names:
                runs[name].append(_partition_run(name, count, rows))
        median = {
            name: {k: float(np.median([r[k] for r in measured])) for k in measured[0]}
            for name, measured in runs.items()
        }
        base = median["plain"]
        for name, label in names.items():
            ours = median[name]
            growth = (ours["peak_rss"] - ours["rss_before"]) / 2.0**20
            base_growth = (base["peak_rss"] - base["rss_before"]) / 2.0**20
            lines.append(
                [
                    count, label, ours["seconds"], ours["seconds"] / base["seconds"],
                    ours["peak_rss"] / 2.0**20, ours["peak_rss"] / base["peak_rss"],
                    growth, growth / max(base_growth, 1.0),
                ]
            )  # fmt: skip
    headers = [
        "partitions", "query", "time (s)", "time / plain", "peak RSS (MiB)", "RSS / plain",
        "growth (MiB)", "growth / plain",
    ]  # fmt: skip
    return "\n".join(
        [
            f"### Dask: grouped count/sum/mean of {rows:,} in-memory rows, by partition count",
            "",
            "Threaded scheduler, `from_pandas`; each figure the median of "
            f"{repeats} fresh processes, the three queries interleaved. `users, exchanged` caps "
            "each user at 50 rows after the exchange by `user_id` (one stage up to 128 "
            "partitions, then two or three). Growth: peak RSS minus the RSS before the query "
            "(data and imports already in memory; at least 1 MiB in the ratio).",
            "",
            table(headers, lines),
        ]
    )


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--phase":
        print(json.dumps(phase(sys.argv[2], sys.argv[3], sys.argv[4])))
    elif len(sys.argv) == 5 and sys.argv[1] == "--partition-phase":
        print(json.dumps(partition_phase(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))))
    elif len(sys.argv) > 1 and sys.argv[1] == "--scaling":
        print(run_scaling(tuple(int(float(a)) for a in sys.argv[2:]) or SCALING_SIZES))
    elif len(sys.argv) > 1 and sys.argv[1] == "--partitions":
        print(run_partitions(*(int(a) for a in sys.argv[2:3])))
    else:
        sizes = [int(a) for a in sys.argv[1:3]]
        print(run(*sizes) + "\n\n" + run_partitions())
