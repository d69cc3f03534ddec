"""crosstab and pivot_table: one charge, margins consistent with the cells, pandas' shapes.

Shapes are compared with pandas in ``tests/conformance``; this file checks the privacy side
(the scale, the charge, what is refused before any charge) and the margins' arithmetic.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from pandas_dp.errors import DPValueError

KEYS = {"sex": [0, 1], "region": ["n", "s", "e"], "tenure": ["own", "rent"]}


def frame(rows: int = 600) -> pd.DataFrame:
    gen = np.random.default_rng(3)
    return pd.DataFrame(
        {
            "sex": gen.integers(0, 2, rows),
            "region": gen.choice(["n", "s", "e", "w"], rows),  # "w" is not a key: dropped
            "tenure": gen.choice(["own", "rent"], rows),
            "income": gen.uniform(-10, 120, rows),
        }
    )


def test_counts_are_charged_once_with_scale_one_over_epsilon(protect_seeded, noise):
    df = frame()
    priv = protect_seeded(df, epsilon=2)
    with noise(priv) as calls:
        table = priv.dp.crosstab("sex", "region", keys=KEYS, margins=True, epsilon=0.5)
    kept = df[df.region != "w"]
    expected = pd.crosstab(kept.sex, kept.region, margins=True)[["n", "s", "e", "All"]]
    pd.testing.assert_frame_equal(table, expected)
    assert [(c.size, c.mechanism.scale) for c in calls] == [(6, 2)]  # six cells, 1/ε
    (release,) = priv.dp.session.releases
    assert release.composition == "parallel"
    assert release.groups == 6
    assert priv.dp.session.spent.epsilon == Fraction(1, 2)


def test_margins_add_up_exactly_whatever_the_noise(protect_seeded):
    priv = protect_seeded(frame(), epsilon=1.1)
    table = priv.dp.crosstab(["sex", "tenure"], "region", keys=KEYS, margins=True, epsilon=1)
    cells = table.iloc[:-1, :-1]
    assert (table.iloc[:-1, -1] == cells.sum(axis=1)).all()
    assert (table.iloc[-1, :-1] == cells.sum(axis=0)).all()
    assert table.iloc[-1, -1] == cells.to_numpy().sum()
    assert table.index[-1] == ("All", "")
    assert table.columns[-1] == "All"
    nonnegative = priv.dp.crosstab(
        "sex", "region", keys=KEYS, margins=True, nonnegative=True, epsilon=0.1
    )  # clamped cells, and margins that are their sums
    assert (nonnegative >= 0).all().all()
    assert (nonnegative.iloc[-1, :-1] == nonnegative.iloc[:-1, :-1].sum()).all()


def test_a_mean_margin_pools_the_cells_noisy_sums_and_counts(protect_seeded, noise):
    df = frame()
    priv = protect_seeded(df, epsilon=10)
    with noise(priv):  # no noise: the margin must be the mean of the pooled clipped rows
        table = priv.dp.pivot_table(
            "income", "sex", "tenure", keys=KEYS, margins=True, bounds=(0, 100), epsilon=1
        )
    clipped = df.assign(income=df.income.clip(0, 100))
    expected = pd.pivot_table(clipped, "income", "sex", "tenure", margins=True)
    pd.testing.assert_frame_equal(table, expected, atol=1e-6, check_dtype=False)


@pytest.mark.parametrize(
    "call",
    [
        lambda p: p.dp.crosstab("sex", "region", keys=KEYS, values="income", aggfunc="median",
                                margins=True, bounds=(0, 100), epsilon=1),
        lambda p: p.dp.crosstab("sex", "region", keys=KEYS, margins=True, ci=0.9, epsilon=1),
        lambda p: p.dp.crosstab("sex", "region", epsilon=1),
        lambda p: p.dp.crosstab("sex", "region", keys=KEYS, normalize="rows", epsilon=1),
        lambda p: p.dp.crosstab("sex", "region", keys=KEYS, values="income", epsilon=1),
        lambda p: p.dp.pivot_table("income", "sex", keys=KEYS, aggfunc="nunique",
                                   margins=True, epsilon=1),
        lambda p: p.dp.pivot_table("income", keys=KEYS, epsilon=1),
    ],
    ids=["median margins", "ci margins", "no keys", "bad normalize", "values no aggfunc",
         "nunique margins", "no index"],
)  # fmt: skip
def test_refused_before_any_charge(call, charges_nothing):
    priv = frame().dp.protect(epsilon=5)
    with charges_nothing(priv), pytest.raises(DPValueError):
        call(priv)


def test_normalized_tables_are_proportions_of_the_clamped_counts(protect_seeded):
    priv = protect_seeded(frame(), epsilon=3)
    # Shares of all rows, as pandas: the cells of rows outside the keys (here none, so only
    # noise clamped at 0) count in the totals, so a row's listed shares sum to at most 1.
    rows = priv.dp.crosstab("sex", "region", keys=KEYS, normalize="index", margins=True, epsilon=1)
    assert (rows.sum(axis=1) <= 1 + 1e-12).all()
    assert list(rows.index) == [0, 1, "All"]
    cols = priv.dp.crosstab("sex", "region", keys=KEYS, normalize="columns", epsilon=1)
    assert (cols.sum(axis=0) <= 1 + 1e-12).all()
    assert (cols >= 0).all().all()
    whole = priv.dp.crosstab("sex", "region", keys=KEYS, normalize=True, margins=True, epsilon=1)
    assert whole.loc["All", "All"] == pytest.approx(1.0)


def test_preview_of_a_crosstab_reads_nothing():
    priv = frame().dp.protect(epsilon=1)
    preview = priv.dp.preview.crosstab("sex", "region", keys=KEYS, epsilon=0.5)
    assert priv.dp.session.spent.epsilon == 0
    assert preview.epsilon == 0.5
    assert preview.table["scale"].tolist() == [2.0]
