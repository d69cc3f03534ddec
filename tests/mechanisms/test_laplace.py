"""``DiscreteLaplace`` and ``sampler_terms`` (``pandas_dp.mechanisms.laplace``).

The accuracy helpers (``variance``, ``tail``, ``quantile_halfwidth``) are compared with
references computed here to 50 significant digits with :mod:`decimal`: by direct summation of
the pmf ``(1 - q)/(1 + q) q^|z|``, ``q = exp(-1/b)``, for small scales, and by the geometric
series' closed forms for scales too large to sum term by term (the closed forms are checked
against the direct sums first).

Tolerance: each helper is a smooth, well-conditioned function of the scale ``b`` (the variance
is about ``2 b^2``, a tail about ``exp(-k/b)`` with ``k/b`` below 30), so double precision can
deliver it to ~1e-15 relative; ``REL_TOL = 1e-12`` leaves three orders of magnitude of slack.
``quantile_halfwidth`` is an integer defined exactly and must match exactly.
"""

from __future__ import annotations

import math
from decimal import Context, Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from pandas_dp.mechanisms.laplace import MIN_BATCH, SMALL_DRAWS, DiscreteLaplace, sampler_terms
from pandas_dp.mechanisms.random import SeededRandomSource, SystemRandomSource
from pandas_dp.mechanisms.samplers import MAX_SCALE_TERM
from pandas_dp.mechanisms.small_draws import discrete_laplace_small

REL_TOL = 1e-12
ALPHAS = [0.5, 0.05, 1e-6]
HYPOTHESIS = settings(max_examples=200, derandomize=True, database=None, deadline=None)
DIGITS = Context(prec=50)


def dec(x: Fraction | float) -> Decimal:
    """An exact Fraction or binary float as a 50-digit Decimal."""
    with localcontext(DIGITS):
        if isinstance(x, Fraction):
            return Decimal(x.numerator) / Decimal(x.denominator)
        return +Decimal(x)


class Reference:
    """The discrete Laplace law of scale ``b``, to 50 digits."""

    def __init__(self, scale: Fraction) -> None:
        self.scale = scale
        with localcontext(DIGITS):
            self.x = dec(1 / scale)  # 1/b
            self.q = (-self.x).exp()

    def power(self, k: int) -> Decimal:
        """``q^k = exp(-k/b)``, evaluated without raising a rounded q to a huge power."""
        with localcontext(DIGITS):
            return (-self.x * k).exp()

    # Closed forms of the geometric series.
    def variance(self) -> Decimal:
        with localcontext(DIGITS):
            return 2 * self.q / (1 - self.q) ** 2

    def tail(self, k: int) -> Decimal:
        """``P(|Z| >= k) = 2 q^k / (1 + q)`` for ``k >= 1``."""
        if k <= 0:
            return Decimal(1)
        with localcontext(DIGITS):
            return 2 * self.power(k) / (1 + self.q)

    def quantile(self, alpha: float) -> int:
        """Smallest ``k >= 0`` with ``P(|Z| > k) = tail(k + 1) <= alpha``, by definition:
        start a little below the real solution of ``tail(k + 1) = alpha`` and step up."""
        a = dec(alpha)
        with localcontext(DIGITS):
            start = (2 / (a * (1 + self.q))).ln() / self.x - 1
        k = max(0, math.floor(start) - 2)
        while self.tail(k + 1) > a:
            k += 1
        assert k == 0 or self.tail(k) > a
        return k

    # Direct summation of the pmf (small scales only).
    def direct(self, alphas: list[float]) -> dict:
        """Variance, ``P(|Z| >= k)`` for k = 0..top, and quantiles, from the pmf's terms."""
        top = math.ceil(float(self.scale) * 125) + 10  # q^top < 1e-54: the rest is negligible
        with localcontext(DIGITS):
            norm = (1 - self.q) / (1 + self.q)
            terms = [norm] + [2 * norm * self.power(z) for z in range(1, top + 1)]  # P(|Z|=z)
            variance = sum((z * z * p for z, p in enumerate(terms)), Decimal(0))
            at_least = [Decimal(0)] * (top + 2)  # at_least[k] = P(|Z| >= k)
            for z in range(top, -1, -1):
                at_least[z] = at_least[z + 1] + terms[z]
        quantiles = {}
        for alpha in alphas:
            k = 0
            while at_least[k + 1] > dec(alpha):
                k += 1
            quantiles[alpha] = k
        return {"variance": variance, "at_least": at_least, "quantiles": quantiles}


