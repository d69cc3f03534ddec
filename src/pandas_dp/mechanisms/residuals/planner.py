"""ResidualPlanner: measure a workload's residuals directly, with exact discrete noise.

Xiao, Ding, Kifer et al., "An optimal and scalable matrix mechanism for noisy marginals under
convex loss functions" (NeurIPS 2023). A *clique* ``A`` is a sorted tuple of attribute
positions (sizes ``n_i``); its *residual* is its marginal ``m_A`` centred along each of its
attributes, ``P_A m_A`` with ``P_A = ⊗_{i∈A} (I - J/n_i)``, of dimension ``d_A = Π (n_i - 1)``.
Every marginal is the sum of the lifted residuals of its subsets,
``m_W = Σ_{A ⊆ W} lift(P_A m_A) / n_{W∖A}``, and the residuals of different cliques are
orthogonal. The paper measures each residual ``A`` of the workload's downward closure once,
as ``R_A x + N(0, σ_A² ⊗ Sub_i Sub_iᵀ)`` (``Sub_i`` an ``(n_i-1) × n_i`` difference matrix),
at the privacy cost ``ρ_A = p_A / (2σ_A²)`` with ``p_A = Π (n_i-1)/n_i``; the reconstructed
residual has covariance ``σ_A² P_A``. Minimising the weighted sum of the workload's cell
variances ``Σ_A a_A σ_A²`` (``a_A = d_A Σ_{W ⊇ A} w_W / n_{W∖A}``) at total ``Σ ρ_A = ρ``
gives the closed form ``σ_A² = sqrt(p_A/a_A) Σ_B sqrt(a_B p_B) / (2ρ)``, i.e. shares
``ρ_A / ρ ∝ sqrt(a_A p_A)``, and the optimum ``(Σ_A sqrt(a_A p_A))² / (2ρ)``
(:func:`~pandas_dp.mechanisms.marginals.residual_planner_variance`): no mechanism built from
Gaussian linear measurements does better (the paper's Theorem on optimality).

**Exact discrete noise.** Correlated discrete Gaussian noise is not available exactly, and
``Sub·z`` with ``z`` i.i.d. discrete Gaussian is a projection of a lattice Gaussian: its
privacy loss picks up a theta-function term the continuous analysis does not have. So each
residual is measured through an integer *orthogonal basis* of its space instead, with
independent noise scaled to each row's public norm. Per attribute,
:mod:`~pandas_dp.mechanisms.residuals.basis` gives ``n - 1`` mutually orthogonal integer rows
``f_k ⊥ 1`` (Hadamard rows inside power-of-two blocks, Helmert-style rows between blocks),
so ``Σ_k f_k f_kᵀ / N_k = I - J/n`` with ``N_k = ||f_k||²``, and applies them in
``O(n log n)``. Residual ``A``'s rows are the Kronecker products of its attributes' rows
(norms multiply), ``d_A`` of them.

Residual ``A`` is released as ``y_k = f_k·m_A + ξ_k``, ``ξ_k`` independent discrete Gaussian
of variance parameter ``σ_k² >= v_A N_k / Π n_i`` (``v_A`` the residual's *base variance*,
the variance of a row of norm ``Π n_i``; rows of equal norm share one mechanism). A change
``Δ`` of the marginal costs ``Σ_k (f_k·Δ)² / (2σ_k²) <= Π n_i ΔᵀP_AΔ / (2 v_A)`` (CKS20:
integer shift ``c`` of a discrete Gaussian is exactly ``c²/(2σ²)``-zCDP, and independent
coordinates add); one row (``Δ = e_j``) gives ``(P_A)_jj = p_A``, so the measurement is
``d_A / (2 v_A)``-zCDP, and a unit of ``k`` rows at most ``k² d_A / (2 v_A)`` since
``|(P_A)_jl| <= (P_A)_jj``. The estimate ``r_A = Σ_k f_k y_k / N_k`` is unbiased for
``P_A m_A`` with covariance at most ``(v_A / Π n_i) P_A``: the paper's mechanism with
``σ_A² = v_A / Π n_i`` at the paper's cost ``p_A / (2σ_A²)``, in the fewest noise draws,
``d_A``. :data:`MAX_DRAWS` still bounds them. (Powers of two: every ``N_k = Π n_i``,
``σ_k² = v_A``.)

Everything here reads public parameters (workload, sizes, ρ) only, except :func:`measure`
(exact integer arithmetic on the exact marginal, before noise) and :func:`estimate`
(post-processing of released values).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from pandas_dp.mechanisms.marginals import (
    Clique,
    Strategy,
    cells,
    choose_strategy,
    laplace_strategy,
    residual_dimension,
    residual_planner_variance,
    residual_weights,
    subsets,
    table_variance,
    workload_variance,
)
from pandas_dp.mechanisms.residuals.basis import backward, forward, largest_entry, norms

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
#: The most noise draws one release may take (about 3 s of exact sampling in large batches;
#: a residual draws once per distinct row norm, and small batches cost more: 242,128 values
#: in 3,332 batches took 5 s); larger plans fall back to measuring whole marginals.
MAX_DRAWS = 2_000_000


@cache
def _row_norms(clique: Clique, sizes: tuple[int, ...]) -> I64:
    # Each N_i <= n_i², so tables within the cell limit stay far inside int64; refuse the rest
    # (public sizes) rather than let a product wrap and miscalibrate the noise.
    if math.prod(int(norms(sizes[i]).max(initial=1)) for i in clique) >= 1 << 62:
        raise ValueError(f"the residual over sizes {[sizes[i] for i in clique]} is too large")
    out = np.ones(1, dtype=np.int64)
    for i in clique:
        out = np.multiply.outer(out, norms(sizes[i])).reshape(-1)
    out.setflags(write=False)
    return out


def row_norms(clique: Clique, sizes: Sequence[int]) -> I64:
    """The norm ``Π N_{k_i}`` of each released row of residual ``clique`` (flat, C order)."""
    return _row_norms(tuple(clique), tuple(int(n) for n in sizes))


def rows(clique: Clique, sizes: Sequence[int]) -> int:
    """How many noisy values residual ``clique`` is released as: ``d_A = Π (n_i - 1)``."""
    return residual_dimension(clique, sizes)


def cost(clique: Clique, sizes: Sequence[int]) -> float:
    """``p_A = Π (n_i - 1)/n_i``: the paper's privacy cost of residual ``A`` at ``σ_A² = 1``."""
    return residual_dimension(clique, sizes) / cells(clique, sizes)


