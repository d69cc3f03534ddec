"""Confidence intervals and accuracy planning from public parameters only.

Every interval here is a statement about the noise, whose law is public: given the noise
scale and the confidence level, how far the released value can be from the exact aggregate.
They never touch the data, so computing them costs no budget.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]


class Noise(Protocol):
    """What the accuracy maths needs from a noise distribution (discrete Laplace/Gaussian)."""

    name: str

    def quantile_halfwidth(self, alpha: float) -> int:
        """Smallest integer ``k`` with ``P(|Z| > k) <= alpha``."""

    def variance(self) -> float:
        """The variance of one variate."""


def check_confidence(confidence: float) -> float:
    """Validate a confidence level in (0, 1) and return ``alpha = 1 - confidence``."""
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        raise TypeError(f"confidence must be a number in (0, 1), got {type(confidence).__name__}")
    if not 0.0 < float(confidence) < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    return 1.0 - float(confidence)


def ratio_interval(
    sums: F64,
    sum_halfwidth: float,
    counts: F64,
    count_halfwidth: float,
    bounds: tuple[float, float],
) -> tuple[F64, F64]:
    """Conservative interval for ``S*/N*`` given ``|S - S*| <= a`` and ``|N - N*| <= b``.

    Parameters
    ----------
    sums, counts : ndarray
        Released (noisy) centred sums, in the column's units, and counts.
    sum_halfwidth, count_halfwidth : float
        ``a`` and ``b``: each holds with probability at least ``1 - α/2``, so both hold
        with probability at least ``1 - α`` (union bound).
    bounds : (float, float)
        The range ``S*/N*`` can take (``±(U - L)/2`` for centred values).

    Returns
    -------
    (lower, upper) : ndarrays

    Notes
    -----
    On that event ``S* ∈ [S - a, S + a]`` and ``N* ∈ [max(N - b, 1), N + b]``; the ratio is
    monotone in each variable on that box, so its extremes sit at the corners. When
    ``N + b < 1`` the data can have no row at all and the interval is the whole range.
    """
    low_n = np.maximum(counts - count_halfwidth, 1.0)
    high_n = np.maximum(counts + count_halfwidth, 1.0)
    corners = np.stack(
        [(sums + ds) / n for ds in (-sum_halfwidth, sum_halfwidth) for n in (low_n, high_n)]
    )
    lower = np.clip(corners.min(axis=0), *bounds)
    upper = np.clip(corners.max(axis=0), *bounds)
    empty = counts + count_halfwidth < 1.0
    lower[empty], upper[empty] = bounds
    return lower, upper


def smallest_epsilon(error_at: Callable[[float], float], target: float) -> float:
    """Smallest ε (to 3 significant digits, rounded up) with ``error_at(ε) <= target``.

    ``error_at`` must decrease with ε. Searches ``[1e-9, 1e6]`` in log space.
    """
    if error_at(1e6) > target:
        raise ValueError(f"no ε up to 1e6 reaches an error of {target:g}")
    low, high = math.log(1e-9), math.log(1e6)
    for _ in range(100):
        mid = (low + high) / 2
        low, high = (low, mid) if error_at(math.exp(mid)) <= target else (mid, high)
    value = math.exp(high)
    digits = 2 - math.floor(math.log10(value))
    rounded = math.ceil(value * 10**digits) / 10**digits
    return rounded if error_at(rounded) <= target else value


def variance_interval(
    count: F64, count_halfwidth: float,
    centred_sum: F64, sum_halfwidth: float,
    squares: F64, squares_halfwidth: float,
    reach: float, ddof: int,
) -> tuple[F64, F64]:  # fmt: skip
    """Conservative interval for ``(S2 - S1²/N) / (N - ddof)`` by interval arithmetic.

    Each released moment is within its half-width with probability ``1 - α/3`` (union
    bound). The numerator decreases in ``S1²`` and increases in ``S2`` and ``N``; the
    denominator is positive; the result is clamped to ``[0, reach**2]``.
    """
    n_low = np.maximum(count - count_halfwidth, 1.0)
    n_high = np.maximum(count + count_halfwidth, 1.0)
    s1_low, s1_high = centred_sum - sum_halfwidth, centred_sum + sum_halfwidth
    s1_sq_max = np.maximum(s1_low**2, s1_high**2)
    s1_sq_min = np.where((s1_low <= 0) & (s1_high >= 0), 0.0, np.minimum(s1_low**2, s1_high**2))
    num_low = squares - squares_halfwidth - s1_sq_max / n_low
    num_high = squares + squares_halfwidth - s1_sq_min / n_high
    den_low = np.maximum(n_low - ddof, 1.0)
    den_high = np.maximum(n_high - ddof, 1.0)
    lower = np.where(num_low >= 0, num_low / den_high, num_low / den_low)
    upper = np.where(num_high >= 0, num_high / den_low, num_high / den_high)
    top = reach * reach
    return np.clip(lower, 0.0, top), np.clip(upper, 0.0, top)


def _laplace_at_least(k: npt.NDArray[np.float64], log_q: float) -> F64:
    """``P(Z >= k)`` for discrete Laplace ``Z`` with ``P(Z = z) ∝ q**|z|``, integer ``k``."""
    q = math.exp(log_q)
    upper = np.exp(np.maximum(k, 1.0) * log_q) / (1.0 + q)
    lower = 1.0 - np.exp(np.maximum(1.0 - k, 1.0) * log_q) / (1.0 + q)
    return np.where(k >= 1, upper, lower)


#: Terms summed at most when convolving two discrete Laplace laws (beyond: union bound).
_MAX_TERMS = 2_000_000


def combined_laplace_halfwidth(
    scale_x: float, step_x: float, scale_y: float, step_y: float, alpha: float
) -> float | None:
    """Smallest ``t`` with ``P(|step_x X + step_y Y| > t) <= alpha``, up to 1e-9 relative.

    ``X`` and ``Y`` are independent discrete Laplace variates of the given scales (in their
    own integer units), as in a statistic derived from two noisy measurements (a sum from a
    centred sum and a count). The law of ``Y`` is summed term by term, up to the point
    beyond which it holds less than ``alpha × 10⁻⁶`` (added to the tail, so the result stays
    an upper bound); ``X``'s tails are exact. Returns None when ``Y`` would need more than
    two million terms (the caller falls back to a union bound).
    """
    if step_y == 0.0:
        return None
    if scale_y > scale_x:  # sum over the law with fewer terms
        scale_x, step_x, scale_y, step_y = scale_y, step_y, scale_x, step_x
    log_qx, log_qy = -1.0 / scale_x, -1.0 / scale_y
    reach = math.ceil(scale_y * math.log(2e6 / alpha)) + 1
    if 2 * reach + 1 > _MAX_TERMS:
        return None
    qy = math.exp(log_qy)
    y = np.arange(-reach, reach + 1, dtype=np.float64)
    weights = (1.0 - qy) / (1.0 + qy) * np.exp(np.abs(y) * log_qy)
    cut = 2.0 * math.exp((reach + 1) * log_qy) / (1.0 + qy)  # P(|Y| > reach)
    shift = abs(step_y) * y
    a = abs(step_x)

    def exceed(t: float) -> float:
        above = _laplace_at_least(np.floor((t - shift) / a) + 1.0, log_qx)
        below = _laplace_at_least(1.0 - np.ceil((-t - shift) / a), log_qx)
        return float(np.dot(weights, above + below)) + cut + 1e-12

    low, high = 0.0, a * (scale_x * math.log(4 / alpha) + 1) + abs(step_y) * reach
    while exceed(high) > alpha:  # the start is a union bound; this is a safety net
        high *= 2
    while high - low > 1e-9 * high:
        mid = (low + high) / 2
        low, high = (low, mid) if exceed(mid) <= alpha else (mid, high)
    return high
