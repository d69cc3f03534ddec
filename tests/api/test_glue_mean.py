"""Glue of the mean paths: centred lattice sum over a count, the ε split, scales and ledger.

The documented mean is ``clip(c + noisy centred sum / max(noisy count, 1), lower, upper)``
where ``c`` is the lattice point at the midpoint, the sum gets ``ε · share`` and the count
(of non-missing values, or of all rows with ``fillna``) gets the rest. The share is read
from the ledger note, then everything else is checked against it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import pandas as pd
import pytest

PATHS = ["frame", "series"]
CASES = {
    "income": ("income", (5000, 150000)),
    "frac": ("frac", (0.0, 1.0)),
    "age": ("age", (30, 60.5)),
    "frac negative": ("frac", (-1.0, 0.25)),
}
FILLS = [None, 7000.3, -1.0]
SPLIT = re.compile(
    r"(\d+(?:/\d+)?) to the centred sum of [^,]+, (\d+(?:/\d+)?) to the (?:row )?count"
)


def _release(priv: pd.DataFrame, path: str, column: str, **kwargs: Any) -> float:
    if path == "frame":
        return priv.dp.mean(column, **kwargs)
    return priv[column].dp.mean(**kwargs)


def _share(priv: pd.DataFrame) -> tuple[Fraction, Fraction]:
    note = priv.dp.session.ledger["note"].iloc[-1]
    match = SPLIT.search(note)
    assert match, note
    sum_share, count_share = Fraction(match[1]), Fraction(match[2])
    assert sum_share + count_share == 1
    assert 0 < sum_share < 1
    return sum_share, count_share


def _expected(
    data: pd.DataFrame, column: str, ref: Any, fill: float | None, noise: int = 0
) -> tuple[Fraction, int]:
    """The documented post-processing, exactly: (mean before clipping, count used)."""
    values = data[column].astype("float64").tolist()
    missing = sum(1 for v in values if math.isnan(v))
    units = ref.total(values)
    count = len(values) - missing
    if fill is not None:
        units += missing * ref.units(fill)
        count = len(values)
    noisy_count = max(count + noise, 1)
    return ref.centre + (units + noise) * ref.step / noisy_count, count


def _clip(value: Fraction, bounds: tuple[float, float]) -> float:
    return float(min(max(value, Fraction(bounds[0])), Fraction(bounds[1])))


@pytest.mark.parametrize("fill", FILLS, ids=["skip", "fill", "fill below"])
@pytest.mark.parametrize(("column", "bounds"), CASES.values(), ids=CASES.keys())
@pytest.mark.parametrize("path", PATHS)
def test_mean_is_centred_sum_over_count_with_split_epsilon(
    glue_data: pd.DataFrame,
    protect_seeded: Callable[..., Any],
    noise: Callable,
    lattice: Callable,
    path: str,
    column: str,
    bounds: tuple[float, float],
    fill: float | None,
) -> None:
    priv = protect_seeded(glue_data, epsilon=1.0)
    eps = Fraction(1, 2)
    with noise(priv) as calls:
        result = _release(priv, path, column, bounds=bounds, epsilon=0.5, fillna=fill)
    sum_share, count_share = _share(priv)
    ref = lattice(*bounds, eps * sum_share, centered=True)
    exact_mean, _ = _expected(glue_data, column, ref, fill)

    assert bounds[0] <= result <= bounds[1]
    assert result == pytest.approx(_clip(exact_mean, bounds), rel=1e-12, abs=1e-12)
    assert ref.centre == pytest.approx((bounds[0] + bounds[1]) / 2, abs=float(ref.step))

    sum_scale = Fraction(ref.sensitivity) / (eps * sum_share)
    count_scale = 1 / (eps * count_share)
    assert sorted(call.mechanism.scale for call in calls) == sorted([sum_scale, count_scale])
    assert [call.size for call in calls] == [1, 1]

    # Labels: "centred_sum(<column>)", and "count" (rows) or "count(<column>)" (non-missing).
    by_kind = {m.label.split("(")[0]: m for m in priv.dp.session.releases[-1].measurements}
    assert set(by_kind) == {"centred_sum", "count"}
    assert by_kind["centred_sum"].label == f"centred_sum({column})"
    # The row count when missing values are imputed or the dtype cannot hold any.
    rows_counted = fill is not None or glue_data[column].dtype.kind in "biu"
    assert by_kind["count"].label == ("count" if rows_counted else f"count({column})")
    assert by_kind["centred_sum"].epsilon == eps * sum_share
    assert by_kind["centred_sum"].sensitivity == ref.sensitivity
    assert by_kind["centred_sum"].exponent == ref.exponent
    assert by_kind["centred_sum"].scale == sum_scale
    assert by_kind["count"].epsilon == eps * count_share
    assert by_kind["count"].sensitivity == 1
    assert by_kind["count"].scale == count_scale
    assert priv.dp.session.spent.epsilon == eps


@pytest.mark.parametrize("fill", [None, 7000.3])
@pytest.mark.parametrize("path", PATHS)
def test_mean_ledger_row(
    glue_data: pd.DataFrame,
    protect_seeded: Callable[..., Any],
    noise: Callable,
    path: str,
    fill: float | None,
) -> None:
    priv = protect_seeded(glue_data, epsilon=1.0)
    with noise(priv):
        _release(priv, path, "income", bounds=(5000, 150000), epsilon=0.5, fillna=fill)
    (row,) = priv.dp.session.ledger.to_dict("records")
    assert row["query"] == "mean"
    assert row["columns"] == "income"
    assert row["epsilon"] == 0.5
    assert row["delta"] == 0.0
    assert row["mechanism"] == "discrete_laplace"
    assert row["bounds"] == "income: [5000, 150000]"
    assert "split" in row["note"]
    assert ("skipped" if fill is None else "imputed") in row["note"]
    assert row["noise"].count("discrete_laplace") == 2


@pytest.mark.parametrize("value", [3, -2, 250])
@pytest.mark.parametrize("fill", [None, 7000.3])
@pytest.mark.parametrize("path", PATHS)
def test_mean_noise_is_added_to_sum_in_lattice_units_and_to_count_in_ones(
    glue_data: pd.DataFrame,
    protect_seeded: Callable[..., Any],
    noise: Callable,
    lattice: Callable,
    path: str,
    fill: float | None,
    value: int,
) -> None:
    priv = protect_seeded(glue_data, epsilon=1.0)
    bounds = (5000, 150000)
    with noise(priv, value=value):
        result = _release(priv, path, "income", bounds=bounds, epsilon=0.5, fillna=fill)
    sum_share, _ = _share(priv)
    ref = lattice(*bounds, Fraction(1, 2) * sum_share, centered=True)
    noisy_mean, _ = _expected(glue_data, "income", ref, fill, noise=value)
    assert result == pytest.approx(_clip(noisy_mean, bounds), rel=1e-12)


@pytest.mark.parametrize("path", PATHS)
def test_mean_never_divides_by_a_count_below_one(
    glue_data: pd.DataFrame,
    protect_seeded: Callable[..., Any],
    noise: Callable,
    lattice: Callable,
    path: str,
) -> None:
    priv = protect_seeded(glue_data, epsilon=1.0)
    bounds = (0.0, 1.0)
    subset = priv[priv["age"] >= 90]  # a handful of rows
    rows = glue_data[glue_data["age"] >= 90]
    value = -len(rows)  # the noisy count lands exactly on 0
    with noise(priv, value=value):
        hidden = _release(subset, path, "frac", bounds=bounds, epsilon=0.5)
        result = _release(subset, path, "frac", bounds=bounds, epsilon=0.5, min_count=0)
    assert math.isnan(hidden)  # by default, as pandas for an empty group
    sum_share, _ = _share(priv)
    ref = lattice(*bounds, Fraction(1, 2) * sum_share, centered=True)
    noisy_mean, _ = _expected(rows, "frac", ref, None, noise=value)
    assert math.isfinite(result)
    assert result == pytest.approx(_clip(noisy_mean, bounds), rel=1e-12)
