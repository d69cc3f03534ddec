"""Which marginals to measure, and how much noise each gets, for a workload of marginals.

A *clique* is a sorted tuple of attribute positions; its *marginal* counts the rows in each
cell of those attributes' public domains (sizes ``n_i``). A workload asks for several
marginals. The strategy measures every clique ``B`` of the workload's downward closure with
independent discrete Gaussian noise of variance ``σ_B² = Δ² / (2 ρ_B)``: one row is in one
cell of each marginal, so the measurements together are ``Σ ρ_B``-zCDP.

How good a strategy is follows in closed form from the *residual* decomposition of the data
vector (Xiao, He, Zhang & Kifer, "An optimal and scalable matrix mechanism for noisy marginals
under convex loss functions", NeurIPS 2023): the residual of clique ``C`` (its marginal
centred along each of its attributes) lives in a space of dimension ``d_C = Π (n_i - 1)``.
Measuring ``B ⊇ C`` with variance ``σ_B²`` tells about each residual coordinate of ``C`` with
variance ``σ_B² n_{B∖C}``, independently of every other residual, so least squares combines
them with precision ``1/τ_C = Σ_{B ⊇ C} 1 / (σ_B² n_{B∖C})``. The workload marginal ``A``
then has total variance ``Σ_{C ⊆ A} τ_C d_C / n_{A∖C}`` over its cells. This module chooses
the ``ρ_B`` that minimise the workload's total variance (the marginal strategies of HDMM,
McKenna, Miklau, Hay & Machanavajjhala, PVLDB 2018, solved exactly through the residuals), and
gives ResidualPlanner's optimum (residuals measured directly, a lower bound for any
measurement of marginals) for comparison. Everything here reads public parameters only.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

Clique = tuple[int, ...]

#: Measurements whose share of ρ falls below this fraction of the largest are dropped (the
#: optimiser's near-zeros), unless a residual would then go unmeasured.
PRUNE = 1e-3


def subsets(clique: Clique) -> list[Clique]:
    """Every subset of ``clique`` (itself and the empty clique included), smallest first."""
    return [c for k in range(len(clique) + 1) for c in itertools.combinations(clique, k)]


def downward_closure(workload: Sequence[Clique]) -> list[Clique]:
    """Every subset of every workload clique, by size then attributes."""
    closure = {c for clique in workload for c in subsets(clique)}
    return sorted(closure, key=lambda c: (len(c), c))


def maximal(workload: Sequence[Clique]) -> list[Clique]:
    """The workload cliques that no other workload clique contains, in workload order."""
    unique = list(dict.fromkeys(workload))
    return [a for a in unique if not any(set(a) < set(b) for b in unique)]


def cells(clique: Clique, sizes: Sequence[int]) -> int:
    """``n_C``: the number of cells of the clique's marginal."""
    return math.prod(sizes[i] for i in clique)


def residual_dimension(clique: Clique, sizes: Sequence[int]) -> int:
    """``d_C = Π (n_i - 1)``: the dimension of the clique's residual."""
    return math.prod(sizes[i] - 1 for i in clique)


@dataclass(frozen=True)
class Strategy:
    """The marginals to measure and each one's share of the budget (summing to 1).

    With ``noise="gaussian"`` the shares are of the release's ρ (zCDP); with ``"laplace"``,
    of its ε (pure DP).
    """

    cliques: tuple[Clique, ...]
    shares: tuple[float, ...]
    noise: Literal["gaussian", "laplace"] = "gaussian"

    def variances(self, epsilon: float, rho: float | None) -> list[float]:
        """Each measurement's noise variance at sensitivity 1 (continuous approximation)."""
        if self.noise == "laplace":
            return [2.0 / (epsilon * share) ** 2 for share in self.shares]
        assert rho is not None
        return [1.0 / (2.0 * rho * share) for share in self.shares]


