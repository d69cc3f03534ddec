"""R4 (issue 13): post-processing after the noise is drawn is total: it cannot fail.

``count(nonnegative=True, total=1e-300)`` used to succeed only when the noisy count was 0 and
raise ``IndexError`` otherwise, uncharged: retried, it read the data. ``round_to_total``
raised ``ValueError`` for large totals. Both now answer for every input; and whatever
still fails after the check is charged (tests/api/test_failed_queries.py).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pandas_dp
from pandas_dp.mechanisms.postprocess import fit_to_total, round_to_total

HYPOTHESIS = settings(max_examples=300, derandomize=True, database=None, deadline=None)
FINITE = st.floats(-1e15, 1e15, allow_nan=False, allow_infinity=False)


@HYPOTHESIS
@given(st.lists(FINITE, max_size=30), st.floats(0, 1e18, allow_nan=False))
def test_nonnegative_fit_never_raises_and_sums_to_the_total(values: list, total: float) -> None:
    fitted = fit_to_total(values, total, nonnegative=True)
    assert fitted.shape == (len(values),)
    assert (fitted >= 0).all()
    if values:
        assert abs(fitted.sum() - total) <= 1e-9 * max(total, 1.0) + 1e-6 * max(
            (abs(v) for v in values), default=0
        )


@HYPOTHESIS
@given(
    st.lists(st.floats(0, 1e17, allow_nan=False), min_size=1, max_size=30), st.integers(0, 10**20)
)
def test_rounding_never_raises_and_sums_exactly(values: list, total: int) -> None:
    rounded = round_to_total(values, total)
    assert sum(int(x) for x in rounded) == total
    assert all(int(x) >= 0 for x in rounded)


def test_tiny_total_goes_to_the_largest_entry() -> None:
    fitted = fit_to_total([5e20, 3.0, -2.0], 1e-300, nonnegative=True)
    assert fitted.tolist() == [1e-300, 0.0, 0.0]


@pytest.mark.parametrize("total", [1e-300, 0.4, 1e17, 3.0])
@pytest.mark.parametrize("seed", range(20))
def test_counts_fitted_to_any_total_always_release(seed: int, total: float) -> None:
    frame = pd.DataFrame({"c": ["a"] * 30 + ["b"] * 5})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
        priv = frame.dp.protect(epsilon=100.0, rng=seed)
    grouped = priv.dp.groupby("c", keys=["a", "b", "z"])
    counts = grouped.count(epsilon=1.0, nonnegative=True, total=total)
    shares: Any = priv["c"].dp.value_counts(
        keys=["a", "b", "z"], epsilon=1.0, nonnegative=True, total=total
    )
    assert (counts >= 0).all()
    assert (shares >= 0).all()
    assert np.isclose(counts.sum(), total, rtol=1e-9, atol=1e-6)
    assert priv.dp.session.spent.epsilon == 2


@HYPOTHESIS
@given(st.lists(FINITE, min_size=1, max_size=30), st.integers(-(10**18), 10**18))
def test_rounding_signed_values_never_raises_and_sums_exactly(values: list, total: int) -> None:
    assert sum(int(x) for x in round_to_total(values, total)) == total
