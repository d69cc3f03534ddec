"""``normalize=True`` as pandas means it: shares of all rows (issue 38).

With a subset of the keys, ``value_counts`` and ``crosstab`` used to divide by the listed
keys' rows only. They now measure one more cell (rows outside the keys), which keeps
sensitivity 1 for the vector of counts: the charge and the noise scale are unchanged.
"""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import pandas_dp
from pandas_dp.testing import capture_noise


def _protect(data: pd.DataFrame | pd.Series) -> pd.DataFrame | pd.Series:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
        return data.dp.protect(epsilon=10.0)


def _status() -> pd.Series:
    values = ["employed"] * 403 + ["unemployed"] * 503 + ["inactive"] * 94 + [None] * 20
    return pd.Series(values, name="status")


def test_issue_value_counts_share_is_of_all_rows():
    series = _status()
    priv = _protect(series)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
        with capture_noise(priv) as calls:
            shares = priv.dp.value_counts(
                keys=["employed", "inactive"], normalize=True, sort=False, epsilon=1.0
            )
    expected = series.value_counts(normalize=True)[["employed", "inactive"]]
    assert shares["employed"] == pytest.approx(0.403)  # was 403 / 497 = 0.811
    pd.testing.assert_series_equal(shares, expected.rename("proportion"), check_exact=False)
    # one more cell (the unlisted values), the same noise scale, the same charge
    assert [(c.size, c.mechanism.scale) for c in calls] == [(3, Fraction(1))]
    assert priv.dp.session.spent.epsilon == Fraction(1)


def test_grouped_value_counts_share_is_of_the_groups_rows():
    frame = pd.DataFrame({"g": ["u"] * 10 + ["v"] * 10, "k": list("aabbbccccd") * 2})
    priv = _protect(frame)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
        warnings.simplefilter("ignore", pandas_dp.NoiseDominatedWarning)
        with capture_noise(priv) as calls:
            shares = priv.dp.groupby("g", keys=["u", "v"])["k"].value_counts(
                keys=["a", "b"], normalize=True, sort=False, epsilon=1.0
            )
    assert shares.tolist() == pytest.approx([0.2, 0.3, 0.2, 0.3])  # was 0.4, 0.6
    assert [c.size for c in calls] == [6]  # 2 groups x 2 values, and one "other" per group


def test_crosstab_totals_keep_the_rows_outside_the_keys():
    frame = pd.DataFrame({"r": [0] * 6 + [1] * 4 + [2] * 10, "c": list("xxyzzz") + list("xyyz") * 1
                          + list("xxxxxyyyyz")})  # fmt: skip
    priv = _protect(frame)
    keys = {"r": [0, 1], "c": ["x", "y"]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
        warnings.simplefilter("ignore", pandas_dp.NoiseDominatedWarning)
        for how in ("all", "index", "columns"):
            with capture_noise(priv):
                ours = priv.dp.crosstab("r", "c", keys=keys, normalize=how, epsilon=0.5)
            theirs = pd.crosstab(frame["r"], frame["c"], normalize=how).loc[[0, 1], ["x", "y"]]
            assert np.allclose(ours.to_numpy(), theirs.to_numpy()), how
    assert priv.dp.session.spent.epsilon == Fraction(3, 2)  # 0.5 per table, as before


def test_missing_and_unprocessable_values():
    # A missing value is not "other" (dropna=True drops it from the total, as pandas);
    # an unhashable value matches no key: it is "other".
    series = pd.Series(["a", "a", "b", None, ["x"]], dtype=object, name="k")
    priv = _protect(series)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
        warnings.simplefilter("ignore", pandas_dp.NoiseDominatedWarning)
        with capture_noise(priv):
            shares = priv.dp.value_counts(keys=["a"], normalize=True, epsilon=1.0)
            with_na = priv.dp.value_counts(keys=["a"], normalize=True, dropna=False, epsilon=1.0)
    assert shares.tolist() == pytest.approx([0.5])
    assert with_na.tolist() == pytest.approx([0.4, 0.2])
    assert pd.isna(with_na.index[-1])
