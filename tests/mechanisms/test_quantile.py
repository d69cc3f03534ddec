"""Quantile scores on a public grid, grid values, the rank-error bound, and the moments
behind variances (``square_units``, ``variance_from``, ``variance_interval``).

References are computed here from the definitions in exact rationals; the distribution of
quantile outputs on a small grid is χ²-tested against the exponential mechanism's law
computed from ranks counted directly (seeded; p > 1e-6).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from pandas_dp.mechanisms.accuracy import variance_interval
from pandas_dp.mechanisms.exponential import ExponentialMechanism
from pandas_dp.mechanisms.quantile import (
    DEFAULT_CELLS,
    MAX_CELLS,
    grid_value,
    quantile_scores,
    rank_error,
    square_units,
    variance_from,
)
from pandas_dp.mechanisms.random import SeededRandomSource


def test_constants():
    assert (DEFAULT_CELLS, MAX_CELLS) == (4096, 65536)


def edge_ranks(at_edges: np.ndarray, in_cells: np.ndarray) -> np.ndarray:
    """``[#{x < c_k}..., #{x <= c_k}...]`` per row from the values at each of the ``K + 1``
    edges and strictly inside each of the ``K`` cells (the engine's EdgeRanks layout)."""
    rows, edges = at_edges.shape
    below = np.zeros((rows, edges), dtype=np.int64)
    for k in range(1, edges):
        below[:, k] = at_edges[:, :k].sum(axis=1) + in_cells[:, :k].sum(axis=1)
    return np.concatenate([below, below + at_edges], axis=1)


def interval_score(a: int, b: int, target: Fraction) -> Fraction:
    """The distance from ``q n`` to the rank interval ``[a, b]``, minus its depth inside it."""
    return max(a - target, target - b)


@pytest.mark.parametrize(
    "q", [Fraction(0), Fraction(1, 2), Fraction(3, 10), Fraction(1), Fraction(7, 9)]
)
def test_scores_are_distances_of_q_n_to_rank_intervals(q):
    at_edges = np.array([[0, 2, 0, 1, 0, 0, 3], [0, 0, 0, 0, 0, 0, 0], [5, 0, 0, 0, 0, 0, 0]])
    in_cells = np.array([[0, 3, 1, 0, 4, 2], [5, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0]])
    ranks = edge_ranks(at_edges, in_cells)
    scores, denominator = quantile_scores(ranks, q)
    assert scores.shape == (3, 7)  # one per edge
    assert scores.dtype == np.int64
    assert denominator == q.denominator
    for row, edges, cells in zip(scores, at_edges, in_cells, strict=True):
        n = int(edges.sum() + cells.sum())
        below = [int(edges[:k].sum() + cells[:k].sum()) for k in range(7)]  # values below c_k
        expected = [interval_score(a, a + int(edges[k]), q * n) for k, a in enumerate(below)]
        assert [Fraction(int(s), denominator) for s in row] == expected


def test_scores_change_by_at_most_the_sensitivity_when_a_value_is_added():
    # Adding one value (below, at or above an edge) moves every score by at most
    # max(q, 1 - q) <= 1: the sensitivity, attained.
    rng = np.random.default_rng(3)
    at_edges, in_cells = rng.integers(0, 4, (1, 13)), rng.integers(0, 4, (1, 12))
    for q in (Fraction(0), Fraction(1, 4), Fraction(1, 2), Fraction(9, 10), Fraction(1)):
        base, d = quantile_scores(edge_ranks(at_edges, in_cells), q)
        worst = Fraction(0)
        for slot in range(25):
            edges, cells = at_edges.copy(), in_cells.copy()
            if slot % 2 == 0:
                edges[0, slot // 2] += 1
            else:
                cells[0, slot // 2] += 1
            after, _ = quantile_scores(edge_ranks(edges, cells), q)
            change = Fraction(int(np.abs(after - base).max()), d)
            assert change <= max(q, 1 - q)
            worst = max(worst, change)
        assert worst == max(q, 1 - q)  # attained: the sensitivity is not overstated


def test_grid_values():
    index = np.arange(11)
    values = grid_value(index, -1.0, 3.0, 10)
    assert values[0] == -1.0
    assert values[-1] == 3.0  # exactly the upper bound
    assert np.all(np.diff(values) > 0)
    exact = [float(Fraction(-1) + k * Fraction(4, 10)) for k in range(11)]
    np.testing.assert_allclose(values, exact, rtol=0, atol=4e-16 * 3)
    # Awkward bounds: still ends exactly on the bounds.
    lower, upper = 0.1, 0.7
    values = grid_value(np.array([0, 4096]), lower, upper, 4096)
    assert values.tolist() == [lower, upper]


def test_rank_error_formula():
    # McSherry–Talwar: score > OPT + 2Δ (ln K + ln(1/α)) / ε with probability <= α.
    assert rank_error(1.0, 4097, 0.05) == pytest.approx(2 * (math.log(4097) + math.log(20)))
    assert rank_error(0.5, 9, 0.1, sensitivity=3) == pytest.approx(
        12 * (math.log(9) + math.log(10))
    )
    # The median's Δ = 1/2 halves the bound; the 0.9 quantile's Δ = 0.9.
    assert rank_error(1.0, 4097, 0.05, sensitivity=0.5) == pytest.approx(
        math.log(4097) + math.log(20)
    )
    assert rank_error(1.0, 4097, 0.05, sensitivity=0.9) == pytest.approx(
        1.8 * (math.log(4097) + math.log(20))
    )
    assert rank_error(2.0, 100, 0.05) < rank_error(1.0, 100, 0.05)
    assert rank_error(1.0, 100, 0.01) > rank_error(1.0, 100, 0.05)


@pytest.mark.parametrize(
    ("lower", "upper", "centre"),
    [(0.0, 100.0, 50.0), (0.0, 200_000.0, 100_000.0), (-1.0, 0.25, -0.375), (30.0, 60.5, 45.25),
     (0.0, 1.0, 0.4), (-1e150, 1e150, 0.0), (0.0, 2.0**20, 2.0**19)],
)  # fmt: skip
def test_square_units_is_the_smallest_power_of_two_step(lower, upper, centre):
    exponent, units = square_units(lower, upper, centre)
    reach = max(abs(Fraction(lower) - Fraction(centre)), abs(Fraction(upper) - Fraction(centre)))
    step = Fraction(2) ** exponent
    assert step >= reach * reach / 2**36 > step / 2  # smallest power of two keeping 2**36 steps
    assert units == math.ceil(reach * reach / step)
    assert 2**35 < units <= 2**36


def test_variance_from_moments():
    # Values 1, 2, 3, 4 about a centre of 2: S1 = 2, S2 = 6; var = (6 - 4/4) / 3 = 5/3.
    assert variance_from(4, 2.0, 6.0, reach=10.0) == pytest.approx(5 / 3)
    assert variance_from(4, 2.0, 6.0, reach=10.0, ddof=0) == pytest.approx(5 / 4)
    # Clamped into [0, reach²]; a count below 1 is treated as 1 (no 0/0, no sign flip).
    assert variance_from(4, 2.0, -100.0, reach=10.0) == 0.0
    assert variance_from(4, 0.0, 1e9, reach=10.0) == 100.0
    for count in (0, -5, 0.5):
        value = variance_from(count, 3.0, 50.0, reach=10.0)
        assert np.isfinite(value)
        assert 0.0 <= value <= 100.0
    assert variance_from(1, 0.0, 4.0, reach=10.0, ddof=1) == 4.0  # N - ddof = 0 -> 1
    many = variance_from(np.array([4, 0]), np.array([2.0, 0.0]), np.array([6.0, 0.0]), 10.0)
    np.testing.assert_allclose(many, [5 / 3, 0.0])


def test_variance_interval_contains_every_consistent_truth():
    """Interval arithmetic must be conservative: for true moments anywhere in the three
    boxes ``|N* - N| <= a``, ``|S1* - S1| <= b``, ``|S2* - S2| <= c``, the true
    ``(S2* - S1*²/N*) / (N* - ddof)`` lies in the returned interval (clamped)."""
    rng = np.random.default_rng(17)
    for _ in range(300):
        n, a = rng.uniform(2, 60), rng.uniform(0, 30)
        s1, b = rng.uniform(-300, 300), rng.uniform(0, 200)
        s2, c = rng.uniform(0, 4000), rng.uniform(0, 1500)
        reach, ddof = 25.0, int(rng.integers(0, 2))
        lower, upper = variance_interval(
            np.array([n]), a, np.array([s1]), b, np.array([s2]), c, reach, ddof
        )
        assert 0.0 <= lower[0] <= upper[0] <= reach * reach
        for _ in range(50):
            true_n = rng.uniform(max(n - a, 1.0), n + a)
            if true_n - ddof < 1:
                continue
            t1, t2 = rng.uniform(s1 - b, s1 + b), rng.uniform(s2 - c, s2 + c)
            truth = min(max((t2 - t1 * t1 / true_n) / (true_n - ddof), 0.0), reach * reach)
            assert lower[0] - 1e-9 <= truth <= upper[0] + 1e-9


def test_variance_interval_with_exact_moments_is_the_point():
    lower, upper = variance_interval(
        np.array([4.0]), 0.0, np.array([2.0]), 0.0, np.array([6.0]), 0.0, 10.0, 1
    )
    assert lower[0] == pytest.approx(5 / 3)
    assert upper[0] == pytest.approx(5 / 3)


def test_quantile_outputs_follow_the_exponential_mechanism_on_a_small_grid():
    """The whole quantile path below the API: edge ranks -> scores -> exact sampler -> grid
    values, 20,000 seeded draws on a 6-cell grid, against ``exp(-ε s_k / (2Δ))`` with ``s_k``
    the distance from ``q n`` to ``[#{x < k}, #{x <= k}]``, ``Δ = max(q, 1 - q) = 2/3``
    (rate 3ε/4) and ranks counted directly from the values (three of them on edge 3)."""
    values = np.array([0.3, 0.35, 1.2, 2.5, 3.0, 3.0, 3.0, 5.5, 5.99])
    lower, upper, cells, q, eps, n_draws = 0.0, 6.0, 6, Fraction(2, 3), Fraction(1), 20_000
    below = [int((values < edge).sum()) for edge in range(cells + 1)]
    at_most = [int((values <= edge).sum()) for edge in range(cells + 1)]
    scores, denominator = quantile_scores(np.array([below + at_most]), q)
    mechanism = ExponentialMechanism(eps, max(q, 1 - q))  # not monotone: rate ε/(2Δ)
    assert mechanism.rate == Fraction(3, 4)
    chosen = mechanism.choose(
        np.repeat(scores, n_draws, axis=0), denominator, SeededRandomSource(12)
    )
    released = grid_value(chosen, lower, upper, cells)
    assert set(released.tolist()) <= {float(k) for k in range(7)}
    target = q * values.size
    distances = [interval_score(a, b, target) for a, b in zip(below, at_most, strict=True)]
    assert distances == [6, 4, 3, -1, 1, 1, 3]  # q n = 6 lies in edge 3's [4, 7], 1 deep
    weights = np.array([math.exp(-float(eps * 3 / 4 * s)) for s in distances])
    expected = n_draws * weights / weights.sum()
    observed = np.bincount(released.astype(np.int64), minlength=cells + 1)
    assert stats.chisquare(observed, expected).pvalue > 1e-6


def test_quantile_outputs_follow_permute_and_flip_on_a_small_grid():
    """The same path with the pure-ε sampler: permute-and-flip at rate 3ε/4 accepts edge
    ``k`` with ``p_k = exp(-3ε/4 (s_k - s_min))`` and releases a uniform accepted edge, so
    ``P(k) = E[1{k ∈ A} / |A|]``, here summed over all 2**7 accepted sets."""
    values = np.array([0.3, 0.35, 1.2, 2.5, 3.0, 3.0, 3.0, 5.5, 5.99])
    lower, upper, cells, q, eps, n_draws = 0.0, 6.0, 6, Fraction(2, 3), Fraction(1), 20_000
    below = [int((values < edge).sum()) for edge in range(cells + 1)]
    at_most = [int((values <= edge).sum()) for edge in range(cells + 1)]
    scores, denominator = quantile_scores(np.array([below + at_most]), q)
    mechanism = ExponentialMechanism(eps, max(q, 1 - q), flip=True)
    assert mechanism.rate == Fraction(3, 4)
    chosen = mechanism.choose(
        np.repeat(scores, n_draws, axis=0), denominator, SeededRandomSource(13)
    )
    released = grid_value(chosen, lower, upper, cells)
    distances = [6, 4, 3, -1, 1, 1, 3]  # as above
    p = [math.exp(-float(eps * 3 / 4 * (s - min(distances)))) for s in distances]
    law = np.zeros(cells + 1)
    for mask in range(1, 1 << (cells + 1)):
        accepted = [k for k in range(cells + 1) if mask >> k & 1]
        weight = math.prod(p[k] if mask >> k & 1 else 1 - p[k] for k in range(cells + 1))
        law[accepted] += weight / len(accepted)
    np.testing.assert_allclose(mechanism.probabilities(np.array(distances, float)), law)
    observed = np.bincount(released.astype(np.int64), minlength=cells + 1)
    assert stats.chisquare(observed, n_draws * law).pvalue > 1e-6


def test_interval_margins_are_finite_and_shrink_with_epsilon_at_any_scale():
    """The scan's margin is computed inside the release, after the charge: it must never fail.

    At ε = 10^4 both noises' ``exp(-1/b)`` underflow to 0 (the tail formula's geometric sum
    once divided 0 by 0 there); at ε = 10^-9 the margin is about 1.3·10^10.
    """
    from pandas_dp.mechanisms.quantile_interval import scan_noise, threshold_for

    previous = None
    for epsilon in [Fraction(1, 10**9), Fraction(1, 1000), Fraction(1), Fraction(10**4),
                    Fraction(10**6)]:  # fmt: skip
        for q in (Fraction(1, 2), Fraction(1, 10), Fraction(999, 1000)):
            threshold_noise, query_noise, _ = scan_noise(epsilon, q)
            for beta in (0.025, 0.0005):
                threshold = threshold_for(threshold_noise, query_noise, beta, q)
                assert isinstance(threshold, int)
                assert threshold <= -q.denominator
        threshold = threshold_for(*scan_noise(epsilon, Fraction(1, 2))[:2], 0.025, Fraction(1, 2))
        assert previous is None or threshold >= previous  # less noise, a smaller margin
        previous = threshold
