"""A graphical model fitted to noisy marginals, its marginals, and rows drawn from it.

Private-PGM (McKenna, Sheldon & Miklau, "Graphical-model based estimation and inference for
differential privacy", ICML 2019): among the distributions
``P(x) ∝ exp(Σ_m θ_m(x_m))`` over the measured cliques ``m``, find the one whose marginals
best explain the noisy measurements (weighted least squares), by mirror descent on ``θ``.
Marginals come from belief propagation on a junction tree of the cliques
(:mod:`.belief_propagation`). Unlike the residual least squares of :mod:`.reconstruction`,
the model explains cliques that were never measured (a cycle of pairs, a triple from its
pairs) by the most spread-out distribution that fits, which AIM's later rounds and its rows
rely on.

Tables are numpy arrays with one axis per attribute of their clique, in increasing attribute
order (cliques are sorted tuples). Everything here is pure numpy on released values and
total.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from pandas_dp.mechanisms.belief_propagation import (
    JunctionTree,
    belief_at,
    beliefs,
    junction_tree,
    logs,
    propagate,
    sum_onto,
    sums_onto,
)
from pandas_dp.mechanisms.marginals import Clique, cells
from pandas_dp.mechanisms.tree_model import randomized_draws

F64 = np.ndarray
#: Mirror-descent steps of a fit from scratch; a warm start needs far fewer.
ITERATIONS = 500


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

    def grown(self, clique: Clique) -> JunctionTree:
        """The tree of a model grown by ``clique``: its own when one of its cliques holds it.

        Otherwise the junction tree of its factors and ``clique``, the tree :func:`fit` gives
        the model refitted with ``clique`` measured (AIM bounds its size).
        """
        if self.tree.home(clique) >= 0:
            return self.tree
        return junction_tree([*self.potentials, clique], len(self.sizes))

    def marginal(self, clique: Clique) -> F64:
        """The model's marginal on any clique (a larger tree when no clique holds it)."""
        h = self.tree.home(clique)
        if h >= 0:
            return sum_onto(self.calibrated[h], self.tree.cliques[h], clique, self.sizes)
        tree = self.grown(clique)
        h = tree.home(clique)
        table = belief_at(self.potentials, tree, self.sizes, self.total, h)
        return sum_onto(table, tree.cliques[h], clique, self.sizes)

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
            # Rows by separator value, in random order within each (they get its draws in
            # category order); numpy radix-sorts 16-bit keys, in linear time.
            narrow = given.astype(np.uint16) if table.shape[0] <= 1 << 16 else given
            shuffled = gen.permutation(rows)
            order = shuffled[np.argsort(narrow[shuffled], kind="stable")]
            counts = np.bincount(given, minlength=table.shape[0])
            drawn = np.zeros(rows, dtype=np.int64)
            seen = np.flatnonzero(counts)  # one group of draws per separator value seen
            drawn[order] = randomized_draws(gen, table[seen], counts[seen])
            unravelled = np.unravel_index(drawn, [sizes[a] for a in new])
            for a, values in zip(new, unravelled, strict=True):
                out[:, a] = values
        return out


@dataclass(frozen=True)
class _Objective:
    """The fit's loss ``½ Σ ‖(μ_m - y_m)/σ_m‖²`` and the model marginals it reads."""

    measured: Sequence[Measured]
    tree: JunctionTree
    sizes: Sequence[int]
    total: float

    @cached_property
    def homes(self) -> dict[int, list[Clique]]:
        """The factors by home clique."""
        homes: dict[int, list[Clique]] = defaultdict(list)
        for f in dict.fromkeys(m.clique for m in self.measured):
            homes[self.tree.home(f)].append(f)
        return homes

    def marginals(self, log: Sequence[F64]) -> dict[Clique, F64]:
        """The factors' marginals of the model with clique log tables ``log``.

        Home tables are normalised only once summed down (they are far smaller then).
        """
        tables = propagate(log, self.tree, self.sizes)
        out: dict[Clique, F64] = {}
        for h, factors in self.homes.items():
            scale = self.total / max(float(tables[h].sum()), 1e-300)
            sums = sums_onto(tables[h], self.tree.cliques[h], factors, self.sizes)
            out.update((f, table * scale) for f, table in sums.items())
        return out

    def loss(self, mu: Mapping[Clique, F64]) -> tuple[float, dict[Clique, F64]]:
        """The loss at marginals ``mu`` and its gradient with respect to them."""
        value, grad = 0.0, dict[Clique, F64]()
        for m in self.measured:  # a clique measured twice adds both gradients
            diff = (mu[m.clique] - m.values) / m.sigma
            value += 0.5 * float(np.vdot(diff, diff))
            step = diff / m.sigma
            grad[m.clique] = grad[m.clique] + step if m.clique in grad else step
        return value, grad


