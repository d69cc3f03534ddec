"""Privacy-loss audit of the bounds release's scan (``priv.dp.bounds``, issue 41).

The scan is run as the release calibrates it (:func:`~pandas_dp.planning.measurement.choices.
bound_part`: its noise, its scores from the engine's edge ranks, its stopping rule) on
neighbouring data, and its output (the stopping point's index) is audited as in
:mod:`tests.statistical.auditing`. Only the first ``K`` points are simulated: every value
lies on them and the scan almost surely stops there; either way the simulated output is
the real one capped at ``K - 1``, a post-processing, so an honest ε-DP scan must
stay below ε and a leaky one shows. As for a quantile's interval ends (also a sparse vector
scan, whose analysis is loose), the mutant has an eighth of the noise and gets data where
its scan is most sensitive.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from pandas_dp.measures.grids import lattice
from pandas_dp.mechanisms.bounds import bound_scores, scan_index
from pandas_dp.mechanisms.laplace import DiscreteLaplace
from pandas_dp.mechanisms.random import SeededRandomSource
from pandas_dp.planning.measurement.choices import bound_part

from .auditing import audit, paired_runs

pytestmark = pytest.mark.statistical

EPSILON = Fraction(1)
HALF = Fraction(1, 2)
K = 10
MIDDLE = lattice().size // 2  # the point 0


def edge_ranks(counts_at_points: np.ndarray) -> np.ndarray:
    """``#{x < c}`` then ``#{x <= c}`` on the lattice for ``counts_at_points[j]`` values at the
    ``j``-th point from 0 upwards (the engine's layout, written from its definition)."""
    at = np.zeros(lattice().size, dtype=np.int64)
    at[MIDDLE : MIDDLE + counts_at_points.size] = counts_at_points
    up_to = np.cumsum(at)
    return np.concatenate([up_to - at, up_to])[None, :]


def draw(counts: np.ndarray, n: int, seed: int, divide: int = 1) -> np.ndarray:
    part = bound_part("x", HALF, EPSILON, 1, "bound(x, 0.5, upper)")
    threshold = DiscreteLaplace(part.threshold_noise.scale / divide)
    query = DiscreteLaplace(part.query_noise.scale / divide)
    scores = np.tile(bound_scores(edge_ranks(counts), part.q, part.side)[:, :K], (n, 1))
    source = SeededRandomSource(seed)
    rho = threshold.sample(n, source)
    nu = query.sample(n * K, source).reshape(n, K)
    return scan_index(scores, part.threshold, rho, nu)


def test_the_calibration_is_that_of_above_threshold() -> None:
    part = bound_part("x", HALF, EPSILON, 1, "b")
    assert part.threshold_noise.scale == 2  # 2Δ/ε with Δ = qd·max(q, 1 - q) = 1
    assert part.query_noise.scale == 4
    assert part.threshold == 4  # the query noise's scale
    assert part.measurement.epsilon == EPSILON


def test_privacy_loss_audit_and_a_low_noise_mutant() -> None:
    # D: 100 values, 10 at each of the first 10 points; D' one more at 0, which moves every
    # score a_j = 2·#{x <= c_j} - n by one, near the threshold (4) at the fifth point.
    d = np.full(K, 10, dtype=np.int64)
    d2 = d + np.eye(K, dtype=np.int64)[0]

    def run(dataset: int, n: int, seed: int) -> np.ndarray:
        return draw(d if dataset == 0 else d2, n, seed)

    real = audit(*paired_runs(run, seed=800, n_calibration=100_000, n_evaluation=400_000))
    print(f"bounds scan, real: {real}")
    assert real.epsilon_lb <= float(EPSILON), f"the scan leaks more than ε: {real}"
    # The mutant's data: the second point's score is 3 on D and 4 on D' (its threshold,
    # the real query noise's scale: the mutant keeps the threshold and divides the noise).
    m = np.zeros(K, dtype=np.int64)
    m[1], m[2] = 52, 49
    m2 = m + np.eye(K, dtype=np.int64)[0]

    def mutant(dataset: int, n: int, seed: int) -> np.ndarray:
        return draw(m if dataset == 0 else m2, n, seed, divide=8)

    caught = audit(*paired_runs(mutant, seed=900, n_calibration=100_000, n_evaluation=400_000))
    print(f"bounds scan, eighth-noise mutant: {caught}")
    assert caught.epsilon_lb > float(EPSILON), f"the 8ε mutant was not caught: {caught}"

    def honest(dataset: int, n: int, seed: int) -> np.ndarray:
        return draw(m if dataset == 0 else m2, n, seed)

    again = audit(*paired_runs(honest, seed=1000, n_calibration=100_000, n_evaluation=400_000))
    print(f"bounds scan, real scan on the mutant's data: {again}")
    assert again.epsilon_lb <= float(EPSILON)
