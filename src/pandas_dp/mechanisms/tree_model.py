"""A tree-shaped graphical model: which pairs to join, and sampling rows from it.

MST (McKenna, Miklau & Sheldon, "Winning the NIST contest: a scalable and general approach to
differentially private synthetic data", JPC 2021) measures every one-way marginal, chooses a
spanning tree over the attributes by repeatedly picking, with the exponential mechanism, a
pair that joins two parts of the tree so far (scored by how badly independence explains the
pair), measures the chosen pairs, and samples from the tree model that the consistent
one-way and pair marginals define:

``P(x) = Π_{(i,j) ∈ tree} P(x_i, x_j) / Π_i P(x_i)^{deg(i) - 1}``.

On a tree, marginals that agree on their shared attributes are always the marginals of that
one distribution, so the consistent tables of :mod:`.reconstruction` define it exactly.
Rows are generated from the first attribute down the tree, each attribute given its parent,
by randomized rounding of the expected counts.
Everything here is pure numpy and total.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

import numpy as np

from pandas_dp.mechanisms.marginals import Clique

F64 = np.ndarray
#: Scores are L1 distances rounded down to multiples of ``1/SCORE_STEPS = 2**-SCORE_EXPONENT``.
SCORE_EXPONENT = 4
SCORE_STEPS = 1 << SCORE_EXPONENT


def candidate_pairs(attributes: int) -> list[Clique]:
    """Every pair of attributes, in order."""
    return list(itertools.combinations(range(attributes), 2))


def independence_scores(
    pairs: Sequence[Clique], exact: Sequence[F64], oneway: Mapping[int, F64]
) -> np.ndarray:
    """Integer scores, in units of ``1/SCORE_STEPS``: how far pairs are from independence.

    The L1 distance of each exact pair table from the product of the noisy one-way margins,
    at their mean total. One row moves one cell of each exact table by one, so each score by at most
    ``1 + 1/SCORE_STEPS`` units after rounding down: the sensitivity the caller uses.
    """
    totals = [max(float(np.maximum(m, 0.0).sum()), 1.0) for m in oneway.values()]
    total = float(np.mean(totals))
    scores = np.zeros(len(pairs), dtype=np.int64)
    for k, ((i, j), table) in enumerate(zip(pairs, exact, strict=True)):
        p_i = _proportions(oneway[i])
        p_j = _proportions(oneway[j])
        expected = total * np.outer(p_i, p_j)
        distance = float(np.abs(np.asarray(table, dtype=np.float64) - expected).sum())
        scores[k] = int(np.floor(distance * SCORE_STEPS))
    return scores


def _proportions(counts: F64) -> F64:
    clamped = np.maximum(np.asarray(counts, dtype=np.float64), 0.0)
    total = clamped.sum()
    return clamped / total if total > 0 else np.full(clamped.size, 1.0 / clamped.size)


def joining(pairs: Sequence[Clique], chosen: Sequence[int], attributes: int) -> np.ndarray:
    """Positions of the pairs that join two different parts of the forest ``chosen``."""
    part = list(range(attributes))

    def root(i: int) -> int:
        while part[i] != i:
            i = part[i]
        return i

    for k in chosen:
        a, b = pairs[k]
        part[root(a)] = root(b)
    return np.asarray([k for k, (a, b) in enumerate(pairs) if root(a) != root(b)], dtype=np.int64)


def sample_tree(
    tables: Mapping[Clique, F64], edges: Sequence[Clique], sizes: Sequence[int], rows: int,
    gen: np.random.Generator,
) -> np.ndarray:  # fmt: skip
    """``rows`` draws (an int array, one column per attribute) from the tree model.

    ``tables`` holds the consistent non-negative one-way marginals ``(i,)`` and pair
    marginals of ``edges``. Each attribute is drawn given its parent in a breadth-first walk
    from attribute 0 (attributes in other components given nothing); a parent value whose
    cells are all zero falls back to the attribute's own margin.
    """
    out = np.zeros((rows, len(sizes)), dtype=np.int64)
    neighbours: dict[int, list[tuple[int, Clique]]] = {i: [] for i in range(len(sizes))}
    for edge in edges:
        neighbours[edge[0]].append((edge[1], edge))
        neighbours[edge[1]].append((edge[0], edge))
    seen: set[int] = set()
    for start in range(len(sizes)):
        if start in seen:
            continue
        out[:, start] = randomized_draw(gen, _proportions(tables[(start,)]), rows)
        seen.add(start)
        queue = [start]
        while queue:
            parent = queue.pop(0)
            for child, edge in neighbours[parent]:
                if child in seen:
                    continue
                joint = np.asarray(tables[edge], dtype=np.float64)
                joint = joint if edge[0] == parent else joint.T  # rows: the parent's values
                conditional = _conditionals(joint, tables[(child,)])
                given = out[:, parent]
                for value in range(sizes[parent]):  # one draw per parent value's rows
                    rows_here = np.flatnonzero(given == value)
                    out[rows_here, child] = randomized_draw(gen, conditional[value], rows_here.size)
                seen.add(child)
                queue.append(child)
    return out


def _conditionals(joint: F64, margin: F64) -> F64:
    """``P(child | parent)`` row by row, the child's margin where a parent row is empty."""
    clamped = np.maximum(joint, 0.0)
    sums = clamped.sum(axis=1, keepdims=True)
    fallback = _proportions(margin)[None, :]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(sums > 0, clamped / np.where(sums > 0, sums, 1.0), fallback)


