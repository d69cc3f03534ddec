"""Gaussian calibration: tight above σ = 4096 and monotone in ε (issue "Every number with
its error").

The exact δ(ε) of the discrete Gaussian (CKS20 Theorem 7) is computed here from its
definition by summing the pmf directly (numpy, written independently of the code under
test); the library's bound must never be below it and must be close to it.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from pandas_dp.mechanisms.gaussian.calibration import (
    MAX_SIGMA,
    calibrate_sigma,
    discrete_gaussian_delta,
)


def exact_delta(sigma: float, epsilon: float, sensitivity: int) -> float:
    """P(Y > εσ²/Δ - Δ/2) - e^ε P(Y > εσ²/Δ + Δ/2), Y discrete Gaussian, by direct sums."""
    reach = int(40 * sigma) + 2
    y = np.arange(-reach, reach + 1, dtype=np.float64)
    weights = np.exp(-(y * y) / (2 * sigma * sigma))
    weights /= weights.sum()
    centre = epsilon * sigma * sigma / sensitivity
    first = weights[y > centre - sensitivity / 2].sum()
    second = weights[y > centre + sensitivity / 2].sum()
    return float(max(0.0, first - math.exp(epsilon) * second))


def test_the_issue_case_is_the_exact_minimum():
    sigma = calibrate_sigma(5e-4, 1e-6, 1)
    # The smallest σ with δ <= 1e-6, found here by bisection on the exact δ.
    low, high = 4000.0, 5000.0
    while high - low > 1e-3:
        mid = (low + high) / 2
        low, high = (low, mid) if exact_delta(mid, 5e-4, 1) <= 1e-6 else (mid, high)
    assert high == pytest.approx(4463.6, abs=0.1)
    assert sigma == pytest.approx(high, rel=1e-4)
    assert sigma >= high * (1 - 1e-6)  # never below the exact minimum (privacy first)
    assert calibrate_sigma(5.6e-4, 1e-6, 1) < 4050  # was 5,300 with the loose bound


@pytest.mark.parametrize("sigma", [4096.5, 4500.0, 6000.0, 12_000.0, 24_000.0])
@pytest.mark.parametrize("epsilon", [1e-5, 1e-4, 5e-4, 2e-3])
@pytest.mark.parametrize("sensitivity", [1, 2, 16])
def test_the_bound_is_safe_and_tight_above_4096(sigma, epsilon, sensitivity):
    exact = exact_delta(sigma, epsilon, sensitivity)
    bound = discrete_gaussian_delta(sigma * sigma, epsilon, sensitivity)
    assert bound >= exact * (1 - 1e-9) - 1e-300
    assert bound <= exact * (1 + 2e-4) + 1e-15


@pytest.mark.parametrize("epsilon", [1e-4, 5e-4, 1e-3])
def test_no_jump_where_the_method_switches(epsilon):
    below = discrete_gaussian_delta(4096.0**2, epsilon, 1)
    above = discrete_gaussian_delta(math.nextafter(4096.0**2, math.inf), epsilon, 1)
    assert above == pytest.approx(below, rel=2e-4)


@pytest.mark.parametrize("delta", [1e-5, 1e-6, 1e-9])
@pytest.mark.parametrize("sensitivity", [1, 2, 16, 1024])
def test_calibration_is_monotone_in_epsilon(delta, sensitivity):
    sigmas = []
    for epsilon in np.geomspace(1e-6, 10, 36):
        try:
            sigmas.append(calibrate_sigma(float(epsilon), delta, sensitivity))
        except ValueError:  # beyond the sampler's range: only at the smallest ε
            assert not sigmas, "a σ beyond the range after a feasible smaller ε"
            continue
    assert len(sigmas) >= 20
    assert all(s <= MAX_SIGMA for s in sigmas)  # beyond, calibration refuses
    # Non-increasing in ε, up to the bisection's relative tolerance of 1e-6.
    assert all(b <= a * (1 + 2e-6) for a, b in itertools.pairwise(sigmas))
