"""The ends of a quantile's interval (sparse vector technique): their law, their privacy
loss, and the interval's coverage.

- Distribution: the scan's stopping edge has an exact law, a sum over the threshold noise of
  products of the query noises' tails (written here from the definition of AboveThreshold);
  seeded draws must match it (chi-square).
- Privacy: an empirical privacy-loss audit on neighbouring cell counts (see
  :mod:`tests.statistical.auditing`); a mutant with an eighth of the noise must be caught.
- Coverage: through the public API, at α = 0.05, intervals must cover the sample quantile of
  the clipped values (``Series.quantile``) at least 95% of the time, on smooth data and on
  data with atoms (ties), where an exponential-mechanism interval would fail.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from pandas_dp.mechanisms.laplace import DiscreteLaplace
from pandas_dp.mechanisms.quantile_interval import (
    difference_tail,
    end_index,
    first_crossing,
    scan_noise,
    scan_scores,
    threshold_for,
)
from pandas_dp.mechanisms.random import SeededRandomSource

from .auditing import audit, paired_runs

pytestmark = pytest.mark.statistical

EPSILON = Fraction(1)
HALF = Fraction(1, 2)


def draw_ends(counts: np.ndarray, n: int, seed: int, side: int, scale: int = 1) -> np.ndarray:
    """``n`` independent ends for one row of cell counts (``scale`` divides the noise)."""
    threshold_noise, query_noise, _ = scan_noise(EPSILON, HALF)
    threshold_noise = DiscreteLaplace(threshold_noise.scale / scale)
    query_noise = DiscreteLaplace(query_noise.scale / scale)
    scores = scan_scores(np.tile(counts, (n, 1)), HALF, side)
    edges = scores.shape[1]
    threshold = threshold_for(threshold_noise, query_noise, 0.05, HALF)
    source = SeededRandomSource(seed)
    rho = threshold_noise.sample(n, source)
    nu = query_noise.sample(n * edges, source).reshape(n, edges)
    return end_index(first_crossing(scores, threshold, rho, nu), edges, side)


def exact_stop_law(scores: np.ndarray, threshold: int) -> np.ndarray:
    """P(stop = k), k = 0..E (E: no stop), from the definition: ρ ~ DLap(2Δ/ε) and
    independent ν_k ~ DLap(4Δ/ε); stop at the first k with a_k + ν_k >= T + ρ."""

    def pmf(scale: float, reach: int) -> tuple[np.ndarray, np.ndarray]:
        q = math.exp(-1 / scale)
        z = np.arange(-reach, reach + 1)
        return z, (1 - q) / (1 + q) * q ** np.abs(z)

    def at_least(scale: float, k: np.ndarray) -> np.ndarray:  # P(ν >= k)
        q = math.exp(-1 / scale)
        upper = q ** np.maximum(k, 1) / (1 + q)
        return np.where(k >= 1, upper, 1 - q ** np.maximum(1 - k, 1) / (1 + q))

    rho, p_rho = pmf(2.0, 80)
    law = np.zeros(scores.size + 1)
    survive = np.ones_like(p_rho)
    for k, a in enumerate(scores):
        stop = at_least(4.0, threshold + rho - a)
        law[k] = np.sum(p_rho * survive * stop)
        survive = survive * (1 - stop)
    law[-1] = np.sum(p_rho * survive)
    return law


@pytest.mark.parametrize("side", [-1, 1])
def test_the_stopping_edge_has_the_law_of_above_threshold(side):
    # n = 100 over 10 cells (one empty, one heavy): the scores 2·rank_k - n climb through
    # the threshold (about -35) in the middle, so the stop has a spread-out law.
    counts = np.array([[10, 12, 0, 8, 25, 10, 10, 5, 10, 10]])
    scores = scan_scores(counts, HALF, side)[0]
    threshold_noise, query_noise, delta = scan_noise(EPSILON, HALF)
    assert delta == 1  # qd · max(q, 1 - q) = 2 · 1/2
    assert (threshold_noise.scale, query_noise.scale) == (2, 4)
    threshold = threshold_for(threshold_noise, query_noise, 0.05, HALF)
    law = exact_stop_law(scores, threshold)
    assert law.sum() == pytest.approx(1.0, abs=1e-12)
    n = 200_000
    ends = draw_ends(counts[0], n, seed=11, side=side)
    # The reported edge is a function of the stop: map the exact law through it.
    stops = np.arange(scores.size + 1)
    mapped = end_index(stops, scores.size, side)
    expected = np.bincount(mapped, weights=law, minlength=scores.size)
    observed = np.bincount(ends, minlength=scores.size)
    keep = expected * n >= 5
    chi2 = np.sum((observed[keep] - n * expected[keep]) ** 2 / (n * expected[keep]))
    # P(chi2 > stat) for honest draws; a fixed seed, so this cannot flake.
    assert stats.chi2.sf(chi2, df=int(keep.sum()) - 1) > 1e-6, (observed, n * expected)


@pytest.mark.parametrize("beta", [0.025, 0.05, 0.2])
def test_the_margin_is_the_least_that_holds_at_the_worst_edge(beta):
    # The end fails only if edge k° (the first with a_k >= -qd) does not fire; the worst data
    # put a_k° at -qd exactly and every earlier score far below the threshold, where no noise
    # fires. The exact law then gives P(stop after k°) <= β, and one unit less margin > β:
    # the margin pays for one edge's noise and the threshold's, never a union over edges.
    threshold_noise, query_noise, _ = scan_noise(EPSILON, HALF)
    threshold = threshold_for(threshold_noise, query_noise, beta, HALF)
    scores = np.array([-10_000, -10_000, -HALF.denominator, 40, 400])
    late = exact_stop_law(scores, threshold)[3:].sum()
    assert late <= beta
    looser = exact_stop_law(scores, threshold + 1)[3:].sum()
    assert looser > beta, (late, looser)
    # The closed-form tail of ρ - ν that sets the margin agrees with the brute-force sum.
    margin = -threshold - HALF.denominator
    z = np.arange(-400, 401)
    law = np.convolve(*(
        (1 - math.exp(-1 / b)) / (1 + math.exp(-1 / b)) * np.exp(-np.abs(z) / b) for b in (2, 4)
    ))  # fmt: skip
    brute = law[np.arange(-800, 801) >= margin + 1].sum()
    tail = difference_tail(threshold_noise, query_noise, margin + 1)
    assert tail == pytest.approx(brute, rel=1e-9)


def test_privacy_loss_audit_and_a_low_noise_mutant():
    # D: 100 rows over 10 cells; D' one more row in the first cell, which moves every score
    # a_k = 2·rank_k - n by one (down at the first edge, up at the others), near the
    # threshold (about -35), where the scan stops.
    d = np.full(10, 10)
    d2 = d + np.eye(10, dtype=np.int64)[0]

    def outputs():
        def run(dataset: int, n: int, seed: int) -> np.ndarray:
            return draw_ends(d if dataset == 0 else d2, n, seed, -1)

        return run

    real = audit(*paired_runs(outputs(), seed=500, n_calibration=100_000, n_evaluation=400_000))
    print(f"interval end, real: {real}")
    assert real.epsilon_lb <= float(EPSILON), f"the scan leaks more than ε: {real}"
    # The mutant (an eighth of the noise: 8ε) gets data whose second score sits one below
    # its own threshold on D and on it on D', where its scan is most sensitive.
    threshold_noise, query_noise, _ = scan_noise(EPSILON, HALF)
    eighth = (DiscreteLaplace(threshold_noise.scale / 8), DiscreteLaplace(query_noise.scale / 8))
    t_mutant = threshold_for(*eighth, 0.05, HALF)
    below = (t_mutant - 1 + 100) // 2  # rank giving a_1 = 2·rank - 100 <= T - 1
    d_m = np.zeros(10, dtype=np.int64)
    d_m[0], d_m[1] = below, 100 - below
    d_m2 = d_m + np.eye(10, dtype=np.int64)[0]

    def mutant_outputs(dataset: int, n: int, seed: int) -> np.ndarray:
        return draw_ends(d_m if dataset == 0 else d_m2, n, seed, -1, 8)

    caught = audit(*paired_runs(mutant_outputs, seed=600, n_calibration=100_000,
                                n_evaluation=400_000))  # fmt: skip
    print(f"interval end, eighth-noise mutant: {caught}")
    assert caught.epsilon_lb > float(EPSILON), f"the 8ε mutant was not caught: {caught}"
    # The real scan on the mutant's data stays within ε.
    honest = audit(*paired_runs(lambda i, n, seed: draw_ends(d_m if i == 0 else d_m2, n, seed, -1),
                                seed=700, n_calibration=100_000, n_evaluation=400_000))  # fmt: skip
    print(f"interval end, real scan on the mutant's data: {honest}")
    assert honest.epsilon_lb <= float(EPSILON)


def _coverage(frame_values: np.ndarray, repeats: int, seed: int, protect_seeded):
    groups = 40
    data = pd.DataFrame(
        {"g": np.repeat(np.arange(groups), frame_values.size), "x": np.tile(frame_values, groups)}
    )
    priv = protect_seeded(data, seed=seed, epsilon=1e6)
    truth = pd.Series(np.clip(frame_values, 0, 100)).quantile(0.5)
    covered = []
    for _ in range(repeats):
        table = priv.dp.groupby("g", keys=range(groups)).agg(
            v=("x", "median"), bounds={"x": (0, 100)}, epsilon=1.0, ci=0.95,
        )  # fmt: skip
        covered.append(((table["v_lower"] <= truth) & (truth <= table["v_upper"])).to_numpy())
    return np.concatenate(covered)


@pytest.mark.parametrize(
    "name", ["smooth", "atoms at the median", "all one value", "half at each bound"]
)
def test_median_interval_coverage(name, protect_seeded):
    gen = np.random.default_rng(7)
    values = {
        "smooth": gen.normal(50, 15, 400),
        "atoms at the median": np.r_[np.full(150, 50.0), gen.uniform(0, 100, 250)],
        "all one value": np.full(300, 37.5),
        "half at each bound": np.r_[np.full(200, -5.0), np.full(200, 105.0)],
    }[name]
    covered = _coverage(values, repeats=25, seed=31, protect_seeded=protect_seeded)
    rate = float(covered.mean())
    m = covered.size
    print(f"median interval coverage ({name}): {rate:.4f} over {m}")
    # At least 95% less 5 standard deviations of a binomial frequency at 0.95.
    assert rate >= 0.95 - 5 * math.sqrt(0.95 * 0.05 / m)


def test_interval_contains_its_estimate_and_reads_the_ledger(protect_seeded):
    gen = np.random.default_rng(3)
    priv = protect_seeded(pd.DataFrame({"x": gen.normal(50, 10, 2000)}), seed=4, epsilon=10)
    estimate = priv.dp.median("x", bounds=(0, 100), epsilon=1.5, ci=0.9)
    assert estimate.lower <= estimate.value <= estimate.upper
    assert estimate.confidence == 0.9
    release = priv.dp.session.releases[-1]
    labels = [m.label for m in release.measurements]
    assert labels == ["quantile(x, 0.5)", "quantile(x, 0.5, lower)", "quantile(x, 0.5, upper)"]
    assert [m.mechanism for m in release.measurements] == [
        "permute_and_flip",
        "sparse_vector",
        "sparse_vector",
    ]  # fmt: skip  (the estimate by permute-and-flip: a pure-ε session)
    assert [m.epsilon for m in release.measurements] == [Fraction(1, 2)] * 3
    assert release.cost.epsilon == Fraction(3, 2)
    # The scan's noise is calibrated for its share: scale 4Δ/ε = 4 · 1 / (1/2) in 2× ranks.
    assert release.measurements[1].scale == 8
    assert release.measurements[1].sensitivity == 1
