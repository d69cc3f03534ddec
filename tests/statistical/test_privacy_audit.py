"""Empirical privacy-loss audit of the count and sum releases.

Method (the black-box audits of Jagielski, Ullman & Oprea 2020 and Nasr et al. 2021): release
a statistic many times on neighbouring datasets D and D' (D' has one more row), pick an event
E = {output >= T} or {output <= T}, bound P(E | D) from below and P(E | D') from above with
Clopper–Pearson intervals, and report

    ε_lb = log(lower bound of P(E | D) / upper bound of P(E | D'))

(D and D' swap roles when E is likelier under D'). An ε-DP mechanism satisfies
P(E | D) <= e^ε P(E | D') for *every* event, so if both bounds hold, ε_lb <= ε.

Confidence. The audit (``auditing.py``, shared with the other audits) chooses the event, its
direction and its threshold on a separate calibration run (own seeds), so the evaluation run
tests a single, fixed event. Each one-sided
Clopper–Pearson bound fails with probability at most ALPHA / 2 = 5e-7, so a correctly
calibrated mechanism reports ε_lb > ε with probability at most ALPHA = 1e-6 (union bound).
The seeds are fixed, so the outcome never changes between runs; the level says that an honest
mechanism would fail for at most one seed in a million.

Power. For discrete Laplace noise at ε = 1, every event {output >= T} with T above the smaller
dataset's exact value has privacy loss exactly ε, and the best of them (probabilities 0.73 vs
0.27) is estimated from 10^6 releases per dataset with a standard error of about 0.002 on the
log scale; the confidence bounds cost about 0.011. The real mechanism thus scores about 0.99,
and a mutant with half the noise (truly ε = 2) about 1.98: it is caught by a wide margin.

Vectorised releases. A count release is ``exact count + Z`` with Z one exact discrete Laplace
draw, and a sum release is ``g · (exact lattice sum + Z)``; successive releases use independent
draws. So drawing 10^6 variates from the very mechanism object the release used (captured with
the ``noise`` fixture) and adding them to the exact value the release computed gives 10^6
outputs with exactly the distribution of 10^6 separate releases, in a fraction of a second.
The public API is also audited end to end with real releases, on fewer samples.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from pandas_dp.mechanisms.laplace import DiscreteLaplace

from .auditing import assert_clopper_pearson_exact, audit, half_noise, vectorised_runs

pytestmark = pytest.mark.statistical

EPSILON = Fraction(1)
# The audits calibrate on 200,000 and evaluate on 1,000,000 vectorised releases per dataset
# (the defaults of auditing.vectorised_runs) at confidence 1 - auditing.ALPHA = 1 - 1e-6.
N_PUBLIC = 2_000  # real releases per dataset through priv.dp.count / priv.dp.sum
#: The real mechanism must come close to its ε: with 10^6 releases it scores ε - 0.011 on
#: average with a standard error of 0.002, so 0.9 is 40 standard errors away. With 2,000
#: releases the cost of the bounds is about 0.23 and the standard error 0.04: 0.5 is 6.7
#: standard errors below the expected 0.77. Failing these means too *much* noise (e.g. the
#: scale of ε/2), a utility bug the upper check alone would not see.
TIGHT_VECTORISED, TIGHT_PUBLIC = 0.9, 0.5


# --- the datasets ----------------------------------------------------------------------------


def neighbours(extra: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """D: 60 rows, some outside the bounds (0, 1) used below; D' = D plus one row."""
    values = np.concatenate([np.linspace(0.0, 1.0, 50), [-0.5, 1.7, 3.0, 0.25, 0.75] * 2])
    d = pd.DataFrame({"x": values, "group": ["a", "b"] * 30})
    d2 = pd.concat([d, pd.DataFrame({"x": [extra], "group": ["a"]})], ignore_index=True)
    return d, d2


# --- count -----------------------------------------------------------------------------------


