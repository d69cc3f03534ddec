"""``sem``: the statistic added as one class and one registry line (issue 14's example).

The standard error of the mean is ``sqrt(var / N)`` from the same three noisy moments as the
variance (documented in ``Sem``): no new measurement, so no new audit is needed; its value,
interval, cost and registry entry are tested here.
"""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from pandas_dp.planning.statistics import STATISTICS, Sem
from pandas_dp.publish.model import parse_spec

from .test_spreads import BOUNDS, check, reference


def test_sem_is_registered_for_agg_and_release_files() -> None:
    assert STATISTICS["sem"] is Sem
    raw = {
        "data": {"path": "people.csv"},
        "privacy": {"epsilon": 1.0},
        "query": [
            {"name": "q", "epsilon": 0.5, "aggs": {"s": ["income", "sem"]},
             "bounds": {"income": [0, 10]}}
        ],
    }  # fmt: skip
    spec = parse_spec(raw, Path("release.toml"))
    assert spec.queries[0].aggs["s"] == ("income", "sem")


@pytest.mark.parametrize("noise_value", [0, 3])
def test_zero_noise_sem_is_sqrt_of_the_documented_variance_over_the_count(
    ref: Any, incomes: pd.DataFrame, protect_seeded: Any, noise: Any, noise_value: int
) -> None:
    priv = protect_seeded(incomes, epsilon=10)
    with noise(priv, value=noise_value) as calls:
        table = priv.dp.agg(s=("income", "sem"), bounds={"income": BOUNDS}, epsilon=0.6)
    assert len(calls) == 3  # squares, centred sum, count: the variance's three measurements
    record = priv.dp.session.releases[-1]
    assert record.cost.epsilon == Fraction(3, 5)
    assert [share for _, share in record.shares] == [Fraction(1, 3)] * 3
    mom = reference(ref, incomes, "income", BOUNDS, 0.6)
    n = max(mom.count + noise_value, 1)
    released = float(table["s"].iloc[0])
    # sem² · N is the variance the documented construction gives (same tolerance as var).
    check(released * released * n, "var", mom, 1, noise_value)


def test_grouped_sem_matches_pandas_at_a_large_epsilon(protect_seeded: Any) -> None:
    rng = np.random.default_rng(5)
    data = pd.DataFrame({"g": rng.integers(0, 3, 30_000), "x": rng.uniform(0, 100, 30_000)})
    priv = protect_seeded(data, epsilon=1e5)
    released = priv.dp.groupby("g", keys=[0, 1, 2]).agg(
        s=("x", "sem"), bounds={"x": (0, 100)}, epsilon=1e5
    )
    expected = data.groupby("g")["x"].sem()
    assert list(released.index) == [0, 1, 2]
    np.testing.assert_allclose(released["s"].to_numpy(), expected.to_numpy(), rtol=1e-3)


def test_sem_interval_holds_the_exact_sem_and_is_charged_like_var(
    ref: Any, incomes: pd.DataFrame, protect_seeded: Any, noise: Any
) -> None:
    priv = protect_seeded(incomes, epsilon=10)
    with noise(priv, value=0):
        table = priv.dp.agg(s=("income", "sem"), bounds={"income": BOUNDS}, epsilon=0.6, ci=0.9)
    mom = reference(ref, incomes, "income", BOUNDS, 0.6)
    exact = math.sqrt(float(mom.variance(1)) / mom.count)
    assert table["s_lower"].iloc[0] <= exact <= table["s_upper"].iloc[0]
    assert list(table.columns) == ["s", "s_lower", "s_upper"]
