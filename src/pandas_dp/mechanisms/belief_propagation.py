"""Junction trees and exact belief propagation on them, fast on tables of many small axes.

The inference under :mod:`.graphical_model` (Private-PGM's, McKenna, Sheldon & Miklau 2019):
the maximal cliques of a triangulation (greedy min-fill elimination) joined by a maximum
spanning tree on shared attributes, and two passes of messages over it.

Tables are numpy arrays with one axis per attribute of their clique, in increasing attribute
order (cliques are sorted tuples). Sums over many axes go one axis at a time, largest first,
sharing partial sums between the tables they serve (:func:`sums_onto`, :func:`gather`):
numpy reduces or broadcasts several scattered axes of a table with many small axes ten to
fifty times slower. Everything here is pure numpy on public values (released or model).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from pandas_dp.mechanisms.marginals import Clique, cells

F64 = np.ndarray


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
    """A junction tree over ``attributes`` whose cliques hold every one of ``factors``.

    Remembered (a pure function of public cliques): AIM asks for the same trees in every
    round, once to bound a candidate's model size and once for its marginal.
    """
    return _junction_tree(tuple(factors), attributes)


@lru_cache(maxsize=4096)
def _junction_tree(factors: tuple[Clique, ...], attributes: int) -> JunctionTree:
    # Neighbours as bit masks: a vertex's fill counts in one pass over its neighbours.
    masks = [0] * attributes
    for factor in factors:
        for a, b in itertools.combinations(factor, 2):
            masks[a] |= 1 << b
            masks[b] |= 1 << a
    left = set(range(attributes))
    found: list[Clique] = []
    while left:  # eliminate the attribute adding fewest edges (ties: fewer, then first)
        v = min(left, key=lambda u: (_fill(masks, u), masks[u].bit_count(), u))
        around = [a for a in range(attributes) if masks[v] >> a & 1]
        found.append(tuple(sorted([*around, v])))
        for a in around:
            masks[a] = (masks[a] | masks[v]) & ~(1 << a) & ~(1 << v)
        left.remove(v)
        masks[v] = 0
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


def _fill(masks: Sequence[int], v: int) -> int:
    """Edges that eliminating ``v`` adds: pairs of its neighbours not yet joined."""
    around = masks[v]
    missing = sum(
        (around & ~masks[a] & ~(1 << a)).bit_count() for a in range(len(masks)) if around >> a & 1
    )
    return missing // 2


def expand(table: F64, sub: Clique, clique: Clique, sizes: Sequence[int]) -> F64:
    """``table`` over ``sub ⊆ clique``, shaped to broadcast over ``clique``'s axes."""
    return table.reshape([sizes[a] if a in sub else 1 for a in clique])


def _above(sub: Clique, clique: Clique, sizes: Sequence[int]) -> Clique:
    """``sub`` and one more attribute of ``clique``: the smallest (ties: the last).

    Summing ``clique`` down to ``sub`` drops the largest attributes first, so this is the
    table one step before ``sub`` on that way; ways to different subsets share their start.
    """
    extra = min((a for a in clique if a not in sub), key=lambda a: (sizes[a], -a))
    return tuple(sorted((*sub, extra)))


#: One step of a plan: a table on ``sub`` from the one on ``above`` (sub and one attribute),
#: which sits at ``axis`` of ``above``.
Step = tuple[Clique, Clique, int]


@lru_cache(maxsize=8192)
def _plan(clique: Clique, subs: tuple[Clique, ...], sizes: tuple[int, ...]) -> tuple[Step, ...]:
    """The steps from ``clique`` down to every one of ``subs``, each partial sum once.

    Remembered: a fit asks for the same plan at every step.
    """
    steps: dict[Clique, Step] = {}

    def reach(sub: Clique) -> None:
        if sub != clique and sub not in steps:
            above = _above(sub, clique, sizes)
            reach(above)
            steps[sub] = (sub, above, next(i for i, a in enumerate(above) if a not in sub))

    for sub in subs:
        reach(sub)
    return tuple(steps.values())  # each after the step it reads from


def sums_onto(
    table: F64, clique: Clique, subs: Sequence[Clique], sizes: Sequence[int],
    reduce: np.ufunc = np.add,
) -> dict[Clique, F64]:  # fmt: skip
    """The sums (or another ``reduce``) of ``table`` (over ``clique``) down to each of ``subs``.

    Partial sums are shared between ``subs``.
    """
    done: dict[Clique, F64] = {clique: table}
    for sub, above, axis in _plan(clique, tuple(subs), tuple(sizes)):
        done[sub] = np.asarray(reduce.reduce(done[above], axis=axis))
    return {sub: done[sub] for sub in subs}


def sum_onto(
    table: F64, clique: Clique, sub: Clique, sizes: Sequence[int], reduce: np.ufunc = np.add
) -> F64:
    """The sum (or another ``reduce``) of ``table`` (over ``clique``) down to ``sub ⊆ clique``."""
    return sums_onto(table, clique, [sub], sizes, reduce)[sub]


@lru_cache(maxsize=8192)
def _gather_plan(
    clique: Clique, parts: tuple[Clique, ...], sizes: tuple[int, ...]
) -> tuple[tuple[Clique, Clique, tuple[slice | None, ...]], ...]:
    """:func:`_plan` backwards, each step with the index that adds its missing axis."""
    steps = reversed(_plan(clique, parts, sizes))
    return tuple((sub, above, (slice(None),) * axis + (None,)) for sub, above, axis in steps)