@dataclass(frozen=True)
class ResidualPlan:
    """The residuals to measure and each one's share of the release's ρ (summing to 1).

    Residual ``A`` at share ``s_A`` of ρ (``k`` rows per privacy unit) has base variance
    ``v_A = k² Π(n_i-1) / (2 ρ s_A)``: each of its :func:`rows` basis values of norm ``N``
    gets independent discrete Gaussian noise of variance parameter ``v_A N / Π n_i``.
    """

    cliques: tuple[Clique, ...]
    shares: tuple[float, ...]
    sizes: tuple[int, ...]

    def noise_variances(self, rho: float, sensitivity: int = 1) -> list[float]:
        """``v_A`` for each residual (continuous approximation of the sampled noise)."""
        return [
            sensitivity**2 * residual_dimension(c, self.sizes) / (2.0 * rho * s)
            for c, s in zip(self.cliques, self.shares, strict=True)
        ]

    @property
    def draws(self) -> int:
        """Noise variates one release draws."""
        return sum(rows(c, self.sizes) for c in self.cliques)

    @property
    def noise(self) -> Literal["gaussian"]:
        """Always discrete Gaussian noise (ResidualPlanner's noise; zCDP)."""
        return "gaussian"

    def cell_variance(self, table: Clique, variances: Sequence[float]) -> float:
        """Variance of each cell of the reconstructed ``table`` (see :func:`cell_variance`)."""
        return cell_variance(table, self.cliques, variances, self.sizes)


def cell_variance(
    table: Clique, measured: Sequence[Clique], variances: Sequence[float], sizes: Sequence[int]
) -> float:
    """Variance of each cell of ``table`` reconstructed from the residuals (the same in all).

    ``Σ_{A ⊆ W} σ_A² p_A / n_{W∖A}²`` with ``σ_A² = v_A / Π n_i``: residual ``A``'s estimate
    has covariance ``σ_A² P_A``, whose diagonal is ``σ_A² p_A``, spread evenly over the
    ``n_{W∖A}`` cells below each of its own; residuals are independent. ``v_A`` is the
    base variance (that of a basis value of norm ``Π n_i``).
    """
    tau = {c: v / cells(c, sizes) for c, v in zip(measured, variances, strict=True)}
    full = {c: tau.get(c, 0.0) for c in subsets(table)}  # zero-dimensional ones: 0
    return table_variance(table, full, sizes)


