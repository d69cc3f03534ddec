"""Quantiles of tied data (issue 38): exact hits on a float column, rank error against OpenDP.

Two data sets, both built here with a fixed seed:

- **hours** (float64, as survey columns are when they hold a missing value): 9,000 rows at
  35, 4,000 at 39, 6,000 at 40, 11,000 spread uniformly over the integers 1-79, and 300
  missing values; bounds (0, 100). The true median is 39 (a tie block holds ``n/2``).
- **ties** (int64): 1,000 integers drawn uniformly from 0-28 (about 35 rows per value);
  bounds (0, 100).

Reported, for ε in {0.1, 1}:

- **median hits**: how many of ``runs`` seeded releases of ``hours``' median equal 39.0;
- **rank error** at q = 0.1, 0.5, 0.9: the mean over ``runs`` releases of the distance from
  ``q n`` to the released value's rank interval ``[#{x < c}, #{x <= c}]`` (0 when the value
  could sit at rank ``q n`` in the sorted data), for pandas-dp and for OpenDP's
  ``make_private_quantile`` (candidates: the integers 0-100; the scale found for ε by
  ``binary_search_param``). Without OpenDP installed the table says so and leaves that
  column out.

Every number is computed in the run.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

import pandas_dp
from _util import table

RUNS = 200
BOUNDS = (0.0, 100.0)
LEVELS = (0.1, 0.5, 0.9)
EPSILONS = (0.1, 1.0)


def hours_data(seed: int = 38) -> pd.Series:
    """The hours-like float64 column (true median 39)."""
    rng = np.random.default_rng(seed)  # data only, never noise
    values = np.concatenate(
        [
            np.full(9000, 35.0),
            np.full(4000, 39.0),
            np.full(6000, 40.0),
            rng.integers(1, 80, 11_000).astype(np.float64),
            np.full(300, np.nan),
        ]
    )
    return pd.Series(rng.permutation(values), name="x", dtype="float64")


def ties_data(seed: int = 39) -> pd.Series:
    """1,000 integers over 0-28: about 35 ties per value."""
    rng = np.random.default_rng(seed)
    return pd.Series(rng.integers(0, 29, 1000), name="x", dtype="int64")


def rank_error(ordered: np.ndarray, q: float, value: float) -> float:
    """Distance from ``q n`` to the rank interval of ``value`` in ``ordered``."""
    n = ordered.size
    below = np.searchsorted(ordered, value, side="left")
    at_most = np.searchsorted(ordered, value, side="right")
    return float(max(0.0, below - q * n, q * n - at_most))


def pandas_dp_releases(column: pd.Series, q: float, epsilon: float, runs: int) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)  # seeded: test-only
        priv = column.to_frame().dp.protect(epsilon=1e6, rng=int(1000 * q + 7 * epsilon))
        return np.array(
            [float(priv["x"].dp.quantile(q, bounds=BOUNDS, epsilon=epsilon)) for _ in range(runs)]
        )


def opendp_release_maker() -> Callable[[np.ndarray, float, float], Callable[[], float]] | None:
    """A factory of OpenDP quantile releases, or None when OpenDP is not installed."""
    try:
        import opendp.prelude as dp
    except ImportError:
        return None
    dp.enable_features("contrib")

    def maker(values: np.ndarray, q: float, epsilon: float) -> Callable[[], float]:
        candidates = [float(c) for c in range(int(BOUNDS[0]), int(BOUNDS[1]) + 1)]
        space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance()

        def build(scale: float) -> Any:
            return dp.m.make_private_quantile(
                *space, dp.max_divergence(), candidates=candidates, alpha=q, scale=scale
            )

        scale = dp.binary_search_param(build, d_in=1, d_out=epsilon)
        measurement = build(scale)
        data = [float(v) for v in values]
        return lambda: float(measurement(data))

    return maker


def run(runs: int = RUNS) -> str:
    """The report (markdown)."""
    maker = opendp_release_maker()
    hours = hours_data()
    ordered_hours = np.sort(hours.dropna().to_numpy())
    truth = float(hours.median())
    hit_rows = []
    for epsilon in EPSILONS:
        released = pandas_dp_releases(hours, 0.5, epsilon, runs)
        hit_rows.append([epsilon, f"{int(np.sum(released == truth))} / {runs}"])
    out = [
        f"Median of the hours-like float64 column (n = {ordered_hours.size:,} present, true "
        f"median {truth:g}), bounds {BOUNDS}: releases equal to the true median.",
        "",
        table(["ε", "hits (pandas-dp)"], hit_rows),
    ]
    for name, column in (("hours (float64)", hours), ("ties (int64, 1,000 rows)", ties_data())):
        ordered = np.sort(column.dropna().to_numpy(dtype=np.float64))
        rows = []
        for epsilon in EPSILONS:
            for q in LEVELS:
                ours = pandas_dp_releases(column, q, epsilon, runs)
                row: list[Any] = [epsilon, q, np.mean([rank_error(ordered, q, v) for v in ours])]
                if maker is not None:
                    draw = maker(ordered, q, epsilon)
                    theirs = [draw() for _ in range(runs)]
                    row.append(np.mean([rank_error(ordered, q, v) for v in theirs]))
                rows.append(row)
        headers = ["ε", "q", "rank error (pandas-dp)"]
        if maker is not None:
            headers.append("rank error (OpenDP, integers 0-100)")
        out += ["", f"Mean rank error over {runs} releases, {name}, bounds {BOUNDS}.", ""]
        out.append(table(headers, rows))
    if maker is None:
        out += ["", "OpenDP is not installed (pip install opendp): its column is left out."]
    return "\n".join(out)


if __name__ == "__main__":
    print(run())
