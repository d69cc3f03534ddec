"""Distinct counts: exact values, the scale and charge, neighbours, and a privacy-loss audit.

``nunique`` counts distinct non-missing values (in canonical form) per group. One row adds at
most one distinct value to one group, so the vector of counts has L1 sensitivity 1 and gets
discrete Laplace noise of scale 1/ε, charged once (parallel composition).
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import pandas_dp
from pandas_dp.errors import DPValueError

from ..statistical.auditing import audit, half_noise, vectorised_runs

KEYS = ["a", "b", "c"]


def frame() -> pd.DataFrame:
    gen = np.random.default_rng(7)
    return pd.DataFrame(
        {
            "g": gen.choice(["a", "b"], 300),  # no row in "c"
            "x": gen.integers(0, 40, 300).astype(float),
            "s": gen.choice(["u", "v", "w", None], 300),
        }
    )


def test_exact_values_match_pandas_with_scale_one_over_epsilon(protect_seeded, noise):
    df = frame()
    priv = protect_seeded(df, epsilon=5)
    with noise(priv) as calls:
        grouped = priv.dp.groupby("g", keys=KEYS)["x"].nunique(epsilon=0.5)
        ungrouped = priv["s"].dp.nunique(epsilon=0.25)
        frame_wise = priv.dp.groupby("g", keys=KEYS).nunique(epsilon=1)
    expected = df.groupby("g")["x"].nunique().reindex(KEYS, fill_value=0)
    pd.testing.assert_series_equal(grouped, expected, check_names=True)
    assert list(frame_wise.columns) == ["x", "s"]
    pd.testing.assert_frame_equal(
        frame_wise, df.groupby("g").nunique().reindex(KEYS, fill_value=0), check_names=True
    )
    assert calls[0].size == 3
    assert calls[0].mechanism.scale == 2
    assert ungrouped == df["s"].nunique()
    releases = priv.dp.session.releases
    (measurement,) = releases[0].measurements
    assert measurement.sensitivity == 1
    assert measurement.epsilon == Fraction(1, 2)
    assert measurement.label == "nunique(x)"
    assert releases[0].composition == "parallel"
    assert releases[0].groups == 3
    # The frame-wise release splits its ε between the two columns' distinct counts.
    assert [m.epsilon for m in releases[-1].measurements] == [Fraction(1, 2)] * 2


def test_values_are_compared_in_canonical_form(protect_seeded, noise):
    values = [1, 1.0, True, Decimal("1.00"), -0.0, 0.0, "1", [1], {2}, None, float("nan")]
    df = pd.DataFrame({"g": ["a"] * len(values), "v": pd.Series(values, dtype=object)})
    priv = protect_seeded(df, epsilon=1)
    with noise(priv):
        counted = priv.dp.groupby("g", keys=["a"])["v"].nunique(epsilon=1)
    assert counted["a"] == 3  # {1}, {0}, {"1"}; unhashable and missing values do not count


@pytest.mark.parametrize(
    "extra",
    [5.0, 39.0, np.nan, np.inf, -0.0, 2.0**62, "text"],
    ids=["new", "seen", "nan", "inf", "-0", "huge", "text"],
)
def test_one_more_row_moves_the_counts_by_at_most_one(protect_seeded, noise, extra):
    df = frame().astype({"x": object})
    neighbour = pd.concat([df, pd.DataFrame({"g": ["a"], "x": [extra], "s": ["u"]})])
    neighbour = neighbour.reset_index(drop=True)
    released = []
    for data in (df, neighbour):
        priv = protect_seeded(data, epsilon=1)
        with noise(priv):
            released.append(priv.dp.groupby("g", keys=KEYS)["x"].nunique(epsilon=1).to_numpy())
    assert np.abs(released[1] - released[0]).sum() <= 1


def test_refused_on_dask_before_any_charge(charges_nothing):
    import dask.dataframe as dd

    df = frame().assign(person=range(300))
    ddf = dd.from_pandas(df, npartitions=2).dp.protect(
        epsilon=1, privacy_unit="person", max_rows_per_unit=1
    )
    with charges_nothing(ddf), pytest.raises(DPValueError, match="nunique is not available"):
        ddf.dp.groupby("g", keys=KEYS)["x"].nunique(epsilon=1)


def test_no_dropna_false():
    priv = frame().dp.protect(epsilon=1)
    with pytest.raises(DPValueError, match="dropna"):
        priv.dp.groupby("g", keys=KEYS)["x"].nunique(dropna=False, epsilon=1)


@pytest.mark.statistical
def test_privacy_loss_audit_and_a_half_noise_mutant(protect_seeded, noise):
    # D' adds one row holding a value D does not have: its group's distinct count grows by 1.
    df = frame()
    neighbour = pd.concat([df, pd.DataFrame({"g": ["a"], "x": [99.0], "s": ["u"]})])
    exact, mechanisms = [], []
    for data in (df, neighbour.reset_index(drop=True)):
        priv = protect_seeded(data, epsilon=1)
        with noise(priv) as calls:
            exact.append(float(priv.dp.groupby("g", keys=["a"])["x"].nunique(epsilon=1)["a"]))
        mechanisms.append(calls[0].mechanism)
    assert exact[1] == exact[0] + 1
    assert mechanisms[0] == mechanisms[1]  # the noise does not depend on the data
    runs = vectorised_runs((exact[0], exact[1]), mechanisms[0], seed=8100)
    real = audit(*runs)
    assert 0.9 <= real.epsilon_lb <= 1, real  # ε = 1: tight, never above
    mutant = audit(*vectorised_runs((exact[0], exact[1]), half_noise(mechanisms[0]), seed=8100))
    assert mutant.epsilon_lb > 1, mutant


def test_registered_for_agg_and_preview():
    priv = frame().dp.protect(epsilon=1)
    table = priv.dp.groupby("g", keys=KEYS).agg(n=("x", "nunique"), epsilon=0.5)
    assert list(table.columns) == ["n"]
    assert table["n"].dtype == np.int64
    preview = priv.dp.preview.groupby("g", keys=KEYS)["x"].nunique(epsilon=0.5)
    assert isinstance(preview, pandas_dp.Preview)


@pytest.mark.statistical
def test_released_noise_is_discrete_laplace_through_the_public_api(protect_seeded):
    # 1,000 real releases at ε = 1 on a frame with 5 distinct values: the noise has the exact
    # discrete Laplace law of scale 1 (χ², p > 1e-6; bins -3..3 and the tails |z| >= 4).
    priv = protect_seeded(pd.DataFrame({"v": list("abcde") * 20}), seed=21, epsilon=1_001)
    released = np.array([priv["v"].dp.nunique(epsilon=1.0) for _ in range(1_000)]) - 5
    q = np.exp(-1.0)
    pmf = [(1 - q) / (1 + q) * q ** abs(z) for z in range(-3, 4)]
    tail = q**4 / (1 + q)
    counts = np.bincount(np.clip(released, -4, 4) + 4, minlength=9)
    assert stats.chisquare(counts, 1_000 * np.array([tail, *pmf, tail])).pvalue > 1e-6


def test_frame_nunique_is_a_series_over_the_columns_like_pandas(protect_seeded, noise):
    df = frame()
    priv = protect_seeded(df, epsilon=5)
    with noise(priv) as calls:
        counts = priv.dp.nunique(epsilon=1)
        with_ci = priv.dp.nunique(epsilon=1, ci=0.9)
    pd.testing.assert_series_equal(counts, df.nunique())  # int64, indexed by the columns
    assert list(with_ci.columns) == ["nunique", "nunique_lower", "nunique_upper"]
    assert with_ci["nunique"].tolist() == df.nunique().tolist()
    assert (with_ci["nunique_lower"] < with_ci["nunique"]).all()
    # Sequential composition over the three columns: each count gets a third of ε.
    assert [call.mechanism.scale for call in calls[:3]] == [3, 3, 3]
    measurements = priv.dp.session.releases[0].measurements
    assert [m.label for m in measurements] == ["nunique(g)", "nunique(x)", "nunique(s)"]
    assert sum(m.epsilon for m in measurements) == 1
    assert all(m.sensitivity == 1 for m in measurements)


def test_frame_nunique_keeps_missing_values_out(protect_seeded, charges_nothing):
    priv = protect_seeded(frame(), epsilon=5)
    with charges_nothing(priv), pytest.raises(DPValueError, match="dropna=True"):
        priv.dp.nunique(epsilon=1, dropna=False)
