"""Consistent hierarchical counts: noisy counts at every level of a tree made to add up.

A hierarchy (total → region → district → ...) is measured with independent noise at every
level. The noisy counts disagree with each other: districts do not add up to their region,
and some are negative. This module turns them into a table that is consistent, with no
extra privacy cost (it only post-processes released values, Dwork & Roth 2014, Prop. 2.1):

1. :func:`least_squares` combines the noisy counts of *all* levels into real estimates that
   add up exactly, by generalized least squares on the tree in two passes (Hay, Rastogi,
   Miklau & Suciu 2010), each level weighted by the inverse of its noise variance;
2. :func:`top_down` turns them into non-negative integers level by level, as in the TopDown
   algorithm of the 2020 US Census (Abowd et al. 2022): the root is rounded, then at every
   level the children of each parent are projected onto ``{x >= 0, sum(x) = parent}``
   (:func:`project_segments`) and rounded to integers with that same sum by the largest
   remainder rule (:func:`round_segments`).

Every step is vectorised over a whole level (segmented sorts, cumulative sums and
``reduceat``); there is no Python loop over nodes.

References
----------
M. Hay, V. Rastogi, G. Miklau and D. Suciu, "Boosting the accuracy of differentially private
histograms through consistency", PVLDB 3(1), 2010. J. Abowd, R. Ashmead, R. Cumings-Menon,
S. Garfinkel, M. Heineck, C. Heiss, R. Johns, D. Kifer, P. Leclerc, A. Machanavajjhala,
B. Moran, W. Sexton, M. Spence and P. Zhuravlev, "The 2020 Census Disclosure Avoidance System
TopDown Algorithm", Harvard Data Science Review, Special Issue 2, 2022. J. Duchi,
S. Shalev-Shwartz, Y. Singer and T. Chandra, "Efficient projections onto the l1-ball for
learning in high dimensions", ICML 2008.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


def _starts(sizes: I64) -> I64:
    """Position of the first element of each segment (segments of ``sizes`` elements)."""
    starts = np.zeros(sizes.size, dtype=np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    return starts


def _check_segments(values: npt.NDArray[np.generic], sizes: I64, totals: npt.ArrayLike) -> None:
    if sizes.ndim != 1 or sizes.size == 0 or np.any(sizes < 1):
        raise ValueError("segments must be a non-empty list of sizes, each at least 1")
    if values.shape != (int(sizes.sum()),):
        raise ValueError(f"{values.size} values do not fill segments of {int(sizes.sum())}")
    if np.shape(totals) != sizes.shape:
        raise ValueError(f"{np.size(totals)} totals for {sizes.size} segments")


@dataclass(frozen=True, eq=False)
class Tree:
    """The shape of a hierarchy: levels of nodes, the children of each node contiguous.

    Level 0 holds the root alone. ``sizes[d][i]`` is the number of children of node ``i`` of
    level ``d``; they are the nodes ``starts(d)[i] : starts(d)[i] + sizes[d][i]`` of level
    ``d + 1``. Every node above the last level (the leaves) has at least one child, so all
    leaves are at the same depth.

    Parameters
    ----------
    sizes : sequence of array-like of int
        One array per level above the leaves, root first (``sizes[0]`` has one entry).
    """

    sizes: tuple[I64, ...]

    def __init__(self, sizes: Sequence[npt.ArrayLike]) -> None:
        arrays = tuple(np.asarray(s, dtype=np.int64).reshape(-1) for s in sizes)
        width = 1
        for depth, level in enumerate(arrays):
            if level.size != width:
                raise ValueError(f"level {depth} has {width} nodes but {level.size} sizes")
            if np.any(level < 1):
                raise ValueError(f"every node of level {depth} needs at least one child")
            width = int(level.sum())
        object.__setattr__(self, "sizes", arrays)

    @property
    def levels(self) -> int:
        """Number of levels, the root's included."""
        return len(self.sizes) + 1

    @property
    def widths(self) -> tuple[int, ...]:
        """Number of nodes at each level, root first."""
        return (1, *(int(s.sum()) for s in self.sizes))

    def parents(self, depth: int) -> I64:
        """The parent (its position in level ``depth - 1``) of each node of level ``depth``."""
        if not 1 <= depth < self.levels:
            raise ValueError(f"level {depth} has no parents in a tree of {self.levels} levels")
        sizes = self.sizes[depth - 1]
        return np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)

    def rollup(self, leaves: npt.ArrayLike) -> list[npt.NDArray[np.generic]]:
        """Exact totals at every level (root first) from the leaf values, in their dtype."""
        values = np.asarray(leaves)
        if values.shape != (self.widths[-1],):
            raise ValueError(f"{values.size} leaf values for {self.widths[-1]} leaves")
        out = [values]
        for sizes in reversed(self.sizes):
            out.append(np.add.reduceat(out[-1], _starts(sizes)))
        return out[::-1]


