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
    randomized_draws,
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


def test_many_groups_draw_their_expected_counts_rounded_and_shuffled():
    """Each group's category counts are its expected counts rounded up or down, summing to
    its draws; a group of no weight draws uniformly."""
    rng = np.random.default_rng(9)  # test-only data and draws
    weights = rng.random((40, 6)) * (rng.random((40, 6)) < 0.7)
    weights[3] = 0.0
    counts = rng.integers(0, 50, 40)
    counts[5] = 0
    drawn = randomized_draws(rng, weights, counts)
    assert drawn.size == counts.sum()
    starts = np.concatenate([[0], np.cumsum(counts)])
    for g in range(40):
        got = np.bincount(drawn[starts[g] : starts[g + 1]], minlength=6)
        w = weights[g] if weights[g].sum() > 0 else np.ones(6)
        expected = w / w.sum() * counts[g]
        assert (np.floor(expected) <= got).all()
        assert (got <= np.ceil(expected)).all()


def test_the_draws_left_over_go_in_proportion_to_the_fractions_cut_off():
    """One draw per group from (1/2, 1/4, 1/4): each category about p of 30,000 groups
    (binomial sd under 87; 6 sd = 520)."""
    weights = np.tile([0.5, 0.25, 0.25], (30_000, 1))
    drawn = randomized_draws(np.random.default_rng(2), weights, np.ones(30_000, dtype=np.int64))
    assert np.abs(np.bincount(drawn, minlength=3) - [15_000, 7_500, 7_500]).max() < 520
