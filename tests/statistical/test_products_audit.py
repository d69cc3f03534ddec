"""Empirical privacy-loss audits of the sums of products (covariance, correlation, OLS).

The measurement of two complete columns is ``p = 6`` sums (the Gram matrix of ``(1, z_x,
z_y)``). D is empty (every sum 0); D' holds one row at the upper bounds, ``z = (1, 1)``,
which moves every sum by exactly one product unit: the worst row, in L1 and L2 norm alike.
Releases are vectorised: the exact sums from the real engine plus noise drawn in one call
from the mechanism the real calibration holds (the method of ``auditing.py``: an event
chosen on a calibration run, ε bounded on an independent evaluation run at confidence
1 - 1e-6; seeds fixed).

- Laplace, ε = 1: the statistic is the smallest of the six sums. Each sum's likelihood
  ratio is ``e^{1/b}`` with ``b = p/ε``, six of them ``e^ε`` exactly. Mutants: the scale of
  one sum (``1/ε``: forgot that a row moves all ``p`` sums, really ``6ε``), and a row bound
  not squared (``p 2^16 / ε`` in units of ``2^-32``: forgot that a product of two values in
  ``[-2^16, 2^16]`` reaches ``2^32``) are both caught.
- Gaussian, ``(ε, δ) = (1, 1e-6)``: the statistic is the sum of the six sums, the likelihood
  ratio's own direction. The mutant calibrated for one coordinate (σ too small by ``√6``)
  is caught.

And the noise a release adds has the mechanism's law, one independent variate per sum
(the distribution test).

Survey weights (``ols(..., weights=, weight_bounds=(0, 3))``): the same two datasets, the row
of D' carrying a weight of 7 (clipped to 3), the ``p = 7`` weighted sums (six and the count
of rows) each moved by 3 in the weights' units. Laplace, ε = 1, the smallest sum as above:
the real calibration stays below 1; the mutant that ignores the weight bound (calibrated as
if one row moved each sum by 1, really 3ε) is caught.

Logistic models (issue 42) take one ℓ∞ K-norm vector per measurement, the statistic its
exact privacy loss ``‖o - d‖∞ - ‖o - d'‖∞``: the weighted Gram matrix (6 rounded sums, each
moved by at most one step; mutant: the weight bound ignored, really 3ε) and the score at a
released fit (3 sums; mutant: a third of the scale) are both caught.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from pandas_dp.engines.pandas_engine import aggregate_frame
from pandas_dp.mechanisms.gaussian.discrete import plan_gaussian
from pandas_dp.mechanisms.knorm import DiscreteLinfKNorm
from pandas_dp.mechanisms.laplace import DiscreteLaplace
from pandas_dp.mechanisms.random import SeededRandomSource
from pandas_dp.planning.measurement.parts import NoiseChoice
from pandas_dp.planning.measurement.products import (
    DIGITS,
    UNIT,
    WEIGHT_DIGITS,
    ProductLayout,
    products_part,
    score_layout,
)
from pandas_dp.planning.measurement.weighted import Weights
from pandas_dp.transformations.design import ScoreResiduals, design_of
from pandas_dp.units import Contribution

from . import auditing

pytestmark = pytest.mark.statistical

BOUNDS = ((0.0, 10.0), (-5.0, 5.0))
LAYOUT = ProductLayout.of(("x", "y"), BOUNDS, (True, True), complete=True, squares=False)
DELTA = Fraction(1, 10**6)


def exact_sums() -> tuple[np.ndarray, np.ndarray]:
    """The engine's exact sums on D (empty) and D' (one row at the upper bounds)."""
    measure = LAYOUT.ordered().measure()
    empty = pd.DataFrame({"x": pd.Series([], dtype=float), "y": pd.Series([], dtype=float)})
    one = pd.DataFrame({"x": [10.0], "y": [5.0]})
    d, d2 = (aggregate_frame(f, (measure,)).values[0][0] for f in (empty, one))
    return np.asarray(d, dtype=np.int64), np.asarray(d2, dtype=np.int64)


def test_one_row_moves_every_sum_by_one_unit() -> None:
    d, d2 = exact_sums()
    assert len(LAYOUT.monomials) == 6
    np.testing.assert_array_equal(d, 0)
    np.testing.assert_array_equal(d2, UNIT)


def runs(mechanism, statistic, seed: int) -> auditing.Runs:
    sums = exact_sums()
    size = sums[0].size

    def outputs(dataset: int, n: int, stream: int) -> np.ndarray:
        noise = mechanism.sample(n * size, SeededRandomSource(stream)).reshape(n, size)
        return statistic((sums[dataset] + noise) / UNIT)

    return auditing.paired_runs(outputs, seed)


def smallest(sums: np.ndarray) -> np.ndarray:
    return np.min(sums, axis=1)


def total(sums: np.ndarray) -> np.ndarray:
    return np.sum(sums, axis=1)


def test_laplace_audit_and_two_mutants() -> None:
    part = products_part(LAYOUT, Fraction(1), Contribution(), NoiseChoice())
    assert part.mechanism.scale == 6 * UNIT
    real = auditing.audit(*runs(part.mechanism, smallest, seed=9700))
    print(f"products, Laplace scale p/ε (p = 6, ε = 1): {real}")
    assert real.epsilon_lb <= 1.0, f"the sums of products leak more than ε: {real}"
    assert real.epsilon_lb >= 0.7, f"the sums of products are noisier than calibrated: {real}"

    one_sum = DiscreteLaplace.calibrated(UNIT, Fraction(1))
    caught = auditing.audit(*runs(one_sum, smallest, seed=9700))
    print(f"products, mutant with the scale of one sum: {caught}")
    assert caught.epsilon_lb > 2.0, f"the one-sum mutant was not caught: {caught}"

    unsquared = DiscreteLaplace.calibrated(6 * (1 << DIGITS), Fraction(1))
    caught = auditing.audit(*runs(unsquared, smallest, seed=9710))
    print(f"products, mutant whose row bound is not squared: {caught}")
    assert caught.epsilon_lb > 2.0, f"the unsquared mutant was not caught: {caught}"


def test_gaussian_audit_and_the_one_coordinate_mutant() -> None:
    noise = NoiseChoice(gaussian=True, delta=DELTA)
    part = products_part(LAYOUT, Fraction(1), Contribution(), noise)
    # The whole release is measured in units of 2**shift; audit in those units.
    scale = 1 << part.shift
    real = auditing.audit(
        *runs(_coarse(part.mechanism, scale), total, seed=9800), delta=float(DELTA), quantiles=None
    )
    print(f"products, Gaussian (ε = 1, δ = 1e-6): {real}")
    assert real.epsilon_lb <= 1.0, f"the Gaussian sums of products leak more than ε: {real}"
    assert real.epsilon_lb >= 0.3, f"the Gaussian sums are noisier than calibrated: {real}"

    one = plan_gaussian(UNIT, 1, Fraction(1), DELTA)
    mutant = _coarse(one.mechanism, 1 << one.shift)
    caught = auditing.audit(*runs(mutant, total, seed=9800), delta=float(DELTA), quantiles=None)
    print(f"products, Gaussian calibrated for one coordinate: {caught}")
    assert caught.epsilon_lb > 1.4, f"the one-coordinate mutant was not caught: {caught}"


class _coarse:  # noqa: N801  (a mechanism whose variates are in units of 2**shift)
    def __init__(self, mechanism, scale: int) -> None:
        self.mechanism, self.scale = mechanism, scale

    def sample(self, n: int, source) -> np.ndarray:
        return self.mechanism.sample(n, source) * self.scale


def test_released_noise_has_the_mechanisms_law() -> None:
    """One variate per sum and group, independent, with the discrete Laplace law (a
    chi-square test of the noise in units of the scale, binned; seeded)."""
    part = products_part(LAYOUT, Fraction(4), Contribution(), NoiseChoice())

    class Source:  # the part draws from the noise source it is handed
        source = SeededRandomSource(31)

        def draw(self, mechanism, n: int) -> np.ndarray:
            return mechanism.sample(n, self.source)

    exact = np.zeros((4000, 6), dtype=np.int64)  # 4,000 groups of six sums
    noise = np.asarray(part.release(exact, Source()), dtype=np.float64)  # type: ignore[arg-type]
    assert noise.shape == (4000, 6)
    b = float(part.mechanism.scale)
    edges = np.array([-np.inf, -2, -1, -0.5, 0, 0.5, 1, 2, np.inf]) * b
    observed = np.histogram(noise.ravel(), bins=edges)[0]
    cdf = stats.laplace(scale=b).cdf(edges)  # b = 1.5·2^32: the discrete law is the continuous
    expected = np.diff(cdf) * noise.size
    assert stats.chisquare(observed, expected).pvalue > 1e-4
    correlations = np.corrcoef(noise.T)[np.triu_indices(6, 1)]
    assert np.abs(correlations).max() < 5 / np.sqrt(4000)  # independent sums


WEIGHTED = ProductLayout.of(
    ("x", "y"), BOUNDS, (True, True), complete=True, squares=False,
    weights=Weights("w", 0.0, 3.0), rows=True,
)  # fmt: skip


def test_weighted_audit_and_the_mutant_that_ignores_the_weight_bound() -> None:
    part = products_part(WEIGHTED, Fraction(1), Contribution(), NoiseChoice())
    measure = WEIGHTED.ordered().measure()
    empty = pd.DataFrame({c: pd.Series([], dtype=float) for c in "xyw"})
    one = pd.DataFrame({"x": [10.0], "y": [5.0], "w": [7.0]})  # the weight clipped to 3
    d, d2 = (aggregate_frame(f, (measure,)).values[0][0] for f in (empty, one))
    row = 3 * 2**14 * UNIT  # U = 3 on its lattice (2**-14 steps), times a product's 2**32
    assert list(d) == [0] * 7
    assert list(d2) == [row] * 7
    rounded = [np.asarray(part.round(np.asarray(s, dtype=object)), dtype=np.int64) for s in (d, d2)]
    step = (row >> WEIGHT_DIGITS) + 1  # one row's move of a rounded sum, at most
    assert part.mechanism.scale == 7 * step

    def runs_of(mechanism: DiscreteLaplace, seed: int) -> auditing.Runs:
        def outputs(dataset: int, n: int, stream: int) -> np.ndarray:
            noise = mechanism.sample(n * 7, SeededRandomSource(stream)).reshape(n, 7)
            return smallest((rounded[dataset] + noise) / step)

        return auditing.paired_runs(outputs, seed)

    real = auditing.audit(*runs_of(part.mechanism, seed=9900))
    print(f"weighted products, Laplace scale p·U/ε (p = 7, U = 3, ε = 1): {real}")
    assert real.epsilon_lb <= 1.0, f"the weighted sums of products leak more than ε: {real}"
    assert real.epsilon_lb >= 0.7, f"the weighted sums are noisier than calibrated: {real}"

    unweighted = DiscreteLaplace.calibrated(7 * ((2**14 * UNIT >> WEIGHT_DIGITS) + 1), Fraction(1))
    caught = auditing.audit(*runs_of(unweighted, seed=9900))
    print(f"weighted products, mutant that ignores the weight bound: {caught}")
    assert caught.epsilon_lb > 2.0, f"the mutant ignoring the weight bound was not caught: {caught}"


def test_logit_score_audit_and_the_mutant_with_a_third_of_the_scale() -> None:
    """A logit's second step: the score ``Σ (σ(x̃ᵀθ₁) - y) x̃`` at a released fit (issue 42).

    Two regressors on [0, 10] and [-5, 5], ``θ₁`` public (a score of 40 at the upper bounds:
    ``σ = 1`` to 2^-57). D is empty; D' holds one row at the upper bounds with ``y = 0``:
    its residual rounds to 1 and it moves each of the ``k = 3`` sums by one unit, the most a
    row can (ℓ∞ sensitivity 1 unit). The noise is one discrete ℓ∞ K-norm vector at scale
    ``unit / ε``; the statistic is its privacy loss, ``‖o‖∞ - ‖o - 1‖∞`` (units). ε = 1: the
    real calibration stays below 1; the mutant at a third of the scale (calibrated as if a
    row moved the sums by a third of a unit, really 3ε) is caught.
    """
    design = design_of("y ~ x + z", {"x": (0.0, 10.0), "z": (-5.0, 5.0), "y": (0.0, 1.0)}, {})
    applied = ScoreResiduals(design, (0.0, 20.0, 20.0))
    layout = score_layout(applied.labels, applied.bounds)
    part = products_part(layout, Fraction(1), Contribution(), NoiseChoice(), vector=True)
    assert isinstance(part.mechanism, DiscreteLinfKNorm)
    assert part.mechanism.scale == UNIT
    assert part.mechanism.dimension == 3
    assert part.measurement.sensitivity == UNIT
    assert part.measurement.pure_epsilon == 1
    measure = dataclasses.replace(part.measure, design=applied, reads=applied.reads)
    empty = pd.DataFrame({c: pd.Series([], dtype=float) for c in "xzy"})
    one = pd.DataFrame({"x": [10.0], "z": [5.0], "y": [0.0]})
    d, d2 = (
        np.asarray(aggregate_frame(f, (measure,)).values[0][0], dtype=np.int64)
        for f in (empty, one)
    )
    np.testing.assert_array_equal(d, 0)
    np.testing.assert_array_equal(d2, UNIT)

    def runs_of(mechanism: DiscreteLinfKNorm, seed: int, sizes: tuple[int, int]) -> auditing.Runs:
        def outputs(dataset: int, n: int, stream: int) -> np.ndarray:
            noise = mechanism.sample(n * 3, SeededRandomSource(stream)).reshape(n, 3)
            released = ((d, d2)[dataset] + noise) / UNIT
            return np.abs(released).max(axis=1) - np.abs(released - 1).max(axis=1)

        return auditing.paired_runs(outputs, seed, *sizes)

    real = auditing.audit(*runs_of(part.mechanism, seed=9950, sizes=(200_000, 600_000)))
    print(f"logit score, ℓ∞ K-norm at scale unit/ε (k = 3, ε = 1): {real}")
    assert real.epsilon_lb <= 1.0, f"the score's sums leak more than ε: {real}"
    assert real.epsilon_lb >= 0.7, f"the score's sums are noisier than calibrated: {real}"

    third = DiscreteLinfKNorm(Fraction(UNIT, 3), 3)
    caught = auditing.audit(*runs_of(third, seed=9960, sizes=(50_000, 200_000)))
    print(f"logit score, mutant at a third of the scale: {caught}")
    assert caught.epsilon_lb > 2.0, f"the third-of-the-scale mutant was not caught: {caught}"


def test_weighted_logit_gram_audit_and_the_mutant_that_ignores_the_weight_bound() -> None:
    """A logit's weighted Gram matrix: one ℓ∞ K-norm vector over its rounded sums (issue 42).

    D is empty; D' one row at the upper bounds with its weight clipped to 3: each of the 6
    sums moves by ``row = 3 · 2^14 · UNIT`` and, rounded to ``2^16`` units first, by at most
    ``step = row / 2^16 + 1`` (the rounding's one step). The statistic is the vector's exact
    privacy loss in steps, ``‖o - d‖∞ - ‖o - d'‖∞`` (rounded sums). ε = 1: the real
    calibration stays below 1; a mutant calibrated for weights of 1 (really 3ε) is caught.
    """
    weighted = ProductLayout.of(
        ("x", "y"), BOUNDS, (True, True), complete=True, squares=False,
        weights=Weights("w", 0.0, 3.0),
    )  # fmt: skip
    part = products_part(weighted, Fraction(1), Contribution(), NoiseChoice(), vector=True)
    assert isinstance(part.mechanism, DiscreteLinfKNorm)
    measure = weighted.ordered().measure()
    empty = pd.DataFrame({c: pd.Series([], dtype=float) for c in "xyw"})
    one = pd.DataFrame({"x": [10.0], "y": [5.0], "w": [7.0]})
    d, d2 = (aggregate_frame(f, (measure,)).values[0][0] for f in (empty, one))
    row = 3 * 2**14 * UNIT
    assert list(d) == [0] * 6
    assert list(d2) == [row] * 6
    rounded = [np.asarray(part.round(np.asarray(s, dtype=object)), dtype=np.int64) for s in (d, d2)]
    step = (row >> WEIGHT_DIGITS) + 1
    assert part.mechanism.scale == step
    assert part.measurement.pure_epsilon == 1

    def runs_of(mechanism: DiscreteLinfKNorm, seed: int, sizes: tuple[int, int]) -> auditing.Runs:
        def outputs(dataset: int, n: int, stream: int) -> np.ndarray:
            noise = mechanism.sample(n * 6, SeededRandomSource(stream)).reshape(n, 6)
            released = (rounded[dataset] + noise) / step
            a, b = rounded[0] / step, rounded[1] / step
            return np.abs(released - a).max(axis=1) - np.abs(released - b).max(axis=1)

        return auditing.paired_runs(outputs, seed, *sizes)

    real = auditing.audit(*runs_of(part.mechanism, seed=9970, sizes=(100_000, 300_000)))
    print(f"weighted logit Gram, ℓ∞ K-norm at scale step/ε (6 sums, U = 3, ε = 1): {real}")
    assert real.epsilon_lb <= 1.0, f"the weighted Gram leaks more than ε: {real}"
    assert real.epsilon_lb >= 0.7, f"the weighted Gram is noisier than calibrated: {real}"

    unweighted = DiscreteLinfKNorm(Fraction((2**14 * UNIT >> WEIGHT_DIGITS) + 1), 6)
    caught = auditing.audit(*runs_of(unweighted, seed=9980, sizes=(50_000, 200_000)))
    print(f"weighted logit Gram, mutant that ignores the weight bound: {caught}")
    assert caught.epsilon_lb > 2.0, f"the mutant ignoring the weight bound was not caught: {caught}"
