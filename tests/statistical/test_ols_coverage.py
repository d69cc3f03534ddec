"""Coverage of ``priv.dp.ols``'s intervals for the model's true coefficients (issue 30).

A known-truth model, ``y = 1 + 0.5 x1 - x2 + 2 x3 + 0 x4 + 1.5 x5 + N(0, 1)`` with ``x``
uniform on [-1, 1] (n = 10,000, bounds (-1, 1) and (-8, 8)), fresh data and fresh noise in
each of 400 seeded runs at ε = 1, with Laplace and with Gaussian noise (δ = 1e-6). The
intervals (95%) carry the sampling variance and the noise's: each should hold the true
coefficient in 95% of runs. Asserted, from the binomial law of 400 runs of a 95% interval:
each coefficient's coverage at least 0.95 - 3 sd (0.917), and over the 2,400 intervals at
least 0.95 - 3 sd (0.937); the measured table is printed.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import pandas_dp

pytestmark = pytest.mark.statistical

BETA = np.array([1.0, 0.5, -1.0, 2.0, 0.0, 1.5])
FEATURES = [f"x{i}" for i in range(1, 6)]
BOUNDS = {**{name: (-1.0, 1.0) for name in FEATURES}, "y": (-8.0, 8.0)}
RUNS, ROWS, NOMINAL = 400, 10_000, 0.95


@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
def test_intervals_cover_the_true_coefficients(mechanism: str) -> None:
    gen = np.random.default_rng(4000 if mechanism == "laplace" else 5000)  # data and seeds
    hits = np.zeros(BETA.size)
    for _ in range(RUNS):
        x = gen.uniform(-1, 1, (ROWS, 5))
        frame = pd.DataFrame(x, columns=FEATURES).assign(
            y=BETA[0] + x @ BETA[1:] + gen.normal(0, 1, ROWS)
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)  # seeded noise
            priv = frame.dp.protect(epsilon=2.0, delta=1e-5, rng=int(gen.integers(1 << 62)))
        model = priv.dp.ols(y="y", x=FEATURES, bounds=BOUNDS, epsilon=1.0, mechanism=mechanism)
        ends = model.conf_int(1 - NOMINAL).to_numpy()
        hits += (ends[:, 0] <= BETA) & (ends[:, 1] >= BETA)
    coverage = hits / RUNS
    print(
        f"{mechanism}: coverage per coefficient {np.round(coverage, 4)}, all {coverage.mean():.4f}"
    )
    sd = math.sqrt(NOMINAL * (1 - NOMINAL) / RUNS)
    assert (coverage >= NOMINAL - 3 * sd).all(), coverage
    assert coverage.mean() >= NOMINAL - 3 * sd / math.sqrt(BETA.size), coverage
