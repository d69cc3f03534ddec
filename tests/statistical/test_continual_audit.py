"""Empirical privacy-loss audits of the running-total mechanisms, and their accuracy claim.

Audits (the shared method of ``auditing.py``: an event chosen on a calibration run, ε bounded
from below on an independent evaluation run with Clopper–Pearson bounds at total confidence
1 - 1e-6; seeds fixed). D is all-zero counts, D' has one row in bin 0, the bin that lies in
the most nodes. Releases are vectorised: ``decode(measure(D) + noise)`` with the noise drawn
in one call from the very mechanism the plan holds, which has exactly the law of that many
releases.

- Binary tree, T = 7 (L = 3 levels), ε = 1, plain decoding. The nodes ``[0, 1)``, ``[0, 2)``,
  ``[0, 4)`` are the released prefixes of lengths 1, 2 and 4, so the auditor reads them back
  and scores ``S = min`` of the three. ``S >= 1`` is the worst event of the mechanism: each
  node's ratio is ``e^{1/b}``, three of them ``e^{3/b} = e^ε`` exactly, with probability
  about 0.2 under D'. The real mechanism scores just below 1 (about 0.98); the mutant with
  scale ``1/ε`` instead of ``L/ε`` (really 3ε) is caught. The least-squares release is
  post-processing of the same nodes; it is audited with its prefix of length 1.
- Square-root factorization, T = 4, ρ = 0.02, claimed ``(ε, δ) = (zcdp_to_epsilon(ρ, δ), δ)``
  with δ = 1e-6 (0.90). The statistic is the likelihood ratio's own: ``S = <R'e_0, y>``
  with ``y = R' diff(P)`` read back from the released prefixes ``P``. The mutant whose σ
  ignores the column norm (and the lattice scale ``2^s`` it carries) is caught by orders of
  magnitude. A mutant that keeps ``c'_0`` but drops the rest of the column (σ too small by
  ``sqrt(Σ c_k²)``, 1.22 at T = 4) is beyond what 10^6 releases can see at this δ: it is
  excluded instead by the exact check of ``Δ²`` in ``tests/mechanisms/test_continual.py``.

Accuracy (T = 365 and 4096, ε = 1 and ρ = ε²/2 = 0.5; 50 seeded runs): the table of the
largest absolute error over all prefixes (median over runs) is printed; the assertions are
what the maths guarantees, with wide margins (see :func:`test_accuracy_table`).
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import numpy as np
import pytest

from pandas_dp.budget import zcdp_to_epsilon
from pandas_dp.mechanisms.continual.sqrt import SqrtFactorization, sqrt_coefficients
from pandas_dp.mechanisms.continual.strategies import NoisyBins, _sigma2_for
from pandas_dp.mechanisms.continual.tree import BinaryTree
from pandas_dp.mechanisms.gaussian.discrete import DiscreteGaussian
from pandas_dp.mechanisms.laplace import DiscreteLaplace
from pandas_dp.mechanisms.random import SeededRandomSource

from . import auditing

pytestmark = pytest.mark.statistical

EPSILON = 1.0
RHO = Fraction(2, 100)
DELTA = 1e-6


def runs(plan, statistic, seed: int) -> auditing.Runs:
    """Calibration and evaluation statistics of releases on D (zeros) and D' (a row in bin 0)."""
    neighbours = [np.zeros(plan.bins, dtype=np.int64), np.eye(1, plan.bins, dtype=np.int64)[0]]

    def outputs(dataset: int, n: int, stream: int) -> np.ndarray:
        exact = plan.measure(neighbours[dataset])
        noise = plan.mechanism.sample(n * plan.size, SeededRandomSource(stream))
        return statistic(plan.decode(exact + noise.reshape(n, plan.size)))

    return auditing.paired_runs(outputs, seed)


def tree_nodes_of_bin_zero(prefixes: np.ndarray) -> np.ndarray:
    """``min`` of the nodes holding bin 0: the prefixes of lengths 1, 2, 4 (T = 7)."""
    return np.min(prefixes[:, [0, 1, 3]], axis=1)


def test_binary_tree_audit_and_the_one_level_mutant() -> None:
    plan = BinaryTree.plan(7, epsilon=EPSILON, least_squares=False)
    assert plan.levels == 3
    assert plan.mechanism.scale == 3

    real = auditing.audit(*runs(plan, tree_nodes_of_bin_zero, seed=9400))
    print(f"binary tree (T = 7, scale 3/ε): {real}")
    assert real.epsilon_lb <= EPSILON, f"the tree leaks more than ε: {real}"
    assert real.epsilon_lb >= 0.9, f"the tree is noisier than calibrated: {real}"

    mutant = dataclasses.replace(plan, mechanism=DiscreteLaplace(Fraction(1)))
    caught = auditing.audit(*runs(mutant, tree_nodes_of_bin_zero, seed=9400))
    print(f"binary tree, mutant with scale 1/ε: {caught}")
    assert caught.epsilon_lb > 2 * EPSILON, f"the one-level mutant was not caught: {caught}"


