"""A graphical model fitted to noisy marginals, its marginals, and rows drawn from it.

Private-PGM (McKenna, Sheldon & Miklau, "Graphical-model based estimation and inference for
differential privacy", ICML 2019): among the distributions
``P(x) ∝ exp(Σ_m θ_m(x_m))`` over the measured cliques ``m``, find the one whose marginals
best explain the noisy measurements (weighted least squares), by mirror descent on ``θ``.
Marginals come from belief propagation on a junction tree of the cliques: the maximal cliques
of a triangulation (greedy min-fill elimination) joined by a maximum spanning tree on shared
attributes. Unlike the residual least squares of :mod:`.reconstruction`, the model explains
cliques that were never measured (a cycle of pairs, a triple from its pairs) by the most
spread-out distribution that fits, which AIM's later rounds and its rows rely on.

Tables are numpy arrays with one axis per attribute of their clique, in increasing attribute
order (cliques are sorted tuples). Everything here is pure numpy on released values and
total.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from pandas_dp.mechanisms.marginals import Clique, cells
from pandas_dp.mechanisms.reconstruction import marginalize
from pandas_dp.mechanisms.tree_model import randomized_draw

F64 = np.ndarray
#: Mirror-descent steps of a fit from scratch; a warm start needs far fewer.
ITERATIONS = 500


@dataclass(frozen=True)
class JunctionTree:
    """Cliques with running intersection: each shares with earlier ones only its parent's.

    ``parents[i]`` is an earlier clique (``-1`` for the first); separators may be empty
    (attributes the model treats as independent).
    """

    cliques: tuple[Clique, ...]
    parents: tuple[int, ...]

    def home(self, clique: Clique) -> int:
        """The first clique holding every attribute of ``clique``, or -1."""
        wanted = set(clique)
        return next((i for i, c in enumerate(self.cliques) if wanted <= set(c)), -1)

    def size(self, sizes: Sequence[int]) -> int:
        """Cells of all its cliques: the memory its beliefs take."""
        return sum(cells(c, sizes) for c in self.cliques)


def junction_tree(factors: Sequence[Clique], attributes: int) -> JunctionTree:
    """A junction tree over ``attributes`` whose cliques hold every one of ``factors``."""
    neighbours: dict[int, set[int]] = {i: set() for i in range(attributes)}
    for factor in factors:
        for a, b in itertools.combinations(factor, 2):
            neighbours[a].add(b)
            neighbours[b].add(a)
    found: list[Clique] = []
    while neighbours:  # eliminate the attribute adding fewest edges (ties: fewer, then first)
        v = min(neighbours, key=lambda u: (_fill(neighbours, u), len(neighbours[u]), u))
        around = neighbours.pop(v)
        found.append(tuple(sorted(around | {v})))
        for a, b in itertools.combinations(around, 2):
            neighbours[a].add(b)
            neighbours[b].add(a)
        for u in around:
            neighbours[u].discard(v)
    unique = list(dict.fromkeys(found))
    largest = [c for c in unique if not any(set(c) < set(d) for d in unique)]
    largest.sort(key=lambda c: (-len(c), c))
    order, parents = [0], [-1]
    while len(order) < len(largest):  # Prim: the largest separator joins next
        best = max(
            ((len(set(largest[i]) & set(largest[j])), -j, i) for j in range(len(largest))
             if j not in order for i in order),
        )  # fmt: skip
        order.append(-best[1])
        parents.append(order.index(best[2]))
    return JunctionTree(tuple(largest[i] for i in order), tuple(parents))


def _fill(neighbours: Mapping[int, set[int]], v: int) -> int:
    around = neighbours[v]
    return sum(1 for a, b in itertools.combinations(around, 2) if b not in neighbours[a])


def _expand(table: F64, sub: Clique, clique: Clique, sizes: Sequence[int]) -> F64:
    """``table`` over ``sub ⊆ clique``, shaped to broadcast over ``clique``'s axes."""
    return table.reshape([sizes[a] if a in sub else 1 for a in clique])