def close(actual: float, expected: Decimal, rel_tol: float = REL_TOL) -> bool:
    return math.isclose(actual, float(expected), rel_tol=rel_tol, abs_tol=1e-300)


# Scales reachable through the API: counts at ε from 10^6 down to 10^-9 (scales 10^-6 to
# 10^9), the sum lattice (about 2^30 lattice units, up to 2^31), a mean's count at ε/2.
SMALL = [Fraction(1, 2), Fraction(1), Fraction(10, 3), Fraction(10)]
TINY = [Fraction(1, 746), Fraction(1, 1000), Fraction(1, 10**6)]
LARGE = [Fraction(1 << 20), Fraction(10**9, 3), Fraction(10**9), Fraction(1 << 31)]


def scale_id(scale: Fraction) -> str:
    return str(scale)


# --- the references themselves -----------------------------------------------------------


@pytest.mark.parametrize("scale", SMALL, ids=scale_id)
def test_closed_forms_match_direct_sums(scale):
    ref = Reference(scale)
    direct = ref.direct(ALPHAS)
    assert abs(direct["at_least"][0] - 1) < Decimal("1e-45")  # the pmf sums to one
    assert abs(direct["variance"] / ref.variance() - 1) < Decimal("1e-40")
    for k in range(0, 6 * math.ceil(scale)):
        assert abs(direct["at_least"][k] - ref.tail(k)) < Decimal("1e-45")
    for alpha in ALPHAS:
        assert direct["quantiles"][alpha] == ref.quantile(alpha)


# --- variance, tail and quantile_halfwidth ------------------------------------------------


@pytest.mark.parametrize("scale", SMALL, ids=scale_id)
def test_small_scales_agree_with_direct_sums(scale):
    mechanism = DiscreteLaplace(scale)
    assert mechanism.effective_scale == scale
    direct = Reference(scale).direct(ALPHAS)
    assert close(mechanism.variance(), direct["variance"])
    for k in range(-2, min(len(direct["at_least"]), 8 * math.ceil(scale) + 3)):
        expected = direct["at_least"][max(k, 0)]
        assert close(mechanism.tail(k), expected), f"tail({k})"
    for alpha in ALPHAS:
        assert mechanism.quantile_halfwidth(alpha) == direct["quantiles"][alpha], alpha


@pytest.mark.parametrize("scale", TINY, ids=scale_id)
def test_tiny_scales(scale):
    # Scale 1/ε for a count at ε >= 746 (the API accepts any ε >= 1e-9): P(Z != 0) is below
    # 1e-323, so the noise is 0 and every quantile is 0. exp(-1/b) underflows to 0.0 in
    # double precision here, which the helpers must survive.
    mechanism, ref = DiscreteLaplace(scale), Reference(scale)
    assert close(mechanism.variance(), ref.variance())
    for k in (0, 1, 2):
        assert close(mechanism.tail(k), ref.tail(k)), f"tail({k})"
    for alpha in ALPHAS:
        assert ref.quantile(alpha) == 0
        assert mechanism.quantile_halfwidth(alpha) == 0


@pytest.mark.parametrize("scale", LARGE, ids=scale_id)
def test_large_scales_agree_with_closed_forms(scale):
    # Every mismatch is collected so that one failure shows the whole picture.
    mechanism, ref = DiscreteLaplace(scale), Reference(scale)
    wrong = []
    variance = ref.variance()
    if not close(mechanism.variance(), variance):
        error = mechanism.variance() / float(variance) - 1
        wrong.append(f"variance: {mechanism.variance()!r}, relative error {error:.2g}")
    b = int(scale)
    for k in (0, 1, 2, b // 2, b, 3 * b, 14 * b, 30 * b):
        if not close(mechanism.tail(k), ref.tail(k)):
            error = mechanism.tail(k) / float(ref.tail(k)) - 1
            wrong.append(f"tail({k}): relative error {error:.2g}")
    for alpha in ALPHAS:
        actual, expected = mechanism.quantile_halfwidth(alpha), ref.quantile(alpha)
        if actual != expected:
            wrong.append(f"quantile_halfwidth({alpha}) = {actual}, exact {expected}")
    assert not wrong, "; ".join(wrong)


def test_quantile_halfwidth_contract_at_a_rounded_scale():
    # A scale whose terms do not fit is rounded up; the helpers describe the noise actually
    # drawn, i.e. the effective scale.
    scale = Fraction(10**17, 12345678901234567)
    mechanism = DiscreteLaplace(scale)
    assert mechanism.effective_scale != scale
    ref = Reference(mechanism.effective_scale)
    assert close(mechanism.variance(), ref.variance())
    for alpha in ALPHAS:
        assert mechanism.quantile_halfwidth(alpha) == ref.quantile(alpha)


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.1, 1.5, float("nan")])
def test_quantile_halfwidth_rejects_alpha_outside_unit_interval(alpha):
    with pytest.raises(ValueError, match="alpha"):
        DiscreteLaplace(Fraction(1)).quantile_halfwidth(alpha)


