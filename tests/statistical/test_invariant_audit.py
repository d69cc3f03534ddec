"""Empirical privacy-loss audits of the R1 and R4 shapes (issue 13), each with its mutant.

R1: a mean with bounds near ``2**60`` on D (4 rows) and D' (5 rows at the same value). The
released mean is ``centre + (S + Z_s) g / max(N + Z_n, 1)`` clipped to the bounds; the
library's exact centred sum S makes it ε-DP. The mutant reproduces the old engine: the
centred sum derived from an int64 plain sum of ~2**61 units per row, which wraps for four
rows on (4 × 2**61 = 2**63), so the clipped mean reads the row count. Both are simulated with the
library's own mechanisms, lattice and post-processing, vectorised; the event is chosen on a
calibration run and ε bounded on an independent evaluation run (``auditing``).

R4: ``count(nonnegative=True, total=1e-300)`` over two groups. Fixed: every attempt returns
the post-processed table (the largest noisy count takes the whole total) and is charged, so
one charged release is ε-DP. Mutant (the old behaviour, the reviewer's one-group
reproducer): an attempt succeeded only when the noisy count was exactly 0, and failed
attempts were free, so an analyst retries until one succeeds and observes how many attempts
it took; per charged release that count is far from ε-DP.
"""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import pandas_dp
from pandas_dp.mechanisms.laplace import DiscreteLaplace
from pandas_dp.mechanisms.lattice import sum_lattice
from pandas_dp.mechanisms.random import SeededRandomSource
from pandas_dp.testing import capture_noise

from .auditing import audit, paired_runs

pytestmark = pytest.mark.statistical

EPSILON = 1.0
L, U = 2.0**60 - 2**13, 2.0**60 - 2**12
MIDDLE = (L + U) / 2
ROWS = (4, 5)  # D and D'


def _mechanisms() -> tuple[DiscreteLaplace, DiscreteLaplace]:
    """The centred sum's and the count's noise, as the library calibrates the mean."""
    priv = pd.DataFrame({"x": np.full(ROWS[0], MIDDLE)}).dp.protect(epsilon=10.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
        with capture_noise(priv) as calls:
            assert priv.dp.mean("x", bounds=(L, U), epsilon=EPSILON) == MIDDLE
    total, count = (call.mechanism for call in calls)
    assert isinstance(total, DiscreteLaplace)
    assert isinstance(count, DiscreteLaplace)
    return total, count


def _mean_runs(wrapping: bool) -> tuple:
    lattice = sum_lattice(L, U, Fraction(EPSILON) / 2, centered=True)
    step, offset = 2.0**lattice.exponent, lattice.offset
    per_row = round(MIDDLE / step)  # the row's uncentred value in lattice units
    total_noise, count_noise = _mechanisms()

    def centred_sum(n: int) -> int:
        if not wrapping:
            return n * (per_row - offset)
        plain = (n * per_row + 2**63) % 2**64 - 2**63  # the old int64 sum, wrapped
        return plain - offset * n

    def outputs(dataset: int, n: int, stream: int) -> np.ndarray:
        rows = ROWS[dataset]
        source = SeededRandomSource(stream)
        sums = centred_sum(rows) + total_noise.sample(n, source).astype(np.float64)
        counts = rows + count_noise.sample(n, source).astype(np.float64)
        means = offset * step + sums * step / np.maximum(counts, 1.0)
        return np.clip(means, L, U)

    return paired_runs(outputs, seed=4100, n_calibration=100_000, n_evaluation=400_000)


def test_mean_near_two_to_the_60_stays_within_epsilon_and_the_wrap_is_caught() -> None:
    real = audit(*_mean_runs(wrapping=False))
    print(f"R1 mean, real mechanism: {real}")
    assert real.epsilon_lb <= EPSILON, f"the mean leaks more than ε: {real}"
    mutant = audit(*_mean_runs(wrapping=True))
    print(f"R1 mean, the old wrapping sum: {mutant}")
    assert mutant.epsilon_lb > 3 * EPSILON, f"the wrapping mutant was not caught: {mutant}"


COUNTS = ((0, 3), (1, 3))  # two groups; D' adds one row to the first


def _fit_runs(retry_until_it_fits: bool) -> tuple:
    mechanism = DiscreteLaplace(Fraction(1) / Fraction(EPSILON))

    def outputs(dataset: int, n: int, stream: int) -> np.ndarray:
        source = SeededRandomSource(stream)
        counts = np.asarray(COUNTS[dataset], dtype=np.float64)
        if not retry_until_it_fits:
            noisy = counts + mechanism.sample(2 * n, source).reshape(n, 2)
            return np.argmax(noisy, axis=1).astype(np.float64)  # who takes the total
        # The reviewer's reproducer, one group: the old fit succeeded only when the noisy
        # count was exactly 0; failures were free, so count the attempts to one success.
        attempts = np.ones(n)
        pending = np.arange(n)
        while pending.size:
            fits = counts[0] + mechanism.sample(pending.size, source) == 0
            pending = pending[~fits]
            attempts[pending] += 1
        return attempts

    return paired_runs(outputs, seed=4200, n_calibration=100_000, n_evaluation=400_000)


def test_fitting_to_a_tiny_total_stays_within_epsilon_and_free_retries_are_caught() -> None:
    real = audit(*_fit_runs(retry_until_it_fits=False))
    print(f"R4 fit, every attempt charged: {real}")
    assert real.epsilon_lb <= EPSILON, f"the fitted counts leak more than ε: {real}"
    mutant = audit(*_fit_runs(retry_until_it_fits=True))
    print(f"R4 fit, free retries: {mutant}")
    assert mutant.epsilon_lb > 2 * EPSILON, f"the free-retry mutant was not caught: {mutant}"


def test_the_public_fit_to_a_tiny_total_never_fails() -> None:
    frame = pd.DataFrame({"g": ["a"] * 3 + ["b"] * 4})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
        priv = frame.dp.protect(epsilon=400.0, rng=7)
    for _ in range(300):
        counts = priv.dp.groupby("g", keys=["a", "b"]).count(
            epsilon=1.0, nonnegative=True, total=1e-300
        )
        assert counts.sum() == pytest.approx(1e-300)
    assert priv.dp.session.spent.epsilon == 300  # every attempt was charged
