"""The tree model's pieces: the pairs that may join the tree, the scores' sensitivity, and
sampling from a tree of consistent marginals."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from pandas_dp.mechanisms.tree_model import (
    SCORE_STEPS,
    candidate_pairs,
    independence_scores,
    joining,
    sample_tree,
)


def test_only_pairs_that_join_two_parts_remain():
    pairs = candidate_pairs(4)
    assert pairs == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    assert joining(pairs, [], 4).tolist() == list(range(6))
    chosen = [pairs.index((0, 1)), pairs.index((2, 3))]
    assert joining(pairs, chosen, 4).tolist() == [1, 2, 3, 4]  # (0,1) and (2,3) joined
    chosen.append(pairs.index((1, 2)))
    assert joining(pairs, chosen, 4).tolist() == []  # a spanning tree: nothing left


def test_a_row_moves_each_score_by_at_most_one_and_a_step():
    """One added row adds 1 to one cell of every pair table; each rounded score then moves by
    at most ``SCORE_STEPS + 1`` units, the sensitivity the exponential mechanism is given."""
    rng = np.random.default_rng(3)
    sizes = (3, 4, 2, 5)
    pairs = candidate_pairs(len(sizes))
    oneway = {i: rng.normal(100, 20, n) for i, n in enumerate(sizes)}
    for _ in range(200):
        tables = [rng.integers(0, 50, (sizes[i], sizes[j])) for i, j in pairs]
        row = [int(rng.integers(0, n)) for n in sizes]
        added = []
        for (i, j), table in zip(pairs, tables, strict=True):
            bigger = table.copy()
            bigger[row[i], row[j]] += 1
            added.append(bigger)
        before = independence_scores(pairs, tables, oneway)
        after = independence_scores(pairs, added, oneway)
        assert np.abs(after - before).max() <= SCORE_STEPS + 1


def test_sampling_follows_a_tree_of_marginals():
    """Exact consistent marginals on the tree 0 - 1 - 2: 40,000 draws' pair frequencies are
    binomial around them (standard error below 0.0025; 0.015 is 6 of them)."""
    joint = np.array([[[0.1, 0.05], [0.05, 0.1]], [[0.02, 0.08], [0.3, 0.3]]])  # (2, 2, 2)
    tables = {
        (0,): joint.sum(axis=(1, 2)), (1,): joint.sum(axis=(0, 2)), (2,): joint.sum(axis=(0, 1)),
        (0, 1): joint.sum(axis=2), (1, 2): joint.sum(axis=0),
    }  # fmt: skip
    draws = sample_tree(tables, [(0, 1), (1, 2)], (2, 2, 2), 40_000, np.random.default_rng(9))
    for edge in ((0, 1), (1, 2)):
        counts = np.zeros((2, 2))
        np.add.at(counts, (draws[:, edge[0]], draws[:, edge[1]]), 1)
        assert counts / 40_000 == pytest.approx(tables[edge], abs=0.015)
    # Attributes in no pair are drawn from their own margin.
    alone = sample_tree(tables, [], (2, 2, 2), 1000, np.random.default_rng(1))
    assert set(itertools.chain.from_iterable(alone.tolist())) <= {0, 1}
