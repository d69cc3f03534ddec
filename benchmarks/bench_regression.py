"""Linear regression: ``priv.dp.ols`` against diffprivlib's ``LinearRegression``, in one run.

Workloads, every column clipped to public bounds given to both libraries alike:

- **simulated**: ``y = 2 + 1.5 x1 - 2 x2 + 4 x3 + 0.1 x4 + 0.5 x5 + N(0, 1)``, each feature
  uniform on its public bounds (:data:`FEATURES`), the response's bounds (:data:`Y_BOUNDS`)
  wide enough that it is never clipped; n = 10^4 and 10^5 (one data set per n).
- **census**: ``income ~ age + educ + sex + married`` on the bundled PUMS California extract
  (1,000 rows; bounds in :data:`CENSUS_BOUNDS`, income clipped at 200,000).

1. Coefficient error: the L2 distance between the released coefficients (intercept
   included) and plain least squares (``numpy.linalg.lstsq`` with an intercept column) on
   the same clipped data, over ``runs`` releases per ε: pandas-dp's ``priv.dp.ols(...,
   mechanism="laplace")`` (pure ε) and diffprivlib's ``LinearRegression(epsilon=ε,
   bounds_X=..., bounds_y=..., fit_intercept=True)`` (pure ε, the functional mechanism);
   ratios are pandas-dp over diffprivlib (below 1: pandas-dp closer). pandas-dp with
   ``mechanism="gaussian"`` at δ = 1e-6 is an extra column, not part of the pure-ε
   comparison.
2. Coverage of pandas-dp's ``conf_int(0.05)`` for the simulated model's true coefficients,
   n = 10^4, ε = 1, fresh data and noise each run (so sampling error counts too).
3. Seconds per fit at n = 10^5 (best of 10 after a warm-up): pandas-dp's whole ``ols`` call
   on a protected frame, diffprivlib's ``fit`` on numpy arrays, and numpy's non-private
   ``lstsq`` as a yardstick.

diffprivlib is not a dependency: ``pip install diffprivlib`` to compare (its 0.6.6 needs
scikit-learn < 1.7), in a virtual environment of its own: it installs a top-level package
named ``tests`` that shadows this repository's tests (the distributed Dask tests then fail to
import on their workers). Without it the peer's columns are left empty and the report says
why.
Noise is seeded for reproducibility (``protect(rng=...)``, ``random_state=...``), which voids
the privacy guarantee: a benchmark only.

Usage: ``python benchmarks/bench_regression.py [--runs 50] [--coverage-runs 1000] [--quick]
[--out FILE]``.
"""

from __future__ import annotations

import argparse
import importlib.resources
import math
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import pandas_dp
from _util import best_time, table

RUNS = 50
COVERAGE_RUNS = 1_000
SIM_SIZES = (10_000, 100_000)
SIM_EPSILONS = (0.5, 1.0, 2.0)
CENSUS_EPSILONS = (0.5, 1.0, 2.0, 5.0)
GAUSS_DELTA = 1e-6
COVERAGE_N, COVERAGE_EPSILON, COVERAGE_ALPHA = 10_000, 1.0, 0.05
TIMING_N = 100_000

#: Public bounds of the simulated features; each is drawn uniformly on them.
FEATURES: dict[str, tuple[float, float]] = {
    "x1": (0.0, 10.0),
    "x2": (-5.0, 5.0),
    "x3": (0.0, 1.0),
    "x4": (20.0, 80.0),
    "x5": (-1.0, 3.0),
}
#: True coefficients: intercept, then x1..x5.
BETA = np.array([2.0, 1.5, -2.0, 4.0, 0.1, 0.5])
NOISE_SD = 1.0
#: The linear predictor spans [-6.5, 40.5] on the feature box; ±8.5 σ of margin either side.
Y_BOUNDS = (-15.0, 50.0)

CENSUS_FEATURES: dict[str, tuple[float, float]] = {
    "age": (18.0, 95.0),
    "educ": (1.0, 16.0),
    "sex": (0.0, 1.0),
    "married": (0.0, 1.0),
}
CENSUS_Y = ("income", (0.0, 200_000.0))


# --------------------------------------------------------------------------------------------
# Data and the non-private reference


def simulate(n: int, gen: np.random.Generator) -> pd.DataFrame:
    """``n`` rows of the known-truth model (benchmark data, never noise)."""
    frame = pd.DataFrame({c: gen.uniform(lo, hi, n) for c, (lo, hi) in FEATURES.items()})
    frame["y"] = BETA[0] + frame[list(FEATURES)].to_numpy() @ BETA[1:] + gen.normal(0, NOISE_SD, n)
    return frame