def captured_count(priv, noise) -> tuple[int, DiscreteLaplace]:
    """The exact count a release computes and the mechanism it draws from."""
    with noise(priv, value=0) as calls:
        exact = priv.dp.count(epsilon=float(EPSILON))
    assert len(calls) == 1
    assert calls[0].size == 1
    return exact, calls[0].mechanism


def test_count_audit_vectorised(protect_seeded, noise):
    d, d2 = neighbours(extra=0.5)
    exact_d, mechanism = captured_count(protect_seeded(d, seed=1, epsilon=1), noise)
    exact_d2, mechanism2 = captured_count(protect_seeded(d2, seed=2, epsilon=1), noise)
    assert (exact_d, exact_d2) == (60, 61)
    assert mechanism == mechanism2  # the noise does not depend on the data
    assert mechanism.scale == 1 / EPSILON  # sensitivity 1

    real = audit(*vectorised_runs((exact_d, exact_d2), mechanism, 1.0, seed=1000))
    print(f"count, real mechanism: {real}")
    assert real.epsilon_lb <= EPSILON, f"count leaks more than ε = 1: {real}"
    assert real.epsilon_lb >= TIGHT_VECTORISED, f"count is noisier than calibrated: {real}"

    mutant = audit(*vectorised_runs((exact_d, exact_d2), half_noise(mechanism), 1.0, seed=1000))
    print(f"count, half-noise mutant: {mutant}")
    assert mutant.epsilon_lb > EPSILON, f"the half-noise mutant was not caught: {mutant}"


def test_count_audit_through_the_public_api(protect_seeded, noise):
    d, d2 = neighbours(extra=0.5)
    budget = N_PUBLIC + 1
    priv = protect_seeded(d, seed=3, epsilon=budget)
    priv2 = protect_seeded(d2, seed=4, epsilon=budget)
    exact_d, mechanism = captured_count(priv, noise)
    exact_d2, _ = captured_count(priv2, noise)
    # The event is chosen on a separate, vectorised calibration run of the same mechanism.
    calibration, _ = vectorised_runs((exact_d, exact_d2), mechanism, 1.0, seed=2000)
    outputs = [
        np.array([p.dp.count(epsilon=float(EPSILON)) for _ in range(N_PUBLIC)], dtype=np.float64)
        for p in (priv, priv2)
    ]
    result = audit(calibration, (outputs[0], outputs[1]))
    print(f"count, public API ({N_PUBLIC} releases per dataset): {result}")
    assert result.epsilon_lb <= EPSILON, f"count leaks more than ε = 1: {result}"
    assert result.epsilon_lb >= TIGHT_PUBLIC, f"count is noisier than calibrated: {result}"

    # The released noise has the exact discrete Laplace law of scale 1/ε (χ², p > 1e-6):
    # bins -3..3 and the two tails |z| >= 4, all with expected counts above 20.
    q = math.exp(-1)
    pmf = {z: (1 - q) / (1 + q) * q ** abs(z) for z in range(-3, 4)}
    tail = q**4 / (1 + q)
    probabilities = [tail, *pmf.values(), tail]
    for released, exact in zip(outputs, (exact_d, exact_d2), strict=True):
        z = np.clip(released - exact, -4, 4).astype(np.int64) + 4
        counts = np.bincount(z, minlength=9)
        assert stats.chisquare(counts, N_PUBLIC * np.asarray(probabilities)).pvalue > 1e-6
    # Each release was charged exactly once.
    assert priv.dp.session.spent.epsilon == budget * EPSILON
    assert priv2.dp.session.spent.epsilon == budget * EPSILON


# --- sum -------------------------------------------------------------------------------------

BOUNDS = (0.0, 1.0)


def captured_sum(priv, noise) -> tuple[float, float, DiscreteLaplace]:
    """The exact (rounded, clipped) sum, the lattice step g and the mechanism of a release."""
    with noise(priv, value=0) as calls:
        exact = priv.dp.sum("x", bounds=BOUNDS, epsilon=float(EPSILON))
    with noise(priv, value=1) as calls_plus_one:
        plus_one = priv.dp.sum("x", bounds=BOUNDS, epsilon=float(EPSILON))
    assert len(calls) == len(calls_plus_one) == 1
    assert calls[0] == calls_plus_one[0]
    return exact, plus_one - exact, calls[0].mechanism