def choose_plan(
    workload: Sequence[Clique], sizes: Sequence[int], epsilon: float, rho: float | None
) -> ResidualPlan | Strategy:
    """ResidualPlanner with Gaussian noise, unless Laplace noise or the draws say otherwise.

    Without ρ (no δ), or when ResidualPlanner would draw more than :data:`MAX_DRAWS` noise
    values, the marginal strategy of :func:`~pandas_dp.mechanisms.marginals.choose_strategy`;
    otherwise ResidualPlanner, unless the Laplace strategy at ``epsilon`` gives the workload
    a smaller total variance (a few tables). Public inputs only.
    """
    if rho is None:
        return choose_strategy(workload, sizes, epsilon, rho)
    plan = plan_residuals(workload, sizes)
    if plan.draws > MAX_DRAWS:
        return choose_strategy(workload, sizes, epsilon, rho)
    laplace = laplace_strategy(workload, sizes)
    pure = workload_variance(workload, laplace.cliques, laplace.variances(epsilon, rho), sizes)
    return laplace if pure < residual_planner_variance(workload, sizes, rho) else plan


def plan_residuals(
    workload: Sequence[Clique], sizes: Sequence[int], weights: Sequence[float] | None = None
) -> ResidualPlan:
    """ResidualPlanner's optimal shares of ρ for the (weighted) sum of cell variances.

    ``s_A ∝ sqrt(a_A p_A)`` over the residuals of the downward closure with ``d_A > 0``
    (module notes); ``weights`` (default 1) weigh each workload table's cell variances.
    """
    closure, a = residual_weights(workload, sizes)
    if weights is not None:
        a = np.zeros(len(closure))
        position = {c: i for i, c in enumerate(closure)}
        for table, w in zip(workload, weights, strict=True):
            for c in subsets(table):
                rest = cells(table, sizes) // cells(c, sizes)
                a[position[c]] += w * residual_dimension(c, sizes) / rest
    p = np.array([cost(c, sizes) for c in closure])
    score = np.sqrt(a * p)
    keep = [i for i, c in enumerate(closure) if residual_dimension(c, sizes) > 0 and score[i] > 0]
    total = float(np.sum(score[keep]))
    return ResidualPlan(
        tuple(closure[i] for i in keep),
        tuple(float(score[i]) / total for i in keep),
        tuple(int(n) for n in sizes),
    )


def measure(
    marginal: npt.ArrayLike, clique: Clique, sizes: Sequence[int]
) -> npt.NDArray[np.generic]:
    """``F_A m_A``, flattened: the exact integers residual ``A`` is released as.

    ``F_A = ⊗ F_{n_i}`` (:func:`~pandas_dp.mechanisms.residuals.basis.forward` along each
    axis). Each partial product is at most the marginal's total times the largest entries so
    far in absolute value; the sums run in int64 when that cannot overflow, else in Python
    ints.
    """
    table = np.asarray(marginal).reshape([sizes[i] for i in clique])
    largest = math.prod(largest_entry(sizes[i]) for i in clique)
    exact = table.dtype != object and (
        table.size == 0 or int(np.abs(table).sum()) * largest < 1 << 62
    )
    out: Any = table if exact else table.astype(object)
    for axis in range(len(clique)):
        out = np.moveaxis(forward(np.moveaxis(out, axis, -1)), -1, axis)
    return np.asarray(out).reshape(-1)


def estimate(noisy: npt.ArrayLike, clique: Clique, sizes: Sequence[int]) -> F64:
    """``Σ_k f_k y_k / N_k``: the unbiased estimate of residual ``A`` from its noisy values.

    ``diag(1/N)`` is ``⊗ diag(1/N_i)`` too, so each axis is multiplied by ``F_iᵀ diag(1/N_i)``
    (:func:`~pandas_dp.mechanisms.residuals.basis.backward`).
    """
    values = np.asarray(noisy, dtype=np.float64).reshape([sizes[i] - 1 for i in clique])
    for axis, i in enumerate(clique):
        values = np.moveaxis(backward(np.moveaxis(values, axis, -1), sizes[i]), -1, axis)
    return values


def residuals(
    noisy: Mapping[Clique, npt.ArrayLike], wanted: Sequence[Clique], sizes: Sequence[int]
) -> dict[Clique, F64]:
    """Every residual under the ``wanted`` cliques: estimated, or zero where ``d_A = 0``."""
    out: dict[Clique, F64] = {}
    for table in wanted:
        for c in subsets(table):
            if c in out:
                continue
            if c in noisy:
                out[c] = estimate(noisy[c], c, sizes)
            elif residual_dimension(c, sizes) == 0:  # a one-key attribute: no residual
                out[c] = np.zeros([sizes[i] for i in c])
            else:  # a planning error (public inputs only), never data-dependent
                raise ValueError(f"residual {c} was not measured")
    return out
