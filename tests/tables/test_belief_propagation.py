"""The fast sums under belief propagation: shared partial sums against numpy's own, the
probability-space messages against brute force where log-space would be needed, and the
junction tree a clique inside the model leaves unchanged."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from pandas_dp.mechanisms.belief_propagation import (
    belief_at,
    beliefs,
    gather,
    junction_tree,
    sum_onto,
    sums_onto,
)
from pandas_dp.mechanisms.graphical_model import Model
from pandas_dp.mechanisms.reconstruction import marginalize

SIZES = (3, 2, 4, 2, 3, 5)
CLIQUE = (0, 1, 2, 3, 4, 5)


def subsets(clique: tuple[int, ...]) -> list[tuple[int, ...]]:
    return [s for r in range(1, len(clique) + 1) for s in itertools.combinations(clique, r)]


@pytest.mark.parametrize("seed", range(3))
def test_shared_partial_sums_are_numpys_sums(seed):
    table = np.random.default_rng(seed).random(SIZES)  # test-only data
    wanted = subsets(CLIQUE)
    sums = sums_onto(table, CLIQUE, wanted, SIZES)
    assert list(sums) == wanted
    for sub in wanted:
        np.testing.assert_allclose(sums[sub], marginalize(table, CLIQUE, sub), rtol=1e-12)
        assert sums[sub].shape == tuple(SIZES[a] for a in sub)
    counts = np.random.default_rng(seed).integers(0, 9, SIZES)  # integers: exactly equal
    for sub in [(1, 4), (0, 5), (2,)]:
        assert (sum_onto(counts, CLIQUE, sub, SIZES) == marginalize(counts, CLIQUE, sub)).all()


@pytest.mark.parametrize("seed", range(3))
def test_gathered_potentials_are_their_broadcast_sum(seed):
    rng = np.random.default_rng(seed)  # test-only data
    every = subsets(CLIQUE)
    chosen = [every[i] for i in rng.choice(len(every), 12, replace=False)]
    parts = {s: rng.normal(size=[SIZES[a] for a in s]) for s in chosen}
    brute = np.zeros(SIZES)
    for sub, table in parts.items():
        brute = brute + table.reshape([SIZES[a] if a in sub else 1 for a in CLIQUE])
    np.testing.assert_allclose(gather(parts, CLIQUE, SIZES), brute, rtol=1e-12, atol=1e-12)
    assert gather({}, (0, 2), SIZES).shape == (3, 4)


def brute_marginals(potentials, clique, total):
    """Marginals of ``exp(Σ θ)`` over ``clique`` from the whole joint (tiny domains)."""
    log = np.zeros([SIZES[a] for a in clique])
    for f, theta in potentials.items():
        log = log + theta.reshape([SIZES[a] if a in f else 1 for a in clique])
    joint = np.exp(log - log.max())
    return total * joint / joint.sum()


@pytest.mark.parametrize("seed", range(3))
def test_potentials_that_disagree_by_thousands_keep_exact_marginals(seed):
    """Two factors pull the same value of a separator apart by 2,000 nats (e^2000 is far past
    float64): messages keep each separator value's own scale, so the marginals stay exact. A
    message scaled once per clique would lose the value that in fact carries the mass."""
    rng = np.random.default_rng(seed)  # test-only data
    shape = {f: [SIZES[a] for a in f] for f in [(0, 1), (1, 2), (2, 3)]}
    potentials = {f: rng.uniform(-3, 3, s) for f, s in shape.items()}
    potentials[(0, 1)][:, 0] += 2000.0  # x1 = 0 carries the mass after all (+400)
    potentials[(1, 2)][0, :] -= 1600.0
    potentials[(2, 3)][1, :] += 900.0
    potentials[(1, 2)][:, 1] -= 1000.0
    whole = (0, 1, 2, 3)
    joint = brute_marginals(potentials, whole, 100.0)
    tree = junction_tree(list(potentials), 4)
    for clique, table in zip(tree.cliques, beliefs(potentials, tree, SIZES, 100.0), strict=True):
        assert np.isfinite(table).all()
        np.testing.assert_allclose(table, marginalize(joint, whole, clique), atol=1e-9)


@pytest.mark.parametrize(
    "factors", [[(0, 1), (1, 2), (2, 3), (0, 3)], [(0, 1, 2), (2, 3, 4), (4, 5)]]
)
def test_a_clique_inside_the_model_leaves_its_tree(factors):
    """A candidate inside one of the model's cliques leaves the model's tree as it is (AIM
    allows it without a size check); the tree of its cliques and such a clique is the same
    (a chordal graph: min-fill adds no edge)."""
    tree = junction_tree(factors, len(SIZES))
    model = Model({f: np.zeros([SIZES[a] for a in f]) for f in factors}, tree, SIZES, 1.0)
    for clique in tree.cliques:
        for sub in subsets(clique):
            rebuilt = junction_tree([*tree.cliques, sub], len(SIZES))
            assert model.grown(sub) is tree
            assert set(rebuilt.cliques) == set(tree.cliques)
            assert rebuilt.size(SIZES) == tree.size(SIZES)
    outside = next(p for p in itertools.combinations(range(len(SIZES)), 2) if tree.home(p) < 0)
    assert model.grown(outside).home(outside) >= 0


@pytest.mark.parametrize("seed", range(3))
def test_one_cliques_belief_is_that_of_the_two_passes(seed):
    """Messages sent towards one clique only give its marginal, whichever clique it is."""
    rng = np.random.default_rng(seed)  # test-only data
    factors = [(0, 1), (1, 2), (2, 3), (0, 3), (3, 4), (4, 5), (1, 5)]
    potentials = {f: rng.normal(0, 2, [SIZES[a] for a in f]) for f in factors}
    tree = junction_tree(factors, len(SIZES))
    assert len(tree.cliques) > 2
    every = beliefs(potentials, tree, SIZES, 250.0)
    for home, table in enumerate(every):
        alone = belief_at(potentials, tree, SIZES, 250.0, home)
        np.testing.assert_allclose(alone, table, rtol=1e-9)
