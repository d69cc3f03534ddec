"""Bounds from the data (issue 41): how good are ``priv.dp.bounds``' bounds for later releases?

For each dataset, ε and statistic (mean, sum, median), the median absolute error over
``RUNS`` releases of the statistic with bounds from:

- ``auto``: ``priv.dp.bounds`` with ``SHARE`` (20%) of ε, the statistic with the rest;
- ``auto0``: the same with ``lower=0`` (incomes and durations are never negative, as the
  loose bounds also say), so the bounds' ε all goes to the upper end;
- ``approx``: a baseline of Google's ApproxBounds design (Wilson et al., PoPETs 2020;
  ``approx_bounds.h`` of google/differential-privacy) written here, at the same 20% / 80%
  split: a histogram of magnitudes in power-of-two bins for each sign plus a bin for 0,
  Laplace noise of scale ``1/ε`` on every bin (one row touches one bin), and a threshold
  that an empty bin exceeds with probability at most ``1e-9`` in all (Google's default
  success probability ``1 - 1e-9``); the bounds are the outer edges of the outermost bins
  above it. When no bin clears it (too little data for the budget) the release falls back to
  the loose bounds, as a user would; the table counts those failures;
- ``oracle``: the data's true 0.1% and 99.9% quantiles (which no one has), full ε;
- ``loose``: domain bounds a user would type, ``(0, 10**7)``, full ε.

The baseline's noise is float Laplace from numpy: it is a benchmark, never a release. The
library's releases draw their noise from the OS (no seed), as users get them.
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
import pandas as pd

import pandas_dp
from _util import table
from pandas_dp.cli.demo import load_census

RUNS = 50
EPSILONS = (0.1, 1.0)
SHARE = 0.2
LOOSE = (0.0, 1e7)
STATISTICS = ("mean", "sum", "median")
METHODS = ("auto", "auto0", "approx", "oracle", "loose")


def datasets() -> list[tuple[str, pd.Series]]:
    """The bundled census' incomes and two simulated heavy-tailed columns."""
    gen = np.random.default_rng(41)  # generates benchmark data, never noise
    census = load_census()["income"].astype(np.float64)
    incomes = np.round(gen.lognormal(10.5, 1.0, 20_000), 2)  # median 36k, long right tail
    durations = np.round(60 * (gen.pareto(1.5, 20_000) + 1.0), 1)  # seconds, α = 1.5
    return [
        ("census income, n=1,000", census),
        ("lognormal incomes, n=20,000", pd.Series(incomes)),
        ("Pareto(1.5) durations, n=20,000", pd.Series(durations)),
    ]


def approx_bounds(
    values: np.ndarray, epsilon: float, gen: np.random.Generator
) -> tuple[tuple[float, float], bool]:
    """Google's ApproxBounds design: thresholded noisy log-histogram of magnitudes.

    Bins: ``{0}``, then ``(2**(k-1), 2**k]`` for ``k = -32..64`` on each side (values
    beyond are put in the last bin). Returns the bounds and whether some bin cleared the
    threshold (else the loose bounds).
    """
    exponents = np.arange(-32, 65)
    bins = exponents.size
    x = values[~np.isnan(values)]
    magnitude = np.abs(x)
    k = np.clip(np.ceil(np.log2(np.maximum(magnitude, 2.0**-40))), -32, 64).astype(int) + 32
    positive = np.bincount(k[x > 0], minlength=bins)
    negative = np.bincount(k[x < 0], minlength=bins)
    zero = np.count_nonzero(x == 0)
    total_bins = 2 * bins + 1
    threshold = math.log(total_bins / (2 * 1e-9)) / epsilon  # union over empty bins
    noisy_pos = positive + gen.laplace(0, 1 / epsilon, bins)
    noisy_neg = negative + gen.laplace(0, 1 / epsilon, bins)
    noisy_zero = zero + gen.laplace(0, 1 / epsilon)
    edges = 2.0**exponents  # bin k holds magnitudes in (edges[k] / 2, edges[k]]
    pos = np.flatnonzero(noisy_pos > threshold)
    neg = np.flatnonzero(noisy_neg > threshold)
    kept_zero = noisy_zero > threshold
    if pos.size == 0 and neg.size == 0 and not kept_zero:
        return LOOSE, False
    # The outer edges of the outermost bins above the threshold; when one side has none, the
    # inner edge of the innermost bin of the other side (or 0 when the zero bin is above).
    inner_neg = 0.0 if kept_zero or not neg.size else -edges[neg.min()] / 2
    inner_pos = 0.0 if kept_zero or not pos.size else edges[pos.min()] / 2
    upper = edges[pos.max()] if pos.size else inner_neg
    lower = -edges[neg.max()] if neg.size else inner_pos
    return (float(lower), float(max(upper, lower + 1e-9))), True