def with_positive_sigmas(measured: Sequence[Measured]) -> list[Measured]:
    """``measured`` with a σ whose square underflows to 0 (ε near 10^5) raised to the least other.

    Such a measurement is exact up to float precision; weighting it like the most precise
    of the others (all alike when every σ is 0) keeps the weights finite, and the fit then
    reproduces it up to its own precision instead of dividing by zero.
    """
    floor = min((m.sigma for m in measured if m.sigma**2 > 0), default=1.0)
    return [m if m.sigma >= floor else Measured(m.clique, m.values, floor) for m in measured]


def unbiased_total(measured: Sequence[Measured], counted: Sequence[int]) -> float:
    """The minimum-variance unbiased total of ``measured`` (their sums, inverse-variance weighted).

    ``counted[k]`` is how many independently noised cells table ``k``'s sum adds (more than
    its size where a cell merges several): its sum's variance is ``counted[k] σ_k²``. This
    is the total of the least-squares estimate (:mod:`.reconstruction`), as an unbiased
    combination of the tables' sums; at least 0.
    """
    measured = with_positive_sigmas(measured)
    weights = [1.0 / (n * m.sigma**2) for m, n in zip(measured, counted, strict=True)]
    sums = [float(m.values.sum()) for m in measured]
    return max(float(np.dot(weights, sums)) / max(sum(weights), 1e-300), 0.0)


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
    measured = with_positive_sigmas(measured)
    factors = list(dict.fromkeys(m.clique for m in measured))
    tree = junction_tree(factors, len(sizes))
    theta = {f: np.zeros(tuple(sizes[a] for a in f)) for f in factors}
    if start is not None:
        theta.update({f: t for f, t in start.potentials.items() if f in theta})
    total = max(float(total), 1.0)
    if measured:
        objective = _Objective(measured, tree, sizes, total)
        alpha = min(m.sigma for m in measured) ** 2 / total
        theta = _descend(objective, theta, alpha, iterations)
    return Model(theta, tree, tuple(sizes), total)


def _descend(
    objective: _Objective, theta: dict[Clique, F64], alpha: float, iterations: int
) -> dict[Clique, F64]:
    """``iterations`` steps of mirror descent from ``theta``, each step size by backtracking.

    A trial step's clique log tables are the current ones minus ``alpha`` times the
    gradient's (sums are linear), so backtracking re-propagates without re-adding every
    potential.
    """
    tree, sizes = objective.tree, objective.sizes
    log = logs(theta, tree, sizes)
    mu = objective.marginals(log)
    current, grad = objective.loss(mu)
    for _ in range(iterations):
        alpha *= 2
        step = logs(grad, tree, sizes)
        for _ in range(30):
            trial = [table - alpha * s for table, s in zip(log, step, strict=True)]
            nu = objective.marginals(trial)
            value, new_grad = objective.loss(nu)
            decrease = sum(float(np.vdot(grad[f], mu[f] - nu[f])) for f in grad)
            if current - value >= 0.5 * decrease:
                break
            alpha /= 2
        else:
            break  # no step decreases the loss: converged to float precision
        theta = {f: theta[f] - alpha * grad[f] for f in theta}
        converged = current - value <= 1e-12 * max(current, 1.0)
        log, mu, current, grad = trial, nu, value, new_grad
        if converged:
            break
    return theta
