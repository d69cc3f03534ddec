"""Logistic regression: ``priv.dp.logit`` against diffprivlib's ``LogisticRegression``.

Workloads, every feature clipped to public bounds given to both libraries alike:

- **simulated**: ``P(y = 1) = σ(-0.5 + 0.2 x1 - 0.3 x2 + 1.0 x3 - 0.03 x4 + 0.4 x5)``, each
  feature uniform on its public bounds (:data:`FEATURES`, those of ``bench_regression``);
  n = 10^4 and 10^5 (one data set per n), and a held-out set of 10^4 rows.
- **census**: ``I(income > 50000) ~ age + educ + sex + married`` on the bundled PUMS
  California extract (1,000 rows: 700 to fit, 300 held out; bounds in
  :data:`CENSUS_FEATURES`).

1. Coefficient error: the L2 distance between the released coefficients (intercept
   included, the features' units) and the maximum likelihood fit (Newton-Raphson) on the same
   clipped rows, over ``runs`` releases per ε: pandas-dp's ``priv.dp.logit(...)`` (discrete
   ℓ∞ K-norm vectors, pure ε) and diffprivlib's ``LogisticRegression(epsilon=ε, data_norm=...)``
   (objective perturbation, pure ε). diffprivlib gets the features scaled to ``[-1, 1]`` by
   their public bounds (the same public scaling pandas-dp applies inside; on raw features
   its error is far larger), ``data_norm = √(d + 1)``, its default ``C = 1``, and its
   coefficients are mapped back to the features' units. Ratios are pandas-dp over
   diffprivlib (below 1: pandas-dp closer).
2. Held-out accuracy (threshold 0.5) and AUC at ε = 1: the median over the runs of each
   library, and the non-private fit's.
3. Seconds per fit at n = 10^5.

diffprivlib is not a dependency (``pip install 'pandas-dp[bench]'``; in a virtual
environment of its own, see ``bench_regression``). Without it the peer's columns are empty
and the report says why. Noise is seeded (``protect(rng=...)``, ``random_state=...``), which
voids the privacy guarantee: a benchmark only.

Usage: ``python benchmarks/bench_logit.py [--runs 50] [--quick] [--out FILE]``.
"""

from __future__ import annotations

import argparse
import importlib.resources
import math
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import pandas_dp
from _util import best_time, table

RUNS = 50
SIM_SIZES = (10_000, 100_000)
HELD_OUT = 10_000
EPSILONS = (0.5, 1.0, 2.0)
CENSUS_EPSILONS = (1.0, 2.0, 5.0)
METRICS_EPSILON = 1.0

#: Public bounds of the simulated features; each is drawn uniformly on them.
FEATURES: dict[str, tuple[float, float]] = {
    "x1": (0.0, 10.0),
    "x2": (-5.0, 5.0),
    "x3": (0.0, 1.0),
    "x4": (20.0, 80.0),
    "x5": (-1.0, 3.0),
}
#: True coefficients: intercept, then x1..x5.
BETA = np.array([-0.5, 0.2, -0.3, 1.0, -0.03, 0.4])

CENSUS_FEATURES: dict[str, tuple[float, float]] = {
    "age": (18.0, 95.0),
    "educ": (1.0, 16.0),
    "sex": (0.0, 1.0),
    "married": (0.0, 1.0),
}
CENSUS_THRESHOLD = 50_000
CENSUS_INCOME = (0.0, 200_000.0)


def simulate(n: int, gen: np.random.Generator) -> pd.DataFrame:
    """``n`` rows of the known-truth model (benchmark data, never noise)."""
    frame = pd.DataFrame({c: gen.uniform(lo, hi, n) for c, (lo, hi) in FEATURES.items()})
    score = BETA[0] + frame[list(FEATURES)].to_numpy() @ BETA[1:]
    frame["y"] = (gen.uniform(size=n) < 1 / (1 + np.exp(-score))).astype(np.int64)
    return frame