def _design(
    workload: Sequence[Clique], sizes: Sequence[int]
) -> tuple[list[Clique], np.ndarray, np.ndarray]:
    """The closure, the weights ``a_C`` of the residuals and the gain matrix ``G[C, B]``.

    The workload's total variance is ``Σ_C a_C / λ_C`` with ``λ = 2 G ρ`` (at Δ = 1):
    ``a_C = d_C Σ_{A ∈ W, A ⊇ C} 1/n_{A∖C}`` and ``G[C, B] = 1/n_{B∖C}`` for ``B ⊇ C``.
    """
    closure = downward_closure(workload)
    position = {c: i for i, c in enumerate(closure)}
    a = np.zeros(len(closure))
    for table in dict.fromkeys(workload):
        for c in subsets(table):
            rest = cells(table, sizes) // cells(c, sizes)
            a[position[c]] += residual_dimension(c, sizes) / rest
    gain = np.zeros((len(closure), len(closure)))
    for j, b in enumerate(closure):
        for c in subsets(b):
            gain[position[c], j] = cells(c, sizes) / cells(b, sizes)
    return closure, a, gain


def residual_weights(
    workload: Sequence[Clique], sizes: Sequence[int]
) -> tuple[list[Clique], np.ndarray]:
    """The downward closure and each residual's weight ``a_C`` in the workload's variance."""
    closure, a, _ = _design(workload, sizes)
    return closure, a


def optimal_strategy(workload: Sequence[Clique], sizes: Sequence[int]) -> Strategy:
    """The shares of ρ over the downward closure that minimise the total variance.

    The loss ``Σ_C a_C / (2 (G ρ)_C)`` is convex in ``ρ`` and homogeneous of degree -1, so
    ``loss(ρ) · Σ ρ`` is minimised over ``ρ = exp(θ)`` without constraints (L-BFGS-B from
    equal shares; deterministic), then normalised. Shares below :data:`PRUNE` of the largest
    are dropped where every residual keeps a measurement, and the rest renormalised.
    """
    closure, a, gain = _design(workload, sizes)

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        rho = np.exp(theta - theta.max())
        info = gain @ rho
        loss = float(np.sum(a / info))
        total = float(rho.sum())
        d_loss = -(gain.T @ (a / info**2))
        grad = rho * (loss + total * d_loss)
        return loss * total, grad

    from scipy import optimize  # lazy: scipy is not loaded by ``import pandas_dp``

    start = np.zeros(len(closure))
    found = optimize.minimize(
        objective, start, jac=True, method="L-BFGS-B", options={"maxiter": 2000, "gtol": 1e-10}
    )
    return _pruned(closure, gain, np.exp(found.x - found.x.max()))


def _pruned(closure: list[Clique], gain: np.ndarray, weights: np.ndarray) -> Strategy:
    """Drop near-zero shares (keeping every residual measured) and renormalise."""
    keep = weights >= PRUNE * weights.max()
    covered = (gain[:, keep] > 0).any(axis=1)
    for i in np.flatnonzero(~covered):  # put back the largest measurement covering it
        candidates = np.flatnonzero(gain[i] > 0)
        keep[candidates[np.argmax(weights[candidates])]] = True
    chosen = np.flatnonzero(keep)
    shares = weights[chosen] / weights[chosen].sum()
    return Strategy(tuple(closure[j] for j in chosen), tuple(float(s) for s in shares))


def choose_strategy(
    workload: Sequence[Clique], sizes: Sequence[int], epsilon: float, rho: float | None
) -> Strategy:
    """The better of the Gaussian strategy at ``rho`` and the Laplace one at ``epsilon``.

    Gaussian noise composes by the square root of the number of measurements and Laplace
    noise linearly, so Gaussian noise wins for many overlapping tables and Laplace noise for
    a few (or when there is no δ: ``rho`` None). The choice compares the workload's total
    variance under each, from public inputs only.
    """
    laplace = laplace_strategy(workload, sizes)
    if rho is None:
        return laplace
    gaussian = optimal_strategy(workload, sizes)
    costs = [
        workload_variance(workload, s.cliques, s.variances(epsilon, rho), sizes)
        for s in (gaussian, laplace)
    ]
    return gaussian if costs[0] <= costs[1] else laplace


