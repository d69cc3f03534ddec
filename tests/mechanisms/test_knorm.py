"""The discrete ℓ∞ K-norm mechanism: its law, exactly, and its calibration.

Seeded draws against the exact probabilities, each compared with a chi-square test at
p = 1e-6 (an honest sampler fails one in a million seeds): the radius ``‖b‖∞`` has
``P(r) ∝ N(r) q^r`` (``N(r)`` the lattice points at radius ``r``); given the radius, every
point of the shell is equally likely; one coordinate is the discrete Laplace law when the
dimension is 1. The variance and the tail of one coordinate agree with the exact sums of
the lattice law.
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


def test_points_of_a_shell_are_equally_likely() -> None:
    """d = 2 at radius 2: 16 shell points (corners on two faces), each 1/16."""
    mechanism = DiscreteLinfKNorm(Fraction(2), 2)
    radii = np.full(32_000, 2, dtype=np.int64)
    points = mechanism._on_shells(SeededRandomSource(7), radii)
    assert (np.abs(points).max(axis=1) == 2).all()
    shell = [p for p in itertools.product(range(-2, 3), repeat=2) if max(map(abs, p)) == 2]
    index = {p: i for i, p in enumerate(shell)}
    observed = np.bincount([index[tuple(p)] for p in points.tolist()], minlength=len(shell))
    assert stats.chisquare(observed).pvalue > P_VALUE


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
    """The float test decides as the integers do: acceptance rate per radius, d = 4."""
    d, radius = 4, np.repeat(np.arange(0, 6), 20_000)
    accepted = _accepts(SeededRandomSource(11), radius, d)
    for r in range(6):
        exact = shell_size(r, d) / (math.prod(range(r + 1, r + d)) * (3**d - 1))
        rate = accepted[radius == r].mean()
        sd = math.sqrt(exact * (1 - exact) / 20_000)
        assert abs(rate - exact) <= 5.5 * sd + 1e-12, (r, rate, exact)


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