def census() -> pd.DataFrame:
    """The bundled 1,000-row PUMS California extract."""
    source = importlib.resources.files("pandas_dp") / "data" / "pums_california_1000.csv"
    with importlib.resources.as_file(source) as path:
        return pd.read_csv(path)


class Problem:
    """One regression: data, public bounds, the clipped arrays and the exact fit."""

    def __init__(
        self,
        name: str,
        frame: pd.DataFrame,
        features: dict[str, tuple[float, float]],
        response: tuple[str, tuple[float, float]],
    ) -> None:
        self.name = name
        self.frame = frame
        self.features = features
        self.y_name, self.y_bounds = response
        self.formula = f"{self.y_name} ~ {' + '.join(features)}"
        self.bounds = {**features, self.y_name: self.y_bounds}
        self.lower = np.array([lo for lo, _ in features.values()])
        self.upper = np.array([hi for _, hi in features.values()])
        self.x = np.clip(frame[list(features)].to_numpy(np.float64), self.lower, self.upper)
        self.y = np.clip(frame[self.y_name].to_numpy(np.float64), *self.y_bounds)
        self.exact = exact_fit(self.x, self.y)

    @property
    def n(self) -> int:
        return len(self.frame)


def exact_fit(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Plain least squares with an intercept: ``[intercept, coefficients...]``."""
    design = np.column_stack([np.ones(len(x)), x])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    return np.asarray(coef)


# --------------------------------------------------------------------------------------------
# The two libraries


def protect(frame: pd.DataFrame, seed: int) -> pd.DataFrame:
    """A seeded session with room for every release of the benchmark."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
        return frame.dp.protect(epsilon=1e6, delta=0.5, rng=seed)


def ours(priv: pd.DataFrame, problem: Problem, epsilon: float, mechanism: str) -> Any:
    """pandas-dp's released model (an ``OLSResults``)."""
    extra = {"delta": GAUSS_DELTA} if mechanism == "gaussian" else {}
    return priv.dp.ols(
        problem.formula, bounds=problem.bounds, epsilon=epsilon, mechanism=mechanism, **extra
    )


def ours_params(priv: pd.DataFrame, problem: Problem, epsilon: float, mechanism: str) -> np.ndarray:
    result = ours(priv, problem, epsilon, mechanism)
    return np.asarray(result.params[["Intercept", *problem.features]].to_numpy(np.float64))


def load_peer() -> tuple[Any, str]:
    """diffprivlib's ``(LinearRegression, BudgetAccountant)`` and its version, or None and why."""
    try:
        import diffprivlib
        from diffprivlib.accountant import BudgetAccountant
        from diffprivlib.models import LinearRegression
    except ImportError as error:
        return None, f"diffprivlib is not installed or does not import ({error})"
    return (LinearRegression, BudgetAccountant), f"diffprivlib {diffprivlib.__version__}"


def peer_fit(
    peer: Any, x: np.ndarray, y: np.ndarray, problem: Problem, epsilon: float, seed: int
) -> np.ndarray:
    """diffprivlib's coefficients ``[intercept, coefficients...]`` (seeded)."""
    linear_regression, accountant = peer
    model = linear_regression(
        epsilon=epsilon,
        bounds_X=(problem.lower, problem.upper),
        bounds_y=problem.y_bounds,
        fit_intercept=True,
        random_state=seed,
        accountant=accountant(),  # a fresh one: the global default would log every fit
    )
    model.fit(x, y)
    return np.concatenate([[float(model.intercept_)], np.asarray(model.coef_, np.float64)])


# --------------------------------------------------------------------------------------------
# 1. Coefficient error


def _stats(errors: Sequence[float]) -> tuple[float, float]:
    return float(np.median(errors)), float(np.mean(errors))


def _ratio(a: float, b: float) -> float | str:
    return a / b if b > 0 and math.isfinite(a) and math.isfinite(b) else "-"


def error_rows(
    problem: Problem, epsilons: Sequence[float], runs: int, peer: Any, seed: int
) -> list[list[Any]]:
    """One row per ε: median and mean L2 error of each library, ratios, paired wins."""
    priv = protect(problem.frame, seed)
    rows: list[list[Any]] = []
    for epsilon in epsilons:
        lap = [
            float(np.linalg.norm(ours_params(priv, problem, epsilon, "laplace") - problem.exact))
            for _ in range(runs)
        ]
        gauss = [
            float(np.linalg.norm(ours_params(priv, problem, epsilon, "gaussian") - problem.exact))
            for _ in range(runs)
        ]
        lap_med, lap_mean = _stats(lap)
        gauss_med, gauss_mean = _stats(gauss)
        if peer is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # a diverging minimiser
                other = [
                    float(
                        np.linalg.norm(
                            peer_fit(peer, problem.x, problem.y, problem, epsilon, seed + r)
                            - problem.exact
                        )
                    )
                    for r in range(runs)
                ]
            peer_med, peer_mean = _stats(other)
            wins = f"{sum(a < b for a, b in zip(lap, other, strict=True))}/{runs}"
            peer_cells: list[Any] = [
                peer_med, _ratio(lap_med, peer_med), peer_mean, _ratio(lap_mean, peer_mean), wins
            ]  # fmt: skip
        else:
            peer_cells = ["-"] * 5
        rows.append(
            [
                problem.name, f"{problem.n:,}", epsilon, lap_med, peer_cells[0], peer_cells[1],
                lap_mean, peer_cells[2], peer_cells[3], peer_cells[4], gauss_med, gauss_mean,
            ]
        )  # fmt: skip
    return rows


ERROR_HEADERS = [
    "data", "n", "ε", "pandas-dp median", "diffprivlib median", "ratio (median)",
    "pandas-dp mean", "diffprivlib mean", "ratio (mean)", "pandas-dp closer",
    "pandas-dp gaussian median", "pandas-dp gaussian mean",
]  # fmt: skip


# --------------------------------------------------------------------------------------------
# 2. Coverage

COVERAGE_HEADERS = [
    "coefficient", "true", "laplace coverage", "laplace median width", "gaussian coverage",
    "gaussian median width",
]  # fmt: skip


def coverage(runs: int, seed: int) -> str:
    """Coverage of ``conf_int(0.05)`` for the true coefficients, Laplace and Gaussian."""
    names = ["Intercept", *FEATURES]
    covered = {m: np.zeros((runs, len(names)), dtype=bool) for m in ("laplace", "gaussian")}
    widths = {m: np.zeros((runs, len(names))) for m in ("laplace", "gaussian")}
    gen = np.random.default_rng(seed)  # benchmark data, never noise
    for r in range(runs):
        frame = simulate(COVERAGE_N, gen)
        problem = Problem("simulated", frame, FEATURES, ("y", Y_BOUNDS))
        priv = protect(frame, seed + 1 + r)
        for mechanism in covered:
            result = ours(priv, problem, COVERAGE_EPSILON, mechanism)
            ends = result.conf_int(COVERAGE_ALPHA).loc[names].to_numpy(np.float64)
            covered[mechanism][r] = (ends[:, 0] <= BETA) & (ends[:, 1] >= BETA)
            widths[mechanism][r] = ends[:, 1] - ends[:, 0]
    rows: list[list[Any]] = []
    for j, name in enumerate(names):
        rows.append([
            name, float(BETA[j]),
            f"{covered['laplace'][:, j].mean():.1%}", float(np.median(widths["laplace"][:, j])),
            f"{covered['gaussian'][:, j].mean():.1%}", float(np.median(widths["gaussian"][:, j])),
        ])  # fmt: skip
    rows.append(
        [
            "all (pooled)", "-", f"{covered['laplace'].mean():.1%}", "-",
            f"{covered['gaussian'].mean():.1%}", "-",
        ]
    )  # fmt: skip
    rows.append(
        [
            "all six at once", "-", f"{covered['laplace'].all(axis=1).mean():.1%}", "-",
            f"{covered['gaussian'].all(axis=1).mean():.1%}", "-",
        ]
    )  # fmt: skip
    se = math.sqrt(0.95 * 0.05 / runs)
    return "\n".join(
        [
            f"### Coverage of pandas-dp's conf_int({COVERAGE_ALPHA}) for the true coefficients "
            f"(simulated, n = {COVERAGE_N:,}, ε = {COVERAGE_EPSILON:g}, {runs} runs, fresh data "
            f"and noise each; gaussian at δ = {GAUSS_DELTA:g})",
            "",
            table(COVERAGE_HEADERS, rows),
            "",
            f"Nominal 95%; one coverage's Monte-Carlo standard error is ±{se:.1%} at 95%.",
        ]
    )


# --------------------------------------------------------------------------------------------
# 3. Timing


def timing(peer: Any, seed: int) -> str:
    """Seconds per fit at n = TIMING_N."""
    problem = Problem(
        "simulated", simulate(TIMING_N, np.random.default_rng(seed)), FEATURES, ("y", Y_BOUNDS)
    )
    priv = protect(problem.frame, seed)
    cases: list[tuple[str, Callable[[], Any] | None]] = [
        ("pandas-dp ols, laplace", lambda: ours(priv, problem, 1.0, "laplace")),
        ("pandas-dp ols, gaussian", lambda: ours(priv, problem, 1.0, "gaussian")),
        (
            "diffprivlib LinearRegression.fit",
            None if peer is None else lambda: peer_fit(peer, problem.x, problem.y, problem, 1.0, 0),
        ),
        ("numpy lstsq (non-private, clipped)", lambda: exact_fit(problem.x, problem.y)),
    ]
    rows: list[list[Any]] = []
    base = None
    for name, fn in cases:
        if fn is None:
            rows.append([name, "-", "-"])
            continue
        seconds = best_time(fn, repeat=10)
        if name.startswith("diffprivlib"):
            base = seconds
        rows.append([name, seconds, seconds])
    for row in rows:  # the last column: over diffprivlib's time
        row[2] = row[1] / base if base and isinstance(row[1], float) else "-"
    return "\n".join(
        [
            f"### Seconds per fit, simulated, n = {TIMING_N:,}, 5 features (best of 10)",
            "",
            table(["fit", "seconds", "÷ diffprivlib"], rows),
        ]
    )


# --------------------------------------------------------------------------------------------


def run(runs: int = RUNS, coverage_runs: int = COVERAGE_RUNS, seed: int = 2024) -> str:
    """The report (markdown)."""
    peer, peer_name = load_peer()
    start = time.perf_counter()
    gen = np.random.default_rng(seed)  # benchmark data, never noise
    problems: list[tuple[Problem, Sequence[float]]] = [
        (Problem("simulated", simulate(n, gen), FEATURES, ("y", Y_BOUNDS)), SIM_EPSILONS)
        for n in SIM_SIZES
    ]
    problems.append(
        (Problem("census", census(), CENSUS_FEATURES, CENSUS_Y), CENSUS_EPSILONS)
    )  # fmt: skip
    rows: list[list[Any]] = []
    exact_lines = []
    for i, (problem, epsilons) in enumerate(problems):
        rows += error_rows(problem, epsilons, runs, peer, seed + 100 * (i + 1))
        shown = ", ".join(f"{v:.4g}" for v in problem.exact)
        exact_lines.append(
            f"- {problem.name}, n = {problem.n:,}: `{problem.formula}`, exact fit [{shown}] "
            f"(norm {np.linalg.norm(problem.exact):.4g})"
        )
    peer_line = (
        f"Peer: {peer_name}, `LinearRegression(epsilon=ε, bounds_X, bounds_y, fit_intercept=True)`."
        if peer is not None
        else f"Peer not run: {peer_name}. Only pandas-dp's numbers are shown."
    )
    errors = "\n".join(
        [
            f"### Linear regression: L2 error of the coefficients (intercept included) against "
            f"least squares on the clipped data, {runs} runs per row",
            "",
            table(ERROR_HEADERS, rows),
            "",
            "Ratios are pandas-dp (laplace, pure ε) over diffprivlib (pure ε): below 1, pandas-dp "
            "is closer. 'pandas-dp closer' counts the runs whose pandas-dp error is below "
            f"diffprivlib's. Gaussian columns: pandas-dp at (ε, δ = {GAUSS_DELTA:g}), not part of "
            "the pure-ε comparison.",
            "",
            peer_line,
            "",
            *exact_lines,
        ]
    )
    sections = [errors, coverage(coverage_runs, seed + 7), timing(peer, seed + 9)]
    footer = f"(run took {time.perf_counter() - start:,.0f} s)"
    return "\n\n".join([*sections, footer])


def main() -> None:
    parser = argparse.ArgumentParser(description="pandas-dp ols against diffprivlib")
    parser.add_argument("--runs", type=int, default=RUNS, help="releases per error row")
    parser.add_argument("--coverage-runs", type=int, default=COVERAGE_RUNS)
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--quick", action="store_true", help="5 runs, 50 coverage runs")
    parser.add_argument("--out", type=Path, help="also write the report to this file")
    args = parser.parse_args()
    runs, coverage_runs = (5, 50) if args.quick else (args.runs, args.coverage_runs)
    report = run(runs, coverage_runs, args.seed)
    print(report)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(report + "\n")


if __name__ == "__main__":
    main()
