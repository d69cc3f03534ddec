"""``DataFrame.dp.describe``: one charge, an equal ε split the ledger spells out, and the
documented rows (``count``, ``mean``, ``std`` and the percentiles; no ``min``/``max``).

Every value is checked against the independent references of ``conftest.py`` with the noise
fixture (zero additive noise, best-scoring quantile edges).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from pandas_dp.errors import BudgetExceededError, DPKeyError, DPTypeError, DPValueError

from ..oracles import split

BOUNDS = {"age": (0, 100), "income": (0, 200_000)}


@pytest.fixture
def people(rng: np.random.Generator) -> pd.DataFrame:
    income = rng.uniform(-10_000, 250_000, 500)
    income[::11] = np.nan
    income[:3] = [np.inf, 1e12, -5.0]
    return pd.DataFrame(
        {
            "age": rng.integers(0, 110, 500),  # int: no missing values, so the row count
            "income": income,
            "name": ["someone"] * 500,
            "score": rng.normal(0, 1, 500),  # not described: it has no bounds
        }
    )


def test_shape_values_and_a_single_charge(ref, people, protect_seeded, noise):
    eps = Fraction(6, 5)
    priv = protect_seeded(people, epsilon=10)
    with noise(priv, value=0) as calls:
        table = priv.dp.describe(bounds=BOUNDS, epsilon=1.2)
    assert list(table.index) == ["count", "mean", "std", "25%", "50%", "75%"]
    assert list(table.columns) == ["age", "income"]  # in the order of bounds, score left out
    assert all(dtype == np.float64 for dtype in table.dtypes)
    assert not {"min", "max"} & set(table.index)

    # Twelve measurements: the row count (shared by age, which cannot be missing), the
    # count of non-missing incomes, and per column a centred sum, squares and 3 quantiles.
    (record,) = priv.dp.session.releases
    assert len(priv.dp.session.ledger) == 1
    assert record.query == "describe"
    assert record.cost.epsilon == eps
    assert priv.dp.session.spent.epsilon == eps
    assert len(record.measurements) == 12
    assert len(calls) == 12  # one draw each
    # The documented split: a count, a mean, a std (equal weights) and 3 quantiles per column.
    models = []
    for column, count in (("age", "count"), ("income", "count(income)")):
        centred, h = f"centred_sum({column})", (BOUNDS[column][1] - BOUNDS[column][0]) / 2
        models += [(1.0, {count: 1.0}), (1.0, {centred: h, count: h})]
        models.append((1.0, {f"squares({column})": 1.0, centred: 1.0, count: 1.0}))
        models += [(1.0, {f"quantile({column}, {q})": 1.0}) for q in (0.25, 0.5, 0.75)]
    order = [m.label for m in record.measurements]
    assert split.close([share for _, share in record.shares], split.shares(order, models))
    assert [m.epsilon for m in record.measurements] == [eps * s for _, s in record.shares]
    assert f"ε {float(eps):g} split for the least relative error" in record.note
    labels = {m.label for m in record.measurements}
    assert labels == {
        "count",
        "count(income)",
        "centred_sum(age)",
        "squares(age)",
        "centred_sum(income)",
        "squares(income)",
        *(f"quantile({c}, {q})" for c in ("age", "income") for q in (0.25, 0.5, 0.75)),
    }
    assert record.bounds == (("age", 0.0, 100.0), ("income", 0.0, 200_000.0))

    for column, bounds in BOUNDS.items():
        values = people[column].astype("float64").tolist()
        each = next(m.epsilon for m in record.measurements if m.label == f"centred_sum({column})")
        mom = ref.moments(values, bounds, ref.centred_lattice(*bounds, each))
        assert table.loc["count", column] == mom.count
        assert table.loc["mean", column] == pytest.approx(
            float(mom.mean(bounds=bounds)), abs=1e-9 * bounds[1]
        )
        std = table.loc["std", column]
        assert abs(std * std - float(mom.variance(1))) <= mom.tolerance(1) + 1e-15 * std * std
        # age: an integer column with integer bounds 100 apart, so its grid is the integers.
        grid = 100 if column == "age" else 4096
        for row, q in (("25%", 0.25), ("50%", 0.5), ("75%", 0.75)):
            best = ref.best_edges(values, bounds, q, grid)
            ref.assert_on_edges(table.loc[row, column], best, bounds, grid)
    # The int column's count is the row count; the float column's skips missing values.
    assert table.loc["count", "age"] == len(people)
    assert table.loc["count", "income"] == people["income"].notna().sum()


def test_percentiles_and_cells(ref, people, protect_seeded, noise):
    priv = protect_seeded(people, epsilon=10)
    with noise(priv, value=0):
        table = priv.dp.describe(
            bounds={"income": BOUNDS["income"]}, epsilon=1.0, percentiles=[0.9, 0.1], cells=64
        )
    assert list(table.index) == ["count", "mean", "std", "90%", "10%"]
    values = people["income"].tolist()
    for row, q in (("90%", 0.9), ("10%", 0.1)):
        ref.assert_on_edges(
            table.loc[row, "income"],
            ref.best_edges(values, BOUNDS["income"], q, 64),
            BOUNDS["income"],
            64,
        )
    (record,) = priv.dp.session.releases
    assert len(record.measurements) == 5  # count, centred sum, squares, two quantiles
    h = BOUNDS["income"][1] / 2
    models = [
        (1.0, {"n": 1.0}),
        (1.0, {"c": h, "n": h}),
        (1.0, {"q2": 1.0, "c": 1.0, "n": 1.0}),
        (1.0, {"p90": 1.0}),
        (1.0, {"p10": 1.0}),
    ]
    labels = [m.label for m in record.measurements]
    assert labels[:3] == ["count(income)", "centred_sum(income)", "squares(income)"]
    expected = split.shares(["n", "c", "q2", "p90", "p10"], models)
    assert split.close([m.epsilon for m in record.measurements], expected)


def test_real_noise_stays_inside_the_bounds(people, protect_seeded):
    priv = protect_seeded(people, seed=9, epsilon=50)
    for _ in range(20):
        table = priv.dp.describe(bounds=BOUNDS, epsilon=0.05)  # very noisy on purpose
        for column, (lower, upper) in BOUNDS.items():
            # NaN where the noisy count is below 1 (possible at this ε), else in range.
            mean, std = table.loc["mean", column], table.loc["std", column]
            assert np.isnan(mean) or lower <= mean <= upper
            assert np.isnan(std) or 0 <= std <= (upper - lower) / 2
            assert np.isnan(mean) == (table.loc["count", column] < 1)
            for row in ("25%", "50%", "75%"):  # NaN with the mean (shared count), as pandas
                value = table.loc[row, column]
                assert np.isnan(value) == np.isnan(mean)
                assert np.isnan(value) or lower <= value <= upper
            assert float(table.loc["count", column]).is_integer()
    assert len(priv.dp.session.ledger) == 20


BAD = {
    "no bounds": ({"bounds": None}, (DPTypeError, DPValueError)),
    "empty bounds": ({"bounds": {}}, (DPTypeError, DPValueError)),
    "bounds not a dict": ({"bounds": (0, 100)}, DPTypeError),
    "a column without bounds": ({"bounds": {"age": (0, 100), "income": None}}, DPValueError),
    "reversed bounds": ({"bounds": {"age": (100, 0)}}, DPValueError),
    "infinite bound": ({"bounds": {"age": (0, math.inf)}}, DPValueError),
    "missing column": ({"bounds": {"nope": (0, 1)}}, DPKeyError),
    "text column": ({"bounds": {"name": (0, 1)}}, DPTypeError),
    "percentile above 1": ({"percentiles": [0.5, 1.5]}, DPValueError),
    "duplicate percentiles": ({"percentiles": [0.5, 0.5]}, DPValueError),
    "no percentiles": ({"percentiles": []}, DPValueError),
    "percentile text": ({"percentiles": ["0.5"]}, DPTypeError),
    "zero cells": ({"cells": 0}, DPValueError),
    "epsilon zero": ({"epsilon": 0}, DPValueError),
    "epsilon too large": ({"epsilon": 11}, BudgetExceededError),
}


@pytest.mark.parametrize(("kwargs", "error"), BAD.values(), ids=BAD.keys())
def test_errors_come_before_any_charge(people, protect_seeded, kwargs, error):
    priv = protect_seeded(people, epsilon=10)
    arguments = {"bounds": BOUNDS, "epsilon": 1.0, **kwargs}
    with pytest.raises(error):
        priv.dp.describe(**arguments)
    assert priv.dp.session.releases == ()
    assert priv.dp.session.spent.epsilon == 0


def test_needs_a_protected_frame(people):
    with pytest.raises(Exception, match="protect"):
        people.dp.describe(bounds=BOUNDS, epsilon=1.0)
