"""Calibrating the discrete Gaussian: the smallest σ for a target (ε, δ).

References
----------
C. Canonne, G. Kamath and T. Steinke, "The Discrete Gaussian for Differential Privacy",
NeurIPS 2020: Theorem 7 (the exact (ε, δ) curve of the discrete Gaussian) and Corollary 13
(zCDP to (ε, δ)). B. Balle and Y.-X. Wang, "Improving the Gaussian Mechanism for
Differential Privacy: Analytical Calibration and Optimal Denoising", ICML 2018.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from pandas_dp.budget import zcdp_to_epsilon

#: Largest σ (in lattice units) the sampler supports: keeps ``2σ²`` below ``2**62``.
MAX_SIGMA = 2.0**30


def _log_normal_tail(x: float) -> float:
    """Log P(N(0,1) > x), accurate far into the tail."""
    from scipy import special  # lazy: scipy is not loaded by ``import pandas_dp``

    return float(special.log_ndtr(-x))


def analytic_gaussian_delta(sigma: float, epsilon: float, sensitivity: float) -> float:
    """δ(ε) of the continuous Gaussian mechanism (Balle & Wang 2018, Theorem 8).

    ``Φ(Δ/(2σ) - εσ/Δ) - e^ε Φ(-Δ/(2σ) - εσ/Δ)``, computed in log space.
    """
    u = sensitivity / (2 * sigma)
    v = epsilon * sigma / sensitivity
    first = _log_normal_tail(v - u)
    second = epsilon + _log_normal_tail(u + v)
    if second >= first:
        return 0.0
    return float(math.exp(first) * -math.expm1(second - first))


def _discrete_tail_bounds(k: float, sigma2: float) -> tuple[float, float]:
    """Lower and upper bounds on ``P(Y > k)`` for the discrete Gaussian, ``k >= 0``.

    With ``f(y) = exp(-y²/2σ²)`` decreasing on ``[0, ∞)`` and ``m = floor(k) + 1``:
    ``∫_m^∞ f <= Σ_{y>=m} f(y) <= f(m) + ∫_m^∞ f``. The normaliser
    ``Σ_y f(y) = σ√(2π) θ`` with ``1 <= θ <= 1 + 3 exp(-2π²σ²)`` (Poisson summation).
    """
    sigma = math.sqrt(sigma2)
    m = math.floor(k) + 1
    integral = sigma * math.sqrt(2 * math.pi) * math.exp(_log_normal_tail(m / sigma))
    norm = sigma * math.sqrt(2 * math.pi)
    theta = 1 + 3 * math.exp(-2 * math.pi**2 * sigma2)
    head = math.exp(-(m * m) / (2 * sigma2))
    return integral / (norm * theta), (integral + head) / norm


def _discrete_tails_exact(points: tuple[float, float], sigma2: float) -> tuple[float, float]:
    """``P(Y > k)`` for each of two points by direct summation of the pmf (σ <= 4096).

    The normaliser comes from Poisson summation, ``Σ_y exp(-y²/2σ²) = σ√(2π) Σ_k
    exp(-2π²σ²k²)`` (four terms reach double precision for σ >= 1; smaller σ sums the pmf
    itself), and each tail sums only its own ``≈ 40σ`` terms, vectorised.
    """
    sigma = math.sqrt(sigma2)
    reach = int(40 * sigma) + 2  # exp(-800) is below the smallest double
    if sigma < 1:
        y = np.arange(-reach, reach + 1, dtype=np.float64)
        norm = float(np.sum(np.exp(-(y * y) / (2 * sigma2))))
    else:
        theta = 1 + 2 * sum(math.exp(-2 * math.pi**2 * sigma2 * k * k) for k in range(1, 5))
        norm = sigma * math.sqrt(2 * math.pi) * theta
    tails = []
    for k in points:
        start = max(math.floor(k) + 1, -reach)
        if start > reach:
            tails.append(0.0)
            continue
        y = np.arange(start, reach + 1, dtype=np.float64)
        tails.append(float(np.sum(np.exp(-(y * y) / (2 * sigma2)))) / norm)
    return tails[0], tails[1]


def _tail_lower_bound(m: int, sigma: float) -> float:
    """A lower bound on ``Σ_{y >= m} exp(-y²/2σ²)`` (unnormalised), ``m >= 0``.

    ``f`` is decreasing, so the sum is at least ``∫_m^∞ f``; where ``f`` is also convex
    (``m >= σ``) the trapezoid rule over-estimates that integral, so the sum is at least
    ``∫_m^∞ f + f(m)/2``, short of the sum by at most ``|f'(m)|/12``.
    """
    integral = sigma * math.sqrt(2 * math.pi) * math.exp(_log_normal_tail(m / sigma))
    if m < sigma:
        return integral
    return integral + math.exp(-(m * m) / (2 * sigma * sigma)) / 2


def _delta_tight(sigma2: float, epsilon: float, sensitivity: int) -> float:
    """An upper bound on CKS20 Theorem 7's δ, tight for large σ (no cancellation lost).

    ``δ = P(a < Y <= b) - (e^ε - 1) P(Y > b)`` with ``a = εσ²/Δ - Δ/2`` and ``b = a + Δ``:
    the first term is summed exactly (at most ``Δ + 1`` points), the second is bounded from
    below (:func:`_tail_lower_bound`), and the normaliser from below by ``σ√(2π)``
    (Poisson summation: ``Σ_y exp(-y²/2σ²) = σ√(2π)(1 + 2 Σ_k exp(-2π²σ²k²))``).
    """
    sigma = math.sqrt(sigma2)
    centre = epsilon * sigma2 / sensitivity
    low, high = centre - sensitivity / 2, centre + sensitivity / 2
    first = max(math.floor(low) + 1, 0)
    last = math.floor(high)
    y = np.arange(first, last + 1, dtype=np.float64)
    middle = float(np.sum(np.exp(-(y * y) / (2 * sigma2))))
    tail = _tail_lower_bound(last + 1, sigma)
    norm = sigma * math.sqrt(2 * math.pi)
    return max(0.0, (middle - math.expm1(epsilon) * tail) / norm)


def discrete_gaussian_delta(sigma2: float, epsilon: float, sensitivity: int) -> float:
    """δ(ε) of the discrete Gaussian with integer L2 ``sensitivity`` (an upper bound).

    CKS20 Theorem 7: ``δ = P(Y > εσ²/Δ - Δ/2) - e^ε P(Y > εσ²/Δ + Δ/2)``. For ``σ <= 4096``
    the tails are summed directly; above, :func:`_delta_tight` sums the difference of the
    two tails directly and bounds the rest from the safe side (at most ``10⁻⁴`` relative
    above the exact value in the tests), so the calibrated σ is the smallest one up to the
    bisection's tolerance and moves monotonically with ε. For a sensitivity above 10⁶ (too
    many points between the tails) the looser bounds of :func:`_discrete_tail_bounds` serve.
    """
    centre = epsilon * sigma2 / sensitivity
    low_point, high_point = centre - sensitivity / 2, centre + sensitivity / 2
    if sigma2 <= 4096.0**2:
        first, second = _discrete_tails_exact((low_point, high_point), sigma2)
        return max(0.0, first - _times_exp(second, epsilon))
    if low_point < 0:
        return 1.0  # the bounds below need a non-negative point; such σ is far too small
    if sensitivity <= 10**6:
        return _delta_tight(sigma2, epsilon, sensitivity)
    _, upper_first = _discrete_tail_bounds(low_point, sigma2)
    lower_second, _ = _discrete_tail_bounds(high_point, sigma2)
    return max(0.0, upper_first - _times_exp(lower_second, epsilon))


def _times_exp(p: float, epsilon: float) -> float:
    """``p * e**epsilon`` without overflowing for large ε (0 when ``p`` is 0)."""
    return 0.0 if p <= 0.0 else math.exp(min(epsilon + math.log(p), 700.0))


def analytic_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """σ of the continuous analytic Gaussian (Balle & Wang 2018), by bisection."""
    low, high = 1e-6 * sensitivity, sensitivity
    while analytic_gaussian_delta(high, epsilon, sensitivity) > delta:
        low, high = high, high * 2
    for _ in range(100):
        mid = (low + high) / 2
        low, high = (
            (low, mid)
            if analytic_gaussian_delta(mid, epsilon, sensitivity) <= delta
            else (mid, high)
        )
    return high


@functools.lru_cache(maxsize=1024)
def calibrate_sigma(epsilon: float, delta: float, sensitivity: int) -> float:
    """Smallest σ (up to 1e-6 relative) with discrete-Gaussian δ(ε) at most ``delta``.

    Starts from the analytic continuous Gaussian of Balle & Wang (valid for all ε > 0, unlike
    the classical ``sqrt(2 ln(1.25/δ)) Δ/ε``), then bisects on the rigorous discrete bound.
    """
    if not (epsilon > 0 and 0 < delta < 1 and sensitivity >= 1):
        raise ValueError(f"need ε > 0, 0 < δ < 1, sensitivity >= 1; got {epsilon}, {delta}")

    def ok(sigma: float) -> bool:
        return discrete_gaussian_delta(sigma * sigma, epsilon, sensitivity) <= delta

    guess = analytic_sigma(epsilon, delta, sensitivity)
    low, high = 0.5 * guess, 1.05 * guess
    while not ok(high):
        low, high = high, high * 1.5
        if high > MAX_SIGMA:
            raise ValueError(f"(ε={epsilon}, δ={delta}) needs σ beyond the sampler's range")
    while ok(low) and low > 1e-9:
        low, high = low / 2, low
    while high - low > 1e-6 * high:
        mid = (low + high) / 2
        low, high = (low, mid) if ok(mid) else (mid, high)
    if high > MAX_SIGMA:  # the first guess may already lie beyond the range
        raise ValueError(f"(ε={epsilon}, δ={delta}) needs σ beyond the sampler's range")
    return high


@functools.lru_cache(maxsize=1024)
def calibrate_sigma_zcdp(epsilon: float, delta: float, l2_squared: int) -> float:
    """Smallest σ whose ρ = ``l2_squared / (2σ²)`` converts to (ε, δ)-DP (CKS20, Cor. 13).

    Used when one unit can change several coordinates (a multivariate discrete Gaussian is
    ``‖Δ‖²/(2σ²)``-zCDP, CKS20 Thm. 14), where the one-dimensional curve does not apply.
    """
    low, high = 1e-12, 1e6
    for _ in range(200):  # bisection on ρ: the conversion grows with ρ
        mid = (low + high) / 2
        low, high = (mid, high) if zcdp_to_epsilon(mid, delta) <= epsilon else (low, mid)
    return math.sqrt(l2_squared / (2 * low))
