"""The discrete ℓ∞ K-norm mechanism: its law, exactly, and its calibration.

Seeded draws against the exact probabilities, each compared with a chi-square test at
p = 1e-6 (an honest sampler fails one in a million seeds): the radius ``‖b‖∞`` has
``P(r) ∝ N(r) q^r`` (``N(r)`` the lattice points at radius ``r``); every point has
probability ``∝ q^‖b‖∞`` (the joint law, in two dimensions); one coordinate is the discrete
Laplace law when the dimension is 1; the sampler's accept test is the exact ratio of
integers. The variance and the tail of one coordinate agree with the exact sums of the
lattice law, also at 120 coordinates.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from pandas_dp.mechanisms.knorm import DiscreteLinfKNorm, _accepts
from pandas_dp.mechanisms.laplace import DiscreteLaplace
from pandas_dp.mechanisms.random import SeededRandomSource

#: Seeded distribution tests: they run once in CI, not again under pandas 2.2 (its policy).
pytestmark = pytest.mark.statistical

P_VALUE = 1e-6


def shell_size(r: int, d: int) -> int:
    return 1 if r == 0 else (2 * r + 1) ** d - (2 * r - 1) ** d


def radius_law(scale: Fraction, d: int, top: int) -> np.ndarray:
    """``P(R = r)`` for ``r < top``, and the rest in the last cell."""
    q = math.exp(-1 / float(scale))
    weights = np.array([shell_size(r, d) * q**r for r in range(4 * top)])
    law = weights / weights.sum()
    return np.append(law[:top], law[top:].sum())


def chi_square_p(observed: np.ndarray, law: np.ndarray) -> float:
    """Pearson's test, cells expecting fewer than 5 draws pooled into one."""
    expected = law * observed.sum()
    keep = expected >= 5
    obs, exp = list(observed[keep]), list(expected[keep])
    if expected[~keep].sum() > 0:
        obs.append(observed[~keep].sum())
        exp.append(expected[~keep].sum())
    scaled = np.array(exp) * sum(obs) / sum(exp)
    return float(stats.chisquare(np.array(obs), scaled).pvalue)


@pytest.mark.parametrize(
    ("d", "scale"), [(1, Fraction(2)), (2, Fraction(3, 2)), (3, Fraction(1)), (6, Fraction(3))]
)
def test_radius_has_the_exact_law(d: int, scale: Fraction) -> None:
    draws = DiscreteLinfKNorm(scale, d).sample(20_000 * d, SeededRandomSource(d)).reshape(-1, d)
    radius = np.abs(draws).max(axis=1)
    top = 40
    observed = np.bincount(np.minimum(radius, top), minlength=top + 1).astype(float)
    assert chi_square_p(observed, radius_law(scale, d, top)) > P_VALUE


def test_every_point_has_the_exact_law() -> None:
    """d = 2, scale 2: each point of the box ``‖b‖∞ <= 6`` against ``q^‖b‖∞`` (joint law)."""
    scale, top = Fraction(2), 6
    draws = DiscreteLinfKNorm(scale, 2).sample(2 * 60_000, SeededRandomSource(7)).reshape(-1, 2)
    box = list(itertools.product(range(-top, top + 1), repeat=2))
    q = math.exp(-1 / float(scale))
    mass = sum(shell_size(r, 2) * q**r for r in range(400))
    law = np.array([q ** max(map(abs, p)) for p in box]) / mass
    index = {p: i for i, p in enumerate(box)}
    observed = np.zeros(len(box) + 1)
    for point in map(tuple, draws.tolist()):
        observed[index.get(point, len(box))] += 1
    assert chi_square_p(observed, np.append(law, 1 - law.sum())) > P_VALUE


