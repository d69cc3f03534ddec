"""Covariance and correlation matrices (issue 30): speed next to pandas, accuracy per ε.

Speed: ``priv.dp.cov(columns, bounds=..., epsilon=1.0)`` of ``COLUMNS`` float columns on
``ROWS`` rows next to ``df.cov()`` on the same frame, and ``priv.dp.corr`` next to
``df.corr()``; then the same with 10% of every column missing (pandas then leaves BLAS for
its pairwise loop), and with ``use="complete"`` next to ``df.dropna().cov()`` (listwise
deletion, pandas' spelling of it). Each case alternates the two, ``REPEATS`` times (who goes
first alternating too) after one warm-up call of each; the table gives the median seconds of
each and their ratio (goal for the plain cov: at most 1.5).

Accuracy: ``d`` columns of correlated Gaussian data (unit variances, correlation
``RHO**|i - j|``), released with public bounds ``BOUNDS`` (values outside are clipped); the
exact answer is ``df.clip(*BOUNDS).corr()``. The error is the mean absolute error of the
off-diagonal entries, averaged over ``RUNS`` releases with seeded noise (run ``i`` uses
``rng=i``: reproducible, for benchmarking only). Compared at the same total budget:

- **joint**: ``priv.dp.corr(columns, bounds=..., epsilon=ε)``, every pair from one
  measurement of ``p`` sums (float columns may hold NaN: pairwise sums);
- **joint, complete**: the same with ``use="complete"`` (fewer sums; the same answer when no
  value is missing, as here);
- **per pair**: each of the ``d(d-1)/2`` pairs released on its own by
  ``priv.dp.corr([a, b], ...)`` with ``ε / pairs`` (and ``δ / pairs``): sequential
  composition, the naive way to build the matrix.

Laplace noise at ε = 1, Gaussian at (ε, δ) = (1, 1e-6). A correlation whose noisy variance is
not positive is NaN: the NaN column gives the share of such entries, left out of the error.

Run ``python benchmarks/bench_modelling.py`` (``--quick`` for a smoke run, ``--help``).
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from collections.abc import Callable, Sequence
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

import pandas_dp  # noqa: F401  (registers the accessors)
from _util import table
from pandas_dp.errors import PrivacyLeakWarning
from pandas_dp.planning.measurement.products import ProductLayout

ROWS = 10_000_000
COLUMNS = 10
REPEATS = 5
MISSING = 0.10
SPEED_BOUNDS = (-4.0, 4.0)

DIMS = (5, 10)
SIZES = (10_000, 100_000)
RUNS = 20
RHO = 0.7
BOUNDS = (-3.0, 3.0)
EPSILON = 1.0
DELTA = 1e-6


# -- speed ----------------------------------------------------------------------------------


def make_frame(rows: int, columns: int = COLUMNS, missing: float = 0.0) -> pd.DataFrame:
    """``rows`` standard normal rows of ``columns`` floats, ``missing`` of each column NaN."""
    gen = np.random.default_rng(30)  # test-only: generates benchmark data, never noise
    values = gen.standard_normal((rows, columns))
    if missing:
        values[gen.random((rows, columns)) < missing] = np.nan
    return pd.DataFrame(values, columns=[f"x{i}" for i in range(columns)])


def interleaved(
    ours: Callable[[], Any], base: Callable[[], Any], repeats: int
) -> tuple[float, float]:
    """Median seconds of ``ours`` and ``base``, run alternately (who goes first alternating)."""
    ours(), base()  # warm-up
    times: dict[int, list[float]] = {0: [], 1: []}
    for r in range(repeats):
        pair = [(0, ours), (1, base)]
        for which, fn in pair if r % 2 == 0 else pair[::-1]:
            start = time.perf_counter()
            fn()
            times[which].append(time.perf_counter() - start)
    return statistics.median(times[0]), statistics.median(times[1])


def speed(rows: int = ROWS, repeats: int = REPEATS) -> str:
    """Median seconds of each release next to pandas; a markdown section."""
    full = make_frame(rows)
    names = list(full.columns)
    bounds = dict.fromkeys(names, SPEED_BOUNDS)
    cases: list[tuple[str, Callable[[], Any], Callable[[], Any]]] = []
    for missing in (0.0, MISSING):
        frame = full if not missing else make_frame(rows, missing=missing)
        priv = frame.dp.protect(epsilon=1e6)
        label = "no NaN" if not missing else f"{missing:.0%} NaN per column"
        cases += [
            (f"cov, {label}", lambda p=priv: p.dp.cov(names, bounds=bounds, epsilon=1.0),
             frame.cov),
            (f"corr, {label}", lambda p=priv: p.dp.corr(names, bounds=bounds, epsilon=1.0),
             frame.corr),
        ]  # fmt: skip
        if missing:
            cases += [
                (f"cov, use='complete', {label} (pandas: dropna().cov())",
                 lambda p=priv: p.dp.cov(names, bounds=bounds, epsilon=1.0, use="complete"),
                 lambda f=frame: f.dropna().cov()),
                (f"corr, use='complete', {label} (pandas: dropna().corr())",
                 lambda p=priv: p.dp.corr(names, bounds=bounds, epsilon=1.0, use="complete"),
                 lambda f=frame: f.dropna().corr()),
            ]  # fmt: skip
    rows_out: list[list[object]] = []
    for name, ours, base in cases:
        t_ours, t_base = interleaved(ours, base, repeats)
        rows_out.append([name, t_ours, t_base, t_ours / t_base])
    return "\n".join(
        [
            f"### Covariance and correlation matrices: {COLUMNS} float columns, {rows:,} rows "
            f"(s, median of {repeats} interleaved runs)",
            "",
            table(["release", "pandas-dp", "plain pandas", "ratio"], rows_out),
            "",
            "Goal: the plain cov at most 1.5 times `df.cov()`. Without NaN pandas computes "
            "with `np.cov` (BLAS); with NaN it loops over every pair of columns.",
        ]
    )


# -- accuracy -------------------------------------------------------------------------------


def correlated(rows: int, dims: int, seed: int) -> pd.DataFrame:
    """``rows`` Gaussian rows with unit variances and correlation ``RHO**|i - j|``."""
    gen = np.random.default_rng(seed)  # test-only: generates benchmark data, never noise
    lags = np.abs(np.subtract.outer(np.arange(dims), np.arange(dims)))
    chol = np.linalg.cholesky(RHO**lags)
    values = gen.standard_normal((rows, dims)) @ chol.T
    return pd.DataFrame(values, columns=[f"x{i}" for i in range(dims)])


def _errors(released: pd.DataFrame, exact: pd.DataFrame) -> np.ndarray:
    """Absolute errors of the off-diagonal entries (upper triangle; NaN kept)."""
    upper = np.triu_indices(len(exact), k=1)
    return np.abs(released.to_numpy()[upper] - exact.to_numpy()[upper])


def _pairwise(
    priv: pd.DataFrame, names: list[str], bounds: dict[str, tuple[float, float]], **noise: Any
) -> pd.DataFrame:
    """The matrix built from one ``corr([a, b])`` release per pair, the budget split evenly."""
    pairs = list(combinations(names, 2))
    share = {key: value / len(pairs) for key, value in noise.items() if key in ("epsilon", "delta")}
    rest = {key: value for key, value in noise.items() if key not in share}
    matrix = pd.DataFrame(np.eye(len(names)), index=names, columns=names)
    for a, b in pairs:
        value = priv.dp.corr([a, b], bounds=bounds, **share, **rest).loc[a, b]
        matrix.loc[a, b] = matrix.loc[b, a] = value
    return matrix


def _sums(dims: int, complete: bool) -> int:
    """The number of noisy sums of one correlation release of ``dims`` float columns."""
    layout = ProductLayout.of(
        tuple(range(dims)), (BOUNDS,) * dims, (True,) * dims, complete=complete,
        squares=not complete,
    )  # fmt: skip
    return len(layout.monomials)


def accuracy(dims: Sequence[int] = DIMS, sizes: Sequence[int] = SIZES, runs: int = RUNS) -> str:
    """Mean absolute error of the joint and per-pair correlation matrices; a markdown section."""
    noises = {
        "Laplace": {"epsilon": EPSILON},
        "Gaussian": {"epsilon": EPSILON, "delta": DELTA, "mechanism": "gaussian"},
    }
    rows_out: list[list[object]] = []
    for d in dims:
        for n in sizes:
            data = correlated(n, d, seed=1_000 * d + n % 997)
            names = list(data.columns)
            bounds = dict.fromkeys(names, BOUNDS)
            exact = data.clip(*BOUNDS).corr()
            pairs = d * (d - 1) // 2
            for mechanism, noise in noises.items():
                errors: dict[str, list[np.ndarray]] = {"joint": [], "complete": [], "pair": []}
                for run in range(runs):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", PrivacyLeakWarning)
                        priv = data.dp.protect(epsilon=10.0, delta=1e-3, rng=run)
                    errors["joint"].append(
                        _errors(priv.dp.corr(names, bounds=bounds, **noise), exact)
                    )
                    errors["complete"].append(
                        _errors(priv.dp.corr(names, bounds=bounds, use="complete", **noise), exact)
                    )
                    errors["pair"].append(_errors(_pairwise(priv, names, bounds, **noise), exact))
                mae = {how: _mae(found) for how, found in errors.items()}
                rows_out.append(
                    [
                        d, f"{n:,}", mechanism,
                        f"{mae['joint'][0]:.4f} ± {mae['joint'][1]:.4f}",
                        f"{mae['complete'][0]:.4f} ± {mae['complete'][1]:.4f}",
                        f"{mae['pair'][0]:.4f} ± {mae['pair'][1]:.4f}",
                        mae["pair"][0] / mae["joint"][0],
                        f"{mae['joint'][2]:.1%} / {mae['complete'][2]:.1%} / {mae['pair'][2]:.1%}",
                        f"{_sums(d, False)} / {_sums(d, True)} / {pairs} x {_sums(2, False)}",
                    ]
                )  # fmt: skip
    headers = [
        "d", "n", "noise", "joint", "joint, complete", "per pair", "per pair / joint",
        "NaN (j / c / p)", "noisy sums (j / c / p)",
    ]  # fmt: skip
    return "\n".join(
        [
            f"### Correlation matrix accuracy: MAE of the off-diagonal entries at ε = {EPSILON:g} "
            f"(Gaussian: δ = {DELTA:g}), {runs} seeded runs (± one standard error)",
            "",
            table(headers, rows_out),
            "",
            f"Data: Gaussian, unit variances, correlation {RHO}^|i-j|, bounds {BOUNDS}; error "
            "against `df.clip(*bounds).corr()`. Per pair: d(d-1)/2 releases of "
            "`corr([a, b])` at ε/pairs (and δ/pairs).",
        ]
    )


def _mae(found: list[np.ndarray]) -> tuple[float, float, float]:
    """Mean over runs of each run's mean error (NaN left out), its standard error, NaN share."""
    per_run = [float(np.nanmean(e)) if np.isfinite(e).any() else np.nan for e in found]
    scored = [m for m in per_run if np.isfinite(m)]
    spread = statistics.stdev(scored) / len(scored) ** 0.5 if len(scored) > 1 else float("nan")
    missing = float(np.mean([np.isnan(e).mean() for e in found]))
    return statistics.fmean(scored) if scored else float("nan"), spread, missing