def laplace_strategy(workload: Sequence[Clique], sizes: Sequence[int]) -> Strategy:
    """Shares of ε over the downward closure for discrete Laplace noise (pure ε-DP).

    One row is in one cell of each marginal, so scales ``b_B = Δ/(ε s_B)`` cost ``Σ ε s_B =
    ε`` in all; marginal ``B`` then has variance ``2 b_B²``. The total variance is
    ``Σ_C a_C / (Σ_B G[C, B] s_B²)`` up to a constant: not convex in ``s``, so it is
    minimised (L-BFGS-B over ``s = exp(θ)``, scale-free objective ``loss · (Σ s)²``) from two
    deterministic starts, equal shares over the closure and over the workload's maximal
    tables, keeping the better. Pure noise favours few measurements: it usually keeps those.
    """
    closure, a, gain = _design(workload, sizes)

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        t = np.exp(theta - theta.max())
        info = gain @ (t * t)
        loss = float(np.sum(a / info))
        total = float(t.sum())
        d_loss = -(gain.T @ (a / info**2)) * 2 * t
        return loss * total**2, t * (d_loss * total**2 + 2 * loss * total)

    from scipy import optimize  # lazy: scipy is not loaded by ``import pandas_dp``

    tops = set(maximal(workload))
    starts = [np.zeros(len(closure)), np.array([0.0 if c in tops else -12.0 for c in closure])]
    best = min(
        (
            optimize.minimize(objective, x0, jac=True, method="L-BFGS-B", options={"maxiter": 2000})
            for x0 in starts
        ),
        key=lambda found: float(found.fun),
    )
    return replace(_pruned(closure, gain, np.exp(best.x - best.x.max())), noise="laplace")


def residual_variances(
    measured: Sequence[Clique], sigma2: Sequence[float], sizes: Sequence[int]
) -> dict[Clique, float]:
    """``τ_C`` for every clique ``C`` under some measured clique (per residual coordinate).

    A variance of 0 (one that underflowed, at ε near 10^5) measures its residuals exactly:
    their ``τ`` is 0.
    """
    precision: dict[Clique, float] = {}
    for b, s2 in zip(measured, sigma2, strict=True):
        for c in subsets(b):
            rest = cells(b, sizes) // cells(c, sizes)
            weight = s2 * rest
            precision[c] = precision.get(c, 0.0) + (1.0 / weight if weight > 0 else math.inf)
    return {c: 1.0 / p for c, p in precision.items()}


def table_variance(table: Clique, tau: dict[Clique, float], sizes: Sequence[int]) -> float:
    """Variance of each cell of the least-squares marginal ``table`` (the same in every cell).

    ``Σ_{C ⊆ A} τ_C d_C / (n_C n_{A∖C}²)``: residual ``C``'s projector has diagonal
    ``d_C / n_C``, and it is spread evenly over the ``n_{A∖C}`` cells below each of its own.
    """
    total = 0.0
    for c in subsets(table):
        rest = cells(table, sizes) // cells(c, sizes)
        total += tau[c] * residual_dimension(c, sizes) / (cells(c, sizes) * rest * rest)
    return total


def workload_variance(
    workload: Sequence[Clique], measured: Sequence[Clique], sigma2: Sequence[float],
    sizes: Sequence[int],
) -> float:  # fmt: skip
    """Total variance of all cells of all workload tables (least squares, before clamping)."""
    tau = residual_variances(measured, sigma2, sizes)
    return sum(table_variance(t, tau, sizes) * cells(t, sizes) for t in dict.fromkeys(workload))


def residual_planner_variance(
    workload: Sequence[Clique], sizes: Sequence[int], rho: float
) -> float:
    """ResidualPlanner's optimal total variance at ``ρ`` (Δ = 1), residuals measured directly.

    Buying precision ``λ_C`` on residual ``C`` costs ``p_C λ_C / 2`` with ``p_C = d_C / n_C``;
    the optimum of ``Σ a_C / λ_C`` is ``(Σ_C sqrt(a_C p_C))² / (2ρ)``. No measurement of
    whole marginals can do better: a bound to compare :func:`optimal_strategy` against.
    """
    closure, a, _ = _design(workload, sizes)
    p = np.array([residual_dimension(c, sizes) / cells(c, sizes) for c in closure])
    return float(np.sum(np.sqrt(a * p)) ** 2 / (2 * rho))