def least_squares(
    tree: Tree, noisy: Sequence[npt.ArrayLike], variances: Sequence[float]
) -> list[F64]:
    """The generalized least-squares estimate of every node from noisy counts of all levels.

    Parameters
    ----------
    tree : Tree
        The hierarchy.
    noisy : sequence of array-like
        One array per level, root first: each node's noisy count.
    variances : sequence of float
        The noise variance of each level (one value for all nodes of a level).

    Returns
    -------
    list of numpy.ndarray of float64
        Per level, estimates in which every parent equals the sum of its children.

    Notes
    -----
    Two passes (Hay et al. 2010, generalised to unequal level variances and uneven fan-out).
    Upwards, ``z_v`` is the best estimate of node ``v`` from its own subtree, with variance
    ``V_v``: a leaf keeps its noisy count ``y_v`` (variance ``σ²`` of its level); a parent
    averages its own ``y_v`` with the sum of its children's ``z``, weighted by inverse
    variances, so ``1/V_v = 1/σ²_v + 1/Σ V_c``. Downwards, the root keeps ``z``, and each
    child ``c`` of a finished parent ``v`` takes its share of the parent's gap in proportion
    to its variance: ``x_c = z_c + V_c / Σ V (x_v - Σ z)``. The result is the minimum-variance
    unbiased linear estimate given the noisy counts (the weighted least-squares solution
    under the constraints; for Gaussian noise the posterior mean), exact up to float rounding.
    """
    if len(noisy) != tree.levels or len(variances) != tree.levels:
        raise ValueError(f"need noisy counts and a variance for each of {tree.levels} levels")
    observed = [np.asarray(y, dtype=np.float64) for y in noisy]
    for depth, (y, width) in enumerate(zip(observed, tree.widths, strict=True)):
        if y.shape != (width,):
            raise ValueError(f"level {depth} has {width} nodes but {y.size} noisy counts")
    precision = []
    for variance in variances:
        if not (np.isfinite(variance) and variance > 0):
            raise ValueError(f"noise variances must be positive and finite, got {variance}")
        precision.append(1.0 / float(variance))
    last = tree.levels - 1
    z = [np.empty(0)] * tree.levels
    v = [np.empty(0)] * tree.levels
    child_sums: list[tuple[F64, F64]] = [(np.empty(0), np.empty(0))] * last
    z[last] = observed[last]
    v[last] = np.full(observed[last].size, 1.0 / precision[last])
    for depth in range(last - 1, -1, -1):
        starts = _starts(tree.sizes[depth])
        sums = np.add.reduceat(z[depth + 1], starts)
        spread = np.add.reduceat(v[depth + 1], starts)
        child_sums[depth] = (sums, spread)
        weight = precision[depth] + 1.0 / spread
        z[depth] = (observed[depth] * precision[depth] + sums / spread) / weight
        v[depth] = 1.0 / weight
    estimates = [z[0]]
    for depth in range(1, tree.levels):
        sums, spread = child_sums[depth - 1]
        gap = (estimates[depth - 1] - sums) / spread
        estimates.append(z[depth] + v[depth] * np.repeat(gap, tree.sizes[depth - 1]))
    return estimates


def project_segments(values: npt.ArrayLike, sizes: npt.ArrayLike, totals: npt.ArrayLike) -> F64:
    """Project each segment onto ``{x >= 0, sum(x) = total}`` (closest in least squares).

    The segmented form of :func:`~pandas_dp.mechanisms.postprocess.fit_to_total` with
    ``nonnegative=True``: segment ``i`` is ``values[start_i : start_i + sizes[i]]`` and is
    fitted to ``totals[i]``.

    Parameters
    ----------
    values : array-like of float
        The concatenated segments.
    sizes : array-like of int
        Length of each segment (at least 1).
    totals : array-like of float
        The sum each segment must have (at least 0).

    Returns
    -------
    numpy.ndarray of float64

    Notes
    -----
    Per segment, ``x = max(v - θ, 0)`` with ``θ`` found from the values sorted in decreasing
    order (Held, Wolfe & Crowder 1974; Duchi et al. 2008). All segments are sorted at once
    (``lexsort`` by segment, then value) and their running sums are taken from one cumulative
    sum, so the cost is ``O(n log n)`` for the whole level.
    """
    v = np.asarray(values, dtype=np.float64)
    counts = np.asarray(sizes, dtype=np.int64)
    target = np.asarray(totals, dtype=np.float64)
    _check_segments(v, counts, target)
    if np.any(target < 0) or not np.all(np.isfinite(target)):
        raise ValueError("a non-negative fit needs finite totals of at least 0")
    starts = _starts(counts)
    segment = np.repeat(np.arange(counts.size, dtype=np.int64), counts)
    order = np.lexsort((-v, segment))  # segments stay in place; decreasing within each
    ordered = v[order]
    running = np.cumsum(ordered)
    before = np.concatenate(([0.0], running))[starts]
    excess = running - np.repeat(before + target, counts)  # Σ top-j values minus the total
    rank = np.arange(v.size, dtype=np.int64) - np.repeat(starts, counts) + 1
    active = ordered - excess / rank > 0
    # The last active rank (a prefix of each segment is active). A zero total activates none;
    # rank 1 then gives θ = the segment's largest value, and every entry becomes 0.
    rho = np.maximum(np.maximum.reduceat(np.where(active, rank, 0), starts), 1)
    theta = excess[starts + rho - 1] / rho
    return np.asarray(np.maximum(v - np.repeat(theta, counts), 0.0), dtype=np.float64)