def test_one_dimension_is_the_discrete_laplace_law() -> None:
    scale = Fraction(5, 2)
    draws = DiscreteLinfKNorm(scale, 1).sample(40_000, SeededRandomSource(3))
    laplace = DiscreteLaplace(scale)
    values = np.arange(-15, 16)
    q = math.exp(-1 / float(scale))
    law = (1 - q) / (1 + q) * q ** np.abs(values)
    observed = np.array([(draws == v).sum() for v in values] + [(np.abs(draws) > 15).sum()])
    expected = np.append(law, 1 - law.sum())
    assert chi_square_p(observed.astype(float), expected) > P_VALUE
    assert math.isclose(laplace.variance(), float(np.var(draws)), rel_tol=0.05)


def test_acceptance_is_the_exact_ratio_of_integers() -> None:
    """The float test decides as the integers do: acceptance rate per half-side, d = 4."""
    d, side = 4, np.repeat(np.arange(0, 6), 20_000)
    accepted = _accepts(SeededRandomSource(11), side, d)
    for m in range(6):
        exact = (2 * m + 1) ** d / math.prod(2 * m + 2 * j for j in range(1, d + 1))
        rate = accepted[side == m].mean()
        sd = math.sqrt(exact * (1 - exact) / 20_000)
        assert abs(rate - exact) <= 5.5 * sd + 1e-12, (m, rate, exact)


def test_many_coordinates_are_cheap() -> None:
    """120 sums (a model of 14 design columns) at the library's scales: the law's variance.

    The mean square of 2,000 vectors' coordinates: the half-side's relative sd is about
    ``1/√121``, so the mean of 2,000 squares is within 0.4% (one sd) of the variance.
    """
    mechanism = DiscreteLinfKNorm(Fraction(1 << 32, 3), 120)
    draws = mechanism.sample(120 * 2_000, SeededRandomSource(2)).reshape(-1, 120)
    sd = math.sqrt(mechanism.variance())
    # The mean of 240,000 coordinates (2,000 vectors: their sides vary, 1/√121 relative).
    assert abs(float(np.mean(draws.astype(float) ** 2)) / sd**2 - 1) < 0.03


@pytest.mark.parametrize("d", [1, 3, 6])
def test_variance_and_tail_of_one_coordinate(d: int) -> None:
    """Against exact sums over the lattice law, at a scale where the lattice is fine."""
    scale = Fraction(40)
    mechanism = DiscreteLinfKNorm(scale, d)
    q = math.exp(-1 / 40)
    radii = np.arange(0, 4000)
    sizes = np.array([float(shell_size(int(r), d)) for r in radii])
    law = sizes * q**radii
    law /= law.sum()
    # E[b_j²] on the shell of radius r: (Σ_{|v|<=r} v² (2r+1)^(d-1) - Σ_{|v|<r} v²
    # (2r-1)^(d-1)) / N(r)
    squares = radii * (radii + 1) * (2 * radii + 1) / 3
    inner = np.maximum(radii - 1, 0) * radii * (2 * radii - 1) / 3
    on_shell = squares * (2 * radii + 1.0) ** (d - 1) - inner * (2 * radii - 1.0) ** (d - 1)
    variance = float((law[1:] * on_shell[1:] / sizes[1:]).sum())
    assert math.isclose(mechanism.variance(), variance, rel_tol=0.01)
    draws = mechanism.sample(30_000 * d, SeededRandomSource(5))
    k = mechanism.quantile_halfwidth(0.05)
    assert abs(float((np.abs(draws) > k).mean()) - 0.05) < 0.005
    assert mechanism.tail(k + 1) <= 0.05 < mechanism.tail(k)


def test_calibration_and_refusals() -> None:
    mechanism = DiscreteLinfKNorm.calibrated(1 << 32, Fraction(2, 3), 6)
    assert mechanism.scale == Fraction(3 << 32, 2)
    assert mechanism.effective_scale >= mechanism.scale
    with pytest.raises(ValueError, match="whole vectors"):
        mechanism.sample(7, SeededRandomSource(0))
    with pytest.raises(ValueError, match="sensitivity"):
        DiscreteLinfKNorm.calibrated(0, Fraction(1), 3)
    with pytest.raises(ValueError, match="dimension"):
        DiscreteLinfKNorm(Fraction(1), 0)
