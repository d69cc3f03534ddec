"""``t_test`` and ``f_test`` under real noise: a true hypothesis is rejected at most as often
as its level says (issue 42).

Known-truth linear model ``y = 2 + 0.5 x - 1.5 z + e`` (``x`` uniform on [0, 10], ``z`` on
[0, 1], ``e`` normal with sd 2, ``y`` clipped to its bounds so rarely that the fit is
unbiased), fresh data and fresh discrete Laplace noise in each of 400 seeded runs at ε = 1,
n = 5,000. The tests' variance carries the rows' sampling variance and the noise's (the same
covariance as ``conf_int``), so a true null must be rejected at 5% in about 5% of runs;
the covariance is conservative by design, so less is allowed, more is not. Asserted from
the binomial law of 400 runs at 5%: the rejection rate at most 0.05 + 3 sd (0.083) for
``t_test("x = 0.5")`` and for ``f_test("x = 0.5, z = -1.5")``, and, so that a test that never
rejects fails too, a false null (``x = 0.45``) rejected in at least 30% of runs. Measured:
4.25% (t), 6.25% (F), 57% (the false null).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import pandas_dp

#: 3 x 400 fits take about 10 s: the whole run is CI's full step (``.ci/run``).
pytestmark = [pytest.mark.statistical, pytest.mark.full_grid]

RUNS, ROWS, LEVEL = 400, 5_000, 0.05
BOUNDS = {"x": (0.0, 10.0), "z": (0.0, 1.0), "y": (-10.0, 15.0)}


def sample(gen: np.random.Generator) -> pd.DataFrame:
    x, z = gen.uniform(0, 10, ROWS), gen.uniform(0, 1, ROWS)
    y = np.clip(2 + 0.5 * x - 1.5 * z + gen.normal(0, 2, ROWS), -10, 15)
    return pd.DataFrame({"x": x, "z": z, "y": y})


def test_true_hypotheses_are_rejected_at_most_at_their_level() -> None:
    gen = np.random.default_rng(4242)  # data and seeds
    rejected = {"t": 0, "f": 0, "false t": 0}
    for _ in range(RUNS):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)  # seeded noise
            priv = sample(gen).dp.protect(epsilon=1.0, rng=int(gen.integers(1 << 62)))
        model = priv.dp.ols("y ~ x + z", bounds=BOUNDS, epsilon=1.0)
        rejected["t"] += float(model.t_test("x = 0.5").pvalue[0]) < LEVEL
        rejected["f"] += float(model.f_test("x = 0.5, z = -1.5").pvalue) < LEVEL
        rejected["false t"] += float(model.t_test("x = 0.45").pvalue[0]) < LEVEL
    rates = {name: count / RUNS for name, count in rejected.items()}
    print(f"rejection rates at {LEVEL:.0%}: {rates}")
    ceiling = LEVEL + 3 * np.sqrt(LEVEL * (1 - LEVEL) / RUNS)
    assert rates["t"] <= ceiling
    assert rates["f"] <= ceiling
    assert rates["false t"] >= 0.3  # 57% measured: the tests have power