# --- construction and calibration ---------------------------------------------------------


def test_calibrated_scale_is_sensitivity_over_epsilon():
    assert DiscreteLaplace.calibrated(1, Fraction(1)).scale == 1
    assert DiscreteLaplace.calibrated(1, Fraction(1, 10)).scale == 10
    assert DiscreteLaplace.calibrated(1 << 30, Fraction(1, 3)).scale == 3 << 30
    assert DiscreteLaplace.calibrated(3, Fraction(7, 2)).scale == Fraction(6, 7)
    mechanism = DiscreteLaplace.calibrated(1, Fraction(1, 3))
    assert isinstance(mechanism.scale, Fraction)
    assert mechanism.name == "discrete_laplace"


@pytest.mark.parametrize("sensitivity", [0, -1])
def test_calibrated_rejects_non_positive_sensitivity(sensitivity):
    with pytest.raises(ValueError, match="sensitivity"):
        DiscreteLaplace.calibrated(sensitivity, Fraction(1))


@pytest.mark.parametrize("scale", [Fraction(0), Fraction(-1), 1.0, 2, "1"])
def test_scale_must_be_a_positive_fraction(scale):
    with pytest.raises(ValueError, match="scale"):
        DiscreteLaplace(scale)


def test_effective_scale_is_never_below_scale():
    for scale in (Fraction(1), Fraction(10**17, 12345678901234567), Fraction(1, 3**40)):
        mechanism = DiscreteLaplace(scale)
        assert mechanism.effective_scale >= scale


# --- sampler_terms ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "scale",
    [Fraction(1), Fraction(10, 3), Fraction(1, 2), Fraction(MAX_SCALE_TERM),
     Fraction(1, MAX_SCALE_TERM), Fraction(MAX_SCALE_TERM - 1, MAX_SCALE_TERM - 3),
     Fraction(10**9, 3)],
    ids=str,
)  # fmt: skip
def test_sampler_terms_are_exact_when_they_fit(scale):
    assert sampler_terms(scale) == (scale.numerator, scale.denominator)


@HYPOTHESIS
@given(
    numerator=st.integers(1, 1 << 90),
    denominator=st.integers(1, 1 << 90),
)
def test_sampler_terms_round_up_to_a_close_dyadic(numerator, denominator):
    scale = Fraction(numerator, denominator)
    fits = scale.numerator <= MAX_SCALE_TERM and scale.denominator <= MAX_SCALE_TERM
    if not fits and scale > 1 << 51:
        with pytest.raises(ValueError, match="exceeds"):
            sampler_terms(scale)
        return
    t, s = sampler_terms(scale)
    assert 1 <= t <= MAX_SCALE_TERM
    assert 1 <= s <= MAX_SCALE_TERM
    if fits:
        assert Fraction(t, s) == scale
        return
    assert s & (s - 1) == 0  # a power of two
    assert Fraction(t, s) >= scale  # rounded up: never less noise than calibrated
    assert Fraction(t - 1, s) < scale  # the next multiple of 1/s, not a coarser one
    if scale >= Fraction(1, 2):
        assert Fraction(t, s) / scale - 1 <= Fraction(1, 1 << 50)