def round_segments(values: npt.ArrayLike, sizes: npt.ArrayLike, totals: npt.ArrayLike) -> I64:
    """Round each segment of non-negative reals to integers summing exactly to its total.

    The segmented form of :func:`~pandas_dp.mechanisms.postprocess.round_to_total`: each
    value is rounded down, then each segment's missing units go to its entries with the
    largest fractional parts (compared at 1e-9 resolution; ties to the earlier entry). No
    entry moves by a full unit or more.

    Raises
    ------
    ValueError
        If a segment's values are not within one unit each of summing to its total.
    """
    v = np.asarray(values, dtype=np.float64)
    counts = np.asarray(sizes, dtype=np.int64)
    target = np.asarray(totals, dtype=np.int64)
    _check_segments(v, counts, target)
    floors = np.floor(v)
    starts = _starts(counts)
    missing = target - np.add.reduceat(floors.astype(np.int64), starts)
    if np.any(missing < 0) or np.any(missing > counts):
        raise ValueError("values must be non-negative and sum to total (within one unit each)")
    segment = np.repeat(np.arange(counts.size, dtype=np.int64), counts)
    order = np.lexsort((-np.round(v - floors, 9), segment))  # stable: ties keep their order
    rank = np.arange(v.size, dtype=np.int64) - np.repeat(starts, counts)
    out = floors.astype(np.int64)
    out[order[rank < np.repeat(missing, counts)]] += 1
    return out


def top_down(tree: Tree, estimates: Sequence[npt.ArrayLike]) -> list[I64]:
    """Non-negative integers, level by level, each parent equal to the sum of its children.

    The root becomes ``max(rint(estimate), 0)``. Then, level by level, the children of every
    parent are projected onto the non-negative vectors summing to the parent's final integer
    (:func:`project_segments`) and rounded to integers with that sum
    (:func:`round_segments`): the TopDown algorithm's order (Abowd et al. 2022), with least
    squares for its optimisation and largest-remainder rounding for its integer step.
    """
    if len(estimates) != tree.levels:
        raise ValueError(f"need estimates for each of {tree.levels} levels")
    root = np.asarray(estimates[0], dtype=np.float64)
    if root.shape != (1,) or not np.isfinite(root[0]):
        raise ValueError("the root needs one finite estimate")
    out = [np.array([max(int(np.rint(root[0])), 0)], dtype=np.int64)]
    for depth in range(1, tree.levels):
        sizes = tree.sizes[depth - 1]
        fitted = project_segments(estimates[depth], sizes, out[-1])
        out.append(round_segments(fitted, sizes, out[-1]))
    return out


def consistent_counts(
    tree: Tree, noisy: Sequence[npt.ArrayLike], variances: Sequence[float]
) -> list[I64]:
    """Noisy counts of every level to consistent non-negative integers (both steps above).

    Parameters
    ----------
    tree, noisy, variances
        As for :func:`least_squares`, whose estimate :func:`top_down` then rounds.

    Returns
    -------
    list of numpy.ndarray of int64
        Per level, root first: non-negative integers, each parent the sum of its children.

    Examples
    --------
    >>> tree = Tree([[2], [2, 1]])           # root -> 2 regions -> 2 + 1 districts
    >>> noisy = [[10], [7, 2], [5, 3, -1]]   # levels disagree; one count is negative
    >>> [level.tolist() for level in consistent_counts(tree, noisy, [2.0, 2.0, 2.0])]
    [[9], [8, 1], [5, 3, 1]]
    """
    return top_down(tree, least_squares(tree, noisy, variances))