def test_least_squares_tree_audit() -> None:
    plan = BinaryTree.plan(7, epsilon=EPSILON)
    first = auditing.audit(*runs(plan, lambda p: p[:, 0], seed=9500))
    print(f"least-squares tree (T = 7), prefix of length 1: {first}")
    assert first.epsilon_lb <= EPSILON, f"the least-squares tree leaks more than ε: {first}"
    mutant = dataclasses.replace(plan, mechanism=DiscreteLaplace(Fraction(1)))
    caught = auditing.audit(*runs(mutant, lambda p: p[:, 0], seed=9500))
    print(f"least-squares tree, mutant with scale 1/ε: {caught}")
    assert caught.epsilon_lb > EPSILON, f"the one-level mutant was not caught: {caught}"


def sqrt_statistic(bins: int):
    """``S = <R' e_0, R' diff(P)>``: the released prefixes mapped back to ``y``, projected on
    the direction one row in bin 0 moves it."""
    column = sqrt_coefficients(bins).astype(np.float64)  # R' e_0
    lag = np.subtract.outer(np.arange(bins), np.arange(bins))
    r = np.where(lag >= 0, column[np.maximum(lag, 0)], 0.0)  # R'

    def statistic(prefixes: np.ndarray) -> np.ndarray:
        x = np.diff(prefixes, axis=1, prepend=0.0)
        return (x @ r.T) @ column

    return statistic


def test_sqrt_factorization_audit_and_the_column_norm_mutant() -> None:
    plan = SqrtFactorization.plan(4, rho=RHO)
    claimed = zcdp_to_epsilon(float(RHO), DELTA)
    statistic = sqrt_statistic(4)

    real = auditing.audit(*runs(plan, statistic, seed=9600), delta=DELTA, quantiles=None)
    print(f"square-root factorization (T = 4, ρ = {float(RHO)}, claimed ε = {claimed:.3f}): {real}")
    assert real.epsilon_lb <= claimed, f"the factorization leaks more than ρ: {real}"
    assert real.epsilon_lb >= 0.2, f"the factorization is noisier than calibrated: {real}"

    blind = dataclasses.replace(plan, mechanism=DiscreteGaussian(_sigma2_for(1, RHO)))
    caught = auditing.audit(*runs(blind, statistic, seed=9600), delta=DELTA, quantiles=None)
    print(f"square-root factorization, σ without the column norm: {caught}")
    assert caught.epsilon_lb > 5 * claimed, f"the column-norm mutant was not caught: {caught}"


# --- accuracy --------------------------------------------------------------------------------

ACCURACY_RUNS = 50


def max_errors(plan, seed: int) -> np.ndarray:
    """Largest absolute prefix error of each of ACCURACY_RUNS releases (errors are the decode
    of pure noise: the decoders are linear and exact on noise-free measurements)."""
    noise = plan.mechanism.sample(ACCURACY_RUNS * plan.size, SeededRandomSource(seed))
    errors = plan.decode(noise.reshape(ACCURACY_RUNS, plan.size))
    return np.max(np.abs(errors), axis=1)


def test_accuracy_table() -> None:
    lines = ["| T | strategy | median max error | largest stddev | union bound (95%) |"]
    bounds = {}
    for bins in (365, 4096):
        plans = {
            "noisy daily counts (Laplace 1/ε)": NoisyBins.plan(bins, epsilon=1),
            "binary tree, least squares (ε = 1)": BinaryTree.plan(bins, epsilon=1),
            "binary tree, plain (ε = 1)": BinaryTree.plan(bins, epsilon=1, least_squares=False),
            "square-root factorization (ρ = 0.5)": SqrtFactorization.plan(bins, rho=0.5),
        }
        for i, (name, plan) in enumerate(plans.items()):
            median = float(np.median(max_errors(plan, seed=bins + i)))
            # Union bound: P(max_t |e_t| >= max_t h_t(α/T)) <= α = 0.05, so the median of 50
            # runs exceeds it only if 25 of 50 runs do (binomial, p <= 0.05: below 1e-15).
            upper = float(np.max(plan.halfwidth(0.05 / bins)))
            # max_t |e_t| >= |e_T|, and P(|e_T| < 0.3 sd_T) < 0.25 for these near-normal sums
            # (a density at most 0.4/sd near 0), so the median of 50 falls below 0.3 sd_T
            # only if 25 runs do (binomial, p < 0.25: below 1e-3).
            lower = 0.3 * float(plan.stddev()[-1])
            bounds[bins, name] = (lower, upper)
            lines.append(
                f"| {bins} | {name} | {median:.1f} | {plan.stddev().max():.1f} | {upper:.1f} |"
            )
            assert lower <= median <= upper, (bins, name, lower, median, upper)
    print("\n".join(lines))
    # What the maths separates with wide margins: at T = 4096 the factorization's guaranteed
    # upper bound is below the daily counts' guaranteed lower bound.
    sqrt_upper = bounds[4096, "square-root factorization (ρ = 0.5)"][1]
    daily_lower = bounds[4096, "noisy daily counts (Laplace 1/ε)"][0]
    assert sqrt_upper < daily_lower, (sqrt_upper, daily_lower)