def run(
    rows: int = ROWS,
    repeats: int = REPEATS,
    runs: int = RUNS,
    sizes: Sequence[int] = SIZES,
    dims: Sequence[int] = DIMS,
) -> str:
    """Both sections, as one markdown report."""
    return "\n\n".join([speed(rows, repeats), accuracy(dims, sizes, runs)])


def main() -> None:
    """Parse the command line and print the report."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=ROWS, help="rows of the speed frames")
    parser.add_argument("--repeats", type=int, default=REPEATS, help="timed runs per case")
    parser.add_argument("--runs", type=int, default=RUNS, help="seeded releases per accuracy row")
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=list(SIZES), help="rows of the accuracy data"
    )
    parser.add_argument("--dims", type=int, nargs="+", default=list(DIMS), help="columns (d)")
    parser.add_argument("--only", choices=("speed", "accuracy"), help="run one section only")
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: 10**5 rows, 2 repeats, 3 runs, n=10**4"
    )
    args = parser.parse_args()
    if args.quick:
        args.rows, args.repeats, args.runs, args.sizes = 100_000, 2, 3, [10_000]
    sections = []
    if args.only != "accuracy":
        sections.append(speed(args.rows, args.repeats))
    if args.only != "speed":
        sections.append(accuracy(args.dims, args.sizes, args.runs))
    print("\n\n".join(sections))


if __name__ == "__main__":
    main()
