"""Empirical privacy-loss audit of the weighted sum, and the law of the noise it adds.

Neighbours: D (60 rows, weights in [0, 6] clipped to the public weight bounds (0, 4), values
partly outside the bounds (0, 1)) and D' = D plus one row of weight W = 4 and value U = 1,
the largest change one row can make to ``Σ clip(w)·clip(x)``: W·max(|L|, |U|) = 4.

The audit (``auditing.py``; Jagielski, Ullman & Oprea 2020) chooses an event on a calibration
run and bounds ε with it on an independent evaluation run at confidence 1 - 1e-6, on 10^6
vectorised releases per dataset: a release is ``g · (exact lattice sum + Z)`` with Z one
draw from the mechanism object the release used (captured), so drawing Z in bulk gives
exactly the law of separate releases. The real mechanism must score at most ε = 1 (and at
least 0.9: with 10^6 releases it scores about ε - 0.011 with a standard error of 0.002, so
0.9 flags a mechanism noisier than calibrated). The mutant forgets the weight: its noise is
calibrated to max(|L|, |U|) = 1 instead of W·max(|L|, |U|) = 4, i.e. really ε = 4; the same
audit must catch it (ε_lb > 1).

The law: 1,000 weighted sums released through the public API, their noise read back in
lattice units, against the exact discrete Laplace cdf at the calibrated scale (χ², ten cells
of about equal probability, p > 1e-6: an honest sampler fails once in a million seeds).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from pandas_dp.mechanisms.laplace import DiscreteLaplace

from .auditing import audit, vectorised_runs

pytestmark = pytest.mark.statistical

EPSILON = Fraction(1)
BOUNDS = (0.0, 1.0)
WEIGHT_BOUNDS = (0.0, 4.0)
RELEASES = 1_000  # public releases for the χ² test of the noise


def neighbours() -> tuple[pd.DataFrame, pd.DataFrame]:
    values = np.concatenate([np.linspace(0.0, 1.0, 50), [-0.5, 1.7, 3.0, 0.25, 0.75] * 2])
    weights = np.arange(60) % 25 / 4.0  # 0 to 6 in quarters: some above the bound 4
    d = pd.DataFrame({"x": values, "w": weights})
    extra = pd.DataFrame({"x": [BOUNDS[1]], "w": [WEIGHT_BOUNDS[1]]})
    return d, pd.concat([d, extra], ignore_index=True)


def _release(priv: pd.DataFrame) -> float:
    return priv.dp.sum(
        "x", bounds=BOUNDS, weights="w", weight_bounds=WEIGHT_BOUNDS, epsilon=float(EPSILON)
    )


def captured(priv: pd.DataFrame, noise) -> tuple[float, float, DiscreteLaplace]:
    """The exact weighted lattice sum, the lattice step g and the mechanism of a release."""
    with noise(priv, value=0) as calls:
        exact = _release(priv)
    with noise(priv, value=1) as calls_plus_one:
        plus_one = _release(priv)
    assert calls == calls_plus_one
    assert len(calls) == 1
    return exact, plus_one - exact, calls[0].mechanism


def test_weighted_sum_audit_real_and_forgotten_weight_mutant(protect_seeded, noise):
    d, d2 = neighbours()
    exact_d, step, mechanism = captured(protect_seeded(d, seed=11, epsilon=2), noise)
    exact_d2, step2, mechanism2 = captured(protect_seeded(d2, seed=12, epsilon=2), noise)
    assert (step, mechanism) == (step2, mechanism2)  # public parameters only
    assert exact_d2 - exact_d == WEIGHT_BOUNDS[1] * BOUNDS[1]  # W·U, a lattice point
    twin = (d["x"].clip(*BOUNDS) * d["w"].clip(*WEIGHT_BOUNDS)).sum()
    assert exact_d == pytest.approx(twin, abs=len(d) * step / 2)
    # Calibration: scale (lattice units) · g = W·max(|L|, |U|)/ε = 4.
    assert mechanism.scale * Fraction(step) == Fraction(4) / EPSILON

    exact = (exact_d, exact_d2)
    real = audit(*vectorised_runs(exact, mechanism, step, seed=6000))
    print(f"weighted sum, real mechanism: {real}")
    assert real.epsilon_lb <= EPSILON, f"the weighted sum leaks more than ε = 1: {real}"
    assert real.epsilon_lb >= 0.9, f"the weighted sum is noisier than calibrated: {real}"

    forgotten = DiscreteLaplace(mechanism.scale / 4)  # calibrated to max(|L|, |U|) alone
    mutant = audit(*vectorised_runs(exact, forgotten, step, seed=6000))
    print(f"weighted sum, weight-forgetting mutant: {mutant}")
    assert mutant.epsilon_lb > EPSILON, f"the weight-forgetting mutant was not caught: {mutant}"


def _discrete_laplace_cdf(k: np.ndarray, scale: float) -> np.ndarray:
    """P(Z <= k) for the discrete Laplace law P(Z = z) ∝ exp(-|z|/scale), exactly."""
    q = math.exp(-1.0 / scale)  # q**m is computed as exp(-m/scale): precise for huge scales
    k = np.asarray(k, dtype=np.float64)
    above = 1.0 - np.exp(-np.maximum(k + 1, 0) / scale) / (1 + q)
    below = np.exp(-np.maximum(-k, 0) / scale) / (1 + q)
    return np.where(k >= 0, above, below)


def test_noise_of_public_weighted_sums_is_discrete_laplace(protect_seeded, noise):
    d, _ = neighbours()
    priv = protect_seeded(d, seed=13, epsilon=RELEASES + 2)
    exact, step, mechanism = captured(priv, noise)
    released = np.array([_release(priv) for _ in range(RELEASES)])
    units = (released - exact) / step
    assert np.array_equal(units, np.round(units))  # every output lies on the lattice
    scale = float(mechanism.scale)
    # Ten cells at the deciles of the continuous Laplace law, rounded to integers; their
    # exact probabilities come from the discrete cdf (all near 0.1: expected counts ~100).
    edges = np.round(stats.laplace.ppf(np.linspace(0.1, 0.9, 9), scale=scale))
    cdf = np.concatenate([[0.0], _discrete_laplace_cdf(edges, scale), [1.0]])
    observed = np.bincount(np.searchsorted(edges, units, side="left"), minlength=10)
    expected = RELEASES * np.diff(cdf)
    assert expected.min() > 90
    assert stats.chisquare(observed, expected).pvalue > 1e-6
    assert priv.dp.session.spent.epsilon == (RELEASES + 2) * EPSILON
