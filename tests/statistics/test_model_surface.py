"""statsmodels' results surface on ``ols`` and ``logit`` (issue 42): tests, predictions, summary.

Everything here is post-processing of a released model, so every call below charges nothing.
Against statsmodels (``smf.ols(...).fit()`` on the same rows; skipped without statsmodels,
which is not a dependency) with the noise replaced by zero and bounds that clip nothing:

- the coefficients are the least-squares fit to ``1e-9`` (relative), as in
  ``tests/statistics/test_ols.py``: each value is scaled into ``[-1, 1]`` and rounded to
  ``2**-16`` of that range (products to ``2**-32``), so the data are multiples of 1/8 within
  bounds whose half-ranges are powers of two, exact on that lattice;
- everything read off ``cov_params()`` or the residual sum of squares (``bse``, R², F, t and
  F tests, prediction intervals) to ``1e-4`` (relative): zero noise is not no noise, the
  covariance keeps the noise's variance (delta method) and the RSS its upper bound, both set
  by the noise's scale ``p / ε`` per sum (``p = 21`` sums here). At ``ε = 5·10^5`` that is
  ``4·10^-5`` of a scaled unit per sum, against a scaled RSS of about 1.4 on these rows: a
  relative change of a few ``10^-5`` (measured ``3·10^-5`` at most), ``1e-4`` leaves a margin of 3.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import pandas_dp  # noqa: F401  (registers the accessors)
from pandas_dp.errors import DPValueError
from pandas_dp.planning.statistics.inference import linear_constraint

BOUNDS = {"x": (0.0, 16.0), "z": (0.0, 16.0), "y": (-16.0, 48.0)}
KEYS = {"g": ["a", "b", "c"]}
FORMULA = "y ~ x + z + C(g)"
EPSILON = 5e5  # the largest budget a frame takes is 1e6
PARAMS_RTOL = 1e-9
RTOL = 1e-4


def data(rows: int = 600) -> pd.DataFrame:
    """A weak linear model (F test's p-value away from 0) on a 1/8 lattice within the bounds."""
    gen = np.random.default_rng(7)  # test data only, never noise
    x = gen.integers(0, 129, rows) / 8
    z = gen.integers(0, 129, rows) / 8
    g = np.array(["a", "b", "c"])[gen.integers(0, 3, rows)]
    noise = gen.integers(-64, 65, rows) / 8
    y = np.round((10 + 0.08 * x - 0.03 * z + np.where(g == "b", 0.6, 0.0)) * 8) / 8 + noise
    frame = pd.DataFrame({"x": x, "z": z, "g": g, "y": y})
    assert frame["y"].between(*BOUNDS["y"]).all()
    return frame


def _p_tolerance(fvalue: float, df_num: float, df_denom: float = 593.0) -> float:
    """How far an F test's p-value moves when ``fvalue`` moves by ``RTOL`` (relative)."""
    return float(stats.f.pdf(fvalue, df_num, df_denom) * fvalue * RTOL * 2) + 1e-15


@pytest.fixture
def fitted(noise: Callable[..., Any], protect_seeded: Callable[..., Any]) -> tuple[Any, Any, Any]:
    """``(priv, model, statsmodels' fit)`` on the same rows, the noise replaced by 0."""
    smf = pytest.importorskip("statsmodels.formula.api")
    frame = data()
    priv = protect_seeded(frame, epsilon=1e6)
    with noise(priv):
        model = priv.dp.ols(FORMULA, bounds=BOUNDS, keys=KEYS, epsilon=EPSILON)
    return priv, model, smf.ols(FORMULA, data=frame).fit()


def test_fit_statistics_as_statsmodels(
    fitted: tuple[Any, Any, Any], charges_nothing: Callable[..., Any]
) -> None:
    priv, model, exact = fitted
    with charges_nothing(priv):
        assert model.ridge == 0
        pd.testing.assert_series_equal(
            model.params, exact.params[model.params.index], check_names=False, rtol=PARAMS_RTOL
        )
        assert model.nobs == exact.nobs
        assert model.df_model == exact.df_model == 4
        assert model.df_resid == exact.df_resid
        pd.testing.assert_series_equal(
            model.bse, exact.bse[model.params.index], check_names=False, rtol=RTOL
        )
        # R² = 1 - RSS / TSS moves by the RSS's relative change times RSS / TSS ≤ 1.
        assert model.rsquared == pytest.approx(exact.rsquared, abs=RTOL)
        assert model.rsquared_adj == pytest.approx(exact.rsquared_adj, abs=RTOL)
        assert model.fvalue == pytest.approx(exact.fvalue, rel=RTOL)
        assert 1e-4 < exact.f_pvalue < 0.5  # a p-value worth comparing
        assert model.f_pvalue == pytest.approx(exact.f_pvalue, abs=_p_tolerance(exact.fvalue, 4))


@pytest.mark.parametrize(
    "hypothesis",
    [
        "x = 0",
        "x = 0.1, z = 0",
        "2*x - z/2 = 0.1",
        "x = z",
        "-(x - z) + 3 * C(g)[T.b] = 1",
        "C(g)[T.b] = C(g)[T.c], Intercept = 10",
        "x",
    ],
)
def test_t_and_f_tests_as_statsmodels(
    hypothesis: str, fitted: tuple[Any, Any, Any], charges_nothing: Callable[..., Any]
) -> None:
    priv, model, exact = fitted
    with charges_nothing(priv):
        ours, theirs = model.t_test(hypothesis), exact.t_test(hypothesis)
        np.testing.assert_allclose(ours.effect, np.atleast_1d(theirs.effect), rtol=PARAMS_RTOL)
        np.testing.assert_allclose(ours.sd, np.atleast_1d(theirs.sd).ravel(), rtol=RTOL)
        np.testing.assert_allclose(ours.tvalue, np.atleast_1d(theirs.tvalue).ravel(), rtol=RTOL)
        t = np.atleast_1d(theirs.tvalue).ravel()
        atol = 2 * np.abs(t) * stats.t.pdf(t, exact.df_resid) * RTOL  # |dp/dt| · |t| · RTOL
        assert (np.abs(ours.pvalue - np.atleast_1d(theirs.pvalue).ravel()) <= atol).all()
        # The interval's ends move by the quantile times sd's change (≤ RTOL · 2 sd here).
        gap = np.abs(ours.conf_int(0.1) - theirs.conf_int(0.1))
        assert (gap <= RTOL * 2 * ours.sd[:, None]).all(), gap
        frame = ours.summary_frame()
        assert list(frame.columns) == list(theirs.summary_frame().columns)
        assert list(frame.index) == list(theirs.summary_frame().index)
        joint, exact_joint = model.f_test(hypothesis), exact.f_test(hypothesis)
        assert joint.fvalue == pytest.approx(float(exact_joint.fvalue), rel=RTOL)
        assert joint.pvalue == pytest.approx(
            float(exact_joint.pvalue), abs=_p_tolerance(joint.fvalue, joint.df_num)
        )
        assert (joint.df_num, joint.df_denom) == (exact_joint.df_num, exact_joint.df_denom)
        # The same hypothesis as an array R (columns in the model's order) and q.
        rows, values = linear_constraint(hypothesis, list(model.params.index))
        by_array = model.t_test(rows, values)
        np.testing.assert_array_equal(by_array.tvalue, ours.tvalue)
        assert model.f_test((rows, values)).fvalue == joint.fvalue


def test_get_prediction_as_statsmodels(
    fitted: tuple[Any, Any, Any], charges_nothing: Callable[..., Any]
) -> None:
    priv, model, exact = fitted
    new = pd.DataFrame(
        {"x": [0.0, 3.5, 16.0, 8.0], "z": [16.0, 2.0, 0.0, np.nan], "g": ["a", "b", "c", "a"]},
        index=[10, 11, 12, 13],
    )
    with charges_nothing(priv):
        ours = model.get_prediction(new).summary_frame(alpha=0.1)
        theirs = exact.get_prediction(new.iloc[:3]).summary_frame(alpha=0.1)
    assert list(ours.columns) == list(theirs.columns) == [
        "mean", "mean_se", "mean_ci_lower", "mean_ci_upper", "obs_ci_lower", "obs_ci_upper"
    ]  # fmt: skip
    assert list(ours.index) == [10, 11, 12, 13]
    pd.testing.assert_frame_equal(ours.iloc[:3], theirs.set_axis(ours.index[:3]), rtol=RTOL)
    assert ours.iloc[3].isna().all()  # a row missing a variable, as statsmodels gives
    np.testing.assert_allclose(ours["mean"].iloc[:3], model.predict(new.iloc[:3]), rtol=1e-12)


def test_summary_header_and_html(
    fitted: tuple[Any, Any, Any], charges_nothing: Callable[..., Any]
) -> None:
    priv, model, _ = fitted
    with charges_nothing(priv):
        summary = model.summary()
        text = str(summary)
        html = model._repr_html_()
    assert text.splitlines()[0].strip() == "OLS Regression Results (differentially private)"
    for label in [
        "Dep. Variable:", "Model:", "Method:", "No. Observations:", "R-squared:",
        "Adj. R-squared:", "F-statistic:", "Prob (F-statistic):",
    ]:  # fmt: skip
        assert label in text
        assert label in html
    assert f"{model.nobs:.0f} (noisy)" in text
    assert list(summary.coefficients.columns) == [
        "coef", "std err", "t", "P>|t|", "[0.025", "0.975]"
    ]  # fmt: skip
    assert list(summary.tables[1].index) == list(model.params.index)
    assert repr(model) == text


def test_noise_widens_tests_and_intervals(protect_seeded: Callable[..., Any]) -> None:
    """With real noise, ``sd`` includes it and intervals carry Laplace's own quantile."""
    priv = protect_seeded(data(), epsilon=10.0, seed=3)
    model = priv.dp.ols(FORMULA, bounds=BOUNDS, keys=KEYS, epsilon=2.0)
    test = model.t_test("x = 0")
    assert test.sd[0] == pytest.approx(model.bse["x"])
    np.testing.assert_allclose(test.conf_int(0.05)[0], model.conf_int(0.05).loc["x"], rtol=1e-12)
    assert model.f_test("x = 0").fvalue == pytest.approx(test.tvalue[0] ** 2)
    assert model.fvalue == pytest.approx(model.f_test(np.eye(len(model.params))[1:]).fvalue)
    frame = model.get_prediction(data().head(3)).summary_frame()
    assert (frame["obs_ci_lower"] < frame["mean_ci_lower"]).all()
    assert (frame["mean_ci_upper"] < frame["obs_ci_upper"]).all()


def test_logit_tests_read_its_covariance(
    protect_seeded: Callable[..., Any], charges_nothing: Callable[..., Any]
) -> None:
    gen = np.random.default_rng(5)  # test data only, never noise
    frame = data(3000)
    frame["y"] = (gen.uniform(size=len(frame)) < 1 / (1 + np.exp(-(frame["x"] - 8) / 4))) * 1
    priv = protect_seeded(frame, epsilon=10.0, seed=4)
    bounds = {"x": BOUNDS["x"], "z": BOUNDS["z"]}
    model = priv.dp.logit(FORMULA, bounds=bounds, keys=KEYS, epsilon=2.0)
    with charges_nothing(priv):
        test = model.t_test("x = 0, z = 0")
        np.testing.assert_allclose(test.effect, model.params[["x", "z"]], rtol=1e-12)
        np.testing.assert_allclose(test.tvalue, model.tvalues[["x", "z"]], rtol=1e-12)
        np.testing.assert_allclose(test.pvalue, model.pvalues[["x", "z"]], rtol=1e-9)
        np.testing.assert_allclose(test.conf_int(), model.conf_int().loc[["x", "z"]], rtol=1e-12)
        assert list(test.summary_frame().columns) == [
            "coef", "std err", "z", "P>|z|", "Conf. Int. Low", "Conf. Int. Upp."
        ]  # fmt: skip
        joint = model.f_test("x = 0, z = 0")
        cov = model.cov_params().loc[["x", "z"], ["x", "z"]].to_numpy()
        gap = model.params[["x", "z"]].to_numpy()
        assert joint.fvalue == pytest.approx(gap @ np.linalg.solve(cov, gap) / 2)
        assert (joint.df_num, joint.df_denom) == (2.0, model.df_resid)
        assert model.f_test("z = 0").fvalue == pytest.approx(model.tvalues["z"] ** 2)


NAMES = ["Intercept", "x", "z", "C(g)[T.b]", "C(g)[T.c]"]


@pytest.mark.parametrize(
    ("hypothesis", "rows", "values"),
    [
        ("x = 0", [[0, 1, 0, 0, 0]], [0]),
        ("x=z", [[0, 1, -1, 0, 0]], [0]),
        ("2*x - z/4 = 1.5e1", [[0, 2, -0.25, 0, 0]], [15]),
        ("x*3 + (z - x) * 2 = -1", [[0, 1, 2, 0, 0]], [-1]),
        ("x = z = 1", [[0, 1, -1, 0, 0], [0, 0, 1, 0, 0]], [0, 1]),
        ("C(g)[T.b] - C(g)[T.c], Intercept + 1 = 2", [[0, 0, 0, 1, -1], [1, 0, 0, 0, 0]], [0, 1]),
        (["x = 1", "z = 2"], [[0, 1, 0, 0, 0], [0, 0, 1, 0, 0]], [1, 2]),
    ],
)
def test_hypothesis_parser(hypothesis: Any, rows: list[list[float]], values: list[float]) -> None:
    matrix, q = linear_constraint(hypothesis, NAMES)
    np.testing.assert_array_equal(matrix, rows)
    np.testing.assert_array_equal(q, values)


@pytest.mark.parametrize(
    ("hypothesis", "q", "match"),
    [
        ("w = 0", None, "at 'w = 0': not a coefficient's name"),
        ("xz = 0", None, "at 'xz = 0': not a coefficient's name"),
        ("x2 = 0", None, "at 'x2 = 0': not a coefficient's name"),
        ("x * z = 0", None, "a product of coefficients is not linear"),
        ("x / z = 1", None, "divide only by a non-zero number"),
        ("x / 0 = 1", None, "divide only by a non-zero number"),
        ("x = ", None, "it ends too early"),
        ("1 = 1", None, "an equation names no coefficient"),
        ("x - x", None, "an equation names no coefficient"),
        ("(x = 0", None, "a '\\(' is not closed"),
        ("x = 0 z = 1", None, "expected ',' or the end"),
        ("x = 0;", None, "not a coefficient's name"),
        ("x ** 2 = 0", None, "unexpected '\\*'"),
        ("x = 0", [1.0], "q=.* goes with an array R"),
        ([[0, 1, 0]], None, "one column per coefficient"),
        ([[0, 1, 0, 0, 0]], [1, 2], "q has 2 values for 1 rows"),
        ([[0, np.nan, 0, 0, 0]], None, "finite"),
        ([["a", "b", "c", "d", "e"]], None, "cannot read the hypothesis"),
        ({"x": 0}, None, "one column per coefficient"),
    ],
)
def test_hypothesis_refusals(hypothesis: Any, q: Any, match: str) -> None:
    with pytest.raises(DPValueError, match=match):
        linear_constraint(hypothesis, NAMES, q)


def test_refused_hypothesis_charges_nothing(
    protect_seeded: Callable[..., Any], charges_nothing: Callable[..., Any]
) -> None:
    priv = protect_seeded(data(), epsilon=10.0, seed=5)
    model = priv.dp.ols(FORMULA, bounds=BOUNDS, keys=KEYS, epsilon=2.0)
    with charges_nothing(priv):
        for call in (model.t_test, model.f_test):
            with pytest.raises(
                DPValueError, match=r"coefficients are \['Intercept', 'C\(g\)\[T.b\]'"
            ):
                call("age = 0")
