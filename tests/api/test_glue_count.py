"""Glue of the count paths: exact count, sampler scale 1/ε, one variate, the charge recorded.

``DataFrame.dp.count`` counts rows (missing values included); ``Series.dp.count`` counts
non-missing values. Noise is replaced by a constant through the ``noise`` fixture.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import pandas as pd
import pytest

PATHS = ["frame", "series"]


def _target(priv: pd.DataFrame, path: str) -> Any:
    return priv if path == "frame" else priv["income"]


def _exact_count(data: pd.DataFrame, path: str) -> int:
    if path == "frame":
        return len(data)
    return sum(1 for value in data["income"].tolist() if value == value)  # NaN != NaN


EPSILONS = [
    (0.25, Fraction(1, 4)),
    (0.1, Fraction(1, 10)),
    (3, Fraction(3)),
    (Fraction(1, 3), Fraction(1, 3)),
]


@pytest.mark.parametrize(("epsilon", "eps"), EPSILONS, ids=["0.25", "0.1", "3", "1/3"])
@pytest.mark.parametrize("path", PATHS)
def test_count_releases_exact_count_with_scale_one_over_epsilon(
    glue_data: pd.DataFrame,
    protect_seeded: Callable[..., Any],
    noise: Callable,
    path: str,
    epsilon: Any,
    eps: Fraction,
) -> None:
    priv = protect_seeded(glue_data, epsilon=10.0)
    with noise(priv) as calls:
        result = _target(priv, path).dp.count(epsilon=epsilon)

    assert type(result) is int
    assert result == _exact_count(glue_data, path)
    assert [call.size for call in calls] == [1]
    assert calls[0].mechanism.scale == 1 / eps

    (measurement,) = priv.dp.session.releases[-1].measurements
    assert measurement.sensitivity == 1
    assert measurement.exponent == 0
    assert measurement.epsilon == eps
    assert measurement.scale == 1 / eps
    assert measurement.mechanism == "discrete_laplace"
    assert priv.dp.session.spent.epsilon == eps
    assert priv.dp.session.spent.delta == 0


@pytest.mark.parametrize("path", PATHS)
def test_count_ledger_row(
    glue_data: pd.DataFrame, protect_seeded: Callable[..., Any], noise: Callable, path: str
) -> None:
    priv = protect_seeded(glue_data, epsilon=1.0)
    with noise(priv):
        _target(priv, path).dp.count(epsilon=0.25)
    (row,) = priv.dp.session.ledger.to_dict("records")
    assert row["sequence"] == 1
    assert row["query"] == "count"
    assert row["columns"] == ("" if path == "frame" else "income")
    assert row["epsilon"] == 0.25
    assert row["delta"] == 0.0
    assert row["mechanism"] == "discrete_laplace"
    assert row["bounds"] == ""
    assert row["groups"] == 1
    assert row["composition"] == "sequential"


@pytest.mark.parametrize("value", [5, -3, -10_000])
@pytest.mark.parametrize("path", PATHS)
def test_count_noise_is_added_in_units_of_one(
    glue_data: pd.DataFrame,
    protect_seeded: Callable[..., Any],
    noise: Callable,
    path: str,
    value: int,
) -> None:
    priv = protect_seeded(glue_data, epsilon=1.0)
    with noise(priv, value=value):
        result = _target(priv, path).dp.count(epsilon=0.5)
    assert result == _exact_count(glue_data, path) + value  # a count may go negative


def test_series_count_of_a_column_without_missing_values_counts_rows(
    glue_data: pd.DataFrame, protect_seeded: Callable[..., Any], noise: Callable
) -> None:
    priv = protect_seeded(glue_data, epsilon=1.0)
    with noise(priv):
        assert priv["age"].dp.count(epsilon=0.5) == len(glue_data)
        assert priv[priv["age"] >= 65].dp.count(epsilon=0.5) == int((glue_data["age"] >= 65).sum())