def release(priv: pd.DataFrame, how: str, bounds: tuple[float, float], epsilon: float) -> float:
    """One release of ``how`` of ``priv["x"]`` with ``bounds``."""
    if how == "median":
        return float(priv.dp.median("x", bounds=bounds, epsilon=epsilon))
    if how == "sum":
        return float(priv.dp.sum("x", bounds=bounds, epsilon=epsilon))
    return float(priv.dp.mean("x", bounds=bounds, epsilon=epsilon))


def one_dataset(name: str, values: pd.Series, runs: int) -> tuple[list[list[object]], dict]:
    """Rows of the report for one dataset, and the errors by (ε, statistic, method)."""
    frame = pd.DataFrame({"x": values.to_numpy(np.float64)})
    priv = frame.dp.protect(epsilon=1e6)
    x = frame["x"].to_numpy()
    truth = {"mean": x.mean(), "sum": x.sum(), "median": float(np.median(x))}
    oracle = tuple(float(v) for v in np.quantile(x, [0.001, 0.999]))
    gen = np.random.default_rng(7)  # the baseline's float Laplace noise (benchmark only)
    errors: dict[tuple[float, str, str], float] = {}
    rows = []
    for eps in EPSILONS:
        spent = {m: {how: [] for how in STATISTICS} for m in METHODS}
        failures = 0
        uppers = []
        for _ in range(runs):
            auto = tuple(priv.dp.bounds(["x"], epsilon=SHARE * eps).loc["x"])
            auto0 = tuple(priv.dp.bounds(["x"], epsilon=SHARE * eps, lower=0).loc["x"])
            uppers.append((auto[1], auto0[1]))
            approx, ok = approx_bounds(x, SHARE * eps, gen)
            failures += not ok
            chosen = {
                "auto": auto,
                "auto0": auto0,
                "approx": approx,
                "oracle": oracle,
                "loose": LOOSE,
            }
            for how in STATISTICS:
                for method in METHODS:
                    share = 1 - SHARE if method in ("auto", "auto0", "approx") else 1.0
                    value = release(priv, how, chosen[method], share * eps)
                    spent[method][how].append(abs(value - truth[how]))
        for how in STATISTICS:
            median = {m: float(np.median(spent[m][how])) for m in METHODS}
            for m in METHODS:
                errors[(eps, how, m)] = median[m]
            rows.append([
                name, eps, how, median["auto"], median["auto0"], median["approx"],
                median["oracle"], median["loose"], median["auto"] / median["oracle"],
                median["auto0"] / median["oracle"], median["loose"] / median["auto"],
                median["approx"] / median["auto"], f"{failures}/{runs}",
                float(np.median([u[0] for u in uppers])),
            ])  # fmt: skip
    return rows, {"oracle": oracle}


def run(runs: int = RUNS) -> str:
    """The report section."""
    start = time.perf_counter()
    warnings.simplefilter("ignore", pandas_dp.NoiseDominatedWarning)  # errors are measured
    rows: list[list[object]] = []
    notes = []
    for name, values in datasets():
        found, facts = one_dataset(name, values, runs)
        rows += found
        low, high = facts["oracle"]
        notes.append(f"{name}: oracle bounds ({low:,.0f}, {high:,.0f})")
    headers = [
        "dataset", "ε", "statistic", "auto", "auto0", "approx", "oracle", "loose",
        "auto/oracle", "auto0/oracle", "loose/auto", "approx/auto", "approx failed",
        "auto upper (median)",
    ]  # fmt: skip
    elapsed = time.perf_counter() - start
    return (
        f"## Bounds from the data (issue 41): median absolute error over {runs} releases\n\n"
        f"auto and approx spend {SHARE:.0%} of ε on the bounds and the rest on the "
        "statistic; oracle and loose spend all of ε on the statistic.\n\n"
        + table(headers, rows)
        + "\n\n"
        + "; ".join(notes)
        + f"\n\n({elapsed:.0f} s)"
    )


if __name__ == "__main__":
    import sys

    print(run(int(sys.argv[1]) if len(sys.argv) > 1 else RUNS))
