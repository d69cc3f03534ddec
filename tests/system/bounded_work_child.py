"""The child process of the release × accountant matrix (tests/system/test_bounded_work.py).

Run as ``python bounded_work_child.py '<json list of [family, accounting, noise]>'``: it caps
its address space at 2 GiB, runs each cell on a fresh protected frame under a 60 s alarm,
and prints one JSON line per cell: what happened, the time, whether the budget moved, and
the cell's own peak RSS.

The peak is the address space's high-water mark (``VmHWM``), reset before each cell, read
from ``/proc``: ``getrusage``'s ``ru_maxrss`` survives ``exec`` on Linux, so a child of a
large test process would report its parent's peak instead of its own.
"""

from __future__ import annotations

import json
import resource
import signal
import sys
import time
import warnings

import numpy as np
import pandas as pd

LIMIT_BYTES = 2 * 1024**3
CELL_SECONDS = 60
G, K = ["a", "b", "c"], ["x", "y"]
T0, T1 = pd.Timestamp("2024-01-01"), pd.Timestamp("2025-01-01")
B = {"x": (0.0, 10.0), "y": (0.0, 10.0)}


def frame(unit: bool = False) -> pd.DataFrame:
    """200 rows; with ``unit``, a privacy unit ``pid`` of one to three rows each."""
    gen = np.random.default_rng(5)  # test data only, never noise
    n = 200
    data = pd.DataFrame(
        {
            "g": gen.choice(G, n),
            "k": gen.choice(K, n),
            "x": gen.uniform(0, 10, n),
            "y": gen.uniform(0, 10, n),
            "t": T0 + pd.to_timedelta(gen.integers(0, 366 * 86400, n), unit="s"),
        }
    )
    if unit:
        data["pid"] = np.sort(gen.integers(0, 100, n))
    return data


def noise(gaussian: bool) -> dict:
    return {"epsilon": 1.0, "mechanism": "gaussian"} if gaussian else {"epsilon": 1.0}


def tables_noise(gaussian: bool) -> dict:
    return {"epsilon": 1.0, "delta": 1e-6 if gaussian else 0}


FAMILIES = {
    "count": lambda p, n: p.dp.count(**n),
    "sum": lambda p, n: p.dp.sum("x", bounds=B["x"], **n),
    "mean": lambda p, n: p.dp.mean("x", bounds=B["x"], **n),
    "var": lambda p, n: p.dp.var("x", bounds=B["x"], **n),
    "std": lambda p, n: p["x"].dp.std(bounds=B["x"], **n),
    "quantile": lambda p, n: p.dp.quantile("x", [0.25, 0.75], bounds=B["x"], **n),
    "median": lambda p, n: p["x"].dp.median(bounds=B["x"], **n),
    "mode": lambda p, n: p["g"].dp.mode(candidates=G, **n),
    "top_k": lambda p, n: p["g"].dp.top_k(2, candidates=G, **n),
    "describe": lambda p, n: p.dp.describe(bounds=B, **n),
    "groupby.agg": lambda p, n: p.dp.groupby("g", keys=G).agg(
        s=("x", "sum"), m=("x", "mean"), bounds=B, **n
    ),
    "groupby.size": lambda p, n: p.dp.groupby("g", keys=G).size(**n),
    "groupby.count": lambda p, n: p.dp.groupby("g", keys=G)["x"].count(**n),
    "value_counts": lambda p, n: p["g"].dp.value_counts(keys=G, **n),
    "crosstab": lambda p, n: p.dp.crosstab("g", "k", keys={"g": G, "k": K}, **n),
    "pivot_table": lambda p, n: p.dp.pivot_table(
        "x", "g", "k", keys={"g": G, "k": K}, bounds=B["x"], **n
    ),
    "histogram": lambda p, n: p["x"].dp.histogram(bins=[0, 2.5, 5, 7.5, 10], **n),
    "cov": lambda p, n: p.dp.cov(["x", "y"], bounds=B, **n),
    "corr": lambda p, n: p.dp.corr(["x", "y"], bounds=B, **n),
    "ols": lambda p, n: p.dp.ols("y ~ x + C(g)", bounds=B, keys={"g": G}, **n),
    "logit": lambda p, n: p.dp.logit("I(y > 5) ~ x + C(g)", bounds=B, keys={"g": G}, **n),
    "resample.size": lambda p, n: p.dp.resample("MS", on="t", range=(T0, T1)).size(**n),
    "running_totals": lambda p, n: p.dp.resample("D", on="t", range=(T0, T1)).size(
        cumulative=True, **n
    ),
    "tables": lambda p, n: p.dp.tables([["g", "k"], ["g"]], keys={"g": G, "k": K}, **n),
    "hierarchy": lambda p, n: p.dp.hierarchy(["g", "k"], keys={"g": G, "k": K}).count(**n),
    "synthesize": lambda p, n: p.dp.synthesize(["g", "k"], keys={"g": G, "k": K}, rows=50, **n),
    # bounds and caps released from the data (issue 41): a bounds scan, and the releases that
    # run one first with a share of their epsilon (charged as one release)
    "bounds": lambda p, n: p.dp.bounds(["x", "y"], **n),
    "mean.bounds_auto": lambda p, n: p.dp.mean("x", bounds="auto", **n),
    "histogram.range_auto": lambda p, n: p["x"].dp.histogram(bins=4, range="auto", **n),
    "groupby.count.max_groups_auto": lambda p, n: p.dp.groupby(
        "g", keys=G, max_groups_per_unit="auto"
    )["x"].count(**n),
    # the release is protect's own: the cap scan, charged to the new session
    "protect.max_rows_auto": lambda p, n: p,
}
#: Families whose noise kind is chosen by δ (Gaussian when δ > 0), not by ``mechanism``.
BY_DELTA = {"tables", "synthesize"}
#: Families run on a frame protected under the privacy unit ``pid`` (≤ 3 rows each).
UNIT = {"groupby.count.max_groups_auto": 3}
#: Families whose release is ``protect(..., max_rows_per_unit="auto")`` itself: it takes no
#: noise kind, so the Gaussian cell gives the budget as ``rho`` (the Gaussian's accounting).
AT_PROTECT = {"protect.max_rows_auto"}


