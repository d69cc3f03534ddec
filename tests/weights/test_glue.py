"""Glue of the weighted releases: exact pre-noise values, sampler scale Δ/ε, charge, ledger.

Expected values come from the documented oracle (``oracles.weighted``) and the raw data;
the sensitivities from the issue's formulas (``W``, ``W·max(|L|, |U|)``, ``W·(U - L)/2``),
never from the implementation's helpers.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

from pandas_dp.mechanisms.laplace import DiscreteLaplace

from ..oracles.weighted import documented_sensitivity, weighted_lattice
from .conftest import KEYS

EPS = Fraction(1, 2)
WEIGHT_BOUNDS = [(0, 5), (0.5, 8), (0, 0.25)]
BOUNDS = [(0, 100), (-50, 25)]


def _check_scale(call: Any, measurement: Any, ref: Any, kind: str, epsilon: Fraction) -> None:
    """Scale Δ/ε in lattice units, Δ·g the documented sensitivity, recorded as charged."""
    assert isinstance(call.mechanism, DiscreteLaplace)
    assert call.mechanism.scale == Fraction(ref.sensitivity) / epsilon
    delta = documented_sensitivity(kind, ref.weight_bounds, ref.bounds)
    assert ref.sensitivity * ref.step == delta  # dyadic bounds: Δ is a lattice point
    assert measurement.sensitivity == ref.sensitivity
    assert measurement.exponent == ref.lattice.exponent
    assert measurement.epsilon == epsilon


@pytest.mark.parametrize("weight_bounds", WEIGHT_BOUNDS)
def test_weighted_count_is_the_sum_of_clipped_weights(
    survey: pd.DataFrame, protect_seeded: Callable, noise: Callable, weight_bounds: Any
) -> None:
    priv = protect_seeded(survey, epsilon=1.0)
    ref = weighted_lattice("count", weight_bounds, EPS)
    with noise(priv) as calls:
        result = priv.dp.count(epsilon=0.5, weights="w", weight_bounds=weight_bounds)
    assert isinstance(result, float)
    assert result == ref.real(ref.total(survey["w"]))
    twin = survey["w"].clip(*weight_bounds).sum()  # pandas' twin (NaN skipped)
    assert result == pytest.approx(twin, abs=len(survey) * float(ref.step))
    (call,) = calls
    (record,) = priv.dp.session.releases
    _check_scale(call, record.measurements[0], ref, "count", EPS)
    assert priv.dp.session.spent.epsilon == EPS


@pytest.mark.parametrize("fill", [None, 30.0])
@pytest.mark.parametrize("bounds", BOUNDS)
@pytest.mark.parametrize("weight_bounds", WEIGHT_BOUNDS)
def test_weighted_sum_is_clipped_weight_times_clipped_value(
    survey: pd.DataFrame,
    protect_seeded: Callable,
    noise: Callable,
    weight_bounds: Any,
    bounds: Any,
    fill: float | None,
) -> None:
    priv = protect_seeded(survey, epsilon=1.0)
    ref = weighted_lattice("sum", weight_bounds, EPS, bounds)
    with noise(priv, value=3) as calls:
        result = priv.dp.sum(
            "x", bounds=bounds, epsilon=0.5, weights="w", weight_bounds=weight_bounds, fillna=fill
        )
    x = survey["x"] if fill is None else survey["x"].fillna(fill)
    assert result == ref.real(ref.total(survey["w"], x) + 3)
    twin = (x.clip(*bounds) * survey["w"].clip(*weight_bounds)).sum()
    assert result - 3 * float(ref.step) == pytest.approx(twin, abs=len(survey) * float(ref.step))
    (call,) = calls
    _check_scale(call, priv.dp.session.releases[0].measurements[0], ref, "sum", EPS)


@pytest.mark.parametrize("value", [0, -7, 1 << 30])
@pytest.mark.parametrize("bounds", BOUNDS)
def test_weighted_mean_is_centred_sum_over_weighted_count(
    survey: pd.DataFrame, protect_seeded: Callable, noise: Callable, bounds: Any, value: int
) -> None:
    priv = protect_seeded(survey, epsilon=1.0)
    half = EPS / 2  # a lone mean splits ε equally (its two parts weigh alike)
    centred = weighted_lattice("centred", (0, 5), half, bounds)
    count = weighted_lattice("present", (0, 5), half, bounds)
    with noise(priv, value=value) as calls:
        result = priv.dp.mean("x", bounds=bounds, epsilon=0.5, weights="w", weight_bounds=(0, 5))
    total = Fraction(centred.total(survey["w"], survey["x"]) + value) * centred.step
    weight = Fraction(count.total(survey["w"], survey["x"]) + value) * count.step
    expected = Fraction(centred.centre) + total / max(weight, Fraction(1))
    assert result == pytest.approx(float(min(max(expected, bounds[0]), bounds[1])), rel=1e-12)
    measurements = priv.dp.session.releases[0].measurements
    assert [c.size for c in calls] == [1, 1]
    _check_scale(calls[0], measurements[0], centred, "centred", half)
    _check_scale(calls[1], measurements[1], count, "present", half)
    if value == 0:  # pandas' twin: np.average over rows with x present
        x, w = survey["x"].clip(*bounds), survey["w"].clip(0, 5).fillna(0.0)
        present = x.notna()
        assert result == pytest.approx(np.average(x[present], weights=w[present]), rel=1e-9)


def test_weighted_histogram_is_weighted_counts_per_bin(
    survey: pd.DataFrame, protect_seeded: Callable, noise: Callable
) -> None:
    priv = protect_seeded(survey, epsilon=1.0)
    edges = [0, 10, 50, 100]
    ref = weighted_lattice("count", (0, 5), EPS)
    with noise(priv) as calls:
        result = priv.dp.histogram("x", edges, epsilon=0.5, weights="w", weight_bounds=(0, 5))
    assert result.dtype == np.float64
    assert result.name == "count"
    assert result.index.equals(pd.IntervalIndex.from_breaks(edges, name="x"))
    bins = pd.cut(survey["x"], edges)
    for interval, value in result.items():
        rows = survey[bins == interval]
        assert value == ref.real(ref.total(rows["w"]))
    # pandas' twin with the same right-closed bins (np.histogram's close on the left).
    twin = survey["w"].clip(0, 5).groupby(bins, observed=False).sum()
    np.testing.assert_allclose(result.to_numpy(), twin.to_numpy(), atol=len(survey) * 2.0**-30)
    (call,) = calls
    assert call.size == len(edges) - 1
    _check_scale(call, priv.dp.session.releases[0].measurements[0], ref, "count", EPS)
    assert priv.dp.session.spent.epsilon == EPS  # parallel composition over the bins


@pytest.mark.parametrize("how", ["count", "sum", "mean"])
def test_grouped_weighted_releases_per_key(
    survey: pd.DataFrame, protect_seeded: Callable, noise: Callable, how: str
) -> None:
    priv = protect_seeded(survey, epsilon=1.0)
    g = priv.dp.groupby("g", keys=KEYS)
    options: dict[str, Any] = {"epsilon": 0.5, "weights": "w", "weight_bounds": (0, 5)}
    with noise(priv) as calls:
        if how == "count":
            result = g.count(**options)
        elif how == "sum":
            result = g.sum("x", bounds=(0, 100), **options)
        else:
            result = g.mean("x", bounds=(0, 100), **options)
    assert list(result.index) == KEYS
    assert result.dtype == np.float64
    assert {call.size for call in calls} == {len(KEYS)}
    eps = EPS if how != "mean" else EPS / 2
    kind = {"count": "count", "sum": "sum", "mean": "centred"}[how]
    ref = weighted_lattice(kind, (0, 5), eps, (0, 100))
    _check_scale(calls[0], priv.dp.session.releases[0].measurements[0], ref, kind, eps)
    for key in KEYS:
        rows = survey[survey["g"] == key]
        if how == "count":
            assert result[key] == ref.real(ref.total(rows["w"]))
        elif how == "sum":
            assert result[key] == ref.real(ref.total(rows["w"], rows["x"]))
        elif key == "d":  # no rows: the noisy weighted count is 0 < min_count
            assert np.isnan(result[key])
        else:
            x, w = rows["x"].clip(0, 100), rows["w"].clip(0, 5).fillna(0.0)
            twin = np.average(x[x.notna()], weights=w[x.notna()])
            assert result[key] == pytest.approx(twin, rel=1e-9)
    assert priv.dp.session.spent.epsilon == EPS  # parallel composition over the groups


def test_weighted_agg_weighs_every_statistic_and_derives_the_sum(
    survey: pd.DataFrame, protect_seeded: Callable, noise: Callable
) -> None:
    priv = protect_seeded(survey, epsilon=1.0)
    with noise(priv):
        table = priv.dp.groupby("g", keys=KEYS).agg(
            n="count", s=("x", "sum"), m=("x", "mean"), bounds={"x": (0, 100)}, epsilon=0.5,
            weights="w", weight_bounds=(0, 5), ci=0.9,
        )  # fmt: skip
    assert list(table.columns) == [f"{n}{s}" for n in "nsm" for s in ("", "_lower", "_upper")]
    (record,) = priv.dp.session.releases
    labels = [m.label for m in record.measurements]
    assert labels == ["count(weights=w)", "centred_sum(x, weights=w)", "count(x, weights=w)"]
    assert "s = centre × count + centred sum (derived; no ε of its own)" in record.note
    for key in KEYS[:3]:
        rows = survey[survey["g"] == key]
        x, w = rows["x"].clip(0, 100), rows["w"].clip(0, 5).fillna(0.0)
        assert table.loc[key, "n"] == pytest.approx(w.sum(), abs=1e-6)
        assert table.loc[key, "s"] == pytest.approx((x * w).sum(), abs=1e-4)
        assert table.loc[key, "s_lower"] <= table.loc[key, "s"] <= table.loc[key, "s_upper"]
    ungrouped = priv.dp.agg(n="count", m=("x", "mean"), bounds={"x": (0, 100)}, epsilon=0.25,
                            weights="w", weight_bounds=(0, 5))  # fmt: skip
    assert list(ungrouped.columns) == ["n", "m"]
    assert priv.dp.session.spent.epsilon == Fraction(3, 4)