def sum_neighbours(protect_seeded, noise, budget: int, seeds: tuple[int, int]):
    # D' adds one row at the upper bound: the largest change a row can make to this sum.
    d, d2 = neighbours(extra=BOUNDS[1])
    priv = protect_seeded(d, seed=seeds[0], epsilon=budget)
    priv2 = protect_seeded(d2, seed=seeds[1], epsilon=budget)
    exact_d, step, mechanism = captured_sum(priv, noise)
    exact_d2, step2, mechanism2 = captured_sum(priv2, noise)
    clipped = np.clip(d["x"].to_numpy(), *BOUNDS)
    assert exact_d == pytest.approx(math.fsum(clipped), abs=len(d) * step / 2)
    assert exact_d2 - exact_d == BOUNDS[1]  # the bound is a lattice point
    assert (step, mechanism) == (step2, mechanism2)  # public parameters only
    # Calibration: scale (in lattice units) · g = Δ/ε with Δ = max(|L|, |U|) = 1.
    assert mechanism.scale * Fraction(step) == Fraction(BOUNDS[1]) / EPSILON
    return (priv, priv2), (exact_d, exact_d2), step, mechanism


def test_sum_audit_vectorised(protect_seeded, noise):
    _, exact, step, mechanism = sum_neighbours(protect_seeded, noise, budget=2, seeds=(5, 6))
    real = audit(*vectorised_runs(exact, mechanism, step, seed=3000))
    print(f"sum, real mechanism: {real}")
    assert real.epsilon_lb <= EPSILON, f"sum leaks more than ε = 1: {real}"
    assert real.epsilon_lb >= TIGHT_VECTORISED, f"sum is noisier than calibrated: {real}"

    mutant = audit(*vectorised_runs(exact, half_noise(mechanism), step, seed=3000))
    print(f"sum, half-noise mutant: {mutant}")
    assert mutant.epsilon_lb > EPSILON, f"the half-noise mutant was not caught: {mutant}"


def test_sum_audit_through_the_public_api(protect_seeded, noise):
    budget = N_PUBLIC + 2
    (priv, priv2), exact, step, mechanism = sum_neighbours(
        protect_seeded, noise, budget=budget, seeds=(7, 8)
    )
    calibration, _ = vectorised_runs(exact, mechanism, step, seed=4000)
    outputs = [
        np.array([p.dp.sum("x", bounds=BOUNDS, epsilon=float(EPSILON)) for _ in range(N_PUBLIC)])
        for p in (priv, priv2)
    ]
    for released, value in zip(outputs, exact, strict=True):
        units = (released - value) / step
        assert np.array_equal(units, np.round(units))  # every output is on the lattice
    result = audit(calibration, (outputs[0], outputs[1]))
    print(f"sum, public API ({N_PUBLIC} releases per dataset): {result}")
    assert result.epsilon_lb <= EPSILON, f"sum leaks more than ε = 1: {result}"
    assert result.epsilon_lb >= TIGHT_PUBLIC, f"sum is noisier than calibrated: {result}"
    assert priv.dp.session.spent.epsilon == budget * EPSILON


# --- the audit itself --------------------------------------------------------------------


def test_clopper_pearson_bounds():
    # Exact binomial tails at the bounds: P(X >= k | p = lower) = alpha = P(X <= k | upper).
    assert_clopper_pearson_exact()


def test_audit_of_identical_distributions_finds_no_loss():
    # Same law on both sides: the chosen event's ε_lb is at or below 0.
    runs = vectorised_runs((10.0, 10.0), DiscreteLaplace(Fraction(1)), 1.0, seed=5000)
    assert audit(*runs).epsilon_lb <= 0.0
