"""ResidualPlanner in ``priv.dp.tables``: the bases, the variance against the paper's closed
form (analytic, from the planned release's own noise, then empirical), the noise's law and
the exact privacy cost of each residual's measurement.

The 8-column case: domains of 2, 3, 4, 5, 2, 3, 4, 5 keys; workloads of all 2-way and all
3-way tables; ε = 1, δ = 1e-6. The paper's optimum (Xiao et al. 2023) gives residual ``A``
``σ_A² = sqrt(p_A/a_A) Σ_B sqrt(a_B p_B) / (2ρ)`` and each cell of table ``W`` the variance
``Σ_{A ⊆ W} σ_A² p_A / n_{W∖A}²``. The release's variance is computed here independently of
the library's formula: the covariance of each table's cells is built as a dense matrix from
the bases and the sampled mechanisms' exact variances, row by row.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from pandas_dp.api.queries.tables import plan_tables
from pandas_dp.mechanisms.gaussian.discrete import DiscreteGaussian
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
from pandas_dp.mechanisms.residuals.basis import backward, basis, forward, norms
from pandas_dp.mechanisms.residuals.planner import (
    cell_variance,
    estimate,
    measure,
    residuals,
    row_norms,
)
from pandas_dp.planning.measurement.marginals import ResidualPart, release_rho

from ..mechanisms.test_gaussian import reference_pmf

SIZES = (2, 3, 4, 5, 2, 3, 4, 5)
RHO = release_rho(Fraction(1), Fraction(1, 10**6))


@pytest.mark.parametrize("n", range(1, 71))
def test_bases_are_integer_orthogonal_bases_of_the_residual_space(n):
    """``n - 1`` integer rows, orthogonal to each other and to 1, with ``Σ f fᵀ/N = I - J/n``
    exactly (scaled by ``n·lcm(N)`` to stay in integers), and few distinct norms: at most
    ``2b - 1`` for ``b`` ones in ``n``'s binary expansion (Hadamard blocks, then between)."""
    f = basis(n)
    assert f.dtype == np.int64
    assert f.shape == (n - 1, n)
    np.testing.assert_array_equal(f.sum(axis=1), 0)
    np.testing.assert_array_equal(f @ f.T, np.diag(norms(n)))
    big = f.astype(object)
    lcm = math.lcm(*(int(x) for x in norms(n)))
    weights = np.array([lcm // int(x) for x in norms(n)], dtype=object)
    projection = n * (big.T * weights) @ big if n > 1 else np.zeros((1, 1), dtype=object)
    expected = lcm * (n * np.eye(n, dtype=np.int64) - 1)
    np.testing.assert_array_equal(projection.astype(object), expected.astype(object))
    assert len(set(norms(n).tolist())) <= max(0, 2 * bin(n).count("1") - 1)
    if n & (n - 1) == 0:  # a power of two: the Hadamard rows, all of norm n
        assert set(np.unique(f)) <= {-1, 1}
        assert set(norms(n).tolist()) <= {n}


@pytest.mark.parametrize("n", [1, 2, 3, 7, 12, 50, 70])
def test_the_fast_transforms_are_the_basis_and_its_scaled_transpose(n):
    """``forward`` is ``F x`` exactly (int64 and Python ints beyond int64), ``backward`` is
    ``Fᵀ diag(1/N) y`` (floats), along the last axis of a batch."""
    rng = np.random.default_rng(n)
    x = rng.integers(-1000, 1000, (4, n))
    np.testing.assert_array_equal(forward(x), x @ basis(n).T)
    big = x.astype(object) * (1 << 70)
    assert (forward(big) == big @ basis(n).T.astype(object)).all()
    y = rng.normal(size=(4, n - 1))
    np.testing.assert_allclose(backward(y, n), (y / norms(n)) @ basis(n), atol=1e-12)


def test_a_column_of_a_million_keys_is_measured_without_a_dense_basis():
    """``n = 10**6`` (blocks 2^19 + ... + 2^6): the residual's ``n - 1`` values in ``O(n log
    n)``; the estimate of a noise-free measurement is the centred marginal, to rounding."""
    n = 10**6
    counts = np.random.default_rng(1).integers(0, 5, n)
    values = measure(counts, (0,), (n,))
    assert values.shape == (n - 1,)
    assert len(set(norms(n).tolist())) == 2 * bin(n).count("1") - 1
    back = estimate(values, (0,), (n,))
    np.testing.assert_allclose(back, counts - counts.mean(), atol=1e-6)


def test_row_norms_that_would_wrap_int64_are_refused():
    """``N`` of 2049 keys reaches 2048·2049: three such columns would wrap int64."""
    assert int(row_norms((0, 1), (2049, 2049)).max()) == (2048 * 2049) ** 2
    with pytest.raises(ValueError, match="too large"):
        row_norms((0, 1, 2), (2049, 2049, 2049))


def row_variances(part: ResidualPart) -> np.ndarray:
    """The exact variance of the noise on each of ``part``'s values (its row's mechanism)."""
    by_norm = {n: m.variance() for n, m in zip(part.norms, part.noises, strict=True)}
    return np.array([by_norm[int(n)] for n in row_norms(part.clique, part.sizes)])


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
    """The dense linear map from residual ``a``'s basis values to table ``W``'s cells."""
    size = math.prod(SIZES[i] - 1 for i in a)
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
            (m := lift_matrix(table, a)) * row_variances(by_clique[a]) @ m.T for a in subsets(table)
        )
        cell = np.diag(cov)
        closed = paper_cell_variance(table, workload, RHO)
        np.testing.assert_allclose(cell, closed, rtol=0.02)  # every cell, within 2%
        # The preview's per-cell variance (each part's largest variance per unit of norm)
        # bounds every cell's and is within 0.1% of it (the σ² of different norms are rounded
        # up differently).
        preview = cell_variance(table, list(by_clique), [p.variance for p in parts], SIZES)
        assert np.all(cell <= preview * (1 + 1e-12))
        assert np.all(cell >= preview * 0.999)
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


class _Batched:
    """A draw callback that hands out each ``(mechanism, n)`` call's variates from batches of
    ``runs`` calls drawn at once: the same i.i.d. variates as one call at a time (the exact
    sampler's law does not depend on how many are drawn together), in far fewer calls."""

    def __init__(self, source: SeededRandomSource, runs: int) -> None:
        self.source, self.runs = source, runs
        self.pools: dict[tuple[object, int], list[np.ndarray]] = {}

    def __call__(self, mechanism: object, n: int) -> np.ndarray:
        pool = self.pools.setdefault((mechanism, n), [])
        if not pool:
            batch = mechanism.sample(n * self.runs, self.source)  # type: ignore[attr-defined]
            pool.extend(np.asarray(batch).reshape(self.runs, n))
        return pool.pop()


@pytest.mark.statistical  # a seeded distribution test: runs once in CI (.ci/run)
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
    draw = _Batched(source, runs)
    for r in range(runs):
        noisy = {p.clique: exact[p.clique] + p.noise(draw) for p in parts}
        est = residuals(noisy, tables, SIZES)
        for t in tables:
            out[t][r] = (assemble(t, est, SIZES) - truth[t]).reshape(-1)
    low = stats.chi2.ppf(1e-7, runs - 1) / (runs - 1)
    high = stats.chi2.ppf(1 - 1e-7, runs - 1) / (runs - 1)
    by_clique = {p.clique: p for p in parts}
    for t in tables:
        cov = sum((m := lift_matrix(t, a)) * row_variances(by_clique[a]) @ m.T for a in subsets(t))
        analytic = np.diag(cov)
        ratio = out[t].var(axis=0, ddof=1) / analytic
        assert np.all((low <= ratio) & (ratio <= high)), (t, ratio)
        assert np.all(np.abs(out[t].mean(axis=0)) <= 5.5 * np.sqrt(analytic / runs))


def test_residual_noise_has_the_papers_covariance():
    """Residual of a 3 × 5 table at base variance v = 40: the value of a row of norm N gets
    discrete Gaussian noise of σ² = 40 N / 15 (χ² fit to the exact pmf, each of the 4 norms),
    and the estimate ``Σ f ξ / N`` has covariance ``(v/15) P_A`` (``P_A`` the projection on
    the residual space): every estimate lies in that space, and the sample covariance's
    entries match within 6 standard errors (at most 1e-8 each to fail)."""
    clique, sizes = (0, 1), (3, 5)
    runs, values = 20_000, row_norms(clique, sizes)
    assert sorted(set(values.tolist())) == [8, 24, 40, 120]
    mechanisms = {n: DiscreteGaussian(Fraction(40 * n, 15)) for n in set(values.tolist())}
    source = SeededRandomSource(5)
    xi = np.empty((runs, values.size), dtype=np.int64)
    for n, mechanism in mechanisms.items():
        where = values == n
        draws = mechanism.sample(runs * int(where.sum()), source)
        xi[:, where] = draws.reshape(runs, -1)
        support, pmf = reference_pmf(mechanism.sigma2)
        keep = pmf * draws.size >= 5
        observed = np.array([(draws == y).sum() for y in support[keep]])
        expected = pmf[keep] * draws.size
        chi = ((observed - expected) ** 2 / expected).sum()
        assert chi <= stats.chi2.ppf(1 - 1e-7, keep.sum()), n
    est = np.array([estimate(row, clique, sizes).reshape(-1) for row in xi])
    np.testing.assert_allclose(est.reshape(runs, 3, 5).sum(axis=1), 0, atol=1e-9)
    np.testing.assert_allclose(est.reshape(runs, 3, 5).sum(axis=2), 0, atol=1e-9)
    f = np.kron(basis(3), basis(5)).astype(float)
    variances = np.array([mechanisms[int(n)].variance() for n in values])
    theory = (f.T * (variances / values.astype(float) ** 2)) @ f
    projection = np.kron(np.eye(3) - 1 / 3, np.eye(5) - 1 / 5)
    np.testing.assert_allclose(theory, 40 / 15 * projection, rtol=1e-9, atol=1e-12)
    sample = np.cov(est, rowvar=False)
    se = np.sqrt((theory**2 + np.outer(np.diag(theory), np.diag(theory))) / (runs - 1))
    assert np.all(np.abs(sample - theory) <= 6 * se)


def exact_costs(part: ResidualPart) -> tuple[list[Fraction], np.ndarray]:
    """Each cell's exact ρ (one row added there) and the dense ``Fᵀ diag(1/(2σ²)) F``."""
    f = np.ones((1, 1), dtype=np.int64)
    for i in part.clique:
        f = np.kron(f, basis(part.sizes[i]))
    values = row_norms(part.clique, part.sizes)
    costs = [Fraction(0)] * f.shape[1]
    inverse = np.zeros(values.size)
    for norm, mechanism in zip(part.norms, part.noises, strict=True):
        where = values == norm
        squares = (f[where] ** 2).sum(axis=0)
        share = [Fraction(int(q)) / (2 * mechanism.sigma2) for q in squares]
        costs = [c + q for c, q in zip(costs, share, strict=True)]
        inverse[where] = 1 / (2 * float(mechanism.sigma2))
    return costs, (f.T * inverse) @ f.astype(float)


@pytest.mark.parametrize("unit", [1, 2])
def test_the_ledger_records_each_residuals_exact_privacy_cost(unit, protect_seeded):
    """Columns of 3, 20 and 30 keys (blocks 2+1, 16+4, 16+8+4+2: many norms), all 3-way:
    for every residual, one row added in any cell costs exactly ``Σ_k (f_k·e_j)²/(2σ_k²)``,
    at most the ledger line's ρ and within 0.1% of it (the rounding of each σ up); with two
    rows per unit, every change of two rows (same or different cells, either sign) costs at
    most the line's ρ (which has ``k² = 4``): ``|(P_A)_jl| <= (P_A)_jj``. The lines add up to
    at most the release's ρ = ε²/2 = 1/2 (a ρ session), within 0.1%."""
    rng = np.random.default_rng(6)
    sizes = {"a": 3, "b": 20, "c": 30}
    data = pd.DataFrame({c: rng.integers(0, n, 200) for c, n in sizes.items()})
    keys = {c: list(range(n)) for c, n in sizes.items()}
    options = {"privacy_unit": "pid", "max_rows_per_unit": 2} if unit == 2 else {}
    priv = protect_seeded(data.assign(pid=np.arange(200) // 2), rho=1.0, **options)
    release = plan_tables(priv, [["a", "b", "c"]], keys, epsilon=1.0)
    parts = list(release.parts.values())
    assert len(parts) == 8  # the total too
    assert all(isinstance(p, ResidualPart) for p in parts)
    total = sum(Fraction(p.measurement.rho) for p in parts)
    assert Fraction(999, 2000) <= total <= Fraction(1, 2)
    for part in parts:
        record = part.measurement
        assert record.sensitivity == unit
        assert record.coordinates == math.prod(part.sizes[i] - 1 for i in part.clique)
        costs, m = exact_costs(part)
        one = Fraction(record.rho) / unit**2
        assert max(costs) <= one, part.label
        assert min(costs) >= one * Fraction(999, 1000), part.label
        if unit == 2:
            diag = np.diag(m)
            pairs = diag[:, None] + diag[None, :] + 2 * np.abs(m)
            assert pairs.max() <= float(record.rho) * (1 + 1e-9), part.label
