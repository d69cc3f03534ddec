"""Glue of the sum paths: clipping, lattice rounding, sampler scale Δ/ε, charge and ledger.

Expectations come from the documented lattice (see ``conftest.reference_lattice``) and the
raw data, never from the implementation's own helpers.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

PATHS = ["frame", "series"]
#: (column, bounds): outliers and ±inf on both sides, off-lattice reals, a bound below zero.
CASES = {
    "income": ("income", (5000, 150000)),
    "frac unit interval": ("frac", (0.0, 1.0)),
    "frac straddling zero": ("frac", (-0.25, 0.75)),
    "age negative lower": ("age", (-200, 50)),
}
FILLS = [None, 7000.3, -1.0, 1e12]


def _release(priv: pd.DataFrame, path: str, column: str, **kwargs: Any) -> float:
    if path == "frame":
        return priv.dp.sum(column, **kwargs)
    return priv[column].dp.sum(**kwargs)


def _expected_units(data: pd.DataFrame, column: str, ref: Any, fill: float | None) -> int:
    values = data[column].astype("float64").tolist()
    units = ref.total(values)
    if fill is not None:
        units += sum(1 for v in values if math.isnan(v)) * ref.units(fill)
    return units


@pytest.mark.parametrize("fill", FILLS, ids=["skip", "fill", "fill below", "fill above"])
@pytest.mark.parametrize(("column", "bounds"), CASES.values(), ids=CASES.keys())
@pytest.mark.parametrize("path", PATHS)
def test_sum_releases_clipped_lattice_sum_with_scale_delta_over_epsilon(
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
    ref = lattice(*bounds, eps)
    with noise(priv) as calls:
        result = _release(priv, path, column, bounds=bounds, epsilon=0.5, fillna=fill)

    units = _expected_units(glue_data, column, ref, fill)
    assert result == float(units * ref.step)
    assert ref.sensitivity * ref.step == max(abs(bounds[0]), abs(bounds[1]))
    assert [call.size for call in calls] == [1]
    assert calls[0].mechanism.scale == Fraction(ref.sensitivity) / eps

    (measurement,) = priv.dp.session.releases[-1].measurements
    assert measurement.sensitivity == ref.sensitivity
    assert measurement.exponent == ref.exponent
    assert measurement.scale == Fraction(ref.sensitivity) / eps
    assert measurement.epsilon == eps
    assert priv.dp.session.spent.epsilon == eps


@pytest.mark.parametrize("fill", [None, 7000.3])
@pytest.mark.parametrize("path", PATHS)
def test_sum_ledger_row(
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
    assert row["query"] == "sum"
    assert row["columns"] == "income"
    assert row["epsilon"] == 0.5
    assert row["delta"] == 0.0
    assert row["mechanism"] == "discrete_laplace"
    assert row["bounds"] == "income: [5000, 150000]"
    assert ("skipped" if fill is None else "imputed") in row["note"]


@pytest.mark.parametrize("value", [3, -2, 1 << 40])
@pytest.mark.parametrize("path", PATHS)
def test_sum_noise_is_added_in_lattice_units(
    glue_data: pd.DataFrame,
    protect_seeded: Callable[..., Any],
    noise: Callable,
    lattice: Callable,
    path: str,
    value: int,
) -> None:
    priv = protect_seeded(glue_data, epsilon=1.0)
    ref = lattice(0.0, 1.0, Fraction(1, 4))
    with noise(priv, value=value):
        result = _release(priv, path, "frac", bounds=(0.0, 1.0), epsilon=0.25)
    units = _expected_units(glue_data, "frac", ref, None)
    assert result == float((units + value) * ref.step)
    assert result - float(units * ref.step) == pytest.approx(value * float(ref.step), rel=1e-9)


@pytest.mark.parametrize(
    ("values", "bounds", "expected"),
    [
        ([1e9, 500.0, np.inf, 10**15], (0, 100), 400.0),
        ([-1e9, -500.0, -np.inf], (-10, 10), -30.0),
        ([-1e9, -500.0, -np.inf], (5, 10), 15.0),
        ([1e9, 7.0, -1e9], (-3, 4), 5.0),
    ],
    ids=["above", "below", "below a positive lower", "both sides"],
)
@pytest.mark.parametrize("path", PATHS)
def test_sum_clips_every_value_to_the_bounds(
    protect_seeded: Callable[..., Any],
    noise: Callable,
    path: str,
    values: list[float],
    bounds: tuple[float, float],
    expected: float,
) -> None:
    priv = protect_seeded(pd.DataFrame({"x": values}), epsilon=1.0)
    with noise(priv):
        assert _release(priv, path, "x", bounds=bounds, epsilon=1.0) == expected


def test_sum_scale_does_not_depend_on_the_data(
    glue_data: pd.DataFrame, protect_seeded: Callable[..., Any], noise: Callable
) -> None:
    priv = protect_seeded(glue_data, epsilon=10.0)
    subsets = [priv, priv[priv["age"] > 60], priv.iloc[:0], priv[priv["income"].isna()]]
    scales = []
    for subset in subsets:
        with noise(priv) as calls:
            subset.dp.sum("income", bounds=(5000, 150000), epsilon=0.5)
        scales.append(calls[0].mechanism.scale)
    assert len(set(scales)) == 1
    exponents = {r.measurements[0].exponent for r in priv.dp.session.releases}
    assert len(exponents) == 1


def test_sums_of_a_list_of_integer_columns_are_int64_like_pandas(protect_seeded, noise):
    df = pd.DataFrame({"i": [1, 2, 3], "j": [4, 5, 6], "x": [0.5, 1.5, 2.5]})
    priv = protect_seeded(df, epsilon=10)
    bounds = {"i": (0, 5), "j": (0, 9), "x": (0, 3)}
    with noise(priv):
        integers = priv.dp.sum(["i", "j"], bounds=bounds, epsilon=1)
        mixed = priv.dp.sum(["i", "x"], bounds=bounds, epsilon=1)
    pd.testing.assert_series_equal(integers, df[["i", "j"]].sum())
    pd.testing.assert_series_equal(mixed, df[["i", "x"]].sum())