def randomized_draw(gen: np.random.Generator, probabilities: F64, rows: int) -> np.ndarray:
    """``rows`` categories in random order, by randomized rounding of ``probabilities``.

    Each category gets its expected count ``rows · p`` rounded down, and the rows left over
    go to distinct categories chosen with probability in proportion to the fractions cut off
    (so each count is its expectation rounded up or down): far less sampling noise than
    independent draws, as Private-PGM's synthetic data does.
    """
    expected = probabilities / probabilities.sum() * rows
    counts = np.floor(expected).astype(np.int64)
    short = rows - int(counts.sum())
    fractions = np.clip(expected - counts, 0.0, None)
    positive = int(np.count_nonzero(fractions))
    if short > 0 and positive:
        chosen = gen.choice(
            probabilities.size, size=min(short, positive), replace=False,
            p=fractions / fractions.sum(),
        )  # fmt: skip
        counts[chosen] += 1
    counts[int(np.argmax(expected))] += rows - int(counts.sum())  # float rounding, if any
    values = np.repeat(np.arange(probabilities.size, dtype=np.int64), counts)
    gen.shuffle(values)
    return values


def randomized_draws(gen: np.random.Generator, weights: F64, counts: np.ndarray) -> np.ndarray:
    """:func:`randomized_draw` for many groups at once, their draws one after the other.

    Row ``g`` of ``weights`` gives group ``g``'s probabilities (all ones where they sum to no
    more than 0), ``counts[g]`` its draws. As there: each category gets its expected count
    rounded down, and the draws left go to distinct categories drawn in proportion to the
    fractions cut off (the largest keys of ``log(fraction) + Gumbel`` noise: successive
    sampling, as ``Generator.choice`` without replacement). Each group's draws come in
    category order: the caller gives them to its rows in random order.
    """
    weights = np.maximum(np.asarray(weights, dtype=np.float64), 0.0)
    sums = weights.sum(axis=1, keepdims=True)
    weights = np.where(sums > 0, weights, 1.0)
    groups, size = weights.shape
    expected = weights / weights.sum(axis=1, keepdims=True) * counts[:, None]
    cells = np.floor(expected).astype(np.int64)
    fractions = np.clip(expected - cells, 0.0, None)
    short = counts - cells.sum(axis=1)
    with np.errstate(divide="ignore"):
        keys = np.log(fractions) + gen.gumbel(size=fractions.shape)
    rank = np.empty_like(cells)
    np.put_along_axis(rank, np.argsort(-keys, axis=1), np.arange(size)[None, :], axis=1)
    cells += (rank < short[:, None]) & (fractions > 0)
    top = np.argmax(expected, axis=1)
    cells[np.arange(groups), top] += counts - cells.sum(axis=1)  # float rounding, if any
    return np.repeat(np.tile(np.arange(size, dtype=np.int64), groups), cells.reshape(-1))
