"""Coverage of the variance and standard-deviation intervals at α = 0.05 (seeded).

Their intervals combine the three noisy moments by interval arithmetic (each within its
half-width at α/3), so the count's noise is accounted for; they are conservative. The target
is the sample variance (ddof=1) of the clipped values; the lattice rounding is far below the
intervals' width at these scales.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

pytestmark = pytest.mark.statistical

BOUNDS = (0.0, 10.0)


@pytest.mark.parametrize("how", ["var", "std"])
@pytest.mark.parametrize("rows", [60, 2000])
def test_spread_intervals_cover(protect_seeded, how, rows):
    gen = np.random.default_rng(rows)
    values = gen.normal(6.0, 2.5, rows)
    priv = protect_seeded(pd.DataFrame({"x": values}), seed=rows + 1, epsilon=1e6)
    variance = float(np.var(np.clip(values, *BOUNDS), ddof=1))
    truth = variance if how == "var" else math.sqrt(variance)
    release = getattr(priv.dp, how)
    results = [release("x", bounds=BOUNDS, epsilon=1.0, ci=0.95) for _ in range(400)]
    covered = np.array([r.lower <= truth <= r.upper for r in results])
    rate = float(covered.mean())
    print(f"{how} on {rows} rows: coverage {rate:.4f}")
    assert rate >= 0.95 - 5 * math.sqrt(0.95 * 0.05 / covered.size)
    assert all(r.lower <= r.value <= r.upper for r in results)