def census() -> tuple[pd.DataFrame, pd.DataFrame]:
    """The bundled PUMS extract with ``high = income > 50,000``: 700 rows to fit, 300 to test."""
    source = importlib.resources.files("pandas_dp") / "data" / "pums_california_1000.csv"
    with importlib.resources.as_file(source) as path:
        frame = pd.read_csv(path)
    frame["high"] = (frame["income"] > CENSUS_THRESHOLD).astype(np.int64)
    return frame.iloc[:700].reset_index(drop=True), frame.iloc[700:].reset_index(drop=True)


def newton_raphson(design: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The maximum likelihood logistic fit (what ``statsmodels``' ``Logit.fit`` computes)."""
    theta = np.zeros(design.shape[1])
    for _ in range(100):
        p = 1 / (1 + np.exp(-design @ theta))
        hess = (design * (p * (1 - p))[:, None]).T @ design
        step = np.linalg.solve(hess + 1e-12 * np.eye(len(theta)), design.T @ (y - p))
        theta += step
        if np.abs(step).max() < 1e-12:
            break
    return theta


def auc(score: np.ndarray, y: np.ndarray) -> float:
    """The area under the ROC curve (Mann-Whitney, ties counted half)."""
    from scipy.stats import rankdata

    ranks = rankdata(score)
    positives = int(y.sum())
    negatives = len(y) - positives
    if positives == 0 or negatives == 0:
        return float("nan")
    return float((ranks[y == 1].sum() - positives * (positives + 1) / 2) / (positives * negatives))


class Problem:
    """One logistic regression: data, public bounds, the clipped arrays and the exact fit."""

    def __init__(
        self,
        name: str,
        frame: pd.DataFrame,
        test: pd.DataFrame,
        features: dict[str, tuple[float, float]],
        response: str,
        formula_response: str,
        extra_bounds: dict[str, tuple[float, float]] | None = None,
    ) -> None:
        self.name = name
        self.frame = frame
        self.features = features
        self.formula = f"{formula_response} ~ {' + '.join(features)}"
        self.bounds = {**features, **(extra_bounds or {})}
        self.lower = np.array([lo for lo, _ in features.values()])
        self.upper = np.array([hi for _, hi in features.values()])
        self.x = self.clipped(frame)
        self.y = frame[response].to_numpy(np.float64)
        self.test_x = self.clipped(test)
        self.test_y = test[response].to_numpy(np.float64)
        self.exact = newton_raphson(self.design(self.x), self.y)

    def clipped(self, frame: pd.DataFrame) -> np.ndarray:
        return np.clip(frame[list(self.features)].to_numpy(np.float64), self.lower, self.upper)

    @staticmethod
    def design(x: np.ndarray) -> np.ndarray:
        return np.column_stack([np.ones(len(x)), x])

    def metrics(self, coef: np.ndarray) -> tuple[float, float]:
        """Held-out accuracy (threshold 0.5) and AUC of coefficients ``coef``."""
        score = self.design(self.test_x) @ coef
        return float(((score > 0) == (self.test_y == 1)).mean()), auc(score, self.test_y)

    @property
    def n(self) -> int:
        return len(self.frame)


def protect(frame: pd.DataFrame, seed: int) -> pd.DataFrame:
    """A seeded session with room for every release of the benchmark."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
        return frame.dp.protect(epsilon=1e6, rng=seed)


def ours(priv: pd.DataFrame, problem: Problem, epsilon: float) -> np.ndarray:
    """pandas-dp's coefficients ``[intercept, features...]``."""
    result = priv.dp.logit(problem.formula, bounds=problem.bounds, epsilon=epsilon)
    return np.asarray(result.params[["Intercept", *problem.features]].to_numpy(np.float64))


def load_peer() -> tuple[Any, str]:
    """diffprivlib's ``(LogisticRegression, BudgetAccountant)`` and its version, or why not."""
    try:
        import diffprivlib
        from diffprivlib.accountant import BudgetAccountant
        from diffprivlib.models import LogisticRegression
    except ImportError as error:
        return None, f"diffprivlib is not installed or does not import ({error})"
    return (LogisticRegression, BudgetAccountant), f"diffprivlib {diffprivlib.__version__}"


def peer_fit(peer: Any, problem: Problem, epsilon: float, seed: int) -> np.ndarray:
    """diffprivlib's coefficients in the features' units (fitted on publicly scaled features)."""
    logistic_regression, accountant = peer
    centre, reach = (problem.lower + problem.upper) / 2, (problem.upper - problem.lower) / 2
    scaled = (problem.x - centre) / reach
    model = logistic_regression(
        epsilon=epsilon,
        data_norm=math.sqrt(scaled.shape[1] + 1),
        fit_intercept=True,
        random_state=seed,
        accountant=accountant(),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its convergence and data_norm notes
        model.fit(scaled, problem.y.astype(int))
    slopes = np.asarray(model.coef_, np.float64).reshape(-1) / reach
    intercept = float(np.asarray(model.intercept_).reshape(-1)[0]) - float(slopes @ centre)
    return np.concatenate([[intercept], slopes])


def _ratio(a: float, b: float) -> float | str:
    return a / b if b > 0 and math.isfinite(a) and math.isfinite(b) else "-"


def compare(
    problem: Problem, epsilons: Sequence[float], runs: int, peer: Any, seed: int
) -> tuple[list[list[Any]], list[list[Any]]]:
    """Error rows (one per ε) and the metrics row at :data:`METRICS_EPSILON`."""
    priv = protect(problem.frame, seed)
    rows: list[list[Any]] = []
    metrics: list[list[Any]] = []
    for epsilon in epsilons:
        fits = [ours(priv, problem, epsilon) for _ in range(runs)]
        mine = [float(np.linalg.norm(c - problem.exact)) for c in fits]
        others = [] if peer is None else [
            peer_fit(peer, problem, epsilon, seed + r) for r in range(runs)
        ]  # fmt: skip
        theirs = [float(np.linalg.norm(c - problem.exact)) for c in others]
        if theirs:
            wins = f"{sum(a < b for a, b in zip(mine, theirs, strict=True))}/{runs}"
            cells: list[Any] = [
                float(np.median(theirs)), _ratio(float(np.median(mine)), float(np.median(theirs))),
                wins,
            ]  # fmt: skip
        else:
            cells = ["-"] * 3
        rows.append([problem.name, f"{problem.n:,}", epsilon, float(np.median(mine)), *cells])
        if epsilon == METRICS_EPSILON:
            exact_acc, exact_auc = problem.metrics(problem.exact)
            ours_m = np.array([problem.metrics(c) for c in fits])
            peer_m = np.array([problem.metrics(c) for c in others]) if others else None
            metrics.append(
                [
                    problem.name, f"{problem.n:,}", exact_acc, float(np.median(ours_m[:, 0])),
                    "-" if peer_m is None else float(np.median(peer_m[:, 0])), exact_auc,
                    float(np.median(ours_m[:, 1])),
                    "-" if peer_m is None else float(np.nanmedian(peer_m[:, 1])),
                ]
            )  # fmt: skip
    return rows, metrics


ERROR_HEADERS = [
    "data", "n", "ε", "pandas-dp median", "diffprivlib median", "ratio (median)",
    "pandas-dp closer",
]  # fmt: skip
METRIC_HEADERS = [
    "data", "n", "accuracy, non-private", "accuracy, pandas-dp", "accuracy, diffprivlib",
    "AUC, non-private", "AUC, pandas-dp", "AUC, diffprivlib",
]  # fmt: skip


def timing(peer: Any, seed: int) -> str:
    """Seconds per fit at n = 10^5."""
    gen = np.random.default_rng(seed)
    problem = Problem("simulated", simulate(100_000, gen), simulate(10, gen), FEATURES, "y", "y")
    priv = protect(problem.frame, seed)
    rows: list[list[Any]] = [["pandas-dp logit", best_time(lambda: ours(priv, problem, 1.0), 5)]]
    if peer is not None:
        rows.append(["diffprivlib fit", best_time(lambda: peer_fit(peer, problem, 1.0, 0), 5)])
    rows.append(["Newton-Raphson (non-private)", best_time(
        lambda: newton_raphson(problem.design(problem.x), problem.y), 5)])  # fmt: skip
    return "\n".join(
        ["### Seconds per fit, simulated, n = 100,000, 5 features (best of 5)", "",
         table(["fit", "seconds"], rows)]
    )  # fmt: skip


def run(runs: int = RUNS, seed: int = 2042) -> str:
    """The report (markdown)."""
    peer, peer_name = load_peer()
    start = time.perf_counter()
    gen = np.random.default_rng(seed)  # benchmark data, never noise
    test = simulate(HELD_OUT, gen)
    problems = [
        (Problem("simulated", simulate(n, gen), test, FEATURES, "y", "y"), EPSILONS)
        for n in SIM_SIZES
    ]
    fit, held = census()
    problems.append(
        (
            Problem(
                "census", fit, held, CENSUS_FEATURES, "high",
                f"I(income > {CENSUS_THRESHOLD})", {"income": CENSUS_INCOME},
            ),
            CENSUS_EPSILONS,
        )
    )  # fmt: skip
    rows: list[list[Any]] = []
    metrics: list[list[Any]] = []
    notes = []
    for i, (problem, epsilons) in enumerate(problems):
        more_rows, more_metrics = compare(problem, epsilons, runs, peer, seed + 100 * (i + 1))
        rows += more_rows
        metrics += more_metrics
        shown = ", ".join(f"{v:.4g}" for v in problem.exact)
        notes.append(
            f"- {problem.name}, n = {problem.n:,}: `{problem.formula}`, exact fit [{shown}] "
            f"(norm {np.linalg.norm(problem.exact):.4g})"
        )
    peer_line = (
        f"Peer: {peer_name}, `LogisticRegression(epsilon=ε, data_norm=√(d+1), C=1, "
        "fit_intercept=True)` on features scaled to [-1, 1] by their public bounds."
        if peer is not None
        else f"Peer not run: {peer_name}. Only pandas-dp's numbers are shown."
    )
    sections = [
        "\n".join(
            [
                "### Logistic regression: L2 error of the coefficients (intercept included) "
                f"against the maximum likelihood fit on the clipped data, {runs} runs per row",
                "",
                table(ERROR_HEADERS, rows),
                "",
                "Ratios are pandas-dp over diffprivlib (both pure ε): below 1, pandas-dp is "
                "closer. 'pandas-dp closer' counts the runs whose pandas-dp error is below "
                "diffprivlib's.",
                "",
                peer_line,
                "",
                *notes,
            ]
        ),
        "\n".join(
            [
                f"### Held-out accuracy and AUC at ε = {METRICS_EPSILON:g} (medians over the "
                f"runs; simulated: {HELD_OUT:,} fresh rows, census: the last 300 rows)",
                "",
                table(METRIC_HEADERS, metrics),
            ]
        ),
        timing(peer, seed + 9),
    ]
    footer = f"(run took {time.perf_counter() - start:,.0f} s)"
    return "\n\n".join([*sections, footer])


def main() -> None:
    parser = argparse.ArgumentParser(description="pandas-dp logit against diffprivlib")
    parser.add_argument("--runs", type=int, default=RUNS, help="releases per error row")
    parser.add_argument("--seed", type=int, default=2042)
    parser.add_argument("--quick", action="store_true", help="5 runs per row")
    parser.add_argument("--out", type=Path, help="also write the report to this file")
    args = parser.parse_args()
    report = run(5 if args.quick else args.runs, args.seed)
    print(report)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(report + "\n")


if __name__ == "__main__":
    main()
