"""Seeded statistical tests of the documented accuracy of consistent tables.

The guide (docs/how-to/hierarchies.md) promises, for the default equal split:

1. at every level above the leaves, the consistent counts are *more* accurate (lower mean
   absolute error) than the raw noisy counts of that level;
2. at the leaves, their MAE is at most 5% above the raw counts' (``LEAF_MARGIN``), and far
   below it where many counts are small;
3. counts well away from 0 are unbiased (clamping at 0 only moves small counts).

The raw counts' MAE is known exactly: discrete Laplace noise of scale ``b`` has
``E|Z| = 2q / (1 - q²)``, ``q = exp(-1/b)``. Test tolerances are 4 standard errors of the
simulated means (one-sided normal tail 3e-5 per check), from the sample standard deviation.
The paired test draws the raw counts itself and compares per draw, which removes most of the
variance (the same noise enters both).
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import pandas_dp
from pandas_dp.mechanisms.consistency import Tree, consistent_counts
from pandas_dp.mechanisms.laplace import DiscreteLaplace
from pandas_dp.mechanisms.random import SeededRandomSource

pytestmark = pytest.mark.statistical

LEAF_MARGIN = 0.05
Z = 4.0
#: Four regions of six districts: large, small and empty districts side by side.
SIZES = {
    "r1": [400, 350, 300, 250, 200, 150],
    "r2": [600, 5, 0, 0, 40, 2],
    "r3": [80, 90, 100, 0, 1, 120],
    "r4": [1000, 900, 20, 10, 3, 0],
}


def frame() -> tuple[pd.DataFrame, dict[str, list[str]]]:
    keys = {r: [f"{r}d{i}" for i in range(len(sizes))] for r, sizes in SIZES.items()}
    rows = [
        (r, d) for r, sizes in SIZES.items() for d, n in zip(keys[r], sizes, strict=True)
        for _ in range(n)
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=["region", "district"]), keys


def raw_mae(scale: Fraction) -> float:
    q = math.exp(-1 / float(scale))
    return 2 * q / (1 - q * q)


def exact_levels() -> list[np.ndarray]:
    tree = Tree([[len(SIZES)], [len(s) for s in SIZES.values()]])
    leaves = np.array([n for sizes in SIZES.values() for n in sizes])
    return tree.rollup(leaves)


def test_released_tables_are_accurate_and_unbiased_as_documented():
    data, keys = frame()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
        priv = data.dp.protect(epsilon=10_000, rng=20240917)
    runs = 300
    truth = exact_levels()
    errors: list[list[np.ndarray]] = [[], [], []]
    for _ in range(runs):
        views = priv.dp.hierarchy(["region", "district"], keys=keys).count(
            epsilon=1.0, output="levels"
        )
        for depth, view in enumerate(views.values()):
            errors[depth].append(view.to_numpy() - truth[depth])
    raw = raw_mae(Fraction(3))  # ε/3 per level: scale 3, E|Z| = 2.945
    for depth in range(3):
        e = np.asarray(errors[depth], dtype=np.float64)
        mae = np.abs(e).mean()
        se = np.abs(e).mean(axis=1).std(ddof=1) / math.sqrt(runs)
        print(f"level {depth}: raw MAE {raw:.3f}, consistent {mae:.3f} ± {se:.3f}")
        if depth < 2:
            assert mae < raw + Z * se, (depth, mae, raw)
        else:
            assert mae < raw * (1 + LEAF_MARGIN) + Z * se, (depth, mae, raw)
    # Unbiased where counts are far from 0: the total and the four regions.
    for depth in (0, 1):
        e = np.asarray(errors[depth], dtype=np.float64)
        bias = e.mean(axis=0)
        se = e.std(axis=0, ddof=1) / math.sqrt(runs)
        assert (np.abs(bias) < Z * se).all(), (depth, bias, se)
    # Clamping at 0 biases the empty districts upwards; they are still far better than raw.
    leaves = np.asarray(errors[2], dtype=np.float64)
    empty = truth[2] == 0
    assert (leaves[:, empty] >= 0).all()
    assert leaves[:, empty].mean() < raw / 2


@pytest.mark.parametrize("split", [(1, 1, 1), (1, 1, 4)])
def test_consistent_beats_raw_above_the_leaves_per_draw(split):
    """Paired: the same raw noisy counts are post-processed, so the difference of absolute
    errors has a small variance and even the total's gain is detected."""
    tree = Tree([[len(SIZES)], [len(s) for s in SIZES.values()]])
    truth = exact_levels()
    shares = [Fraction(s, sum(split)) for s in split]
    mechanisms = [DiscreteLaplace.calibrated(1, share) for share in shares]  # ε = 1
    variances = [m.variance() for m in mechanisms]
    source = SeededRandomSource(99)
    draws = 2000
    gains = [np.empty(draws) for _ in range(3)]
    noise = [
        m.sample(t.size * draws, source).reshape(draws, t.size)
        for t, m in zip(truth, mechanisms, strict=True)
    ]
    for i in range(draws):
        noisy = [t + z[i] for t, z in zip(truth, noise, strict=True)]
        counts = consistent_counts(tree, noisy, variances)
        for depth in range(3):
            raw = np.abs(noisy[depth] - truth[depth]).mean()
            gains[depth][i] = raw - np.abs(counts[depth] - truth[depth]).mean()
    for depth in range(3):
        mean, se = gains[depth].mean(), gains[depth].std(ddof=1) / math.sqrt(draws)
        raw = raw_mae(mechanisms[depth].scale)
        print(f"split {split}, level {depth}: raw MAE {raw:.3f}, gain {mean:.3f} ± {se:.3f}")
        if depth < 2:
            assert mean > Z * se, (split, depth, mean, se)  # strictly better
        else:
            assert mean > -LEAF_MARGIN * raw - Z * se, (split, depth, mean, se)
