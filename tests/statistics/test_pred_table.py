"""``priv.dp.pred_table(model, ...)``: statsmodels' ``pred_table`` as a release (issue 42).

Each row is read through the released model's design and counted in one of four cells
(observed 0/1 by predicted 0/1); one charge for the table. Checked: at zero noise the
table equals the confusion matrix computed by hand from the released coefficients on the
clipped rows (and statsmodels' ``pred_table`` for those coefficients); the scale handed to
the sampler; refusals before any charge; a neighbour keeps the table's shape and dtypes.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from pandas_dp.errors import DPTypeError, DPValueError

BOUNDS = {"x": (-3.0, 3.0)}
LEVELS = {"h": ["u", "v"]}
FORMULA = "y ~ x + C(h)"


def data(n: int = 4000) -> pd.DataFrame:
    gen = np.random.default_rng(21)  # test data only, never noise
    x = gen.normal(0, 1.5, n)
    h = gen.choice(["u", "v"], n)
    score = -0.3 + 1.2 * np.clip(x, -3, 3) + 0.8 * (h == "v")
    y = gen.uniform(size=n) < 1 / (1 + np.exp(-score))
    frame = pd.DataFrame({"x": x, "h": h, "y": y})
    frame.loc[::50, "h"] = "w"  # outside the public levels: counts nowhere
    return frame


def by_hand(frame: pd.DataFrame, params: pd.Series, threshold: float) -> np.ndarray:
    rows = frame[frame["h"].isin(LEVELS["h"])]
    score = (
        params["Intercept"]
        + params["x"] * rows["x"].clip(*BOUNDS["x"])
        + params["C(h)[T.v]"] * (rows["h"] == "v")
    )
    predicted = (1 / (1 + np.exp(-score)) > threshold).astype(int)
    observed = rows["y"].astype(int)
    return (
        pd.crosstab(observed, predicted)
        .reindex(index=[0, 1], columns=[0, 1], fill_value=0)
        .to_numpy()
    )


@pytest.mark.parametrize("threshold", [0.5, 0.3])
def test_zero_noise_is_the_confusion_matrix(threshold: float, protect_seeded, noise) -> None:
    frame = data()
    priv = protect_seeded(frame, epsilon=10.0)
    model = priv.dp.logit(FORMULA, bounds=BOUNDS, keys=LEVELS, epsilon=1.0)
    with noise(priv) as calls:
        table = priv.dp.pred_table(model, threshold=threshold, epsilon=0.5)
    assert table.index.name == "observed"
    assert table.columns.name == "predicted"
    assert list(table.index) == [0, 1]
    assert list(table.columns) == [0, 1]
    np.testing.assert_array_equal(table.to_numpy(), by_hand(frame, model.params, threshold))
    (call,) = calls
    assert float(call.mechanism.scale) == pytest.approx(1 / 0.5)  # one row, one cell
    release = priv.dp.session.releases[-1]
    assert release.cost.epsilon == pytest.approx(0.5)


def test_statsmodels_pred_table_for_the_same_coefficients(protect_seeded, noise) -> None:
    discrete = pytest.importorskip("statsmodels.discrete.discrete_model")
    frame = data()
    priv = protect_seeded(frame, epsilon=10.0)
    model = priv.dp.logit(FORMULA, bounds=BOUNDS, keys=LEVELS, epsilon=1.0)
    with noise(priv):
        table = priv.dp.pred_table(model, epsilon=0.5)
    rows = frame[frame["h"].isin(LEVELS["h"])]
    exog = np.column_stack(
        [np.ones(len(rows)), (rows["h"] == "v").astype(float), rows["x"].clip(-3, 3)]
    )
    start = np.asarray([model.params[c] for c in ("Intercept", "C(h)[T.v]", "x")])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no iteration: statsmodels at these coefficients
        fitted = discrete.Logit(rows["y"].astype(float), exog).fit(
            start_params=start, maxiter=0, disp=0
        )
    np.testing.assert_array_equal(fitted.params, start)
    np.testing.assert_array_equal(table.to_numpy(), fitted.pred_table())


REFUSALS = {
    "an ols model": (lambda p, m: p.dp.pred_table(m["ols"], epsilon=0.1), DPTypeError, "logit"),
    "a threshold of 1": (
        lambda p, m: p.dp.pred_table(m["logit"], threshold=1.0, epsilon=0.1),
        DPValueError,
        "threshold",
    ),
    "a text threshold": (
        lambda p, m: p.dp.pred_table(m["logit"], threshold="0.5", epsilon=0.1),
        DPTypeError,
        "threshold",
    ),
    "no epsilon": (lambda p, m: p.dp.pred_table(m["logit"]), TypeError, "epsilon"),
    "a Series": (
        lambda p, m: p["x"].dp.pred_table(m["logit"], epsilon=0.1),
        AttributeError,
        "pred_table",
    ),
}


@pytest.mark.parametrize("name", list(REFUSALS))
def test_refusals_charge_nothing(name: str, charges_nothing) -> None:
    call, error, match = REFUSALS[name]
    priv = data(500).dp.protect(epsilon=5.0)
    models = {
        "logit": priv.dp.logit(FORMULA, bounds=BOUNDS, keys=LEVELS, epsilon=1.0),
        "ols": priv.dp.ols("x ~ y", bounds={"x": (-3, 3), "y": (0, 1)}, epsilon=0.1),
    }
    with charges_nothing(priv), pytest.raises(error, match=match):
        call(priv, models)


def test_dask_is_refused_before_any_charge(charges_nothing) -> None:
    dd = pytest.importorskip("dask.dataframe")
    model = (
        data(500).dp.protect(epsilon=5.0).dp.logit(FORMULA, bounds=BOUNDS, keys=LEVELS, epsilon=1.0)
    )
    lazy = dd.from_pandas(data(500), npartitions=2).dp.protect(epsilon=1.0)
    with charges_nothing(lazy), pytest.raises(DPValueError, match="pandas DataFrame"):
        lazy.dp.pred_table(model, epsilon=0.1)


def test_a_neighbour_keeps_the_shape() -> None:
    frame = data(600)
    model = frame.dp.protect(epsilon=5.0).dp.logit(FORMULA, bounds=BOUNDS, keys=LEVELS, epsilon=1.0)
    shapes = []
    for extra in ({"x": np.nan, "h": "u", "y": True}, {"x": 1e308, "h": "zz", "y": False}, None):
        rows = (
            frame if extra is None else pd.concat([frame, pd.DataFrame([extra])], ignore_index=True)
        )
        table = rows.dp.protect(epsilon=5.0).dp.pred_table(model, epsilon=1.0)
        shapes.append((list(table.index), list(table.columns), [str(t) for t in table.dtypes]))
    assert all(s == shapes[0] for s in shapes)
