"""Releases under a privacy unit on pandas, against the pandas code they stand for (issue 43).

A grouped ``agg(n="count", m=("x", "mean"))`` over 20 public keys, one unit per 10 rows (ids
spread at random over the rows), ``max_rows_per_unit=5``, at each size in the same run:

- pandas-dp under the unit (every cap: groups per unit, rows per group, rows per unit);
- pandas' ``groupby(unit).head(5)`` and the same agg (the cap without its randomness);
- the plain pandas agg, and pandas-dp at row level (no unit).

Best of 3 wall times, the ratios, and the peak memory each release allocates (tracemalloc,
which numpy and pandas report their buffers to) next to pandas' ``head`` + agg. A second
table puts each ratio next to issue 43's goal: at most 1.5x pandas' ``head`` + agg at every
size, at most 1.5x its peak memory, and at most 5x the plain agg at 10**7 rows.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

import pandas_dp  # noqa: F401  (registers .dp)
from _util import best_time, table

SIZES = [100_000, 1_000_000, 10_000_000]
KEYS = [f"k{i:02d}" for i in range(20)]
CAP = 5
BOUNDS = (0.0, 100.0)
#: Issue 43's goals: × pandas' head + agg (every size), × its peak memory, × the plain agg.
HEAD_GOAL, PEAK_GOAL, PLAIN_GOAL = 1.5, 1.5, 5.0
#: The plain agg's goal holds from this size on (below it, fixed costs weigh most).
PLAIN_GOAL_ROWS = 10_000_000


def make_frame(rows: int) -> pd.DataFrame:
    """``rows`` rows: a public key of 20, a unit id per 10 rows on average, a value."""
    gen = np.random.default_rng(43)  # test-only: generates benchmark data, never noise
    return pd.DataFrame(
        {
            "key": np.array(KEYS)[gen.integers(0, len(KEYS), rows)],
            "unit": gen.integers(0, max(1, rows // 10), rows),
            "x": gen.uniform(0.0, 100.0, rows),
        }
    )


def _queries(frame: pd.DataFrame) -> dict[str, Callable[[], Any]]:
    budget = 1e6
    by_unit = frame.dp.protect(epsilon=budget, privacy_unit="unit", max_rows_per_unit=CAP)
    by_row = frame.dp.protect(epsilon=budget)

    def release(priv: pd.DataFrame) -> Any:
        return priv.dp.groupby("key", keys=KEYS).agg(
            n="count", m=("x", "mean"), bounds={"x": BOUNDS}, epsilon=1.0
        )

    def plain(data: pd.DataFrame) -> Any:
        return data.groupby("key").agg(n=("x", "count"), m=("x", "mean"))

    return {
        "unit": lambda: release(by_unit),
        "head": lambda: plain(frame.groupby("unit").head(CAP)),
        "plain": lambda: plain(frame),
        "row": lambda: release(by_row),
    }


def peak_bytes(fn: Callable[[], Any]) -> int:
    """The most memory ``fn()`` held at once beyond what was allocated before it ran."""
    gc.collect()
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def measure(rows: int, repeat: int = 3) -> list[object]:
    """One row of the table: times (ms), ratios and peak memory (MB) at ``rows`` rows."""
    frame = make_frame(rows)
    queries = _queries(frame)
    times = {name: best_time(fn, repeat=repeat) for name, fn in queries.items()}
    memory = {name: peak_bytes(queries[name]) / 2**20 for name in ("unit", "head")}
    return [
        f"{rows:.0e}".replace("e+0", "e"),
        times["unit"] * 1e3,
        times["head"] * 1e3,
        times["unit"] / times["head"],
        times["plain"] * 1e3,
        times["unit"] / times["plain"],
        times["row"] * 1e3,
        memory["unit"],
        memory["head"],
        memory["unit"] / memory["head"],
    ]


def run(sizes: list[int] | None = None, repeat: int = 3) -> str:
    """The unit-level table at each of ``sizes`` (default 10**5, 10**6, 10**7 rows)."""
    chosen = SIZES if sizes is None else sizes
    rows = [measure(n, repeat) for n in chosen]
    headers = [
        "rows", "dp, unit (ms)", "head(5)+agg (ms)", "× head", "plain agg (ms)", "× plain",
        "dp, row (ms)", "dp peak (MB)", "head peak (MB)", "× peak",
    ]  # fmt: skip
    goals = []
    for n, row in zip(chosen, rows, strict=True):
        head, plain, peak = (float(row[i]) for i in (3, 5, 9))  # type: ignore[arg-type]
        plain_goal = n >= PLAIN_GOAL_ROWS
        goals.append([
            row[0], head, f"≤ {HEAD_GOAL}", _met(head, HEAD_GOAL),
            plain, f"≤ {PLAIN_GOAL:g}" if plain_goal else "-",
            _met(plain, PLAIN_GOAL) if plain_goal else "-",
            peak, f"≤ {PEAK_GOAL}", _met(peak, PEAK_GOAL),
        ])  # fmt: skip
    goal_headers = [
        "rows", "× head", "goal", "met", "× plain", "goal", "met", "× peak", "goal", "met",
    ]  # fmt: skip
    return (
        "## Releases under a privacy unit (pandas)\n\n"
        f"`agg(n=count, m=mean)` over {len(KEYS)} public keys, one unit per 10 rows, "
        f"`max_rows_per_unit={CAP}`; best of {repeat}; peak memory by tracemalloc.\n\n"
        + table(headers, rows)
        + "\n\n### Goals (issue 43), measured in this run\n\n"
        + table(goal_headers, goals)
    )


def _met(ratio: float, goal: float) -> str:
    """``"yes"`` when ``ratio`` is within ``goal``, else ``"no"``."""
    return "yes" if ratio <= goal else "no"


if __name__ == "__main__":
    import sys

    quick = "--quick" in sys.argv
    print(run(SIZES[:2] if quick else SIZES))
