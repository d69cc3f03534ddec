"""``priv.dp.ols`` (issue 30): a linear model from one noisy Gram matrix.

Under zero noise (and no ridge) the coefficients are the least-squares fit of the clipped
complete rows, computed here independently (a design built by hand, ``numpy.linalg.lstsq``);
data are multiples of 1/8 within bounds exact on the lattice. The scale handed to the sampler
is ``p / ε`` sums with ``p = (m + 2)(m + 3) / 2``; one adversarial row moves every exact sum
by at most one unit; refusals charge nothing; results are shaped as statsmodels'.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

import pandas_dp  # noqa: F401  (registers the accessors)
from pandas_dp.api.queries.regression import plan_ols
from pandas_dp.api.release import resolve
from pandas_dp.engines.pandas_engine import aggregate_frame
from pandas_dp.errors import DPTypeError, DPValueError
from pandas_dp.planning.measurement.products import UNIT

BOUNDS = {"x": (0.0, 16.0), "z": (0.0, 16.0), "y": (-16.0, 48.0)}
KEYS = {"g": ["a", "b", "c"]}


def data(rows: int = 2000) -> pd.DataFrame:
    gen = np.random.default_rng(31)  # test data only, never noise
    x = gen.integers(0, 129, rows) / 8
    z = gen.integers(0, 129, rows) / 8
    g = np.array(["a", "b", "c"])[gen.integers(0, 3, rows)]
    y = 2 + 1.5 * x - 0.5 * z + np.where(g == "b", 3.0, 0.0) + gen.integers(-16, 17, rows) / 8
    frame = pd.DataFrame({"x": x, "z": z, "g": g, "y": np.clip(y, -16, 48)})
    frame.loc[::17, "z"] = np.nan  # rows missing a variable are left out, as statsmodels does
    frame.loc[5::23, "g"] = "d"  # a level that is not among the keys: left out too
    return frame


def least_squares(frame: pd.DataFrame) -> pd.Series:
    kept = frame[frame["g"].isin(KEYS["g"]) & frame["z"].notna()]
    design = pd.DataFrame(
        {
            "Intercept": 1.0,
            "C(g)[T.b]": (kept["g"] == "b").astype(float),
            "C(g)[T.c]": (kept["g"] == "c").astype(float),
            "x": kept["x"],
            "z": kept["z"],
        }
    )
    design["x:z"] = kept["x"] * kept["z"]
    coef, *_ = np.linalg.lstsq(design.to_numpy(), kept["y"].to_numpy(), rcond=None)
    return pd.Series(coef, index=design.columns)


FORMULA = "y ~ x + z + C(g) + x:z"


@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
def test_zero_noise_gives_least_squares(
    mechanism: str, noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    frame = data()
    priv = protect_seeded(frame, epsilon=100.0, delta=1e-6)
    with noise(priv):
        model = priv.dp.ols(FORMULA, bounds=BOUNDS, keys=KEYS, epsilon=50.0, mechanism=mechanism)
    assert model.ridge == 0
    expected = least_squares(frame)
    assert list(model.params.index) == list(expected.index)  # statsmodels' names and order
    # Gaussian noise is added on a coarser lattice: each sum rounded to 2**-26 products of
    # scaled values here, about 1e-5 of a coefficient at these 1,800 rows.
    tolerance = 1e-9 if mechanism == "laplace" else 1e-4
    pd.testing.assert_series_equal(
        model.params, expected, check_names=False, rtol=tolerance, atol=tolerance / 10
    )
    assert model.nobs == len(frame[frame["g"].isin(KEYS["g"]) & frame["z"].notna()])


def test_statsmodels_surface(protect_seeded: Callable[..., Any]) -> None:
    frame = data()
    priv = protect_seeded(frame, epsilon=10.0, seed=1)
    model = priv.dp.ols(FORMULA, bounds=BOUNDS, keys=KEYS, epsilon=5.0)
    names = list(model.params.index)
    assert list(model.bse.index) == names
    assert list(model.conf_int().columns) == [0, 1]
    assert list(model.cov_params().index) == names
    ends = model.conf_int(0.1)
    assert (ends[0] < model.params).all()
    assert (model.params < ends[1]).all()
    table = model.summary().coefficients
    assert list(table.columns) == ["coef", "std err", "t", "P>|t|", "[0.025", "0.975]"]
    assert 0 <= model.rsquared <= 1
    assert model.df_resid == pytest.approx(model.nobs - len(names))
    new = pd.DataFrame({"x": [1.0, 2.0], "z": [3.0, 4.0], "g": ["a", "b"]}, index=[7, 9])
    predicted = model.predict(new)
    by_hand = (
        model.params["Intercept"] + model.params["x"] * new["x"] + model.params["z"] * new["z"]
        + model.params["C(g)[T.b]"] * (new["g"] == "b") + model.params["x:z"] * new["x"] * new["z"]
    )  # fmt: skip
    pd.testing.assert_series_equal(predicted, by_hand, check_names=False)
    assert "OLS Regression Results" in repr(model)


def test_y_and_x_form_and_quoted_names(
    noise: Callable[..., Any], protect_seeded: Callable[..., Any]
) -> None:
    frame = data().rename(columns={"x": "x value"}).dropna()
    frame = frame[frame["g"].isin(KEYS["g"])]
    priv = protect_seeded(frame, epsilon=100.0)
    bounds = {"x value": BOUNDS["x"], "z": BOUNDS["z"], "y": BOUNDS["y"]}
    with noise(priv):
        model = priv.dp.ols(y="y", x=["x value", "z"], bounds=bounds, epsilon=50.0)
    design = np.column_stack([np.ones(len(frame)), frame["x value"], frame["z"]])
    coef, *_ = np.linalg.lstsq(design, frame["y"].to_numpy(), rcond=None)
    np.testing.assert_allclose(model.params.to_numpy(), coef, rtol=1e-9)
    assert list(model.params.index) == ["Intercept", "x value", "z"]


def test_scale_and_charge(noise: Callable[..., Any], protect_seeded: Callable[..., Any]) -> None:
    priv = protect_seeded(data(), epsilon=4.0)
    with noise(priv) as calls:
        priv.dp.ols(FORMULA, bounds=BOUNDS, keys=KEYS, epsilon=0.5)
    sums = (5 + 2) * (5 + 3) // 2  # m = 5 design columns: the Gram matrix of (1, z_1..z_5, z_y)
    (call,) = calls
    assert call.size == sums
    assert call.mechanism.scale == Fraction(sums * UNIT) / Fraction(1, 2)
    (release,) = priv.dp.session.releases
    assert release.cost.epsilon == Fraction(1, 2)
    (measurement,) = release.measurements
    assert measurement.sensitivity == sums * UNIT
    assert measurement.label == "products(C(g)[T.b], C(g)[T.c], x, z, x:z, y)"
    assert ("x", 0.0, 16.0) in release.bounds


@pytest.mark.parametrize(
    "row",
    [
        {"x": np.inf, "z": -1e308, "g": "b", "y": np.nan},
        {"x": 1e300, "z": 16.0, "g": "c", "y": -np.inf},
        {"x": 16.0, "z": 16.0, "g": "b", "y": 48.0},
        {"x": -5.0, "z": 0.0, "g": "zz", "y": 3.0},
        {"x": np.nan, "z": np.nan, "g": None, "y": np.nan},
    ],
)
def test_one_row_moves_each_sum_by_at_most_one_unit(
    row: dict[str, Any], protect_seeded: Callable[..., Any]
) -> None:
    frame = data(200)
    priv = protect_seeded(frame, epsilon=4.0)
    planned = plan_ols(resolve(priv), FORMULA, bounds=BOUNDS, keys=KEYS, epsilon=1.0)
    (part,) = planned.parts.values()
    after = pd.concat([frame, pd.DataFrame([row], index=[10**6])])
    before_sums = aggregate_frame(frame, (part.measure,)).values[0].astype(object)
    after_sums = aggregate_frame(after, (part.measure,)).values[0].astype(object)
    moved = np.abs(after_sums - before_sums)
    assert (moved <= UNIT).all(), moved


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda p: p.dp.ols("x + z", bounds=BOUNDS, epsilon=1.0), DPValueError, "response"),
        (lambda p: p.dp.ols("y ~ x - 1", bounds=BOUNDS, epsilon=1.0), DPValueError, "intercept"),
        (lambda p: p.dp.ols("y ~ center(x)", bounds=BOUNDS, epsilon=1.0), DPValueError, "learn"),
        (lambda p: p.dp.ols("y ~ x + lag(z)", bounds=BOUNDS, epsilon=1.0), DPValueError, "rows"),
        (lambda p: p.dp.ols("y ~ C(x)", bounds=BOUNDS, epsilon=1.0), DPValueError, "keys="),
        (lambda p: p.dp.ols("y ~ x + g", bounds=BOUNDS, epsilon=1.0), DPValueError, "levels"),
        (lambda p: p.dp.ols("y ~ x", bounds={"x": (0, 1)}, epsilon=1.0), DPValueError, "bounds"),
        (lambda p: p.dp.ols("y ~ q", bounds=BOUNDS, epsilon=1.0), Exception, "not found"),
        (lambda p: p.dp.ols("y ~ x", y="y", bounds=BOUNDS, epsilon=1.0), DPValueError, "not both"),
        (lambda p: p.dp.ols(bounds=BOUNDS, epsilon=1.0), DPTypeError, "formula"),
        (lambda p: p.dp.ols("y ~~ x", bounds=BOUNDS, epsilon=1.0), DPValueError, "cannot be read"),
        (lambda p: p.dp.ols("y ~ x", bounds=BOUNDS, epsilon=1.0, alpha=2), DPValueError, "alpha"),
        (lambda p: p.dp.ols("y ~ x", bounds=BOUNDS, epsilon=99.0), Exception, "budget|exceed"),
    ],
)
def test_refusals_charge_nothing(
    call: Callable[[Any], Any], error: type[Exception], match: str,
    charges_nothing: Callable[..., Any], protect_seeded: Callable[..., Any],
) -> None:  # fmt: skip
    priv = protect_seeded(data(), epsilon=4.0)
    with charges_nothing(priv), pytest.raises(error, match=match):
        call(priv)


def test_preview_charges_nothing(protect_seeded: Callable[..., Any]) -> None:
    priv = protect_seeded(data(), epsilon=4.0)
    preview = priv.dp.preview.ols(FORMULA, bounds=BOUNDS, keys=KEYS, epsilon=1.0)
    assert preview.epsilon == 1.0
    assert list(preview.table["how"]) == ["ols"]
    assert not priv.dp.session.releases


def test_predict_refuses_levels_without_a_coefficient_and_gives_nan_for_missing(
    protect_seeded: Callable[..., Any],
) -> None:
    priv = protect_seeded(data(), epsilon=10.0, seed=2)
    model = priv.dp.ols(FORMULA, bounds=BOUNDS, keys=KEYS, epsilon=5.0)
    rows = pd.DataFrame({"x": [1.0, 2.0, np.nan], "z": [3.0, 4.0, 5.0], "g": ["a", None, "c"]})
    predicted = model.predict(rows)
    assert np.isfinite(predicted.iloc[0])
    assert predicted.iloc[1:].isna().all()  # a missing level, a missing number
    with pytest.raises(DPValueError, match="'g' holds \\['zz'\\] outside the model's levels"):
        model.predict(pd.DataFrame({"x": [1.0], "z": [3.0], "g": ["zz"]}))