def _logsumexp(log: F64, axes: tuple[int, ...]) -> F64:
    """``log Σ exp`` over ``axes`` (the largest term factored out: no overflow)."""
    top = log.max(axis=axes, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    out = np.log(np.exp(log - top).sum(axis=axes, keepdims=True)) + top
    return out.reshape([n for i, n in enumerate(log.shape) if i not in axes])


def _onto(log: F64, clique: Clique, sub: Clique) -> F64:
    """Log-sum-exp of a log table over ``clique`` down to ``sub``."""
    axes = tuple(i for i, a in enumerate(clique) if a not in sub)
    return _logsumexp(log, axes) if axes else log


def beliefs(
    potentials: Mapping[Clique, F64], tree: JunctionTree, sizes: Sequence[int], total: float
) -> list[F64]:
    """Each clique's marginal (counts summing to ``total``), by two-pass belief propagation."""
    shapes = [tuple(sizes[a] for a in c) for c in tree.cliques]
    log = [np.zeros(shape) for shape in shapes]
    for factor, theta in potentials.items():
        h = tree.home(factor)
        log[h] = log[h] + _expand(theta, factor, tree.cliques[h], sizes)
    n = len(tree.cliques)
    seps = [()] + [
        tuple(sorted(set(tree.cliques[i]) & set(tree.cliques[tree.parents[i]])))
        for i in range(1, n)
    ]
    up: list[F64] = [np.zeros(())] * n
    gathered = list(log)
    for i in reversed(range(1, n)):  # children come after their parents
        up[i] = _onto(gathered[i], tree.cliques[i], seps[i])
        p = tree.parents[i]
        gathered[p] = gathered[p] + _expand(up[i], seps[i], tree.cliques[p], sizes)
    belief = list(gathered)
    for i in range(1, n):
        p = tree.parents[i]
        clique = tree.cliques[p]
        down = _onto(belief[p] - _expand(up[i], seps[i], clique, sizes), clique, seps[i])
        belief[i] = gathered[i] + _expand(down, seps[i], tree.cliques[i], sizes)
    return [total * np.exp(b - _logsumexp(b, tuple(range(b.ndim)))) for b in belief]


@dataclass(frozen=True)
class Measured:
    """A noisy marginal: its clique, its cells and the noise's standard deviation."""

    clique: Clique
    values: F64
    sigma: float


@dataclass(frozen=True)
class Model:
    """A fitted model: log-potentials on the measured cliques, its tree and its total."""

    potentials: dict[Clique, F64]
    tree: JunctionTree
    sizes: tuple[int, ...]
    total: float

    @cached_property
    def calibrated(self) -> list[F64]:
        """The marginals of the tree's cliques (belief propagation, run once per model)."""
        return beliefs(self.potentials, self.tree, self.sizes, self.total)

    def marginal(self, clique: Clique) -> F64:
        """The model's marginal on any clique (a larger tree when no clique holds it)."""
        tree, tables = self.tree, None
        if tree.home(clique) < 0:
            tree = junction_tree([*tree.cliques, clique], len(self.sizes))
            tables = beliefs(self.potentials, tree, self.sizes, self.total)
        h = tree.home(clique)
        return marginalize((tables or self.calibrated)[h], tree.cliques[h], clique)

    def sample(self, rows: int, gen: np.random.Generator) -> np.ndarray:
        """``rows`` draws (one int column per attribute), clique by clique down the tree.

        The first clique's cells by randomized rounding, then each clique's new attributes
        given its separator's values, the same way within each separator value.
        """
        tree, sizes, tables = self.tree, self.sizes, self.calibrated
        out = np.zeros((rows, len(sizes)), dtype=np.int64)
        for i, clique in enumerate(tree.cliques):
            sep = () if i == 0 else tuple(a for a in clique if a in tree.cliques[tree.parents[i]])
            new = tuple(a for a in clique if a not in sep)
            table = np.moveaxis(
                tables[i], [clique.index(a) for a in (*sep, *new)], range(len(clique))
            ).reshape(cells(sep, sizes), cells(new, sizes))
            given = np.zeros(rows, dtype=np.int64)
            if sep:
                given = np.ravel_multi_index(tuple(out[:, a] for a in sep), [sizes[a] for a in sep])
            order = np.argsort(given, kind="stable")
            counts = np.bincount(given, minlength=table.shape[0])
            starts = np.concatenate([[0], np.cumsum(counts)])
            drawn = np.zeros(rows, dtype=np.int64)
            for value in np.flatnonzero(counts):
                weights = np.maximum(table[value], 0.0)
                if not weights.sum() > 0:
                    weights = np.ones_like(weights)
                where = order[starts[value] : starts[value + 1]]
                drawn[where] = randomized_draw(gen, weights, where.size)
            unravelled = np.unravel_index(drawn, [sizes[a] for a in new])
            for a, values in zip(new, unravelled, strict=True):
                out[:, a] = values
        return out


def _sources(
    factors: Sequence[Clique], homes: Mapping[Clique, int], tree: JunctionTree
) -> list[tuple[Clique, Clique | None]]:
    """Factors, largest first, each with an earlier factor of the same home holding it.

    None where there is none: that factor is summed from its home clique's table; the
    others from a smaller table.
    """
    order = sorted(factors, key=len, reverse=True)
    done: list[Clique] = []
    out: list[tuple[Clique, Clique | None]] = []
    for f in order:
        holders = [g for g in done if set(f) < set(g) and homes[g] == homes[f]]
        out.append((f, min(holders, key=len) if holders else None))
        done.append(f)
    return out


def fit(
    measured: Sequence[Measured], sizes: Sequence[int], total: float, *,
    start: Model | None = None, iterations: int = ITERATIONS,
) -> Model:  # fmt: skip
    """The model that best explains ``measured`` (weights ``1/σ``), by mirror descent.

    Each step moves ``θ`` against the gradient of ``½ Σ ‖(μ_m - y_m)/σ_m‖²`` with respect to
    the model's marginals ``μ``, with a step found by backtracking (Armijo); ``start``
    warm-starts from an earlier model (its potentials, new cliques at 0). ``total`` is the
    number of rows the model stands for.
    """
    factors = list(dict.fromkeys(m.clique for m in measured))
    tree = junction_tree(factors, len(sizes))
    theta = {f: np.zeros(tuple(sizes[a] for a in f)) for f in factors}
    if start is not None:
        theta.update({f: t for f, t in start.potentials.items() if f in theta})
    homes = {f: tree.home(f) for f in factors}
    total = max(float(total), 1.0)

    sources = _sources(factors, homes, tree)

    def marginals(potentials: Mapping[Clique, F64]) -> dict[Clique, F64]:
        tables = beliefs(potentials, tree, sizes, total)
        out: dict[Clique, F64] = {}
        for f, source in sources:  # each from the smallest table already summed that holds it
            table = tables[homes[f]] if source is None else out[source]
            out[f] = marginalize(table, tree.cliques[homes[f]] if source is None else source, f)
        return out

    def loss(mu: Mapping[Clique, F64]) -> tuple[float, dict[Clique, F64]]:
        value, grad = 0.0, {f: np.zeros_like(mu[f]) for f in factors}
        for m in measured:
            diff = (mu[m.clique] - m.values) / m.sigma
            value += 0.5 * float(np.vdot(diff, diff))
            grad[m.clique] += diff / m.sigma
        return value, grad

    mu = marginals(theta)
    current, grad = loss(mu)
    alpha = min(m.sigma for m in measured) ** 2 / total if measured else 1.0
    for _ in range(iterations if measured else 0):
        alpha *= 2
        for _ in range(30):
            trial = {f: theta[f] - alpha * grad[f] for f in factors}
            nu = marginals(trial)
            value, new_grad = loss(nu)
            decrease = sum(float(np.vdot(grad[f], mu[f] - nu[f])) for f in factors)
            if current - value >= 0.5 * decrease:
                break
            alpha /= 2
        else:
            break  # no step decreases the loss: converged to float precision
        if current - value <= 1e-12 * max(current, 1.0):
            theta, mu, current, grad = trial, nu, value, new_grad
            break
        theta, mu, current, grad = trial, nu, value, new_grad
    return Model(theta, tree, tuple(sizes), total)
