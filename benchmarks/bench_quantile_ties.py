"""Quantiles of tied data (issue 38): exact hits on a float column, rank error against OpenDP.

Two data sets, both built here with a fixed seed:

- **hours** (float64, as survey columns are when they hold a missing value): 9,000 rows at
  35, 4,000 at 39, 6,000 at 40, 11,000 spread uniformly over the integers 1-79, and 300
  missing values; bounds (0, 100). The true median is 39 (a tie block holds ``n/2``).
- **ties** (int64): 1,000 integers drawn uniformly from 0-28 (about 35 rows per value);
  bounds (0, 100).

Reported, for ε in {0.1, 1}:

- **median hits**: how many of ``runs`` seeded releases of ``hours``' median equal 39.0;
- **rank error** at q = 0.1, 0.5, 0.9: the distance from ``q n`` to the released value's rank
  interval ``[#{x < c}, #{x <= c}]`` (0 when the value could sit at rank ``q n`` in the sorted
  data). For pandas-dp its *expected* value, exact: one release per case records the scores
  its sampler draws from (permute-and-flip with the exponential mechanism's weights, a
  pure-ε session; every release of the case draws from that law), and the rank errors are
  averaged under the law's probabilities (:meth:`ExponentialMechanism.probabilities`, the
  permute-and-flip law when ``flip``). For OpenDP's
  ``make_private_quantile`` (candidates: the integers 0-100; the scale found for ε by
  ``binary_search_param``) the mean over ``opendp_runs`` releases, with twice its standard
  error. The ties are measured on ``SEEDS`` data sets (one seed's numbers move by a fraction of
  a rank from one data set to the next, which 200 releases cannot resolve). Without OpenDP
  installed the table says so and leaves that column out.

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
from pandas_dp.measures.grids import quantile_candidates
from pandas_dp.mechanisms.exponential import ExponentialMechanism
from pandas_dp.mechanisms.quantile import DEFAULT_CELLS, grid_cells

RUNS = 200
OPENDP_RUNS = 2000
SEEDS = (39, 40, 41, 42, 43)
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


def pandas_dp_law(column: pd.Series, q: float, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """The candidates and the probabilities one release of the q-quantile draws them with.

    The release's mechanism is wrapped to record its scores (it still draws); the law is
    :meth:`ExponentialMechanism.probabilities` of those scores (permute-and-flip's here).
    """
    seen: list[tuple[ExponentialMechanism, np.ndarray, int]] = []
    original = ExponentialMechanism.choose

    def recording(self: ExponentialMechanism, scores: Any, denominator: int, source: Any) -> Any:
        seen.append((self, np.array(scores, copy=True), denominator))
        return original(self, scores, denominator, source)

    ExponentialMechanism.choose = recording  # type: ignore[method-assign]
    try:
        pandas_dp_releases(column, q, epsilon, 1)
    finally:
        ExponentialMechanism.choose = original  # type: ignore[method-assign]
    ((mechanism, scores, denominator),) = seen
    law = mechanism.probabilities(scores[0].astype(np.float64) / denominator)
    integer = column.dtype.kind in "iu"
    cells = grid_cells(*BOUNDS, DEFAULT_CELLS, integer)
    rounding = "grid" if integer and cells == BOUNDS[1] - BOUNDS[0] else "number"
    candidates = quantile_candidates(*BOUNDS, cells, rounding)
    assert candidates.size == law.size
    return candidates, law


def expected_rank_error(ordered: np.ndarray, q: float, candidates: np.ndarray, law: np.ndarray):
    """The rank error averaged under ``law`` over ``candidates`` (exact)."""
    return float(sum(p * rank_error(ordered, q, c) for c, p in zip(candidates, law, strict=True)))


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


def run(runs: int = RUNS, opendp_runs: int = OPENDP_RUNS) -> str:
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
    ties = [ties_data(seed) for seed in SEEDS]
    cases = [
        ("hours (float64)", [hours]),
        # What OpenDP is given here, the integers as candidates, is what a nullable integer
        # column gets: the user who knows the data are whole numbers says so by its dtype.
        ("hours as Int64 (the integers as candidates)", [hours.astype("Int64")]),
        (f"ties (int64, 1,000 rows), {len(SEEDS)} data sets", ties),
    ]
    for name, columns in cases:
        rows = []
        for epsilon in EPSILONS:
            for q in LEVELS:
                ours, theirs = [], []
                for column in columns:
                    ordered = np.sort(column.dropna().to_numpy(dtype=np.float64))
                    ours.append(expected_rank_error(ordered, q, *pandas_dp_law(column, q, epsilon)))
                    if maker is not None:
                        draw = maker(ordered, q, epsilon)
                        theirs += [rank_error(ordered, q, draw()) for _ in range(opendp_runs)]
                row: list[Any] = [epsilon, q, float(np.mean(ours))]
                if maker is not None:
                    spread = 2 * np.std(theirs, ddof=1) / np.sqrt(len(theirs))
                    row.append(f"{np.mean(theirs):.3f} ± {spread:.3f}")
                rows.append(row)
        headers = ["ε", "q", "expected rank error (pandas-dp, exact)"]
        if maker is not None:
            headers.append(f"rank error (OpenDP, integers 0-100; {opendp_runs:,} releases each)")
        out += ["", f"Rank error, {name}, bounds {BOUNDS}.", ""]
        out.append(table(headers, rows))
    if maker is None:
        out += ["", "OpenDP is not installed (pip install opendp): its column is left out."]
    return "\n".join(out)


if __name__ == "__main__":
    print(run())
