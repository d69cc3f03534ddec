"""The interval arithmetic behind ``ci=``: deterministic checks, no sampling.

* ``ratio_interval``: for every exact sum and count inside the box the union bound gives,
  the exact ratio lies in the interval (hypothesis), and the point estimate does too.
* A count's interval is the exact noise quantile: with the noise fixture set to exactly
  ``+k`` or ``-k`` units the interval still contains the truth, at ``k + 1`` it does not.
* Shapes: scalars become ``Estimate``, Series become frames with ``_lower``/``_upper``, and
  ``agg`` puts both right after each column; counts clamp at 0, sums of non-positive values
  at 0 from above.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pandas_dp import DPError, Estimate
from pandas_dp.mechanisms.accuracy import check_confidence, ratio_interval, smallest_epsilon

BOUNDS = (0.0, 2.0)

finite = st.floats(-1e6, 1e6, allow_nan=False)
width = st.floats(0.0, 1e4, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(
    sums=finite, a=width, counts=st.floats(-50, 1e5), b=width,
    u=st.floats(0, 1), v=st.floats(0, 1),
    lo=st.floats(-1e3, 0), hi=st.floats(0, 1e3),
)  # fmt: skip
def test_ratio_interval_contains_every_ratio_in_the_box(sums, a, counts, b, u, v, lo, hi):
    lower, upper = ratio_interval(
        np.array([sums]), a, np.array([counts]), b, (lo, hi)
    )  # fmt: skip
    assert lo <= lower[0] <= upper[0] <= hi
    # Any exact (S*, N*) with |S - S*| <= a, |N - N*| <= b and N* >= 1 (a mean needs a row).
    n_low, n_high = max(counts - b, 1.0), counts + b
    if n_high < 1:  # no row is possible: the interval is the whole range
        assert (lower[0], upper[0]) == (lo, hi)
        return
    s_star = sums - a + 2 * a * u
    n_star = n_low + (n_high - n_low) * v
    ratio = min(max(s_star / n_star, lo), hi)
    slack = 1e-9 * (1 + abs(ratio))
    assert lower[0] - slack <= ratio <= upper[0] + slack
    # The released value (noisy sum over the clamped noisy count) is inside as well.
    estimate = min(max(sums / max(counts, 1.0), lo), hi)
    assert lower[0] - slack <= estimate <= upper[0] + slack


def test_ratio_interval_examples() -> None:
    # S = 100 ± 10, N = 50 ± 5: corners 90/55 and 110/45.
    lower, upper = ratio_interval(np.array([100.0]), 10, np.array([50.0]), 5, (-1e9, 1e9))
    assert (lower[0], upper[0]) == pytest.approx((90 / 55, 110 / 45))
    # A negative sum: the extremes swap corners: -110/45 and -90/55.
    lower, upper = ratio_interval(np.array([-100.0]), 10, np.array([50.0]), 5, (-1e9, 1e9))
    assert (lower[0], upper[0]) == pytest.approx((-110 / 45, -90 / 55))
    # A sum straddling 0: both ends divide by the smallest count.
    lower, upper = ratio_interval(np.array([1.0]), 10, np.array([50.0]), 5, (-1e9, 1e9))
    assert (lower[0], upper[0]) == pytest.approx((-9 / 45, 11 / 45))
    # Clipped to the bounds; an impossible count gives the whole range.
    lower, upper = ratio_interval(np.array([1e6, 5.0]), 1, np.array([2.0, -10.0]), 1, (-1, 1))
    assert list(lower) == [1.0, -1.0]
    assert list(upper) == [1.0, 1.0]


@pytest.mark.parametrize("bad", [0, 1, 1.5, -0.5, math.nan])
def test_check_confidence_rejects_values_outside_the_unit_interval(bad) -> None:
    with pytest.raises(ValueError, match="confidence"):
        check_confidence(bad)


@pytest.mark.parametrize("bad", [True, "0.95", None, Fraction(19, 20)])
def test_check_confidence_rejects_non_numbers(bad) -> None:
    with pytest.raises(TypeError, match="confidence"):
        check_confidence(bad)


def test_check_confidence_returns_alpha() -> None:
    assert check_confidence(0.95) == pytest.approx(0.05)
    assert check_confidence(np.float64(0.9)) == pytest.approx(0.1)


def test_smallest_epsilon_rounds_up_to_three_digits() -> None:
    # error(ε) = 3/ε reaches 0.7 at ε = 4.2857...: three digits up is 4.29.
    assert smallest_epsilon(lambda e: 3 / e, 0.7) == pytest.approx(4.29)
    # A step function: the smallest ε with ceil(10/ε) <= 4 is 2.5; the answer is just
    # above it (the bisection ends on the feasible side), rounded up: 2.51.
    value = smallest_epsilon(lambda e: math.ceil(10 / e), 4)
    assert math.ceil(10 / value) <= 4
    assert 2.5 <= value <= 2.51
    with pytest.raises(ValueError, match="no ε"):
        smallest_epsilon(lambda e: 1.0, 0.5)


# --- the released intervals ---------------------------------------------------------------


@pytest.fixture
def frame() -> pd.DataFrame:
    return pd.DataFrame({"x": np.linspace(0.0, 2.0, 200), "g": np.arange(200) % 4})


@pytest.mark.parametrize("gaussian", [False, True], ids=["laplace", "gaussian"])
def test_count_interval_is_the_exact_quantile(frame, protect_seeded, noise, gaussian) -> None:
    kw = {"mechanism": "gaussian", "delta": 1e-6} if gaussian else {}
    priv = protect_seeded(frame, epsilon=10.0, delta=1e-4)
    k = int(priv.dp.preview.count(epsilon=0.5, **kw).table.loc["count", "error"])
    assert k > 0
    for value, covered in ((k, True), (-k, True), (k + 1, False), (-k - 1, False)):
        with noise(priv, value=value):
            result = priv.dp.count(epsilon=0.5, ci=0.95, **kw)
        assert isinstance(result, Estimate)
        assert result.value == 200 + value
        assert (result.lower <= 200 <= result.upper) is covered
        assert result.upper - result.lower == 2 * k


def test_count_interval_clamps_at_zero(frame, protect_seeded, noise) -> None:
    priv = protect_seeded(frame, epsilon=10.0)
    with noise(priv, value=-300):
        result = priv.dp.count(epsilon=0.5, ci=0.95)
    assert result.value == -100  # the value itself is not clamped
    assert (result.lower, result.upper) == (0.0, 0.0)


def test_sum_intervals_respect_the_sign_of_the_bounds(protect_seeded, noise) -> None:
    priv = protect_seeded(pd.DataFrame({"x": [-1.0] * 10}), epsilon=10.0)
    with noise(priv, value=0):
        negative = priv.dp.sum("x", bounds=(-2.0, -0.5), epsilon=0.5, ci=0.95)
        positive = priv.dp.sum("x", bounds=(0.5, 2.0), epsilon=0.5, ci=0.95)
    assert negative.value == -10.0
    assert negative.upper == 0.0
    assert negative.lower < -10
    assert positive.value == 5.0
    assert positive.lower == 0.0
    assert positive.upper > 5


def test_mean_interval_stays_in_the_bounds_and_holds_the_value(frame, protect_seeded, noise):
    priv = protect_seeded(frame, epsilon=100.0)
    for value in (-(10**12), -500, -3, 0, 3, 500, 10**12):
        with noise(priv, value=value):  # min_count=0: even a count below 1 shows its mean
            result = priv.dp.mean("x", bounds=BOUNDS, epsilon=0.5, ci=0.9, min_count=0)
            hidden = priv.dp.mean("x", bounds=BOUNDS, epsilon=0.5, ci=0.9)
        assert BOUNDS[0] <= result.lower <= result.value <= result.upper <= BOUNDS[1]
        assert result.confidence == pytest.approx(0.9)
        # By default a mean whose noisy count is below 1 is NaN, its interval too.
        below = len(frame) + value < 1
        assert [math.isnan(v) for v in hidden[:3]] == [below] * 3


def test_interval_columns_and_order(frame, protect_seeded) -> None:
    priv = protect_seeded(frame, epsilon=10.0)
    grouped = priv.dp.groupby("g", keys=[0, 1, 2, 3])
    counts = grouped.count(epsilon=0.5, ci=0.95)
    assert list(counts.columns) == ["count", "count_lower", "count_upper"]
    assert list(counts.index) == [0, 1, 2, 3]
    sums = grouped.sum("x", bounds=BOUNDS, epsilon=0.5, ci=0.95)
    assert list(sums.columns) == ["x", "x_lower", "x_upper"]
    table = grouped.agg(
        n="count", s=("x", "sum"), m=("x", "mean"), bounds={"x": BOUNDS}, epsilon=1, ci=0.9
    )
    assert list(table.columns) == [
        "n", "n_lower", "n_upper", "s", "s_lower", "s_upper", "m", "m_lower", "m_upper",
    ]  # fmt: skip
    for name in ("n", "s", "m"):
        assert (table[f"{name}_lower"] <= table[f"{name}_upper"]).all()
    plain = grouped.count(epsilon=0.5)
    assert isinstance(plain, pd.Series)  # no ci: the plain Series
    estimate = priv.dp.count(epsilon=0.5, ci=0.95)
    assert isinstance(estimate, Estimate)
    assert isinstance(estimate.value, int)
    assert estimate._fields == ("value", "lower", "upper", "confidence")


@pytest.mark.parametrize("bad", [0, 1, 95, -0.1, True, "0.95", math.nan])
def test_release_rejects_bad_confidence_and_charges_nothing(frame, protect_seeded, bad):
    priv = protect_seeded(frame, epsilon=10.0)
    with pytest.raises(DPError):
        priv.dp.count(epsilon=0.5, ci=bad)
    with pytest.raises(DPError):
        priv.dp.groupby("g", keys=[0, 1]).count(epsilon=0.5, ci=bad)
    assert priv.dp.session.releases == ()
