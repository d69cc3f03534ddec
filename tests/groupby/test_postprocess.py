"""Free post-processing of grouped counts: clamping, fitting to a released total, rounding.

The fits are checked against solutions computed independently: the closed form of the
equality-constrained least squares, an exhaustive active-set enumeration of the
non-negative least-squares problem (the exact QP optimum for small n), ``scipy.optimize``,
and brute force over integer vectors.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import optimize

from pandas_dp.errors import DPError, DPTypeError, DPValueError
from pandas_dp.mechanisms.postprocess import fit_to_total, round_to_total

KEYS = ["a", "b", "c", "d", "e"]
SIZES = {"a": 40, "b": 3, "c": 0, "d": 17, "e": 1}


def frame() -> pd.DataFrame:
    return pd.DataFrame({"g": np.repeat(list(SIZES), list(SIZES.values())), "x": 1.0})


def exact(noise_value: int) -> np.ndarray:
    return np.array([SIZES[k] + noise_value for k in KEYS], dtype=np.float64)


# --- independent solvers -------------------------------------------------------------------


def projection_by_enumeration(v: np.ndarray, total: float) -> np.ndarray:
    """argmin ||x - v||² s.t. x >= 0, Σx = total, by trying every support set S (KKT: on S,
    x = v - θ with one multiplier θ; off S, x = 0); exact for small n."""
    best, best_cost = None, np.inf
    n = v.size
    for size in range(1, n + 1):
        for support in itertools.combinations(range(n), size):
            s = list(support)
            theta = (v[s].sum() - total) / size
            x = np.zeros(n)
            x[s] = v[s] - theta
            if (x >= -1e-12).all():
                cost = float(((x - v) ** 2).sum())
                if cost < best_cost - 1e-12:
                    best, best_cost = x, cost
    assert best is not None
    return np.maximum(best, 0.0)


def projection_by_scipy(v: np.ndarray, total: float) -> np.ndarray:
    """The same QP solved numerically (interior point / trust region)."""
    n = v.size
    result = optimize.minimize(
        lambda x: ((x - v) ** 2).sum(),
        x0=np.full(n, total / n),
        jac=lambda x: 2 * (x - v),
        hess=lambda x: 2 * np.eye(n),
        bounds=optimize.Bounds(0, np.inf),
        constraints=[optimize.LinearConstraint(np.ones((1, n)), total, total)],
        method="trust-constr",
        options={"gtol": 1e-12, "xtol": 1e-12, "maxiter": 5000},
    )
    assert result.success, result.message
    return np.asarray(result.x)


def best_integer_distance(
    values: np.ndarray, around: np.ndarray, total: int, nonnegative: bool
) -> float:
    """The least squared distance from ``values`` of integer vectors summing to ``total``,
    by brute force over a window of ±2 around ``around`` (the real-valued optimum, which
    the integer optimum lies within 1 of)."""
    ranges = [range(int(np.floor(t)) - 2, int(np.ceil(t)) + 3) for t in around]
    best = np.inf
    for z in itertools.product(*ranges):
        if sum(z) != total or (nonnegative and min(z) < 0):
            continue
        best = min(best, float(((np.array(z) - values) ** 2).sum()))
    return best


# --- through the API -----------------------------------------------------------------------


def test_nonnegative_clamps_counts(protect_seeded, noise):
    priv = protect_seeded(frame(), epsilon=5.0)
    with noise(priv, value=-5):
        counts = priv.dp.groupby("g", keys=KEYS).count(epsilon=1, nonnegative=True)
        raw = priv.dp.groupby("g", keys=KEYS).count(epsilon=1)
        hist = priv["x"].dp.histogram([0, 0.5, 1], epsilon=1, nonnegative=True)
        table = priv.dp.groupby("g", keys=KEYS).agg(
            n="count", s=("x", "sum"), bounds={"x": (0, 1)}, epsilon=1, nonnegative=True
        )
    assert counts.tolist() == [35, 0, 0, 12, 0]
    assert raw.tolist() == [35, -2, -5, 12, -4]
    assert counts.dtype == np.int64
    assert hist.tolist() == [0, 56]
    assert table["n"].tolist() == [35, 0, 0, 12, 0]
    assert (table["s"] < 0).any()  # only counts are clamped
    # Post-processing is free: five releases, five charges of ε = 1, nothing more.
    assert priv.dp.session.spent.epsilon == 4


@pytest.mark.parametrize("noise_value", [-3, 0, 4])
@pytest.mark.parametrize("total", [50, 61, 100, 7])
def test_total_fits_counts_by_least_squares(protect_seeded, noise, noise_value, total):
    priv = protect_seeded(frame(), epsilon=2.0)
    with noise(priv, value=noise_value):
        counts = priv.dp.groupby("g", keys=KEYS).count(epsilon=1, total=total)
    v = exact(noise_value)
    assert counts.dtype == np.int64
    assert counts.sum() == total
    fitted = v + (total - v.sum()) / v.size  # closed form: the gap spread evenly
    assert (np.abs(counts.to_numpy() - fitted) < 1).all()
    # No integer vector with the same sum is closer to the noisy counts.
    distance = float(((counts.to_numpy() - v) ** 2).sum())
    assert distance == pytest.approx(best_integer_distance(v, fitted, total, nonnegative=False))
    assert priv.dp.session.spent.epsilon == 1


@pytest.mark.parametrize("noise_value", [-6, 0, 2])
@pytest.mark.parametrize("total", [30, 61, 100, 0])
def test_nonnegative_total_is_a_simplex_projection(protect_seeded, noise, noise_value, total):
    priv = protect_seeded(frame(), epsilon=3.0)
    with noise(priv, value=noise_value):
        counts = priv.dp.groupby("g", keys=KEYS).count(epsilon=1, total=total, nonnegative=True)
        real = priv.dp.groupby("g", keys=KEYS).count(epsilon=1, total=total + 0.5, nonnegative=True)
    v = exact(noise_value)
    projection = projection_by_enumeration(v, total + 0.5)
    # A non-integer total gives the real-valued projection itself.
    assert real.dtype == np.float64
    np.testing.assert_allclose(real.to_numpy(), projection, rtol=0, atol=1e-9)
    np.testing.assert_allclose(real.to_numpy(), projection_by_scipy(v, total + 0.5), atol=1e-5)
    # An integer total gives non-negative integers summing to it, within 1 of the projection.
    assert counts.dtype == np.int64
    assert counts.sum() == total
    assert (counts >= 0).all()
    assert (np.abs(counts.to_numpy() - projection_by_enumeration(v, total)) < 1).all()
    assert priv.dp.session.spent.epsilon == 2


def test_total_on_value_counts_and_histograms(protect_seeded, noise):
    priv = protect_seeded(frame(), epsilon=3.0)
    with noise(priv, value=1):
        vc = priv["g"].dp.value_counts(keys=KEYS, epsilon=1, total=70)
        hist = priv["x"].dp.histogram([0, 0.5, 1, 2], epsilon=1, total=55, nonnegative=True)
        shares = priv["g"].dp.value_counts(keys=KEYS, epsilon=1, total=70, normalize=True)
    assert vc.sum() == 70
    assert vc.index[:3].tolist() == ["a", "d", "b"]  # sorted after fitting
    assert hist.tolist() == [0, 55, 0]
    # Shares of all rows: the cell of rows outside the keys (none here, noise 1) is fitted
    # with the others and keeps its share (1 of 70), as pandas divides by every row.
    assert shares.sum() == pytest.approx(69 / 70, abs=1e-12)


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"total": "100"}, DPTypeError),
        ({"total": True}, DPTypeError),
        ({"total": [100]}, DPTypeError),
        ({"total": np.nan}, DPValueError),
        ({"total": np.inf}, DPValueError),
        ({"total": -1, "nonnegative": True}, DPValueError),
        ({"nonnegative": 1}, DPTypeError),
        ({"nonnegative": "yes"}, DPTypeError),
    ],
    ids=repr,
)
def test_bad_post_processing_options_charge_nothing(
    protect_seeded, charges_nothing, options, error
):
    priv = protect_seeded(frame(), epsilon=1.0)
    with charges_nothing(priv), pytest.raises(error):
        priv.dp.groupby("g", keys=KEYS).count(epsilon=0.5, **options)
    with charges_nothing(priv), pytest.raises(DPError):
        priv["g"].dp.value_counts(keys=KEYS, epsilon=0.5, **options)
    with charges_nothing(priv), pytest.raises(DPError):
        priv["x"].dp.histogram([0, 1], epsilon=0.5, **options)


# --- the post-processing functions on their own ---------------------------------------------


def test_fits_against_independent_solvers():
    rng = np.random.default_rng(314)
    for _ in range(300):
        n = int(rng.integers(1, 7))
        v = rng.normal(5, 8, n).round(int(rng.integers(0, 3)))
        total = float(rng.choice([0.0, rng.uniform(0, 60), float(rng.integers(0, 60))]))
        fitted = fit_to_total(v, total)
        np.testing.assert_allclose(fitted, v + (total - v.sum()) / n, atol=1e-12)
        assert fitted.sum() == pytest.approx(total, abs=1e-9)
        projected = fit_to_total(v, total, nonnegative=True)
        np.testing.assert_allclose(projected, projection_by_enumeration(v, total), atol=1e-9)
        assert (projected >= 0).all()
        assert projected.sum() == pytest.approx(total, abs=1e-9)


def test_round_to_total_is_the_closest_integer_vector():
    rng = np.random.default_rng(2718)
    for _ in range(200):
        n = int(rng.integers(1, 6))
        total = int(rng.integers(0, 30))
        target = fit_to_total(rng.normal(total / n, 4, n), total, nonnegative=True)
        rounded = round_to_total(target, total)
        assert rounded.dtype == np.int64
        assert rounded.sum() == total
        assert (rounded >= 0).all()
        assert (np.abs(rounded - target) < 1).all()
        distance = float(((rounded - target) ** 2).sum())
        closest = best_integer_distance(target, target, total, nonnegative=True)
        assert distance == pytest.approx(closest, abs=1e-9)


@pytest.mark.parametrize(
    ("values", "total", "expected"),
    [
        ([1.0, 100.0, 1000.0], 1102, [2, 100, 1000]),
        ([41.0, 4.0, 1.0, 18.0, 2.0], 70, [42, 5, 2, 19, 2]),
        ([10.0, 10.0, 10.0], 31, [11, 10, 10]),
    ],
)
def test_rounding_ties_go_to_the_earlier_entries(values, total, expected):
    # Integer noisy counts fitted to an integer total all get the same fractional part, so
    # every rounding is a tie, which the documented rule gives to the earlier entries. The
    # fractional parts must be compared exactly, not after float error in v + gap/n.
    fitted = fit_to_total(np.array(values), total)
    assert round_to_total(fitted, total).tolist() == expected


def test_rounding_ties_through_the_api(protect_seeded, noise):
    data = pd.DataFrame({"g": ["a"] * 1 + ["b"] * 100 + ["c"] * 1000})
    priv = protect_seeded(data, epsilon=1.0)
    with noise(priv):
        counts = priv.dp.groupby("g", keys=["a", "b", "c"]).count(epsilon=1, total=1102)
    assert counts.tolist() == [2, 100, 1000]
