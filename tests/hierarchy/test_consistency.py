"""The tree post-processing (``pandas_dp.mechanisms.consistency``), against independent solvers.

- ``least_squares`` is compared with the weighted least-squares solution of the full linear
  system (one row per node, one column per leaf) solved densely by ``numpy.linalg.lstsq``;
- ``project_segments`` and ``round_segments`` with ``fit_to_total`` and ``round_to_total``
  applied to one segment at a time (themselves checked against exhaustive solvers in
  ``tests/groupby/test_postprocess.py``);
- ``consistent_counts`` must give non-negative integers in which every parent equals the sum
  of its children, exactly, for any tree and any noisy counts (Hypothesis, derandomised).

Tolerances: the dense solve and the two-pass recursion are both backward stable; on values
below 1e4 with at most ~60 nodes and variance ratios up to 1e3, 1e-6 absolute leaves about
six orders of magnitude of slack over double rounding.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pandas_dp.mechanisms.consistency import (
    Tree,
    consistent_counts,
    least_squares,
    project_segments,
    round_segments,
    top_down,
)
from pandas_dp.mechanisms.postprocess import fit_to_total, round_to_total

SETTINGS = settings(derandomize=True, max_examples=100, deadline=None, database=None)
ATOL = 1e-6


@st.composite
def trees(draw, max_levels: int = 4, max_fanout: int = 4) -> Tree:
    """Random trees: 1 to ``max_levels - 1`` levels below the root, uneven fan-out."""
    depth = draw(st.integers(1, max_levels - 1))
    sizes = []
    width = 1
    for _ in range(depth):
        level = draw(st.lists(st.integers(1, max_fanout), min_size=width, max_size=width))
        sizes.append(level)
        width = sum(level)
    return Tree(sizes)


@st.composite
def noisy_trees(draw):
    """A tree, non-negative true leaf counts (many zeros) and integer noise at every node."""
    tree = draw(trees())
    leaves = draw(
        st.lists(
            st.one_of(st.just(0), st.integers(0, 5), st.integers(0, 10_000)),
            min_size=tree.widths[-1],
            max_size=tree.widths[-1],
        )
    )
    exact = tree.rollup(np.array(leaves, dtype=np.int64))
    noisy = [
        level
        + np.array(draw(st.lists(st.integers(-50, 50), min_size=level.size, max_size=level.size)))
        for level in exact
    ]
    variances = draw(st.lists(st.floats(0.5, 500.0), min_size=tree.levels, max_size=tree.levels))
    return tree, exact, noisy, variances


def design(tree: Tree) -> np.ndarray:
    """The 0/1 matrix mapping leaf counts to the counts of every node, root first."""
    rows = [np.eye(tree.widths[-1])]
    for sizes in reversed(tree.sizes):
        below = rows[0]
        parents = np.repeat(np.arange(sizes.size), sizes)
        above = np.zeros((sizes.size, below.shape[1]))
        np.add.at(above, parents, below)
        rows.insert(0, above)
    return np.vstack(rows)


def dense_gls(tree: Tree, noisy, variances) -> np.ndarray:
    """Weighted least squares over leaf counts: minimise Σ (A x - y)² / σ² of the node."""
    matrix = design(tree)
    y = np.concatenate([np.asarray(level, dtype=np.float64) for level in noisy])
    weights = np.concatenate(
        [np.full(width, 1.0 / np.sqrt(v)) for width, v in zip(tree.widths, variances, strict=True)]
    )
    leaves, *_ = np.linalg.lstsq(matrix * weights[:, None], y * weights, rcond=None)
    return matrix @ leaves


def segments_of(values: np.ndarray, sizes: np.ndarray) -> list[np.ndarray]:
    return np.split(values, np.cumsum(sizes)[:-1])


# --- the tree ------------------------------------------------------------------------------


def test_tree_shape_and_rollup():
    tree = Tree([[2], [3, 1], [1, 2, 1, 2]])
    assert tree.levels == 4
    assert tree.widths == (1, 2, 4, 6)
    assert tree.parents(2).tolist() == [0, 0, 0, 1]
    assert tree.parents(3).tolist() == [0, 1, 1, 2, 3, 3]
    levels = tree.rollup(np.array([1, 2, 3, 4, 5, 6]))
    assert [level.tolist() for level in levels] == [
        [21],
        [10, 11],
        [1, 5, 4, 11],
        [1, 2, 3, 4, 5, 6],
    ]
    assert levels[0].dtype == np.int64


def test_rollup_is_exact_beyond_int64():
    tree = Tree([[2], [2, 1]])
    big = 2**70
    levels = tree.rollup(np.array([big, 1, 3], dtype=object))
    assert levels[0].tolist() == [big + 4]
    assert levels[1].tolist() == [big + 1, 3]


@pytest.mark.parametrize(
    ("sizes", "match"),
    [
        ([[2], [1]], "level 1 has 2 nodes but 1 sizes"),
        ([[2, 1]], "level 0 has 1 nodes"),
        ([[2], [1, 0]], "at least one child"),
        ([[0]], "at least one child"),
    ],
)
def test_tree_refuses_bad_shapes(sizes, match):
    with pytest.raises(ValueError, match=match):
        Tree(sizes)


def test_parents_of_the_root_do_not_exist():
    with pytest.raises(ValueError, match="no parents"):
        Tree([[2]]).parents(0)


# --- least squares -------------------------------------------------------------------------


@SETTINGS
@given(case=noisy_trees())
def test_least_squares_equals_the_dense_weighted_solution(case):
    tree, _, noisy, variances = case
    estimates = least_squares(tree, noisy, variances)
    expected = dense_gls(tree, noisy, variances)
    np.testing.assert_allclose(np.concatenate(estimates), expected, atol=ATOL, rtol=0)


@SETTINGS
@given(case=noisy_trees())
def test_least_squares_is_consistent(case):
    tree, _, noisy, variances = case
    estimates = least_squares(tree, noisy, variances)
    for depth, sizes in enumerate(tree.sizes):
        sums = np.add.reduceat(estimates[depth + 1], np.concatenate(([0], np.cumsum(sizes)[:-1])))
        np.testing.assert_allclose(sums, estimates[depth], atol=ATOL, rtol=0)


def test_least_squares_keeps_consistent_counts():
    tree = Tree([[3], [2, 2, 1]])
    exact = tree.rollup(np.array([4, 0, 7, 7, 12]))
    estimates = least_squares(tree, exact, [1.0, 3.0, 9.0])
    for got, want in zip(estimates, exact, strict=True):
        np.testing.assert_allclose(got, want, atol=1e-9)


def test_least_squares_matches_hay_et_al_closed_form():
    """Hay et al. 2010, Theorem 3, for a complete k-ary tree with equal variances: a node
    of height l (leaves l = 1) gets z = (k^l - k^(l-1)) / (k^l - 1) y + (k^(l-1) - 1) /
    (k^l - 1) Σ z(children); the root keeps z, and each child then x = z + (x(parent) -
    Σ z(siblings)) / k."""
    k = 3
    tree = Tree([[k], [k] * k])
    noisy = [np.array([40.0]), np.array([10.0, 13.0, 20.0]), np.arange(9, dtype=float)]
    z1 = noisy[2]

    def weights(height):  # (own, children) weights of a node of this height
        return (k**height - k ** (height - 1)) / (k**height - 1), (k ** (height - 1) - 1) / (
            k**height - 1
        )

    own, kids = weights(2)
    z2 = own * noisy[1] + kids * z1.reshape(k, k).sum(axis=1)
    own, kids = weights(3)
    z3 = own * noisy[0] + kids * z2.sum()
    x2 = z2 + (z3 - z2.sum()) / k
    x1 = z1 + np.repeat((x2 - z1.reshape(k, k).sum(axis=1)) / k, k)
    estimates = least_squares(tree, noisy, [1.0, 1.0, 1.0])
    np.testing.assert_allclose(estimates[0], z3, atol=1e-12)
    np.testing.assert_allclose(estimates[1], x2, atol=1e-12)
    np.testing.assert_allclose(estimates[2], x1, atol=1e-12)


@pytest.mark.parametrize(
    ("noisy", "variances", "match"),
    [
        ([[1.0], [1.0, 2.0]], [1.0], "each of 2 levels"),
        ([[1.0], [1.0]], [1.0, 1.0], "level 1 has 2 nodes but 1 noisy counts"),
        ([[1.0], [1.0, 2.0]], [1.0, 0.0], "positive and finite"),
        ([[1.0], [1.0, 2.0]], [1.0, float("nan")], "positive and finite"),
    ],
)
def test_least_squares_refuses_bad_input(noisy, variances, match):
    with pytest.raises(ValueError, match=match):
        least_squares(Tree([[2]]), noisy, variances)


# --- segmented projection and rounding -----------------------------------------------------


@st.composite
def segmented(draw, integer_totals: bool = False):
    sizes = np.array(draw(st.lists(st.integers(1, 6), min_size=1, max_size=8)), dtype=np.int64)
    values = np.array(
        draw(
            st.lists(
                st.one_of(st.floats(-100, 100, allow_nan=False), st.integers(-20, 20).map(float)),
                min_size=int(sizes.sum()),
                max_size=int(sizes.sum()),
            )
        )
    )
    totals = np.array(
        draw(st.lists(st.integers(0, 300), min_size=sizes.size, max_size=sizes.size)),
        dtype=np.float64,
    )
    return values, sizes, totals


@SETTINGS
@given(case=segmented())
def test_project_segments_equals_fit_to_total_per_segment(case):
    values, sizes, totals = case
    fitted = project_segments(values, sizes, totals)
    for got, v, total in zip(
        segments_of(fitted, sizes), segments_of(values, sizes), totals, strict=True
    ):
        np.testing.assert_allclose(got, fit_to_total(v, total, nonnegative=True), atol=1e-9)
        assert (got >= 0).all()
        assert got.sum() == pytest.approx(total, abs=1e-9)


@SETTINGS
@given(case=segmented())
def test_round_segments_equals_round_to_total_per_segment(case):
    values, sizes, totals = case
    fitted = project_segments(values, sizes, totals)  # valid input: non-negative, right sums
    rounded = round_segments(fitted, sizes, totals.astype(np.int64))
    assert rounded.dtype == np.int64
    for got, v, total in zip(
        segments_of(rounded, sizes), segments_of(fitted, sizes), totals, strict=True
    ):
        assert got.tolist() == round_to_total(v, int(total)).tolist()
        assert (np.abs(got - v) < 1).all()


def test_round_segments_breaks_ties_towards_the_earlier_entry():
    rounded = round_segments([0.5, 0.5, 0.5, 1.5, 0.5], [3, 2], [2, 3])
    assert rounded.tolist() == [1, 1, 0, 2, 1]


@pytest.mark.parametrize(
    ("values", "sizes", "totals", "match"),
    [
        ([1.0, 2.0], [1, 2], [1, 2], "do not fill"),
        ([1.0, 2.0], [2], [1, 2], "2 totals for 1 segments"),
        ([1.0, 2.0], [2, 0], [1, 2], "at least 1"),
        ([], [], [], "non-empty"),
    ],
)
def test_segments_must_match(values, sizes, totals, match):
    with pytest.raises(ValueError, match=match):
        project_segments(values, sizes, totals)
    with pytest.raises(ValueError, match=match):
        round_segments(values, sizes, totals)


def test_projection_needs_non_negative_totals():
    with pytest.raises(ValueError, match="at least 0"):
        project_segments([1.0, 2.0], [2], [-1.0])


def test_rounding_refuses_values_far_from_their_total():
    with pytest.raises(ValueError, match="within one unit"):
        round_segments([1.0, 2.0], [2], [7])
    with pytest.raises(ValueError, match="within one unit"):
        round_segments([1.0, 2.0], [2], [1])


# --- the whole post-processing -------------------------------------------------------------


@SETTINGS
@given(case=noisy_trees())
def test_consistent_counts_are_consistent_non_negative_integers(case):
    tree, _, noisy, variances = case
    counts = consistent_counts(tree, noisy, variances)
    assert [level.size for level in counts] == list(tree.widths)
    for level in counts:
        assert level.dtype == np.int64
        assert (level >= 0).all()
    for depth, sizes in enumerate(tree.sizes):  # exact integer identity, not approximate
        assert (
            np.add.reduceat(
                counts[depth + 1], np.concatenate(([0], np.cumsum(sizes)[:-1]))
            ).tolist()
            == counts[depth].tolist()
        )
    estimates = least_squares(tree, noisy, variances)
    assert counts[0][0] == max(int(np.rint(estimates[0][0])), 0)  # the released total


@SETTINGS
@given(case=noisy_trees())
def test_consistent_counts_stay_near_the_least_squares_estimates(case):
    """Each level is the projection of the least-squares estimates onto the parents' final
    integers, then rounded: where no count is clamped at 0, it moves by less than one unit
    plus the parent's own share of rounding (at most the parent's movement)."""
    tree, _, noisy, variances = case
    estimates = least_squares(tree, noisy, variances)
    counts = top_down(tree, estimates)
    for depth in range(1, tree.levels):
        parent = np.repeat(counts[depth - 1], tree.sizes[depth - 1])
        fitted = project_segments(estimates[depth], tree.sizes[depth - 1], counts[depth - 1])
        assert (np.abs(counts[depth] - fitted) < 1).all()
        assert np.all(fitted <= parent + 1e-9)


@SETTINGS
@given(case=noisy_trees())
def test_zero_noise_gives_back_the_exact_table(case):
    tree, exact, _, variances = case
    counts = consistent_counts(tree, exact, variances)
    assert [level.tolist() for level in counts] == [level.tolist() for level in exact]


def test_negative_total_becomes_zero_everywhere():
    tree = Tree([[2], [1, 2]])
    counts = consistent_counts(tree, [[-30], [-10, -12], [-5, -4, -9]], [1.0, 1.0, 1.0])
    assert [level.tolist() for level in counts] == [[0], [0, 0], [0, 0, 0]]


def test_top_down_needs_a_finite_root():
    with pytest.raises(ValueError, match="one finite estimate"):
        top_down(Tree([[1]]), [[np.nan], [1.0]])
    with pytest.raises(ValueError, match="each of 2 levels"):
        top_down(Tree([[1]]), [[1.0]])


def test_zero_totals_give_zeros_whatever_the_values():
    fitted = project_segments([5.0, -2.0, 3.0, 3.0, 0.0], [2, 3], [0.0, 0.0])
    assert fitted.tolist() == [0.0] * 5
    assert round_segments(fitted, [2, 3], [0, 0]).tolist() == [0] * 5
