"""Empirical privacy-loss audits of ResidualPlanner's measurements (``priv.dp.tables`` with
Gaussian noise), each with a mutant that must be caught.

Residual ``A`` is released as ``y_k = f_k·m_A + ξ_k`` (``f_k`` the rows of an integer
orthogonal basis, of squared norms ``N_k``; ``ξ_k`` independent discrete Gaussian of
``σ_k² ≈ v_A N_k / Π n_i``). D' is D plus one row in cell ``j``: ``y`` moves by
``δ = F_A e_j``. The audited statistic is ``S = Σ_k w_k δ_k y_k`` with integer weights
``w_k ∝ 1/N_k ∝ 1/σ_k²``: the likelihood ratio's own statistic (nothing in the residual tells
D from D' better). ``S = s + Z`` on D and ``s + Σ_k w_k δ_k² + Z`` on D', with ``Z`` a
weighted sum of independent discrete Gaussians whose law is computed exactly.

- One residual, a 3 × 5 table (``d = 8`` values, 4 distinct norms 8, 24, 40, 120),
  calibrated by the release path (``residual_parts``) with the whole ρ of (ε, δ) =
  (1, 1e-6), audited at two cells: (0, 0), where all 8 values move by ±1, and (2, 4), where
  one value of norm 120 moves by 8. Two mutants: every row given the variance ``v_A / Π n_i``
  of a row of norm 1 (the norms forgotten: caught at (0, 0)); every row given the base
  variance ``v_A`` whatever its norm, as the old tight frame's equal rows had (caught only at
  (2, 4): at (0, 0) its cost is the real one, which is why both cells are audited).
- A whole release: every pair of 8 binary columns (37 residuals: total, 8 one-way, 28
  pairs; one value each), mechanisms captured from the real release at (1, 1e-6). The
  mutant gives every residual all of ρ.

Checks as in ``tests/tables/test_audit.py``: exact (every threshold event of the exact law
satisfies ``P(S' >= t) <= e^ε P(S >= t) + δ``) and empirical (the shared black-box audit on
1.2 million draws by inverse CDF from that exact law): real ``ε_lb <= 1``, mutant ``> 1``.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import signal

from pandas_dp.measures.aggregates import Axis
from pandas_dp.mechanisms.gaussian.discrete import DiscreteGaussian, exact_sigma2
from pandas_dp.mechanisms.residuals.basis import basis
from pandas_dp.mechanisms.residuals.planner import ResidualPlan, row_norms
from pandas_dp.planning.measurement.marginals import ResidualPart, release_rho, residual_parts

from ..mechanisms.test_gaussian import reference_pmf
from ..tables.test_audit import ROUNDING, runs, threshold_excess
from . import auditing

pytestmark = pytest.mark.statistical

EPSILON, DELTA = 1.0, 1e-6


def weighted_law(parts: list[tuple[DiscreteGaussian, int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """Support and pmf of ``Σ w · (sum of c draws)`` over ``(mechanism, c, w)``."""
    law, start = np.ones(1), 0
    for mechanism, count, weight in parts:
        y, pmf = reference_pmf(mechanism.sigma2)
        spread = np.zeros(weight * (len(y) - 1) + 1)
        spread[::weight] = pmf
        for _ in range(count):
            law = np.maximum(signal.fftconvolve(law, spread), 0.0)
            start += weight * int(y[0])
    return np.arange(len(law)) + start, law / law.sum()


def check(parts, shift: int, label: str, *, caught: bool) -> None:
    law = weighted_law(parts)
    excess = threshold_excess(law, shift, DELTA)
    result = auditing.audit(*runs(law, (0.0, float(shift)), 9200), delta=DELTA, quantiles=None)
    print(f"residual audit, {label}: excess {excess:.3g}, {result}")
    if caught:
        assert excess > 1e-3
        assert result.epsilon_lb > EPSILON, f"the mutant was not caught: {result}"
    else:
        assert excess <= ROUNDING
        assert result.epsilon_lb <= EPSILON, f"the residual leaks more than claimed: {result}"
        assert result.epsilon_lb >= 0.3, f"the residual is noisier than calibrated: {result}"


def one_residual() -> ResidualPart:
    """Residual (a, b) of a 3 × 5 table given all of ρ, calibrated by the release path."""
    plan = ResidualPlan(((0, 1),), (1.0,), (3, 5))
    axes = (Axis("a", (0, 1, 2)), Axis("b", tuple(range(5))))
    parts = residual_parts(plan, axes, [(0, 1)], Fraction(1), Fraction(1, 10**6), 1)
    (part,) = parts.values()
    assert isinstance(part, ResidualPart)
    rho = release_rho(Fraction(1), Fraction(1, 10**6))
    assert 0.999 * rho <= float(part.measurement.rho) <= rho
    return part


def likelihood_parts(mechanisms: np.ndarray, values: np.ndarray, cell: int):
    """``(mechanism, 1, |w_k δ_k|)`` for the moved values, and the shift ``Σ w_k δ_k²``."""
    moved = np.kron(basis(3), basis(5))[:, cell]
    lcm = math.lcm(*(int(n) for n in values))
    weights = [lcm // int(n) for n in values]
    parts = [(m, 1, abs(w * int(d))) for m, w, d in zip(mechanisms, weights, moved, strict=True)]
    shift = sum(w * int(d) ** 2 for w, d in zip(weights, moved, strict=True))
    return [p for p in parts if p[2]], shift


@pytest.mark.parametrize(("cell", "moved"), [(0, 8), (14, 1)])
def test_one_residual_and_mutants_that_ignore_the_row_norms(cell, moved):
    part = one_residual()
    values = row_norms(part.clique, part.sizes)
    assert sorted(set(values.tolist())) == [8, 24, 40, 120]
    by_norm = dict(zip(part.norms, part.noises, strict=True))
    real, shift = likelihood_parts(np.array([by_norm[int(n)] for n in values]), values, cell)
    assert len(real) == moved
    check(real, shift, f"3 × 5 at cell {cell}, real", caught=False)
    base = float(part.measurement.sigma2)  # v_A: a row of norm Π n_i = 15
    if cell == 0:  # every row as if of norm 1: σ² = v_A / 15
        wrong = DiscreteGaussian(exact_sigma2(math.sqrt(base / 15)))
        label = "norms forgotten"
    else:  # every row as if of norm 15 (the old frame's rows): σ² = v_A
        wrong = DiscreteGaussian(exact_sigma2(math.sqrt(base)))
        label = "equal variances"
    ones = np.ones_like(values)  # the mutant's own likelihood ratio: equal weights
    mutant, shift = likelihood_parts(np.array([wrong] * values.size), ones, cell)
    check(mutant, shift, f"3 × 5 at cell {cell}, {label}", caught=True)


def test_a_whole_release_and_a_mutant_without_composition(protect_seeded, noise):
    names = [f"c{i}" for i in range(8)]
    rng = np.random.default_rng(4)
    data = pd.DataFrame({c: rng.integers(0, 2, 50) for c in names})
    workload = [list(p) for p in itertools.combinations(names, 2)]
    keys = {c: [0, 1] for c in names}
    priv = protect_seeded(data, epsilon=2.0, delta=2e-6)
    with noise(priv) as calls:
        priv.dp.tables(workload, keys=keys, epsilon=EPSILON)
    (release,) = priv.dp.session.releases
    assert [m.label.split("(")[0] for m in release.measurements] == ["residual"] * 37
    assert all(c.size == 1 and isinstance(c.mechanism, DiscreteGaussian) for c in calls)
    mechanisms = [c.mechanism for c in calls]
    smallest = min(m.sigma2 for m in mechanisms)
    weights = [round(float(smallest / m.sigma2) * 4) for m in mechanisms]  # ≈ 4σ_min²/σ_A²
    shift = sum(weights)  # each δ_A is ±1 on one value: S moves by Σ w_A
    real = [(m, 1, w) for m, w in zip(mechanisms, weights, strict=True)]
    check(real, shift, "37 residuals, real", caught=False)
    total = sum(float(r.rho) for r in release.measurements)
    forgot = [
        DiscreteGaussian(exact_sigma2(math.sqrt(float(m.sigma2) * float(r.rho) / total)))
        for m, r in zip(mechanisms, release.measurements, strict=True)
    ]  # each residual's σ² as if it alone spent the release's ρ
    mutant = [(m, 1, w) for m, w in zip(forgot, weights, strict=True)]
    check(mutant, shift, "37 residuals, no composition", caught=True)
