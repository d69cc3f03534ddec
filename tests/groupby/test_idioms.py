"""Group-by idioms beyond the shapes (``tests/conformance``): Series as ``by``, errors that
teach, declared categorical keys, and what is refused before any charge."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pandas_dp.errors import DPKeyError, DPTypeError, DPValueError

KEYS = ["a", "b", "c"]


def frame() -> pd.DataFrame:
    gen = np.random.default_rng(4)
    return pd.DataFrame(
        {
            "g": gen.choice(KEYS, 400),
            "t": pd.date_range("2020-01-01", periods=400, freq="D"),
            "income": gen.uniform(0, 100, 400),
            "c": pd.Categorical(gen.choice(["lo", "hi"], 400), categories=["lo", "mid", "hi"]),
        }
    )


def test_a_series_of_the_same_frame_groups_like_its_column(protect_seeded, noise):
    df = frame()
    priv = protect_seeded(df, epsilon=5)
    months = pd.period_range("2020-01", "2021-02", freq="M")
    with noise(priv):
        by_series = priv.dp.groupby(priv["t"].dt.to_period("M"), keys=months).size(epsilon=1)
        by_column = (
            priv.assign(month=priv["t"].dt.to_period("M"))
            .dp.groupby("month", keys=months)
            .size(epsilon=1)
        )
        several = priv.dp.groupby(["g", priv["income"] // 50], keys={"g": KEYS, "income": [0, 1]})
        table = several["income"].mean(bounds=(0, 100), epsilon=1)
    expected = df.groupby(df["t"].dt.to_period("M")).size()
    expected = expected.reindex(months.rename("t"), fill_value=0)
    pd.testing.assert_series_equal(by_series, expected, check_index_type=False)
    assert by_series.index.name == "t"  # the Series' name, as pandas names the level
    assert (by_series.to_numpy() == by_column.to_numpy()).all()
    assert table.index.names == ["g", "income"]
    assert not any(str(name).startswith("__") for name in table.index.names)


@pytest.mark.parametrize(
    "series",
    [
        lambda p, other: pd.cut(p["income"], [0, 50, 100]),  # pd.cut drops the session
        lambda p, other: other["income"] // 50,  # another frame's data
        lambda p, other: pd.Series(np.zeros(400)),  # never protected
    ],
    ids=["pd.cut", "another session", "unprotected"],
)
def test_a_series_from_elsewhere_is_refused_before_any_charge(series, charges_nothing):
    priv, other = frame().dp.protect(epsilon=1), frame().dp.protect(epsilon=1)
    with charges_nothing(priv), pytest.raises(DPValueError, match=r"priv\.assign"):
        priv.dp.groupby(series(priv, other), keys=[0, 1]).size(epsilon=0.5)


def test_errors_teach_and_charge_nothing(charges_nothing):
    df = frame()
    priv = df.dp.protect(epsilon=1)
    g = priv.dp.groupby("g", keys=KEYS)
    later = priv.assign(incomf=priv["income"])  # a label made after protect is not suggested
    cases = [
        (lambda: g["incme"], DPKeyError, r"did you mean 'income'\?"),
        (lambda: priv.dp.groupby("gg", keys=KEYS), DPKeyError, r"did you mean 'g'\?"),
        (lambda: priv.dp.sum("Income", bounds=(0, 1), epsilon=0.1), DPKeyError, "'income'"),
        (lambda: later.dp.sum("incomx", bounds=(0, 1), epsilon=0.1), DPKeyError, "'income'"),
        (lambda: g.mean(bounds=(0, 100), epsilon=0.1), DPTypeError, r"g\['income'\]\.mean"),
        (lambda: g.agg("mean", n="count", epsilon=0.1), DPTypeError, "not both"),
        (lambda: g.agg(n=("income", ["sum", "mean"]), epsilon=0.1), DPValueError, "agg\\(\\{"),
        (lambda: priv.dp.histogram(["income"], [0, 1], epsilon=0.1), DPTypeError, "agg takes"),
        (lambda: g["income"].value_counts(normalize=True, ci=0.9, epsilon=0.1), DPTypeError, "ci"),
        (lambda: g.value_counts(epsilon=0.1), DPTypeError, r"g\['x'\]\.value_counts"),
        (lambda: priv.dp.groupby("g", keys="categories"), DPTypeError, "categorical"),
        (lambda: priv.dp.groupby(["g", "c"], keys={"g": KEYS, "c": ["lo"]}, dropna=False),
         DPValueError, "one group-by column"),
        (lambda: priv["income"].dp.histogram(4, epsilon=0.1), DPTypeError, "range="),
    ]  # fmt: skip
    for call, error, message in cases:
        with charges_nothing(priv), pytest.raises(error, match=message):
            call()
    with pytest.raises(DPKeyError) as caught:
        later.dp.sum("incomx", bounds=(0, 1), epsilon=0.1)
    assert "incomf" not in str(caught.value)


def test_declared_categories_are_the_keys_and_the_ledger_says_so(protect_seeded, noise):
    df = frame()
    priv = protect_seeded(df, epsilon=2)
    with noise(priv):
        counts = priv["c"].dp.value_counts(keys="categories", sort=False, epsilon=1)
        grouped = priv.dp.groupby("c", keys="categories").size(epsilon=1)
    assert list(counts.index) == ["lo", "mid", "hi"]
    assert counts["mid"] == 0
    assert list(grouped.index) == ["lo", "mid", "hi"]
    assert "categories" in priv.dp.session.releases[0].note
