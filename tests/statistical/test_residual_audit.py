"""Empirical privacy-loss audits of ResidualPlanner's measurements (``priv.dp.tables`` with
Gaussian noise), each with a mutant that must be caught.

Residual ``A`` is released as ``y_A = F_A m_A + ξ_A`` (``F_A`` an integer frame, ``ξ_A``
i.i.d. discrete Gaussian). D' is D plus one row in cell ``j``: ``y_A`` moves by
``δ_A = F_A e_j``, ``±1`` on ``d_A = Π(n_i - 1)`` values. The audited statistic is
``S = Σ_A w_A ⟨δ_A, y_A⟩`` (the likelihood ratio's own statistic when ``w_A = 1/σ_A²``;
here integer weights close to it): ``S = s + Z`` on D and ``s + Σ_A w_A d_A + Z`` on D', with
``Z`` a weighted sum of independent discrete Gaussians whose law is computed exactly.

- One residual, a 3 × 5 table (``d = 8``), given the whole ρ of (ε, δ) = (1, 1e-6): the
  mutant calibrates σ as if one row moved one value (sensitivity ignored: σ² 8 times too
  small).
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

from pandas_dp.api.measurement.marginals import release_rho
from pandas_dp.mechanisms.gaussian import DiscreteGaussian, exact_sigma2
from pandas_dp.mechanisms.residual_planner import frame

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


def test_one_residual_and_a_mutant_that_ignores_its_sensitivity():
    sizes = (3, 5)
    f = np.kron(frame(3), frame(5))
    delta_a = f[:, 7]  # one row in cell (1, 2)
    d = int(np.abs(delta_a).sum())
    assert d == 8 == int(delta_a @ delta_a)  # d_A values move by ±1
    assert f.shape == (30, math.prod(sizes))
    rho = release_rho(Fraction(1), Fraction(1, 10**6))
    real = DiscreteGaussian(exact_sigma2(math.sqrt(d / (2 * rho)) * (1 + 1e-12)))
    check([(real, d, 1)], d, "3 × 5, real", caught=False)
    mutant = DiscreteGaussian(exact_sigma2(math.sqrt(1 / (2 * rho)) * (1 + 1e-12)))
    check([(mutant, d, 1)], d, "3 × 5, sensitivity ignored", caught=True)


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