def protect(family: str, accounting: str, gaussian: bool) -> pd.DataFrame:
    if family in AT_PROTECT:
        budget: dict = {"rho": 1.0} if gaussian else {"epsilon": 10.0, "delta": 1e-5}
        return frame(unit=True).dp.protect(
            **budget, accounting=accounting, privacy_unit="pid", max_rows_per_unit="auto"
        )
    if family in UNIT:
        return frame(unit=True).dp.protect(
            epsilon=10.0,
            delta=1e-5,
            accounting=accounting,
            privacy_unit="pid",
            max_rows_per_unit=UNIT[family],
        )
    return frame().dp.protect(epsilon=10.0, delta=1e-5, accounting=accounting)


def run_cell(family: str, accounting: str, kind: str) -> dict:
    import pandas_dp  # noqa: F401

    gaussian = kind == "gaussian"
    session = None  # at protect, the session the release makes (None if refused)
    if family not in AT_PROTECT:
        priv = protect(family, accounting, gaussian)
        session = priv.dp.session
    before_spent = session.spent if session is not None else None
    before_n = len(session.releases) if session is not None else 0
    args = tables_noise(gaussian) if family in BY_DELTA else noise(gaussian)
    start = time.perf_counter()
    outcome, error = "released", ""
    signal.alarm(CELL_SECONDS)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if family in AT_PROTECT:
                session = protect(family, accounting, gaussian).dp.session
            else:
                FAMILIES[family](priv, args)
    except Exception as exc:  # recorded: the parent asserts it was refused uncharged
        outcome, error = "raised", f"{type(exc).__name__}: {exc}"[:300]
    finally:
        signal.alarm(0)
    seconds = time.perf_counter() - start
    after_n = len(session.releases) if session is not None else 0
    # a refused protect makes no session: nothing was charged
    unchanged = session is None or (session.spent == before_spent and after_n == before_n)
    return {
        "family": family,
        "accounting": accounting,
        "noise": kind,
        "outcome": outcome,
        "error": error,
        "seconds": seconds,
        "charged": after_n - before_n,
        "unchanged": unchanged,
        "error_type": error.split(":")[0],
        "peak_rss_mb": peak_rss_mb(),
    }


_STATUS = "/proc/self/status"


def reset_peak_rss() -> None:
    """Start a new high-water mark of the resident set (Linux; elsewhere a no-op)."""
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
    except OSError:
        pass


def peak_rss_mb() -> float:
    """The resident set's high-water mark since the last reset (or since exec), in MB."""
    try:
        with open(_STATUS) as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # at least the peak


def main() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_BYTES, LIMIT_BYTES))

    def timeout(*_: object) -> None:
        raise TimeoutError(f"cell over {CELL_SECONDS} s")

    signal.signal(signal.SIGALRM, timeout)
    cells = json.loads(sys.argv[1])
    for cell in cells:
        reset_peak_rss()
        try:
            row = run_cell(*cell)
        except BaseException as exc:  # MemoryError, TimeoutError outside the release
            row = {
                "family": cell[0],
                "accounting": cell[1],
                "noise": cell[2],
                "outcome": "crashed",
                "error": repr(exc)[:300],
            }
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