@pytest.mark.parametrize(
    "scale",
    [Fraction(1, 3) + Fraction(1, 1 << 60), Fraction(1, 3) * (1 + Fraction(1, 3**40)),
     Fraction((1 << 51) - 1, 1) + Fraction(1, 3**40), Fraction(7, 1 << 53) + Fraction(1, 1 << 60)],
    ids=["1/3+2^-60", "1/3(1+3^-40)", "2^51-1+3^-40", "7/2^53+2^-60"],
)  # fmt: skip
def test_sampler_terms_rounding_examples(scale):
    t, s = sampler_terms(scale)
    assert t <= MAX_SCALE_TERM
    assert s <= MAX_SCALE_TERM
    assert Fraction(t, s) >= scale
    assert Fraction(t - 1, s) < scale


@pytest.mark.parametrize(
    "scale",
    [Fraction(0), Fraction(-1), Fraction((1 << 52) + 1), Fraction(1 << 60, 3), Fraction(10**30)],
    ids=str,
)
def test_sampler_terms_rejects_out_of_range_scales(scale):
    with pytest.raises(ValueError, match=r"positive|exceeds"):
        sampler_terms(scale)


# --- sample -------------------------------------------------------------------------------


def test_sample_shape_dtype_and_batching():
    mechanism = DiscreteLaplace(Fraction(10, 3))
    for n in (0, 1, 5, MIN_BATCH, MIN_BATCH + 1, 1000):
        out = mechanism.sample(n, SeededRandomSource(1))
        assert out.shape == (n,)
        assert out.dtype == np.int64
    # Above SMALL_DRAWS, at least MIN_BATCH variates are always drawn: a request is the
    # prefix of a full batch drawn from the same seed (so its running time does not depend
    # on n). Up to SMALL_DRAWS, variates are drawn one at a time, with work that does not
    # depend on their values either (tests/mechanisms/test_small_draws.py).
    batch = mechanism.sample(MIN_BATCH, SeededRandomSource(9))
    for n in (SMALL_DRAWS + 1, 17, MIN_BATCH - 1):
        assert np.array_equal(mechanism.sample(n, SeededRandomSource(9)), batch[:n])
    t, s = mechanism.scale.numerator, mechanism.scale.denominator
    for n in range(1, SMALL_DRAWS + 1):
        one_by_one = discrete_laplace_small(SeededRandomSource(9), t, s, n)
        assert np.array_equal(mechanism.sample(n, SeededRandomSource(9)), one_by_one)


@pytest.mark.statistical
def test_sample_uses_the_effective_scale():
    scale = Fraction(10**17, 12345678901234567)  # b ≈ 8.1; terms too large: rounded up
    mechanism = DiscreteLaplace(scale)
    n = 50_000
    values = mechanism.sample(n, SeededRandomSource(4))
    assert values.shape == (n,)
    # mean(Z^2) estimates Var Z ≈ 2 b^2 with relative standard deviation sqrt((κ - 1)/n),
    # κ = E Z^4 / (Var Z)^2 ≈ 6 (Laplace): 1 %, so 5 standard deviations are 5 %.
    variance = float(Reference(mechanism.effective_scale).variance())
    assert abs(np.mean(values.astype(np.float64) ** 2) / variance - 1) < 0.05


@pytest.mark.statistical
def test_sample_with_the_system_csprng_fits_the_pmf():
    # This is the one check that cannot be seeded: it reads os.urandom. Its threshold is set
    # so that a correct sampler fails it with probability about 1e-12 per run, i.e. never in
    # practice, yet a scale error of 5 % still fails it (its χ² is about 500 on 40 degrees of
    # freedom, p < 1e-80).
    scale = Fraction(10, 3)
    n = 200_000
    values = DiscreteLaplace(scale).sample(n, SystemRandomSource())
    ref_q = math.exp(-3 / 10)
    norm = (1 - ref_q) / (1 + ref_q)
    top = 20  # N P(|Z| = 20) ≈ 60
    probabilities = [norm * ref_q ** abs(z) for z in range(-top + 1, top)]
    tail = ref_q**top / (1 + ref_q)  # P(Z >= top) = P(Z <= -top)
    probabilities = [tail, *probabilities, tail]
    clipped = np.clip(values, -top, top) + top
    counts = np.bincount(clipped, minlength=2 * top + 1)
    assert abs(sum(probabilities) - 1) < 1e-12
    expected = n * np.asarray(probabilities)
    assert expected.min() >= 20
    assert stats.chisquare(counts, expected).pvalue > 1e-12
