"""Coverage of ``priv.dp.logit``'s intervals for the model's true coefficients (issue 42).

Known-truth models, fresh data and fresh noise in each of 400 seeded runs at ε = 1 (pure ε:
discrete ℓ∞ K-norm vectors), n = 10,000:

- **normal**: ``logit P(y) = -0.5 + 0.6 a + 0.5 b - 0.4 c`` with ``a, b, c`` standard normal
  clipped to their bounds (-4, 4);
- **mixed**: ``logit P(y) = -0.5 + 0.08 (x - 5) + 1.0 z + 0.5 [g = b]`` with ``x`` uniform on
  [0, 10], ``z`` uniform on [0, 1] and ``g`` one of three levels, as statsmodels orders them.

The intervals (95%) carry the rows' sampling variance and the noise's: each should hold the
true coefficient in 95% of runs. Asserted, from the binomial law of 400 runs of a 95%
interval: each coefficient's coverage at least 0.95 - 3 sd (0.917), and the pooled coverage
within [0.93, 0.99]; the measured table is printed. (The fit approximates the maximum
likelihood one; its approximation bias, 0.005 to 0.03 in L2 on such designs, is small
against these intervals at n = 10,000 but is not in them: tests/statistics/test_logit.py.)
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import pandas_dp

#: 400 fits per design take about half a minute: the whole run is CI's full step (``.ci/run``,
#: with the full neighbour grids); the README's command samples 60 runs
#: (``tests/statistics/test_logit.py``, ``test_intervals_cover_sampled``).
pytestmark = [pytest.mark.statistical, pytest.mark.full_grid]

RUNS, ROWS, NOMINAL = 400, 10_000, 0.95


def normal(gen: np.random.Generator) -> tuple[pd.DataFrame, np.ndarray]:
    beta = np.array([-0.5, 0.6, 0.5, -0.4])
    x = np.clip(gen.normal(0, 1, (ROWS, 3)), -4, 4)
    y = gen.uniform(size=ROWS) < 1 / (1 + np.exp(-(beta[0] + x @ beta[1:])))
    return pd.DataFrame(x, columns=["a", "b", "c"]).assign(y=y), beta


def mixed(gen: np.random.Generator) -> tuple[pd.DataFrame, np.ndarray]:
    x, z = gen.uniform(0, 10, ROWS), gen.uniform(0, 1, ROWS)
    g = np.array(["a", "b", "c"])[gen.integers(0, 3, ROWS)]
    score = -0.5 + 0.08 * (x - 5) + 1.0 * z + 0.5 * (g == "b")
    y = gen.uniform(size=ROWS) < 1 / (1 + np.exp(-score))
    # statsmodels' order: Intercept, C(g)[T.b], C(g)[T.c], x, z (the intercept absorbs -0.4)
    return pd.DataFrame({"x": x, "z": z, "g": g, "y": y}), np.array([-0.9, 0.5, 0.0, 0.08, 1.0])


CASES = {
    "normal": (normal, "y ~ a + b + c", {name: (-4.0, 4.0) for name in "abc"}, None),
    "mixed": (
        mixed,
        "y ~ x + z + C(g)",
        {"x": (0.0, 10.0), "z": (0.0, 1.0)},
        {"g": ["a", "b", "c"]},
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_intervals_cover_the_true_coefficients(case: str) -> None:
    simulate, formula, bounds, keys = CASES[case]
    gen = np.random.default_rng(4200 if case == "normal" else 4300)  # data and seeds
    hits: np.ndarray | None = None
    for _ in range(RUNS):
        frame, beta = simulate(gen)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)  # seeded noise
            priv = frame.dp.protect(epsilon=1.0, rng=int(gen.integers(1 << 62)))
        ends = priv.dp.logit(formula, bounds=bounds, keys=keys, epsilon=1.0).conf_int()
        inside = (ends[0].to_numpy() <= beta) & (beta <= ends[1].to_numpy())
        hits = inside.astype(int) if hits is None else hits + inside
    assert hits is not None
    coverage = hits / RUNS
    print(f"{case}: coverage per coefficient {np.round(coverage, 4)}, all {coverage.mean():.4f}")
    sd = math.sqrt(NOMINAL * (1 - NOMINAL) / RUNS)
    assert (coverage >= NOMINAL - 3 * sd).all(), coverage
    assert 0.93 <= coverage.mean() <= 0.99, coverage
