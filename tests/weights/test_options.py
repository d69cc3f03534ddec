"""Weighted releases' options: refusals that cost nothing, schema bounds, previews, intervals,
Gaussian noise, privacy units and the ledger row."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

import pandas_dp
from pandas_dp import DPKeyError, DPTypeError, DPValueError

from ..oracles.weighted import weighted_lattice

W = {"weights": "w", "weight_bounds": (0, 5)}
REFUSED: dict[str, tuple[Callable[[Any], Any], type[Exception], str]] = {
    "negative lower": (
        lambda p: p.dp.sum("x", bounds=(0, 1), weights="w", weight_bounds=(-1, 5), epsilon=1),
        DPValueError, "survey weights are non-negative",
    ),
    "no weight bounds": (
        lambda p: p.dp.count(weights="w", epsilon=1), DPValueError, r"needs weight_bounds"
    ),
    "bounds without weights": (
        lambda p: p.dp.count(weight_bounds=(0, 5), epsilon=1), DPValueError, "needs weights="
    ),
    "reversed": (
        lambda p: p.dp.count(weights="w", weight_bounds=(5, 0), epsilon=1),
        DPValueError, "weight_bounds must satisfy lower < upper",
    ),
    "nan bound": (
        lambda p: p.dp.count(weights="w", weight_bounds=(0, np.nan), epsilon=1),
        DPValueError, "finite",
    ),
    "text weights": (lambda p: p.dp.count(weights="g", weight_bounds=(0, 5), epsilon=1),
                     DPTypeError, "has dtype"),
    "missing column": (lambda p: p.dp.count(weights="v", weight_bounds=(0, 5), epsilon=1),
                       DPKeyError, "'v' not found"),
    "weights as a Series": (
        lambda p: p.dp.count(weights=p["w"], weight_bounds=(0, 5), epsilon=1),
        DPTypeError, "got a Series: add the weights as a column",
    ),
    "series": (lambda p: p["x"].dp.sum(bounds=(0, 1), epsilon=1, **W), DPValueError,
               "DataFrame form"),
    "var": (lambda p: p.dp.var("x", bounds=(0, 1), epsilon=1, **W), DPValueError,
            r"'var' \(var\) cannot be weighted"),
    "median in agg": (
        lambda p: p.dp.groupby("g", keys=["a"]).agg(
            q=("x", "median"), n="count", bounds={"x": (0, 1)}, epsilon=1, **W
        ),
        DPValueError, r"'q' \(median\) cannot be weighted",
    ),
    "total": (lambda p: p.dp.groupby("g", keys=["a"]).count(epsilon=1, total=10, **W),
              DPValueError, "total="),
    "value_counts": (lambda p: p["g"].dp.value_counts(["a"], epsilon=1, **W), DPValueError,
                     "DataFrame form"),
}  # fmt: skip


@pytest.mark.parametrize("case", REFUSED.values(), ids=REFUSED.keys())
def test_refusals_name_the_fix_and_cost_nothing(survey: pd.DataFrame, case: Any) -> None:
    release, error, message = case
    priv = survey.dp.protect(epsilon=1.0)
    with pytest.raises(error, match=message):
        release(priv)
    assert priv.dp.session.spent.epsilon == 0
    assert not priv.dp.session.releases


def test_weight_bounds_from_the_schema(survey: pd.DataFrame, noise: Callable) -> None:
    pa = pytest.importorskip("pandera.pandas")
    schema = pa.DataFrameSchema({"w": pa.Column(float, pa.Check.in_range(0, 5), nullable=True)})
    with pytest.warns(pandas_dp.PrivacyLeakWarning):
        priv = survey.dp.protect(epsilon=1.0, schema=schema, validate=False, rng=1)
    with noise(priv):
        from_schema = priv.dp.count(epsilon=0.5, weights="w")
        given = priv.dp.count(epsilon=0.5, weights="w", weight_bounds=(0, 5))
    assert from_schema == given
    first, second = priv.dp.session.ledger["note"]
    assert "rows weighted by w, clipped to [0, 5] (bounds from the schema (in_range))" in first
    assert "from the schema" not in second


def test_ledger_row_names_the_weights_their_bounds_and_sensitivity(
    survey: pd.DataFrame, protect_seeded: Callable, noise: Callable
) -> None:
    priv = protect_seeded(survey, epsilon=1.0)
    with noise(priv):
        priv.dp.sum("x", bounds=(-50, 25), epsilon=0.5, **W)
    (row,) = priv.dp.session.ledger.to_dict("records")
    assert row["columns"] == "x, w"
    assert row["bounds"] == "x: [-50, 25]; w (weights): [0, 5]"
    assert "rows weighted by w, clipped to [0, 5]; a missing weight counts 0" in row["note"]
    assert "sum(x, weights=w): sensitivity 250" in row["note"]  # W·max(|L|, |U|) = 5·50


def test_preview_reads_nothing_and_states_the_weighted_scale(survey: pd.DataFrame) -> None:
    priv = survey.dp.protect(epsilon=1.0)
    preview = priv.dp.preview.sum("x", bounds=(0, 100), epsilon=0.5, **W)
    assert preview.table.loc["sum", "scale"] == 500 / 0.5  # W·max(|L|, |U|)/ε
    ref = weighted_lattice("sum", (0, 5), Fraction(1, 2), (0, 100))
    # A 95% half-width of discrete Laplace noise of scale b is about b·ln(1/0.05), plus the
    # documented rounding allowance of half a step for each of up to 2**32 rows.
    error = 1000 * np.log(20) + 2**31 * float(ref.step)
    assert preview.table.loc["sum", "error"] == pytest.approx(error, rel=1e-3)
    counts = priv.dp.preview.groupby("g", keys=["a", "b"]).count(epsilon=0.5, **W)
    assert counts.table.loc["count", "scale"] == 5 / 0.5
    mean = priv.dp.preview.mean("x", bounds=(0, 100), epsilon=0.5, **W)
    assert mean.mean_error(expected_rows=1000.0).iloc[0] > 0
    assert priv.dp.session.spent.epsilon == 0


@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
def test_weight_one_calibrates_like_the_unweighted_sum(
    survey: pd.DataFrame, protect_seeded: Callable, noise: Callable, mechanism: str
) -> None:
    # Weights clipped to [0, 1] and [0, 4] give products in [0, U] and [0, 4U]: the same
    # lattice in units as the plain sum over [0, U], two binary places apart.
    priv = protect_seeded(survey, epsilon=10.0, delta=1e-6)
    options: dict[str, Any] = {"bounds": (0, 100), "epsilon": 0.5, "mechanism": mechanism}
    if mechanism == "gaussian":
        options["delta"] = 1e-7
    with noise(priv) as calls:
        priv.dp.sum("x", **options)
        priv.dp.sum("x", weights="w", weight_bounds=(0, 1), **options)
        priv.dp.sum("x", weights="w", weight_bounds=(0, 4), **options)
    plain, one, four = (r.measurements[0] for r in priv.dp.session.releases)
    assert calls[0].mechanism == calls[1].mechanism == calls[2].mechanism
    assert plain.sensitivity == one.sensitivity == four.sensitivity
    assert (one.exponent, four.exponent) == (plain.exponent, plain.exponent + 2)
    assert plain.epsilon == one.epsilon == four.epsilon == Fraction(1, 2)
    assert plain.cost == one.cost == four.cost


def test_privacy_unit_multiplies_the_weighted_sensitivity(
    survey: pd.DataFrame, protect_seeded: Callable, noise: Callable
) -> None:
    priv = protect_seeded(survey, epsilon=1.0, privacy_unit="id", max_rows_per_unit=3)
    ref = weighted_lattice("sum", (0, 5), Fraction(1, 2) / 3, (0, 100))  # ε per row: ε/k
    with noise(priv) as calls:
        result = priv.dp.sum("x", bounds=(0, 100), epsilon=0.5, **W)
    (measurement,) = priv.dp.session.releases[0].measurements
    assert measurement.sensitivity == 3 * ref.sensitivity
    assert calls[0].mechanism.scale == Fraction(3 * ref.sensitivity) / Fraction(1, 2)
    assert result == ref.real(ref.total(survey["w"], survey["x"]))  # ids hold 3 rows each


def test_intervals_cover_the_value_and_follow_the_noise(
    survey: pd.DataFrame, protect_seeded: Callable, noise: Callable
) -> None:
    priv = protect_seeded(survey, epsilon=1.0)
    with noise(priv):
        count = priv.dp.count(epsilon=0.25, ci=0.9, **W)
        total = priv.dp.sum("x", bounds=(0, 100), epsilon=0.25, ci=0.9, **W)
        mean = priv.dp.mean("x", bounds=(0, 100), epsilon=0.25, ci=0.9, **W)
        table = priv.dp.groupby("g", keys=["a", "d"]).mean(
            "x", bounds=(0, 100), epsilon=0.25, ci=0.9, **W
        )
    steps = (
        weighted_lattice("count", (0, 5), Fraction(1, 4)).step,
        weighted_lattice("sum", (0, 5), Fraction(1, 4), (0, 100)).step,
    )
    for estimate, b, step in zip((count, total), (5 / 0.25, 500 / 0.25), steps, strict=True):
        assert estimate.lower < estimate.value < estimate.upper
        # Discrete Laplace with scale b: a 90% interval's half-width is about b·ln(10), plus
        # half a step for each of up to 2**32 rows (the documented rounding allowance).
        width = b * np.log(10) + 2**31 * float(step)
        assert estimate.upper - estimate.value == pytest.approx(width, rel=1e-3)
    assert 0 <= mean.lower < mean.value < mean.upper <= 100
    assert list(table.columns) == ["x", "x_lower", "x_upper"]
    assert table.loc["d"].isna().all()  # no rows: hidden, interval too (min_count)
