"""Fixed costs (issue 28): small releases, where the per-call overhead is the whole time.

On 1,000 rows a pandas aggregate takes tens of microseconds, so what a release costs beyond
it (validation, planning, accounting, noise, shaping) is what an analyst waits for at every
cell of a notebook. Each release is timed next to the plain pandas computation it stands for,
in the same run on the same frame: milliseconds per call, best of 5 runs of ``LOOPS`` calls.
The last line is the import: ``import pandas_dp`` after ``import pandas`` in a fresh
interpreter (median of 10, bytecode cached as in an installed package), next to
``import pandas`` itself.

A second table puts issue 43's two fixed-cost goals next to what this run measured: a mean's
fixed cost on 1,000 rows against pandas' grouped ``agg`` of the same frame (goal at most
0.2×), and a grouped count over 10**6 public integer keys on 10**6 rows (about one row per
key, where the release's own work weighs most) against ``groupby().size()`` (goal at most
1.5×).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import pandas_dp
from _util import best_time, table
from bench_groupby import many_keys

SMALL = 1_000
LARGE = 100_000
FEW_KEYS = 4
MANY_KEYS = 1_000
LOOPS = 20
IMPORTS = 10
BOUNDS = (0.0, 100.0)
GOAL_KEYS = 1_000_000
MEAN_GOAL = 0.2  # issue 43: a mean's fixed cost, against pandas' grouped agg of the frame
COUNT_GOAL = 1.5  # issue 43: a count over 10**6 public keys, against groupby().size()


def make_frame(rows: int, keys: int) -> tuple[pd.DataFrame, list[str]]:
    """``rows`` rows over ``keys`` string keys (all present), values uniform in the bounds."""
    gen = np.random.default_rng(5)  # test-only: generates benchmark data, never noise
    names = [f"k{i:04d}" for i in range(keys)]
    codes = np.arange(rows) % keys
    gen.shuffle(codes)
    frame = pd.DataFrame({"key": np.array(names)[codes], "x": gen.uniform(*BOUNDS, rows)})
    return frame, names


def per_call(fn: Callable[[], Any], loops: int = LOOPS) -> float:
    """Milliseconds per call of ``fn``: best of 5 runs of ``loops`` calls."""
    return best_time(lambda: [fn() for _ in range(loops)]) / loops * 1e3


def import_seconds(module: str, after: str = "", runs: int = IMPORTS) -> float:
    """Median wall time of ``import module`` (after ``import after``) in fresh interpreters.

    Bytecode is written to a private cache on a first, untimed run and read by the timed
    ones, as from an installed package (this process may run with PYTHONDONTWRITEBYTECODE).
    """
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="bench-pyc-")
    here = str(Path(pandas_dp.__file__).resolve().parents[1])  # the pandas_dp timed below
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [here, env.get("PYTHONPATH")]))
    before = f"import {after}; " if after else ""
    code = f"import time; {before}t = time.perf_counter(); import {module}; "
    code += "print(time.perf_counter() - t)"

    def once() -> float:
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        return float(done.stdout)

    once()
    return statistics.median(once() for _ in range(runs))


def run(small: int = SMALL, large: int = LARGE) -> str:
    """Time each small release next to its pandas counterpart; return a markdown report."""
    tiny, tiny_keys = make_frame(small, FEW_KEYS)
    big, big_keys = make_frame(large, MANY_KEYS)
    tiny_priv = tiny.dp.protect(epsilon=1e6)
    big_priv = big.dp.protect(epsilon=1e6)
    cases = [
        (f"count, {small:,} rows", lambda: tiny_priv.dp.count(epsilon=1.0), lambda: len(tiny)),
        (f"mean of one column, {small:,} rows",
         lambda: tiny_priv.dp.mean("x", bounds=BOUNDS, epsilon=1.0),
         lambda: tiny["x"].clip(*BOUNDS).mean()),
        (f"grouped count, {FEW_KEYS} keys, {small:,} rows",
         lambda: tiny_priv.dp.groupby("key", keys=tiny_keys).count(epsilon=1.0),
         lambda: tiny.groupby("key").size()),
        (f"grouped agg(count, mean), {FEW_KEYS} keys, {small:,} rows",
         lambda: tiny_priv.dp.groupby("key", keys=tiny_keys).agg(
             n="count", m=("x", "mean"), bounds={"x": BOUNDS}, epsilon=1.0),
         lambda: tiny.assign(x=tiny["x"].clip(*BOUNDS)).groupby("key").agg(
             n=("x", "size"), m=("x", "mean"))),
        (f"grouped count, {MANY_KEYS:,} keys, {large:,} rows",
         lambda: big_priv.dp.groupby("key", keys=big_keys).count(epsilon=1.0),
         lambda: big.groupby("key").size()),
        (f"grouped agg(sum, mean), {MANY_KEYS:,} keys, {large:,} rows",
         lambda: big_priv.dp.groupby("key", keys=big_keys).agg(
             s=("x", "sum"), m=("x", "mean"), bounds={"x": BOUNDS}, epsilon=1.0),
         lambda: big.assign(x=big["x"].clip(*BOUNDS)).groupby("key").agg(
             s=("x", "sum"), m=("x", "mean"))),
    ]  # fmt: skip
    rows_out: list[list[object]] = []
    for name, ours, base in cases:
        t_ours, t_base = per_call(ours), per_call(base)
        rows_out.append([name, t_ours, t_base, t_ours / t_base])
    mean, agg = rows_out[1][1], rows_out[3][2]  # the mean; pandas' grouped agg, same frame
    count_name, count_ours, count_base, count_ratio = many_keys(GOAL_KEYS, GOAL_KEYS)
    goals = [
        [f"mean of one column vs pandas' grouped agg, {small:,} rows", mean, agg, mean / agg,
         f"≤ {MEAN_GOAL}", _met(mean / agg, MEAN_GOAL)],
        [f"{count_name}, {GOAL_KEYS:,} rows", count_ours, count_base, count_ratio,
         f"≤ {COUNT_GOAL}", _met(float(count_ratio), COUNT_GOAL)],
    ]  # fmt: skip
    dp_import = import_seconds("pandas_dp", after="pandas") * 1e3
    pandas_import = import_seconds("pandas") * 1e3
    rows_out.append(
        [
            "import (after pandas; vs import pandas)",
            dp_import,
            pandas_import,
            dp_import / pandas_import,
        ]
    )
    return "\n".join(
        [
            f"### Fixed costs: small releases (ms per call, best of 5 x {LOOPS} calls)",
            "",
            table(["release", "pandas-dp", "plain pandas", "ratio"], rows_out),
            "",
            "A count's pandas counterpart is O(1) `len()`; its absolute time is what matters. "
            f"Import: median of {IMPORTS} fresh interpreters, bytecode cached.",
            "",
            "### Fixed-cost goals (issue 43), measured in this run (ms per call)",
            "",
            table(["release", "pandas-dp", "pandas", "ratio", "goal", "met"], goals),
            "",
            "The mean's pandas column is the grouped agg(count, mean) of the same frame (table "
            "above); the count's is `groupby().size()`, best of 3.",
        ]
    )


def _met(ratio: float, goal: float) -> str:
    """``"yes"`` when ``ratio`` is within ``goal``, else ``"no"``."""
    return "yes" if ratio <= goal else "no"


if __name__ == "__main__":
    print(run())
