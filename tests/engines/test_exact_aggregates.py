"""The pandas engine's exact integer aggregates, checked against Python integer arithmetic.

Each value contributes ``rint(clip(x / 2**k, lower, upper)) - offset`` lattice units (missing:
0 or the clipped ``fill``); sums are exact whatever the magnitude, sign or row order, and
grouped sums report exactly the public keys.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from pandas_dp.engines import PandasEngine
from pandas_dp.measures.aggregates import ClippedSum, Grouping, NonNull, Rows

ENGINE = PandasEngine()


def _units(value: float, measure: ClippedSum) -> int:
    """The documented contribution of one value, computed with Python numbers."""
    if math.isnan(value):
        if measure.fill is None:
            return 0
        value = measure.fill
    if math.isinf(value):
        scaled = Fraction(measure.upper if value > 0 else measure.lower)
    else:
        scaled = Fraction(value) / Fraction(2) ** measure.exponent
    return round(min(max(scaled, measure.lower), measure.upper)) - measure.offset


def _aggregate(frame: pd.DataFrame, *measures: object, grouping: Grouping | None = None) -> list:
    return [list(map(int, a)) for a in ENGINE.aggregate(frame, measures, grouping).values]


@pytest.mark.parametrize(
    "measure",
    [
        ClippedSum("x", 0, -100, 100),
        ClippedSum("x", -3, -(2**31), 2**31),
        ClippedSum("x", 10, 0, 2**20, offset=2**19),
        ClippedSum("x", -1, -7, 9, fill=2.25),
        ClippedSum("x", 2, -5, 5, offset=-1, fill=-1e9),
    ],
    ids=["plain", "fine", "centred", "fill", "fill clipped"],
)
def test_clipped_sum_matches_python_integers(measure: ClippedSum) -> None:
    rng = np.random.default_rng(5)
    values = np.concatenate(
        [rng.normal(0, 1e3, 2000), [np.nan, np.inf, -np.inf, 0.5, 1.5, 2.5, -0.5, 1e308]]
    )
    frame = pd.DataFrame({"x": values})
    with np.errstate(over="ignore"):  # see test_numerics: warnings are checked at the API
        (total,) = _aggregate(frame, measure)
    assert total == [sum(_units(v, measure) for v in values)]


def test_extreme_integers_do_not_wrap() -> None:
    frame = pd.DataFrame({"x": np.array([2**63 - 1, -(2**63), 2**62, -5], dtype=np.int64)})
    measure = ClippedSum("x", 0, -(2**31), 2**31)
    assert _aggregate(frame, measure) == [[2**31 - 2**31 + 2**31 - 5]]


def test_many_rows_at_the_largest_contribution_sum_exactly() -> None:
    n = 2_000_000
    frame = pd.DataFrame({"x": np.full(n, 1e300)})
    measure = ClippedSum("x", 200, 0, 2**31)
    assert _aggregate(frame, measure) == [[n * 2**31]]  # > 2**52: beyond float64 exactness


def test_sum_is_independent_of_row_order() -> None:
    rng = np.random.default_rng(8)
    values = rng.uniform(-1, 1, 50_000) * 10.0 ** rng.integers(-8, 8, 50_000)
    measure = ClippedSum("x", -20, -(2**23), 2**23)
    frames = [pd.DataFrame({"x": v}) for v in (values, values[::-1], rng.permutation(values))]
    totals = {tuple(_aggregate(frame, measure)[0]) for frame in frames}
    assert len(totals) == 1


def test_counts_of_rows_and_non_missing_values() -> None:
    frame = pd.DataFrame({"x": pd.array([1.0, None, 3.0, None], dtype="Float64")})
    assert _aggregate(frame, Rows(), NonNull("x")) == [[4], [2]]
    assert _aggregate(frame.iloc[:0], Rows(), NonNull("x")) == [[0], [0]]


def test_empty_frame_sums_to_zero() -> None:
    frame = pd.DataFrame({"x": pd.Series([], dtype="float64")})
    assert _aggregate(frame, ClippedSum("x", 0, -5, 5, offset=1, fill=3.0)) == [[0]]


def test_grouped_aggregates_report_exactly_the_public_keys() -> None:
    frame = pd.DataFrame(
        {
            "g": ["a", "b", "a", "zz-not-a-key", None, "c", "a"],
            "x": [2**40, -(2**40), -3.0, 100.0, 7.0, np.nan, 1.0],
        }
    )
    keys = pd.Index(["c", "a", "b", "d"])  # "d" has no rows; "zz-not-a-key" is dropped
    measure = ClippedSum("x", 0, -(2**31), 2**31)
    rows, present, total = _aggregate(
        frame, Rows(), NonNull("x"), measure, grouping=Grouping(("g",), keys)
    )
    assert rows == [1, 3, 1, 0]
    assert present == [0, 3, 1, 0]
    assert total == [0, 2**31 - 3 + 1, -(2**31), 0]


def test_grouped_sums_of_large_negative_values_are_exact() -> None:
    rng = np.random.default_rng(9)
    n = 100_000
    keys = pd.Index(range(7))
    frame = pd.DataFrame(
        {"g": rng.integers(-1, 8, n), "x": rng.integers(-(2**31), 2**31, n).astype(float)}
    )
    measure = ClippedSum("x", 0, -(2**31), 2**31, offset=-12345)
    (total,) = _aggregate(frame, measure, grouping=Grouping(("g",), keys))
    expected = [0] * len(keys)
    for g, x in zip(frame["g"], frame["x"], strict=True):
        if 0 <= g < len(keys):
            expected[g] += _units(x, measure)
    assert total == expected


def test_grouping_on_two_columns() -> None:
    frame = pd.DataFrame({"a": [1, 1, 2, 2, 3], "b": ["x", "y", "x", "x", "x"], "v": 1.0})
    keys = pd.MultiIndex.from_tuples([(2, "x"), (1, "y"), (9, "x"), (1, "x")])
    (rows,) = _aggregate(frame, Rows(), grouping=Grouping(("a", "b"), keys))
    assert rows == [2, 1, 0, 1]


def test_a_frame_is_freed_as_soon_as_it_is_aggregated():
    """No reference cycle keeps the frame alive after aggregation (a Dask worker would
    otherwise hold several partitions until the garbage collector ran). Every kind of
    measure, grouped, with the centred sum that reuses the plain one."""
    import gc
    import weakref

    from pandas_dp.engines.pandas_engine import aggregate_frame
    from pandas_dp.measures.aggregates import ClippedSquares

    frame = pd.DataFrame({"g": ["a", "b", "a"], "x": [1.0, 2.0, None]})
    alive = weakref.ref(frame)
    measures = (Rows(), NonNull("x"), ClippedSum("x", 0, 0, 8), ClippedSum("x", 0, 0, 8, offset=4),
                ClippedSquares("x", 0, 4.0, 0.0, 8.0, 64))  # fmt: skip
    gc.disable()
    try:
        aggregate_frame(frame, measures, Grouping(("g",), pd.Index(["a", "b"])))
        del frame
        assert alive() is None
    finally:
        gc.enable()
