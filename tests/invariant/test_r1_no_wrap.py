"""R1: integer sums cannot wrap, whatever the data (issue 13).

A centred lattice lets uncentred values reach ``2**61`` units; the engine used to derive the
centred sum from an int64 plain sum of those values, which wrapped for a handful of rows, so
the released mean read "count >= n" off the data. Now every partial sum holds few enough
rows for its public per-row bound, and the centred sum is centred per row.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

import pandas_dp
from pandas_dp.engines.lattice_units import row_bound
from pandas_dp.engines.pandas_engine import aggregate_frame
from pandas_dp.engines.sums import INT64_EXACT_ROWS, rows_per_sum
from pandas_dp.measures.aggregates import ClippedSum, Grouping
from pandas_dp.testing import capture_noise

L, U = 2.0**60 - 2**13, 2.0**60 - 2**12  # the reviewer's bounds: accepted, tiny span
MIDDLE = (L + U) / 2


def zero_noise(priv: Any, release: Callable[[], Any]) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
        with capture_noise(priv):
            return release()


@pytest.mark.parametrize("n", [1, 4, 5, 8, 64])
def test_mean_near_two_to_the_60_is_exact_for_any_row_count(n: int) -> None:
    priv = pd.DataFrame({"x": np.full(n, MIDDLE)}).dp.protect(epsilon=200.0)
    mean = zero_noise(priv, lambda: priv.dp.mean("x", bounds=(L, U), epsilon=1.0))
    assert mean == MIDDLE  # the old wrap clipped it to L from n = 5 on


@pytest.mark.parametrize("n", [4, 5, 9])
def test_grouped_mean_near_two_to_the_60_is_exact(n: int) -> None:
    frame = pd.DataFrame({"g": [0] * n + [1] * (n + 1), "x": np.full(2 * n + 1, MIDDLE)})
    priv = frame.dp.protect(epsilon=200.0)
    table = zero_noise(
        priv,
        lambda: priv.dp.groupby("g", keys=[0, 1]).mean("x", bounds=(L, U), epsilon=1.0),
    )
    assert table.tolist() == [MIDDLE, MIDDLE]


def test_a_plain_sum_the_lattice_cannot_hold_is_refused_before_the_data(
    charges_nothing: Any,
) -> None:
    """Bounds 2**12 apart at 2**60: a row's plain sum would span 2**50 steps (public facts)."""
    priv = pd.DataFrame({"x": np.full(3, MIDDLE)}).dp.protect(epsilon=10.0)
    with charges_nothing(priv), pytest.raises(pandas_dp.DPValueError, match="bounds"):
        priv.dp.sum("x", bounds=(L, U), epsilon=1.0)


def test_centred_sum_of_huge_uncentred_values_matches_python_integers() -> None:
    offset = (1 << 50) + 3  # in units of 2**10: values near 2**60, each exact in float64
    measure = ClippedSum("x", 10, offset - 4, offset + 4, offset)
    units = [-4, 4, 3, None, 0, -1, 9, -9] * 7  # ±9 lie beyond the bounds: clipped to ±4
    values = np.array([np.nan if u is None else float((offset + u) << 10) for u in units])
    exact = sum(max(-4, min(4, u)) for u in units if u is not None)
    (total,) = aggregate_frame(pd.DataFrame({"x": values}), (measure,)).values
    assert int(total[0]) == exact
    grouping = Grouping(("g",), pd.Index([0, 1], name="g"))
    frame = pd.DataFrame({"x": values, "g": np.arange(values.size) % 2})
    (grouped,) = aggregate_frame(frame, (measure,), grouping).values
    expected = [
        sum(max(-4, min(4, u)) for i, u in enumerate(units) if u is not None and i % 2 == key)
        for key in (0, 1)
    ]
    assert list(map(int, grouped)) == expected


@pytest.mark.parametrize("bound", [1, 2**37, 2**40, 2**61, 2**62])
def test_partial_sums_are_sized_from_the_public_bound(bound: int) -> None:
    rows = rows_per_sum(bound)
    assert rows * bound < 2**63  # an int64 partial sum of this many rows cannot wrap
    assert rows <= INT64_EXACT_ROWS
    if bound <= 2**37:  # a lattice's rows: the long partial sums of before
        assert rows >= INT64_EXACT_ROWS - 1


def test_row_bound_is_read_off_the_measure() -> None:
    assert row_bound(ClippedSum("x", 0, -7, 5, 0)) == 7
    assert row_bound(ClippedSum("x", 0, 10, 20, 15)) == 5
    assert row_bound(ClippedSum("x", 0, 2**60, 2**61, 0)) == 2**61


def test_dask_mean_near_two_to_the_60_is_exact() -> None:
    import dask.dataframe as dd

    frame = pd.DataFrame({"pid": np.arange(10), "x": np.full(10, MIDDLE)})
    ddf = dd.from_pandas(frame, npartitions=3)
    priv = ddf.dp.protect(epsilon=200.0, privacy_unit="pid", max_rows_per_unit=1)
    mean = zero_noise(priv, lambda: priv.dp.mean("x", bounds=(L, U), epsilon=Fraction(1)))
    assert mean == MIDDLE
