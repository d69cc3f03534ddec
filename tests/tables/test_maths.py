"""The maths of many tables, checked against dense linear algebra on small domains.

On a domain of 2 × 3 × 2 × 2 = 24 cells the measurement matrix of any set of marginals can
be written out, so the generalized least-squares estimate ``(QᵀQ)⁺ Qᵀ y`` (rows of ``Q``
scaled by ``1/σ``) and its covariance are computed directly and compared with the residual
formulas of :mod:`pandas_dp.mechanisms.marginals` and :mod:`pandas_dp.mechanisms.
reconstruction`. Every comparison is linear algebra in float64 on numbers below 10^4: they
agree to 1e-9.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from pandas_dp.mechanisms.marginals import (
    downward_closure,
    maximal,
    optimal_strategy,
    residual_planner_variance,
    residual_variances,
    table_variance,
    workload_variance,
)
from pandas_dp.mechanisms.reconstruction import (
    consistent_tables,
    marginalize,
    nonnegative,
    project,
)

SIZES = (2, 3, 2, 2)
CELLS = int(np.prod(SIZES))


def marginal_matrix(clique: tuple[int, ...]) -> np.ndarray:
    """The 0/1 matrix that maps the full 24-cell vector to the marginal over ``clique``."""
    factors = [np.eye(n) if i in clique else np.ones((1, n)) for i, n in enumerate(SIZES)]
    out = np.ones((1, 1))
    for factor in factors:
        out = np.kron(out, factor)
    return out


def dense_gls(measured, sigma2, noisy):
    """Least-squares estimate of the full vector (minimum norm) and its covariance."""
    q = np.vstack([marginal_matrix(b) / np.sqrt(s) for b, s in zip(measured, sigma2, strict=True)])
    y = np.concatenate(
        [noisy[b].reshape(-1) / np.sqrt(s) for b, s in zip(measured, sigma2, strict=True)]
    )
    inverse = np.linalg.pinv(q.T @ q)
    return inverse @ q.T @ y, inverse


WORKLOADS = [
    [(0, 1), (1, 2), (0, 2, 3)],
    list(itertools.combinations(range(4), 2)),
    [(0,), (1, 3), (0, 1, 2)],
]


@pytest.mark.parametrize("workload", WORKLOADS)
def test_least_squares_through_residuals_is_the_dense_estimate(workload):
    rng = np.random.default_rng(1)
    strategy = optimal_strategy(workload, SIZES)
    sigma2 = [1.0 / share for share in strategy.shares]
    noisy = {b: rng.normal(0, 5, [SIZES[i] for i in b]) + 20 for b in strategy.cliques}
    estimate, covariance = dense_gls(strategy.cliques, sigma2, noisy)
    ours = consistent_tables(noisy, dict(zip(strategy.cliques, sigma2, strict=True)),
                             workload, SIZES, clamp=False)  # fmt: skip
    tau = residual_variances(strategy.cliques, sigma2, SIZES)
    for table in workload:
        m = marginal_matrix(table)
        assert ours[table].reshape(-1) == pytest.approx(m @ estimate, abs=1e-9)
        cell_variances = np.diag(m @ covariance @ m.T)
        assert table_variance(table, tau, SIZES) == pytest.approx(cell_variances, rel=1e-9)


@pytest.mark.parametrize("workload", WORKLOADS)
def test_the_strategy_beats_simple_ones_and_approaches_the_residual_bound(workload):
    strategy = optimal_strategy(workload, SIZES)
    assert sum(strategy.shares) == pytest.approx(1.0)
    assert set(strategy.cliques) <= set(downward_closure(workload))
    ours = workload_variance(workload, strategy.cliques, [1 / s for s in strategy.shares], SIZES)
    # The workload's own tables with equal shares, and the same least squares.
    k = len(workload)
    equal = workload_variance(workload, workload, [float(k)] * k, SIZES)
    assert ours <= equal * (1 + 1e-9)
    # ResidualPlanner's optimum (ρ = 1/2 here: σ² = 1/share) bounds every marginal strategy.
    bound = residual_planner_variance(workload, SIZES, 0.5)
    assert bound <= ours * (1 + 1e-9)
    assert ours <= 1.25 * bound
    # Deterministic: the same public inputs give the same strategy.
    assert optimal_strategy(workload, SIZES) == strategy


def test_projection_is_orthogonal_and_idempotent():
    rng = np.random.default_rng(2)
    tops = maximal(WORKLOADS[0])
    tables = {a: rng.normal(10, 3, [SIZES[i] for i in a]) for a in tops}
    once = project(tables, SIZES)
    twice = project(once, SIZES)
    for a in tops:
        assert twice[a] == pytest.approx(once[a], abs=1e-9)
    # The residual t - P(t) is orthogonal to every consistent point (here P of anything).
    other = project({a: rng.normal(0, 1, t.shape) for a, t in tables.items()}, SIZES)
    inner = sum(float(np.sum((tables[a] - once[a]) * other[a])) for a in tops)
    assert inner == pytest.approx(0.0, abs=1e-9)


@pytest.mark.parametrize("seed", range(5))
def test_nonnegative_tables_stay_consistent(seed):
    """Very noisy tables around small counts: many cells start negative."""
    rng = np.random.default_rng(seed)
    tops = maximal(WORKLOADS[1])
    noisy = {a: rng.normal(1, 6, [SIZES[i] for i in a]) for a in tops}
    start = project(noisy, SIZES)
    assert min(t.min() for t in start.values()) < -3
    out = nonnegative(start, SIZES)
    assert min(t.min() for t in out.values()) >= 0.0
    for a, b in itertools.combinations(tops, 2):
        shared = tuple(i for i in a if i in b)
        left, right = marginalize(out[a], a, shared), marginalize(out[b], b, shared)
        assert left == pytest.approx(right, rel=1e-9, abs=1e-9)


def test_all_negative_tables_become_zero():
    tops = maximal(WORKLOADS[0])
    start = project({a: -np.ones([SIZES[i] for i in a]) for a in tops}, SIZES)
    out = nonnegative(start, SIZES)
    assert all(np.all(t == 0) for t in out.values())
