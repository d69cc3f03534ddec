"""Empirical privacy-loss audits of the measurement step of ``priv.dp.tables`` at ε = 1,
each with a mutant that forgets the composition across marginals.

Setting. The workload is every pair of ``c`` binary columns: the strategy measures the
pair marginals with equal shares, so each gets the same noise. D' is D plus one row, which
adds 1 to one cell of each of the ``m = c(c-1)/2`` marginals. The audited statistic is the sum
``S`` of those ``m`` noisy cells: ``S = x + Z`` on D and ``x + m + Z`` on D', with ``Z`` the sum
of ``m`` independent draws of the captured mechanisms (for Gaussian noise ``S`` is the
likelihood ratio's own statistic: nothing else in the release tells D from D' better).

- Gaussian noise (ResidualPlanner's residuals): tests/statistical/test_residual_audit.py.
- Laplace noise, pure ε = 1: 4 columns, 6 pairs (a pure session, where it is the only noise).

Two checks each. (1) Exact: from the convolution of the captured mechanisms' pmfs,
``P(S' >= t) - e^ε P(S >= t) <= δ`` for every threshold ``t`` (the other direction is the
same by symmetry). (2) Empirical: the shared black-box audit (``tests/statistical/
auditing.py``: one-sided Clopper–Pearson bounds at confidence 1 - 1e-6, the event chosen on a
separate calibration run) on 1.2 million releases of ``S`` per dataset, drawn by inverse CDF
from that exact law (the samplers' own laws are tested in ``tests/mechanisms/``; drawing tens
of millions of variates from them here would take minutes). The real mechanism must score
``ε_lb <= 1``; the mutant, each marginal calibrated as if it alone spent the budget (σ or
scale ``sqrt(m)`` or ``m`` times too small), must score ``ε_lb > 1``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import signal

from pandas_dp.mechanisms.gaussian.discrete import DiscreteGaussian
from pandas_dp.mechanisms.laplace import DiscreteLaplace

from ..mechanisms.test_gaussian import reference_pmf
from ..statistical import auditing

pytestmark = pytest.mark.statistical

EPSILON, DELTA = 1.0, 1e-6
ROUNDING = 1e-12


def pairs(columns: int) -> tuple[list[str], list[list[str]], dict[str, list[int]]]:
    names = [f"c{i}" for i in range(columns)]
    return (
        names,
        [list(p) for p in itertools.combinations(names, 2)],
        {name: [0, 1] for name in names},
    )


def neighbours(names: list[str]) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, int]]:
    rng = np.random.default_rng(4)
    d = pd.DataFrame({c: rng.integers(0, 2, 50) for c in names})
    added = {c: i % 2 for i, c in enumerate(names)}
    return d, pd.concat([d, pd.DataFrame([added])], ignore_index=True), added


def released_cells(frame, added, budget, workload, keys, protect_seeded, noise):
    """The sum of the added row's cells (noise-free) and the mechanisms the release used."""
    priv = protect_seeded(frame, **budget)
    with noise(priv) as calls:
        tables = priv.dp.tables(workload, keys=keys, epsilon=EPSILON)
    cells = [tables[(x, y)].loc[added[x], added[y]] for x, y in tables]
    return float(sum(cells)), [c.mechanism for c in calls]


def pmf_of(mechanism: DiscreteGaussian | DiscreteLaplace) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(mechanism, DiscreteGaussian):
        return reference_pmf(mechanism.sigma2)
    b = float(mechanism.effective_scale)
    half = math.ceil(40 * b) + 2  # exp(-40) ≈ 4e-18 beyond: below every tail that matters
    y = np.arange(-half, half + 1)
    weights = np.exp(-np.abs(y) / b)
    return y, weights / math.fsum(weights)


def sum_law(mechanisms) -> tuple[np.ndarray, np.ndarray]:
    """Support and pmf of the sum of one independent draw of each mechanism."""
    law, start = np.ones(1), 0
    for mechanism in mechanisms:
        y, pmf = pmf_of(mechanism)
        law, start = np.maximum(signal.fftconvolve(law, pmf), 0.0), start + int(y[0])
    return np.arange(len(law)) + start, law / law.sum()


def threshold_excess(law: tuple[np.ndarray, np.ndarray], shift: int, delta: float) -> float:
    """max over t of P(Z + shift >= t) - e^ε P(Z >= t), minus δ (> 0: the claim fails).

    The FFT convolution is exact up to about 1e-16 per entry (relative to the largest), so
    an excess below :data:`ROUNDING` is rounding, not a violation.
    """
    _, pmf = law
    tail = pmf[::-1].cumsum()[::-1]
    return float(np.max(tail[:-shift] - math.exp(EPSILON) * tail[shift:])) - delta


def sampled(law: tuple[np.ndarray, np.ndarray], n: int, seed: int) -> np.ndarray:
    support, pmf = law
    cdf = np.cumsum(pmf)
    u = np.random.default_rng(seed).random(n) * cdf[-1]
    return support[np.minimum(np.searchsorted(cdf, u, side="right"), len(support) - 1)]


def runs(law, exact: tuple[float, float], seed: int) -> auditing.Runs:
    def outputs(dataset: int, n: int, stream: int) -> np.ndarray:
        return exact[dataset] + sampled(law, n, stream).astype(np.float64)

    return auditing.paired_runs(outputs, seed)


# Gaussian noise measures residuals (ResidualPlanner), whose noise does not add up cell by
# cell: its audit is tests/statistical/test_residual_audit.py.
CASES = {
    "laplace": (4, {"epsilon": 2.0}, DiscreteLaplace, 0.0),
}


@pytest.mark.parametrize("noise_kind", list(CASES))
def test_tables_measurement_audit(protect_seeded, noise, noise_kind) -> None:
    columns, budget, kind, delta = CASES[noise_kind]
    names, workload, keys = pairs(columns)
    d, d2, added = neighbours(names)
    exact_d, mechanisms = released_cells(d, added, budget, workload, keys, protect_seeded, noise)
    exact_d2, mechanisms2 = released_cells(d2, added, budget, workload, keys, protect_seeded, noise)
    m = len(workload)
    assert exact_d2 - exact_d == pytest.approx(m, abs=1e-6)  # one cell of each marginal
    assert mechanisms == mechanisms2  # the noise does not depend on the data
    assert len(mechanisms) == m
    assert all(isinstance(x, kind) for x in mechanisms)
    law = sum_law(mechanisms)

    assert threshold_excess(law, m, delta) <= ROUNDING  # exact: every threshold event holds
    real = auditing.audit(*runs(law, (exact_d, exact_d2), 9100), delta=delta, quantiles=None)
    print(f"tables, {noise_kind}, real: {real}")
    assert real.epsilon_lb <= EPSILON, f"the tables leak more than claimed: {real}"
    assert real.epsilon_lb >= 0.3, f"the tables are noisier than calibrated: {real}"

    if kind is DiscreteGaussian:  # each marginal given all of ρ: σ² m times too small
        forgot = [DiscreteGaussian(x.sigma2 / m) for x in mechanisms]
    else:  # each marginal given all of ε: scales m times too small
        forgot = [DiscreteLaplace(x.scale / m) for x in mechanisms]
    mutant_law = sum_law(forgot)
    assert threshold_excess(mutant_law, m, delta) > 1e-3
    mutant = auditing.audit(
        *runs(mutant_law, (exact_d, exact_d2), 9100), delta=delta, quantiles=None
    )
    print(f"tables, {noise_kind}, mutant without composition: {mutant}")
    assert mutant.epsilon_lb > EPSILON, f"the mutant was not caught: {mutant}"
