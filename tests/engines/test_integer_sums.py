"""Integer columns are summed without the float detour, with exactly the float path's units.

The float path (``lattice_values``) is the reference: it is the one the lattice tests
(``tests/mechanisms/test_lattice.py``) and the exact-aggregate tests check. A nullable
``Int64`` column of the same values always takes the float path, so comparing the two
columns' aggregates compares the two paths on identical data.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pandas_dp.engines.columns import numeric_values
from pandas_dp.engines.integers import integer_units
from pandas_dp.engines.lattice_units import lattice_values
from pandas_dp.engines.pandas_engine import aggregate_frame
from pandas_dp.measures.aggregates import ClippedSum, Grouping
from pandas_dp.mechanisms.lattice import sum_lattice

HYPOTHESIS = settings(max_examples=200, derandomize=True, database=None, deadline=None)
EDGES = [2**63 - 1, -(2**63), 2**53 + 1, -(2**53) - 1, 2**31, 0, 1, -1]
DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint32"]
KEYS = pd.Index([0, 1, 2], name="g")


def _both_paths(values: np.ndarray, measure: ClippedSum, grouped: bool) -> tuple[list, list]:
    """Aggregates of an integer column and of the same values as a nullable column."""
    groups = np.arange(values.size) % 4  # group 3 is outside the public keys: dropped
    grouping = Grouping(("g",), KEYS) if grouped else None
    fast = pd.DataFrame({"x": values, "g": groups})
    slow = fast.assign(x=pd.array(values.astype(object), dtype="Int64"))
    assert integer_units(slow["x"], measure) is None  # the reference takes the float path
    results = [aggregate_frame(frame, (measure,), grouping).values[0] for frame in (fast, slow)]
    return [list(map(int, result)) for result in results]


@HYPOTHESIS
@given(
    dtype=st.sampled_from(DTYPES),
    data=st.data(),
    bounds=st.tuples(st.integers(-(2**40), 2**40), st.integers(1, 2**41)),
    half=st.booleans(),
    epsilon=st.sampled_from([Fraction(1, 10**6), Fraction(1, 1000), Fraction(1), Fraction(50)]),
    grouped=st.booleans(),
)
def test_integer_path_rounds_like_the_float_path(dtype, data, bounds, half, epsilon, grouped):
    info = np.iinfo(dtype)
    elements = st.one_of(
        st.integers(int(info.min), int(info.max)),
        st.sampled_from([e for e in EDGES if info.min <= e <= info.max]),
    )
    values = np.array(data.draw(st.lists(elements, min_size=0, max_size=40)), dtype=dtype)
    lower = bounds[0] + (0.5 if half else 0.0)  # half-integer bounds take the float path
    upper = lower + bounds[1]
    try:
        lattice = sum_lattice(lower, upper, epsilon, centered=False)
    except ValueError:  # bounds too narrow for their magnitude: refused by the API
        assume(False)
    measure = ClippedSum("x", lattice.exponent, lattice.lower, lattice.upper)
    fast, slow = _both_paths(values, measure, grouped)
    assert fast == slow
    column = pd.Series(values)
    integer = integer_units(column, measure)
    if integer is not None:  # row by row, too: the units are the float path's units
        clipped, shift, _ = integer
        expected = lattice_values(numeric_values(column), measure)
        np.testing.assert_array_equal(clipped << shift, expected)


@pytest.mark.parametrize(
    ("bounds", "epsilon", "taken"),
    [
        ((0, 100), Fraction(1, 1000), True),
        ((-(2**20), 2**20), Fraction(1), True),
        ((0.5, 99.5), Fraction(1), False),  # bounds off the integers
        ((0, 2.0**60), Fraction(1), False),  # beyond 2**53: float64 would round rows
        ((0, 2.0**50), Fraction(1, 10**9), False),  # a lattice coarser than 1
    ],
)
def test_which_path_depends_on_the_measure_only(bounds, epsilon, taken) -> None:
    lattice = sum_lattice(*bounds, epsilon, centered=False)
    measure = ClippedSum("x", lattice.exponent, lattice.lower, lattice.upper)
    for values in (np.zeros(3, dtype=np.int64), np.array([2**62, -5, 7])):
        assert (integer_units(pd.Series(values), measure) is not None) is taken
    assert integer_units(pd.Series(np.zeros(3, dtype=np.uint64)), measure) is None
    assert integer_units(pd.Series(np.zeros(3)), measure) is None


def test_long_columns_at_the_largest_contribution_sum_exactly() -> None:
    """Rows beyond one int64 slice: the slices are added as Python integers, then scaled."""
    n = 3_000_000
    measure = ClippedSum("x", -10, -(2**51) << 10, 2**51 << 10)  # rows of 2**61 units
    values = np.full(n, 2**62, dtype=np.int64)
    (total,) = aggregate_frame(pd.DataFrame({"x": values}), (measure,)).values
    assert list(map(int, total)) == [n * 2**61]
