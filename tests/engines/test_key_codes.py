"""Integer columns against dense integer keys are coded by table lookup, like the hash pass."""

from __future__ import annotations

import datetime
import warnings

import numpy as np
import pandas as pd
import pytest

from pandas_dp.engines.codes import level_codes
from pandas_dp.engines.integers import integer_codes

EXTREMES = [2**63 - 1, -(2**63), 2**62, -(2**62), -1, 0]


def _hash_pass(column: pd.Series, keys: pd.Index) -> np.ndarray:
    """The general rule: position of each value among the keys, -1 when absent."""
    return np.asarray(keys.get_indexer(column.to_numpy()), dtype=np.int64)


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint16"])
@pytest.mark.parametrize(
    "keys",
    [
        [3, 1, 2],
        list(range(-50, 50, 3)),
        [0],
        list(range(1000))[::-1],
        [-(2**40), -(2**40) + 7],
        [2**63 - 1, 2**63 - 4],
        [-(2**63), -(2**63) + 2],
    ],
    ids=["small", "gaps", "one", "reversed", "far from zero", "int64 top", "int64 bottom"],
)
def test_table_codes_equal_the_hash_pass(dtype: str, keys: list[int]) -> None:
    gen = np.random.default_rng(4)  # test data only
    info = np.iinfo(dtype)
    values = gen.integers(max(info.min, -1100), min(info.max, 1100), 5000, endpoint=True)
    extremes = [e for e in EXTREMES if info.min <= e <= info.max]
    column = pd.Series(np.concatenate([values, extremes]).astype(dtype))
    index = pd.Index(np.asarray(keys, dtype=np.int64), name="k")
    expected = _hash_pass(column, index)
    if dtype == "int8" and min(keys) < -128:
        assert (expected == -1).all()
    assert integer_codes(column, index) is not None
    np.testing.assert_array_equal(level_codes(column, index), expected)


@pytest.mark.parametrize(
    ("column", "keys"),
    [
        (pd.Series([1, 2, 3]), pd.Index([0, 10**9])),  # sparse keys: a table would be huge
        (pd.Series([1.0, 2.0]), pd.Index([1, 2])),  # float column
        (pd.Series([1, 2]), pd.Index([1.0, 2.0])),  # float keys
        (pd.Series([1, 2], dtype="Int64"), pd.Index([1, 2])),  # nullable column
        (pd.Series(np.array([1, 2], dtype=np.uint64)), pd.Index([1, 2])),  # beyond int64
    ],
    ids=["sparse", "float column", "float keys", "nullable", "uint64"],
)
def test_other_columns_and_keys_take_the_hash_pass(column: pd.Series, keys: pd.Index) -> None:
    assert integer_codes(column, keys) is None
    np.testing.assert_array_equal(level_codes(column, keys), _hash_pass(column, keys))


COLUMNS_TO_COUNT = {
    "str with missing": (pd.Series(["a", "b", None, "a", "z"]), pd.Index(["a", "b", "c"])),
    "arrow str": (pd.Series(["x", "y", "x"], dtype="string[pyarrow]"), pd.Index(["x", "y"])),
    "object, mixed equal values": (
        pd.Series([1, 1.0, True, "1", -0.0, 0.0, None], dtype=object),
        pd.Index([1, 0, "1"], dtype=object),
    ),
    "object, unhashable": (pd.Series([[1], "a", {"k": 1}, "a"], dtype=object), pd.Index(["a"])),
    "categorical": (pd.Series(pd.Categorical(["u", "v", "u", None])), pd.Index(["v", "u", "w"])),
    "float with -0.0 and NaN": (pd.Series([0.0, -0.0, np.nan, 2.5]), pd.Index([0.0, 2.5])),
    "dates": (
        pd.Series(pd.to_datetime(["2020-01-01", "2020-01-02", None])),
        pd.DatetimeIndex(["2020-01-02", "2020-01-01"]),
    ),
    "two values, one key": (  # a Timestamp and a date differ, yet both match the key
        pd.Series([pd.Timestamp("2020-01-01"), datetime.date(2020, 1, 1), None], dtype=object),
        pd.DatetimeIndex(["2020-01-01"]),
    ),
    "no key present": (pd.Series(["q", "r"]), pd.Index(["a", "b"])),
    "empty": (pd.Series([], dtype=object), pd.Index(["a"])),
}


@pytest.mark.parametrize("name", list(COLUMNS_TO_COUNT))
def test_counts_per_key_equal_the_counted_codes(name: str) -> None:
    """A release of counts only skips the code per row; its counts must be those codes'."""
    from pandas_dp.engines.codes import level_counts
    from pandas_dp.engines.pandas_engine import aggregate_frame
    from pandas_dp.measures.aggregates import Grouping, Rows

    column, keys = COLUMNS_TO_COUNT[name]
    with warnings.catch_warnings():  # pandas deprecates matching dates to timestamps
        warnings.simplefilter("ignore")
        codes = level_codes(column, keys)
        counts = level_counts(column, keys)
        frame = pd.DataFrame({"g": column})
        released = aggregate_frame(frame, (Rows(), Rows()), Grouping(("g",), keys))
    expected = np.bincount(codes[codes >= 0], minlength=len(keys)).astype(np.int64)
    if column.dtype == object or isinstance(column.dtype, pd.CategoricalDtype):
        assert counts is None  # matched value by value (or by category): count the codes
    else:
        assert counts is not None
        np.testing.assert_array_equal(counts, expected)
    for values in released.values:
        np.testing.assert_array_equal(values, expected)


def test_integer_columns_keep_their_lookup_table() -> None:
    from pandas_dp.engines.codes import level_counts

    assert level_counts(pd.Series([1, 2, 2]), pd.Index([1, 2])) is None