def gather(parts: Mapping[Clique, F64], clique: Clique, sizes: Sequence[int]) -> F64:
    """``Σ parts`` broadcast over ``clique``: each added into the smallest partial sum above it.

    :func:`sums_onto`'s plan run backwards: parts on subsets meet in small tables first, and
    only a few full-size additions remain. The result may be a read-only broadcast view.
    """
    pending = dict(parts)
    for sub, above, index in _gather_plan(clique, tuple(parts), tuple(sizes)):
        part = pending.pop(sub)[index]
        here = pending.get(above)
        pending[above] = part if here is None else part + here
    full = tuple(sizes[a] for a in clique)
    table = pending.get(clique)
    return np.zeros(full) if table is None else np.broadcast_to(table, full)


def logs(potentials: Mapping[Clique, F64], tree: JunctionTree, sizes: Sequence[int]) -> list[F64]:
    """Each clique's log table: the sum of the potentials whose home it is."""
    homed: list[dict[Clique, F64]] = [{} for _ in tree.cliques]
    for factor, theta in potentials.items():
        homed[tree.home(factor)][factor] = theta
    return [gather(parts, c, sizes) for parts, c in zip(homed, tree.cliques, strict=True)]


def _exp(log: F64) -> F64:
    """``exp(log)`` scaled to a largest cell of 1 (beliefs are normalised in the end)."""
    top = float(log.max()) if log.size else 0.0
    return np.exp(log - top) if np.isfinite(top) else np.zeros_like(log)


def _log_sum_onto(
    log: F64, clique: Clique, sub: Clique, sizes: Sequence[int]
) -> tuple[F64, F64, F64]:
    """``log Σ exp(log)`` down to ``sub``, each of its cells' largest term factored out.

    Also the table exponentiated with those terms factored out (each ``sub`` value's largest
    cell 1) and the terms, which the downward pass reuses.
    """
    top = sum_onto(log, clique, sub, sizes, np.maximum)
    table = np.exp(log - expand(top, sub, clique, sizes))
    return np.log(sum_onto(table, clique, sub, sizes)) + top, table, top


def propagate(log: Sequence[F64], tree: JunctionTree, sizes: Sequence[int]) -> list[F64]:
    """Each clique's marginal up to a factor of its own, by two-pass belief propagation.

    Messages are logs; each table is exponentiated once, not once per message. Upward, each
    message's cells keep their own largest term (as in log space, exact whatever the
    potentials' range). Downward, a child's belief is its upward table times a factor per
    separator value, scaled to a largest factor of 1, and the parent's belief is scaled to a
    largest cell of 1: a separator value whose belief is below ``1e-308`` of the largest gets
    none, and both cliques' marginals on the separator agree, so that mass is below
    ``1e-308`` of the largest cell in the child too.
    """
    cliques, n = tree.cliques, len(tree.cliques)
    seps = [()] + [
        tuple(sorted(set(cliques[i]) & set(cliques[tree.parents[i]]))) for i in range(1, n)
    ]
    gathered = list(log)
    up: list[F64] = [np.zeros(())] * n
    tables: list[F64] = [np.zeros(())] * n
    tops: list[F64] = [np.zeros(())] * n
    for i in reversed(range(1, n)):  # children come after their parents
        up[i], tables[i], tops[i] = _log_sum_onto(gathered[i], cliques[i], seps[i], sizes)
        p = tree.parents[i]
        gathered[p] = gathered[p] + expand(up[i], seps[i], cliques[p], sizes)
    belief = [_exp(gathered[0])] + [np.zeros(())] * (n - 1)
    with np.errstate(divide="ignore"):  # log 0 = -inf: a separator value of no mass
        for i in range(1, n):
            p = tree.parents[i]
            onto = np.log(sum_onto(belief[p], cliques[p], seps[i], sizes))
            factor = _exp(tops[i] + onto - up[i])  # log belief - log table, per separator value
            belief[i] = tables[i] * expand(factor, seps[i], cliques[i], sizes)
    return belief


def belief_at(
    potentials: Mapping[Clique, F64], tree: JunctionTree, sizes: Sequence[int], total: float,
    home: int,
) -> F64:  # fmt: skip
    """Clique ``home``'s marginal alone (counts summing to ``total``): messages toward it only.

    Half of :func:`beliefs`' work: no downward pass, one table exponentiated per clique.
    """
    cliques, log = tree.cliques, logs(potentials, tree, sizes)
    around: dict[int, list[int]] = {i: [] for i in range(len(cliques))}
    for i in range(1, len(cliques)):
        around[i].append(tree.parents[i])
        around[tree.parents[i]].append(i)
    order, towards = [home], {home: home}
    for i in order:  # breadth first from home; each clique's message goes towards it
        for j in around[i]:
            if j not in towards:
                towards[j] = i
                order.append(j)
    gathered = list(log)
    for i in reversed(order[1:]):
        t = towards[i]
        sep = tuple(sorted(set(cliques[i]) & set(cliques[t])))
        up = _log_sum_onto(gathered[i], cliques[i], sep, sizes)[0]
        gathered[t] = gathered[t] + expand(up, sep, cliques[t], sizes)
    table = _exp(gathered[home])
    return table * (total / max(float(table.sum()), 1e-300))


def beliefs(
    potentials: Mapping[Clique, F64], tree: JunctionTree, sizes: Sequence[int], total: float
) -> list[F64]:
    """Each clique's marginal (counts summing to ``total``), by two-pass belief propagation."""
    tables = propagate(logs(potentials, tree, sizes), tree, sizes)
    return [b * (total / max(float(b.sum()), 1e-300)) for b in tables]
