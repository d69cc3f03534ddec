"""The graphical model under AIM: junction trees, exact belief propagation, the fit, rows.

Belief propagation is checked against brute force over the whole joint (tiny domains, a
cycle that forces a triangulation), the fit against the exact marginals it must reproduce
when the measurements are exact, and the rows against the model's own marginals.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from pandas_dp.mechanisms.graphical_model import (
    Measured,
    Model,
    beliefs,
    fit,
    junction_tree,
    unbiased_total,
)
from pandas_dp.mechanisms.reconstruction import marginalize

SIZES = (3, 2, 4, 2, 3)
#: A 4-cycle of pairs (0-1-2-3-0), a triple, and an attribute alone.
FACTORS = [(0, 1), (1, 2), (2, 3), (0, 3), (1, 2, 3), (4,)]


def joint_of(potentials: dict[tuple[int, ...], np.ndarray]) -> np.ndarray:
    """The normalised joint ``exp(Σ θ)`` over every cell (brute force)."""
    log = np.zeros(SIZES)
    for clique, theta in potentials.items():
        log = log + theta.reshape([SIZES[a] if a in clique else 1 for a in range(len(SIZES))])
    joint = np.exp(log - log.max())
    return joint / joint.sum()


def random_potentials(seed: int) -> dict[tuple[int, ...], np.ndarray]:
    rng = np.random.default_rng(seed)
    return {f: rng.normal(0, 1.5, [SIZES[a] for a in f]) for f in FACTORS}


@pytest.mark.parametrize("factors", [FACTORS, [(0,), (1,)], [(0, 1, 2, 3, 4)], [(0, 2), (2, 4)]])
def test_junction_tree_runs_and_holds_every_factor(factors):
    tree = junction_tree(factors, len(SIZES))
    assert all(tree.home(f) >= 0 for f in factors)
    assert sorted(set().union(*map(set, tree.cliques))) == list(range(len(SIZES)))
    assert tree.parents[0] == -1
    for i in range(1, len(tree.cliques)):  # running intersection, parents first
        parent = tree.parents[i]
        assert 0 <= parent < i
        earlier = set().union(*map(set, tree.cliques[:i]))
        assert set(tree.cliques[i]) & earlier <= set(tree.cliques[parent])


@pytest.mark.parametrize("seed", range(4))
def test_beliefs_are_the_exact_marginals(seed):
    potentials = random_potentials(seed)
    joint = joint_of(potentials) * 500.0
    tree = junction_tree(list(potentials), len(SIZES))
    tables = beliefs(potentials, tree, SIZES, 500.0)
    everything = tuple(range(len(SIZES)))
    for clique, table in zip(tree.cliques, tables, strict=True):
        np.testing.assert_allclose(table, marginalize(joint, everything, clique), rtol=1e-9)
    model = Model(potentials, tree, SIZES, 500.0)
    for clique in [(0, 2), (1, 4), (0, 2, 4), (3,)]:  # also outside every clique of the tree
        np.testing.assert_allclose(
            model.marginal(clique), marginalize(joint, everything, clique), rtol=1e-9
        )


def test_the_fit_reproduces_exact_measurements_on_a_cycle():
    """Marginals of a distribution of the model's family, measured exactly, are recovered."""
    truth = joint_of(random_potentials(7)) * 10_000.0
    everything = tuple(range(len(SIZES)))
    cycle = [(0, 1), (1, 2), (2, 3), (0, 3), (4,)]
    measured = [Measured(c, marginalize(truth, everything, c), 1.0) for c in cycle]
    model = fit(measured, SIZES, 10_000.0, iterations=3000)
    for m in measured:
        assert np.abs(model.marginal(m.clique) - m.values).sum() < 1.0  # of 10,000
    # The fit explains the unmeasured diagonal from the cycle, near the truth.
    diagonal = marginalize(truth, everything, (0, 2))
    independent = np.outer(diagonal.sum(1), diagonal.sum(0)) / 10_000.0
    gap = np.abs(model.marginal((0, 2)) - diagonal).sum()
    assert gap < 0.5 * np.abs(independent - diagonal).sum()


def test_a_warm_start_needs_fewer_steps():
    truth = joint_of(random_potentials(3)) * 1_000.0
    everything = tuple(range(len(SIZES)))
    measured = [Measured(c, marginalize(truth, everything, c), 1.0) for c in [(0, 1), (1, 2)]]
    first = fit(measured, SIZES, 1_000.0, iterations=2000)
    again = fit(measured, SIZES, 1_000.0, start=first, iterations=1)
    cold = fit(measured, SIZES, 1_000.0, iterations=1)
    error = {
        name: sum(np.abs(m.marginal(x.clique) - x.values).sum() for x in measured)
        for name, m in {"again": again, "cold": cold}.items()
    }
    assert error["again"] < 0.1 * error["cold"]


def test_rows_follow_the_model():
    """Each clique's rows are its expected counts given the separator's rows, rounded up or
    down: a cell is off by under one from its own rounding plus what the separator's cells
    were off by, so by under one per clique down the tree (bound: 2 per clique)."""
    potentials = random_potentials(11)
    tree = junction_tree(list(potentials), len(SIZES))
    model = Model(potentials, tree, SIZES, 20_000.0)
    rows = model.sample(20_000, np.random.default_rng(0))  # test-only: a seeded draw
    assert rows.shape == (20_000, len(SIZES))
    for clique in tree.cliques:
        codes = np.ravel_multi_index(tuple(rows[:, a] for a in clique), [SIZES[a] for a in clique])
        counts = np.bincount(codes, minlength=int(np.prod([SIZES[a] for a in clique])))
        expected = model.marginal(clique).reshape(-1)
        assert np.abs(counts - expected).max() <= 2 * len(tree.cliques)


def test_empty_and_degenerate_inputs_are_total():
    zero = fit([Measured((0,), np.zeros(3), 1.0)], SIZES, 0.0, iterations=5)
    assert np.isfinite(zero.marginal((0, 1))).all()
    negative = fit([Measured((0, 1), np.full((3, 2), -50.0), 2.0)], SIZES, -10.0, iterations=5)
    assert (negative.marginal((0, 1)) >= 0).all()
    assert negative.sample(0, np.random.default_rng(0)).shape == (0, len(SIZES))  # test-only
    assert list(itertools.chain(*junction_tree([], 2).cliques)) == [0, 1]


def test_unbiased_total_weights_each_sum_by_its_variance():
    """Sums 100 (3 cells of σ 1: variance 3) and 130 (one merged cell counting 4 noised cells
    of σ 2: variance 16) combine as (100/3 + 130/16) / (1/3 + 1/16) = 104.74; weighting the
    merged cell as one cell (variance 4) would give 112.86. A negative total is 0."""
    three = Measured((0,), np.array([30.0, 30.0, 40.0]), 1.0)
    merged = Measured((1,), np.array([130.0]), 2.0)
    assert unbiased_total([three, merged], [3, 4]) == pytest.approx(
        (100 / 3 + 130 / 16) / (1 / 3 + 1 / 16)
    )
    assert unbiased_total([three, merged], [3, 1]) == pytest.approx(
        (100 / 3 + 130 / 4) / (1 / 3 + 1 / 4)
    )
    assert unbiased_total([Measured((0,), np.array([-5.0, 1.0]), 1.0)], [2]) == 0.0
