"""ResidualPlanner in ``priv.dp.tables``: the frames, the variance against the paper's closed
form (analytic, from the planned release's own noise, then empirical), and the noise's law.

The 8-column case: domains of 2, 3, 4, 5, 2, 3, 4, 5 keys; workloads of all 2-way and all
3-way tables; ε = 1, δ = 1e-6. The paper's optimum (Xiao et al. 2023) gives residual ``A``
``σ_A² = sqrt(p_A/a_A) Σ_B sqrt(a_B p_B) / (2ρ)`` and each cell of table ``W`` the variance
``Σ_{A ⊆ W} σ_A² p_A / n_{W∖A}²``. The release's variance is computed here independently of
the library's formula: the covariance of each table's cells is built as a dense matrix from
the frames and the sampled mechanisms' exact variances.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from pandas_dp.api.measurement.marginals import ResidualPart, release_rho
from pandas_dp.api.queries.tables import plan_tables
from pandas_dp.mechanisms.marginals import (
    cells,
    optimal_strategy,
    residual_planner_variance,
    residual_weights,
    subsets,
    workload_variance,
)
from pandas_dp.mechanisms.random import SeededRandomSource
from pandas_dp.mechanisms.reconstruction import assemble, marginalize
from pandas_dp.mechanisms.residual_planner import estimate, frame, measure, residuals

from ..mechanisms.test_gaussian import reference_pmf

SIZES = (2, 3, 4, 5, 2, 3, 4, 5)
RHO = release_rho(Fraction(1), Fraction(1, 10**6))


@pytest.mark.parametrize("n", range(1, 13))
def test_frames_are_integer_tight_frames_of_the_residual_space(n):
    f = frame(n)
    assert f.dtype == np.int64
    assert set(np.unique(f)) <= {-1, 0, 1}
    np.testing.assert_array_equal(f.T @ f, n * np.eye(n, dtype=np.int64) - 1)
    np.testing.assert_array_equal(f.sum(axis=1), 0)
    expected = n - 1 if n & (n - 1) == 0 else n * (n - 1) // 2
    assert f.shape[0] == expected


def planned(order: int, protect_seeded):
    names = [f"c{i}" for i in range(len(SIZES))]
    rng = np.random.default_rng(2)
    data = pd.DataFrame({c: rng.integers(0, n, 500) for c, n in zip(names, SIZES, strict=True)})
    keys = {c: list(range(n)) for c, n in zip(names, SIZES, strict=True)}
    workload = [list(t) for t in itertools.combinations(names, order)]
    priv = protect_seeded(data, epsilon=2.0, delta=2e-6)
    release = plan_tables(priv, workload, keys, epsilon=1.0)
    parts = list(release.parts.values())
    assert all(isinstance(p, ResidualPart) for p in parts)
    cliques = [tuple(int(c[1:]) for c in t) for t in workload]  # positions (names in order)
    return data, cliques, parts


def lift_matrix(table, a):
    """The dense linear map from residual ``a``'s frame values to table ``W``'s cells."""
    size = math.prod(frame(SIZES[i]).shape[0] for i in a)
    out = np.zeros((cells(table, SIZES), size))
    for k in range(size):
        unit = np.zeros(size)
        unit[k] = 1.0
        r = estimate(unit, a, SIZES)
        shape = tuple(SIZES[i] if i in a else 1 for i in table)
        lifted = np.broadcast_to(r.reshape(shape), [SIZES[i] for i in table])
        out[:, k] = lifted.reshape(-1) / (cells(table, SIZES) // cells(a, SIZES))
    return out


def paper_cell_variance(table, workload, rho):
    """The paper's closed form for each cell of ``table`` at its optimal σ_A² (Δ = 1)."""
    closure, a = residual_weights(workload, SIZES)
    p = {c: math.prod((SIZES[i] - 1) / SIZES[i] for i in c) for c in closure}
    weight = dict(zip(closure, a, strict=True))
    scale = sum(math.sqrt(weight[c] * p[c]) for c in closure) / (2 * rho)
    return sum(
        math.sqrt(p[c] / weight[c]) * scale * p[c] / (cells(table, SIZES) // cells(c, SIZES)) ** 2
        for c in subsets(table)
    )


@pytest.mark.parametrize("order", [2, 3])
def test_analytic_variance_is_residual_planners_optimum(order, protect_seeded):
    _, workload, parts = planned(order, protect_seeded)
    by_clique = {p.clique: p for p in parts}
    total = 0.0
    for table in workload:
        cov = sum(
            by_clique[a].mechanism.variance() * (m := lift_matrix(table, a)) @ m.T
            for a in subsets(table)
        )
        cell = np.diag(cov)
        closed = paper_cell_variance(table, workload, RHO)
        np.testing.assert_allclose(cell, closed, rtol=0.02)  # every cell, within 2%
        total += float(cell.sum())
    ratio = total / residual_planner_variance(workload, SIZES, RHO)
    old = optimal_strategy(workload, SIZES)
    before = workload_variance(workload, old.cliques, old.variances(1.0, RHO), SIZES)
    before /= residual_planner_variance(workload, SIZES, RHO)
    print(
        f"{order}-way, 8 columns: variance ÷ ResidualPlanner {ratio:.4f} (marginals: {before:.3f})"
    )
    assert 0.98 <= ratio <= 1.02
    assert before > 1.2


def test_empirical_variance_and_mean_match_the_analytic_ones(protect_seeded):
    """1,500 seeded releases of the 2-way plan's noise through the exact sampler, rebuilt into
    three tables by the library's own estimate and assembly. Per cell, the sample variance
    over its analytic value is ``χ²_{R-1}/(R-1)`` (the cells are sums of hundreds of
    independent discrete Gaussians: normal for this purpose); bounds at 1e-7 each. The
    mean error is within 5.5 standard errors (1e-7 two-sided per cell)."""
    data, _, parts = planned(2, protect_seeded)
    tables = [(0, 1), (2, 3), (3, 7)]
    runs = 1500
    source = SeededRandomSource(44)
    full = tuple(range(len(SIZES)))
    counts = np.zeros(SIZES, dtype=np.int64)
    np.add.at(counts, tuple(data[f"c{i}"].to_numpy() for i in full), 1)
    exact = {p.clique: measure(marginalize(counts, full, p.clique), p.clique, SIZES) for p in parts}
    truth = {t: marginalize(counts, full, t).astype(float) for t in tables}
    out = {t: np.empty((runs, cells(t, SIZES))) for t in tables}
    for r in range(runs):
        noisy = {
            p.clique: exact[p.clique] + p.mechanism.sample(exact[p.clique].size, source)
            for p in parts
        }
        est = residuals(noisy, tables, SIZES)
        for t in tables:
            out[t][r] = (assemble(t, est, SIZES) - truth[t]).reshape(-1)
    low = stats.chi2.ppf(1e-7, runs - 1) / (runs - 1)
    high = stats.chi2.ppf(1 - 1e-7, runs - 1) / (runs - 1)
    by_clique = {p.clique: p for p in parts}
    for t in tables:
        cov = sum(
            by_clique[a].mechanism.variance() * (m := lift_matrix(t, a)) @ m.T for a in subsets(t)
        )
        analytic = np.diag(cov)
        ratio = out[t].var(axis=0, ddof=1) / analytic
        assert np.all((low <= ratio) & (ratio <= high)), (t, ratio)
        assert np.all(np.abs(out[t].mean(axis=0)) <= 5.5 * np.sqrt(analytic / runs))


def test_residual_noise_has_the_papers_covariance():
    """Residual of a 3 × 5 table at v = 40: the frame noise is discrete Gaussian (χ² fit to the
    exact pmf), and its estimate ``F_Aᵀ ξ / 15`` has covariance ``(v/15) P_A`` (``P_A`` the
    projection on the residual space): every estimate lies in that space, and the sample
    covariance's entries match within 6 standard errors (at most 1e-8 each to fail)."""
    from pandas_dp.mechanisms.gaussian import DiscreteGaussian

    clique, sizes = (0, 1), (3, 5)
    mechanism = DiscreteGaussian(Fraction(40))
    rows, runs = 3 * 10, 20_000
    xi = mechanism.sample(rows * runs, SeededRandomSource(5)).reshape(runs, rows)
    support, pmf = reference_pmf(mechanism.sigma2)
    keep = pmf * xi.size >= 5
    observed = np.array([(xi == y).sum() for y in support[keep]])
    expected = pmf[keep] * xi.size
    chi = ((observed - expected) ** 2 / expected).sum()
    assert chi <= stats.chi2.ppf(1 - 1e-7, keep.sum())
    est = np.array([estimate(row, clique, sizes).reshape(-1) for row in xi])
    np.testing.assert_allclose(est.reshape(runs, 3, 5).sum(axis=1), 0, atol=1e-9)
    np.testing.assert_allclose(est.reshape(runs, 3, 5).sum(axis=2), 0, atol=1e-9)
    projection = np.kron(np.eye(3) - 1 / 3, np.eye(5) - 1 / 5)
    theory = mechanism.variance() / 15 * projection
    sample = np.cov(est, rowvar=False)
    se = np.sqrt((theory**2 + np.outer(np.diag(theory), np.diag(theory))) / (runs - 1))
    assert np.all(np.abs(sample - theory) <= 6 * se)
