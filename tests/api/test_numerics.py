"""Numerics pandas gets "wrong" for DP: missing values, infinities, overflow, order, empties.

All exact results use the ``noise`` fixture (zero noise), so a release equals the clipped,
lattice-rounded aggregate that the documentation promises.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

import pandas_dp

MISSING = {
    "float64 NaN": (pd.array([1.0, 2.0, np.nan, 4.0], dtype="float64"), 7.0),
    "float64 from None": (pd.Series([1.0, 2.0, None, 4.0]).array, 7.0),
    "Int64 NA": (pd.array([1, 2, pd.NA, 4], dtype="Int64"), 7.0),
    "Float64 NA": (pd.array([1.0, 2.0, pd.NA, 4.0], dtype="Float64"), 7.0),
    "boolean NA": (pd.array([True, False, pd.NA, True], dtype="boolean"), 2.0),
    "double[pyarrow] null": (pd.array([1.0, 2.0, None, 4.0], dtype="double[pyarrow]"), 7.0),
    "int64[pyarrow] null": (pd.array([1, 2, None, 4], dtype="int64[pyarrow]"), 7.0),
    "bool[pyarrow] null": (pd.array([True, False, None, True], dtype="bool[pyarrow]"), 2.0),
}
BOUNDS = (0, 10)
FILL = 5.5


@pytest.fixture(params=MISSING.values(), ids=MISSING.keys())
def with_missing(request: pytest.FixtureRequest, protect_seeded: Callable) -> tuple[Any, float]:
    values, present_sum = request.param
    return protect_seeded(pd.DataFrame({"x": values}), epsilon=10.0), present_sum


def test_missing_values_are_skipped_by_default(with_missing: tuple, noise: Callable) -> None:
    priv, present_sum = with_missing
    with noise(priv):
        assert priv.dp.count(epsilon=0.1) == 4
        assert priv["x"].dp.count(epsilon=0.1) == 3
        assert priv.dp.sum("x", bounds=BOUNDS, epsilon=0.1) == present_sum
        assert priv["x"].dp.sum(bounds=BOUNDS, epsilon=0.1) == present_sum
        assert priv.dp.mean("x", bounds=BOUNDS, epsilon=0.1) == pytest.approx(present_sum / 3)
        assert priv["x"].dp.mean(bounds=BOUNDS, epsilon=0.1) == pytest.approx(present_sum / 3)


def test_missing_values_are_imputed_with_fillna(with_missing: tuple, noise: Callable) -> None:
    priv, present_sum = with_missing
    filled = present_sum + FILL
    with noise(priv):
        assert priv.dp.sum("x", bounds=BOUNDS, epsilon=0.1, fillna=FILL) == filled
        assert priv["x"].dp.sum(bounds=BOUNDS, epsilon=0.1, fillna=FILL) == filled
        assert priv.dp.mean("x", bounds=BOUNDS, epsilon=0.1, fillna=FILL) == pytest.approx(
            filled / 4
        )
        assert priv["x"].dp.mean(bounds=BOUNDS, epsilon=0.1, fillna=FILL) == pytest.approx(
            filled / 4
        )


def test_fillna_outside_the_bounds_is_clipped(with_missing: tuple, noise: Callable) -> None:
    priv, present_sum = with_missing
    with noise(priv):
        assert priv.dp.sum("x", bounds=BOUNDS, epsilon=0.1, fillna=1e6) == present_sum + 10
        assert priv.dp.sum("x", bounds=BOUNDS, epsilon=0.1, fillna=-1e6) == present_sum


def test_bool_columns_count_as_zero_and_one(protect_seeded: Callable, noise: Callable) -> None:
    flags = [True, False, True, True, False]
    data = pd.DataFrame({"flag": flags, "as_int": [int(f) for f in flags]})
    priv = protect_seeded(data, epsilon=10.0)
    with noise(priv):
        for bounds in [(0, 1), (-2, 3), (0.5, 1)]:
            for how in ("sum", "mean"):
                flag = getattr(priv.dp, how)("flag", bounds=bounds, epsilon=0.1)
                as_int = getattr(priv.dp, how)("as_int", bounds=bounds, epsilon=0.1)
                series = getattr(priv["flag"].dp, how)(bounds=bounds, epsilon=0.1)
                assert flag == as_int == series
        assert priv.dp.sum("flag", bounds=(0, 1), epsilon=0.1) == 3.0
        assert priv.dp.mean("flag", bounds=(0, 1), epsilon=0.1) == pytest.approx(0.6)


@pytest.mark.parametrize("path", ["frame", "series"])
def test_infinities_clip_to_the_bounds(
    protect_seeded: Callable, noise: Callable, path: str
) -> None:
    priv = protect_seeded(pd.DataFrame({"x": [np.inf, -np.inf, 3.0]}), epsilon=10.0)
    target = priv.dp if path == "frame" else priv["x"].dp
    args = ("x",) if path == "frame" else ()
    with noise(priv):
        assert target.sum(*args, bounds=BOUNDS, epsilon=0.1) == 13.0
        assert target.mean(*args, bounds=BOUNDS, epsilon=0.1) == pytest.approx(13 / 3)
        assert priv["x"].dp.count(epsilon=0.1) == 3


@pytest.mark.parametrize(
    ("values", "dtype", "bounds", "expected"),
    [
        ([2**63 - 1, -(2**63), 2**62, 7], "int64", (-100, 100), 107.0),
        ([2**64 - 1, 0, 2**63], "uint64", (0, 100), 200.0),
        ([2**63 - 1, None, -(2**63)], "Int64", (-1, 1), 0.0),
        ([2**63 - 1, -(2**63)], "int64[pyarrow]", (0, 2.5), 2.5),
        ([np.finfo(np.float64).max, -np.finfo(np.float64).max, 1.0], "float64", (0, 1e150), 1e150),
    ],
    ids=["int64", "uint64", "Int64", "int64[pyarrow]", "float max"],
)
def test_extreme_values_clip_without_wrapping(
    protect_seeded: Callable,
    noise: Callable,
    values: list,
    dtype: str,
    bounds: tuple,
    expected: float,
) -> None:
    priv = protect_seeded(pd.DataFrame({"x": pd.Series(values, dtype=dtype)}), epsilon=10.0)
    with noise(priv):
        # a step is at most 2**-29 of the larger bound, so one rounded bound is that close
        assert priv.dp.sum("x", bounds=bounds, epsilon=1.0) == pytest.approx(expected, rel=1e-8)


def test_extreme_finite_values_clip_silently(protect_seeded: Callable, noise: Callable) -> None:
    """A warning that appears only when the data holds a huge value is a release too."""
    data = pd.DataFrame({"x": [1e300, -1e300, 0.5]})
    priv = protect_seeded(data, epsilon=10.0)
    with noise(priv), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        total = priv.dp.sum("x", bounds=(0, 1), epsilon=1.0)
        mean = priv["x"].dp.mean(bounds=(0, 1), epsilon=1.0)
    # Only the warnings about the released (noisy) values may appear: they read no data.
    assert {w.category for w in caught} <= {pandas_dp.NoiseDominatedWarning}
    assert total == 1.5
    assert mean == pytest.approx(0.5)


def test_million_rows_at_the_upper_bound_sum_exactly(
    protect_seeded: Callable, noise: Callable
) -> None:
    n = 10**6
    data = pd.DataFrame({"x": np.full(n, 5000.0), "big": np.full(n, 10**18, dtype=np.int64)})
    priv = protect_seeded(data, epsilon=2.0)
    with noise(priv):
        assert priv.dp.sum("x", bounds=(0, 1000.5), epsilon=0.25) == n * 1000.5
        # 10**6 * 10**18 overflows int64; the lattice sum cannot. With ε = 1 the step is
        # 2**24 (the smallest power of two >= 10**18 / 2**36) and 10**18 rounds to
        # 59604644775 steps (documented lattice rule).
        big = priv.dp.sum("big", bounds=(0, 1e18), epsilon=1.0)
    assert round(Fraction(10**18, 2**24)) == 59604644775
    assert big == float(n * 59604644775 * 2**24)
    assert big == pytest.approx(1e24, rel=1e-9)


def test_sum_does_not_depend_on_row_order(protect_seeded: Callable, noise: Callable) -> None:
    rng = np.random.default_rng(11)
    values = np.concatenate([rng.uniform(0, 1, 100_000), [1e16, -1e16, 0.1, 0.2, 0.3]])
    priv = protect_seeded(pd.DataFrame({"x": values}), epsilon=10.0)
    exact_units = int(np.rint(np.clip(values, 0, 1) * 2**36).astype(np.int64).sum())
    orders = [priv, priv.iloc[::-1], priv.sample(frac=1.0, random_state=5)]
    orders.append(priv.sort_values("x"))
    with noise(priv):
        sums = [frame.dp.sum("x", bounds=(0, 1), epsilon=1.0) for frame in orders]
        means = [frame["x"].dp.mean(bounds=(0, 1), epsilon=1.0) for frame in orders]
    assert sums == [exact_units / 2**36] * len(orders)
    assert len(set(means)) == 1


EMPTY_QUERIES = {
    "count": lambda p: p.dp.count(epsilon=0.1),
    "series count": lambda p: p["x"].dp.count(epsilon=0.1),
    "sum": lambda p: p.dp.sum("x", bounds=(-3, 7), epsilon=0.1),
    "series sum": lambda p: p["x"].dp.sum(bounds=(-3, 7), epsilon=0.1, fillna=1),
    "mean": lambda p: p.dp.mean("x", bounds=(-3, 7), epsilon=0.1),
    "series mean": lambda p: p["x"].dp.mean(bounds=(-3, 7), epsilon=0.1, fillna=1),
}


def _empties(protect_seeded: Callable) -> list[pd.DataFrame]:
    full = protect_seeded(pd.DataFrame({"x": [1.0, 2.0, np.nan]}), epsilon=100.0, seed=3)
    empty = protect_seeded(pd.DataFrame({"x": pd.Series([], dtype="float64")}), epsilon=100.0)
    return [full[full["x"] > 100], full.iloc[:0], empty]


@pytest.mark.parametrize("name", EMPTY_QUERIES)
def test_empty_frames_release_noisy_values(protect_seeded: Callable, name: str) -> None:
    for frame in _empties(protect_seeded):
        before = len(frame.dp.session.ledger)
        results = [EMPTY_QUERIES[name](frame) for _ in range(20)]
        assert all(isinstance(r, int if "count" in name else float) for r in results)
        if "mean" in name:  # NaN where the noisy count is below 1
            assert all(math.isnan(r) or -3 <= r <= 7 for r in results)
        assert len(frame.dp.session.ledger) == before + 20


#: With zero noise: nothing counts 0, sums to 0, and has no mean (NaN, as in pandas).
ZERO_NOISE = {"count": 0, "series count": 0, "sum": 0.0, "series sum": 0.0, "mean": math.nan}
ZERO_NOISE["series mean"] = math.nan


@pytest.mark.parametrize("name", EMPTY_QUERIES)
def test_empty_frames_with_zero_noise(protect_seeded: Callable, noise: Callable, name: str) -> None:
    for frame in _empties(protect_seeded):
        with noise(frame):
            result = EMPTY_QUERIES[name](frame)
        expected = ZERO_NOISE[name]
        assert result == expected or (math.isnan(result) and math.isnan(expected))
        assert type(result) is type(expected)


@pytest.mark.parametrize("path", ["frame", "series"])
def test_mean_clamps_into_the_bounds(protect_seeded: Callable, noise: Callable, path: str) -> None:
    data = pd.DataFrame({"top": [10.0] * 4, "bottom": [0.0] * 4})
    priv = protect_seeded(data, epsilon=10.0)
    keep = {"min_count": 0}  # show the mean of a count below 1, to see the floor and clamp
    with noise(priv, value=-14):  # count 4 - 14 -> floor at 1; sum pushed far outside
        if path == "frame":
            top = priv.dp.mean("top", bounds=BOUNDS, epsilon=0.1, **keep)
            bottom = priv.dp.mean("bottom", bounds=BOUNDS, epsilon=0.1, **keep)
        else:
            top = priv["top"].dp.mean(bounds=BOUNDS, epsilon=0.1, **keep)
            bottom = priv["bottom"].dp.mean(bounds=BOUNDS, epsilon=0.1, **keep)
    assert top == 10.0
    assert bottom == 0.0


def test_noisy_means_always_lie_within_the_bounds(protect_seeded: Callable) -> None:
    priv = protect_seeded(pd.DataFrame({"x": [1.0, 9.0, 4.0]}), epsilon=1000.0, seed=7)
    results = [priv.dp.mean("x", bounds=(2, 5), epsilon=0.01, min_count=0) for _ in range(300)]
    assert all(2 <= r <= 5 for r in results)
    assert {2.0, 5.0} <= set(results)  # small ε: the clamp is exercised at both ends
