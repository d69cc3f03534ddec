"""Every new statistic on an empty frame, a single row and a column with no values: no
exception, no 0/0, and every value inside its documented range, or NaN exactly where a
ratio's noisy count is below 1 (``min_count``, as pandas gives NaN for an empty group); with
``min_count=0`` every value is shown and in range. Both with zero noise (the exact pre-noise
path) and with real seeded noise (where the post-processing clamps)."""

from __future__ import annotations

import contextlib
import math

import numpy as np
import pandas as pd
import pytest

from pandas_dp.errors import DPValueError
from pandas_dp.local import estimate_proportion

BOUNDS = (0.0, 10.0)
REACH = 5.0
CODES = ["a", "b", "c"]

FRAMES = {
    "empty": ([], []),
    "one row": ([7.25], ["b"]),
    "no values": ([math.nan] * 3, [None] * 3),
}


@pytest.fixture(params=list(FRAMES), ids=list(FRAMES))
def frame(request) -> pd.DataFrame:
    values, codes = FRAMES[request.param]
    return pd.DataFrame(
        {
            "x": pd.Series(values, dtype="float64"),
            "n": pd.Series([3] * len(values), dtype="int64"),
            "code": pd.Series(codes, dtype=object),
            "g": pd.Series(["k"] * len(values), dtype=object),
        }
    )


@pytest.fixture(params=["zero noise", "seeded noise"])
def released(request, frame, protect_seeded, noise):
    """``(priv, context)``: the protected frame and a context manager for the noise."""
    priv = protect_seeded(frame, seed=13, epsilon=1000)
    if request.param == "zero noise":
        return priv, lambda: noise(priv, value=0)
    return priv, contextlib.nullcontext


def in_bounds(value: float, lower: float = BOUNDS[0], upper: float = BOUNDS[1]) -> bool:
    return math.isfinite(value) and lower <= value <= upper


def in_bounds_or_hidden(value: float, count: float, lower: float, upper: float) -> bool:
    """A ratio: NaN exactly when its noisy count is below 1, else in its range."""
    return math.isnan(value) if count < 1 else in_bounds(value, lower, upper)


#: Show every ratio, whatever its noisy count, to check the arithmetic's range.
KEEP = {"min_count": 0}


def test_spreads(released):
    priv, context = released
    for _ in range(10):
        with context():
            var = priv.dp.var("x", bounds=BOUNDS, epsilon=0.5, **KEEP)
            std = priv["x"].dp.std(bounds=BOUNDS, epsilon=0.5, ddof=0, **KEEP)
            estimate = priv.dp.var("x", bounds=BOUNDS, epsilon=0.5, ci=0.95, **KEEP)
            count_var = priv.dp.var("n", bounds=(0, 5), epsilon=0.5, **KEEP)
        assert in_bounds(var, 0.0, REACH**2)
        assert in_bounds(std, 0.0, REACH)
        assert in_bounds(count_var, 0.0, 2.5**2)
        assert all(in_bounds(v, 0.0, REACH**2) for v in estimate[:3])
        assert estimate.lower <= estimate.value <= estimate.upper


def test_quantiles(released):
    priv, context = released
    for _ in range(10):
        with context():
            median = priv["x"].dp.median(bounds=BOUNDS, epsilon=0.5)
            levels = priv.dp.quantile("x", [0, 0.5, 1], bounds=BOUNDS, epsilon=0.5, cells=16)
        assert in_bounds(median)
        assert all(in_bounds(v) for v in levels)
        assert list(levels.index) == [0.0, 0.5, 1.0]


def test_zero_noise_values_of_one_row(protect_seeded, noise):
    priv = protect_seeded(pd.DataFrame({"x": [7.25]}), epsilon=10)
    with noise(priv, value=0):
        assert priv.dp.var("x", bounds=BOUNDS, epsilon=1.0) == 0.0  # N - ddof = 0 -> 1
        assert priv.dp.std("x", bounds=BOUNDS, epsilon=1.0, ddof=0) == 0.0
        levels = priv.dp.quantile("x", [0, 1], bounds=BOUNDS, epsilon=1.0, cells=40)
        table = priv.dp.describe(bounds={"x": BOUNDS}, epsilon=1.0, cells=40)
    # q = 0: an edge with no value below it (0, 0.25, ..., 7.25); q = 1: one with no value
    # above it, 7.25 included (its rank interval [0, 1] holds q n = 1).
    assert levels[0.0] <= 7.25 <= levels[1.0]
    assert table["x"].tolist()[:3] == [1.0, 7.25, 0.0]


def test_selections(released):
    priv, context = released
    for _ in range(10):
        with context():
            mode = priv.dp.mode("code", candidates=CODES, epsilon=0.5)
            top = priv["code"].dp.top_k(3, candidates=CODES, epsilon=0.5)
        assert mode in CODES
        assert sorted(top) == CODES


def test_describe(released):
    priv, context = released
    with context():
        table = priv.dp.describe(bounds={"x": BOUNDS, "n": (0, 5)}, epsilon=1.0)
    assert table.shape == (6, 2)
    for column, (lower, upper) in {"x": BOUNDS, "n": (0, 5)}.items():
        values = table[column]
        assert float(values["count"]).is_integer()
        count = values["count"]
        assert in_bounds_or_hidden(values["mean"], count, lower, upper)
        assert in_bounds_or_hidden(values["std"], count, 0.0, (upper - lower) / 2)
        # Percentiles share the mean's count: hidden with it, as pandas shows NaN when empty.
        for row in ("25%", "50%", "75%"):
            assert in_bounds_or_hidden(values[row], count, lower, upper)


def test_grouped(released):
    priv, context = released
    with context():
        table = priv.dp.groupby("g", keys=["k", "other"]).agg(
            med=("x", "median"), v=("x", "var"), s=("x", "std"), n=("x", "count"),
            bounds={"x": BOUNDS}, epsilon=1,
        )  # fmt: skip
    assert list(table.index) == ["k", "other"]
    for med, n in zip(table["med"], table["n"], strict=True):  # shares the spreads' count
        assert in_bounds_or_hidden(med, n, *BOUNDS)
    for v, s, n in zip(table["v"], table["s"], table["n"], strict=True):
        assert in_bounds_or_hidden(v, n, 0.0, REACH**2)
        assert in_bounds_or_hidden(s, n, 0.0, REACH)


@pytest.mark.parametrize("rows", [0, 1])
def test_randomized_response(rows, protect_seeded):
    answers = pd.Series([True] * rows, dtype=bool, name="a")
    noisy = answers.dp.randomized_response(epsilon=2.0)
    assert len(noisy) == rows
    estimate = estimate_proportion(noisy)
    assert all(math.isfinite(v) for v in estimate[:3])
    assert 0.0 <= estimate.lower <= estimate.upper <= 1.0
    codes = pd.Series(["b"] * rows, dtype=object, name="c")
    table = estimate_proportion(codes.dp.randomized_response(epsilon=2.0, categories=CODES))
    assert np.isfinite(table.to_numpy()).all()
    assert ((table["lower"] >= 0) & (table["upper"] <= 1)).all()
    priv = protect_seeded(answers.to_frame(), epsilon=5)
    with pytest.raises(DPValueError):  # refused whatever the data, even with no rows
        priv["a"].dp.randomized_response(epsilon=1.0)
    assert priv.dp.session.spent.epsilon == 0
