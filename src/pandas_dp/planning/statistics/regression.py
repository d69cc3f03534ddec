"""A linear model from noisy sufficient statistics, and its statsmodels-like result.

The release measures the Gram matrix ``G`` of ``(1, z_1, ..., z_m, z_y)`` over the complete
rows, each design column and the response scaled to ``z = (x - c) / r`` in ``[-1, 1]``
(:mod:`pandas_dp.planning.measurement.products`). Everything here is post-processing of that one
noisy matrix (Wang 2018's sufficient-statistics perturbation):

- coefficients ``w = (A + λP)⁻¹ b`` in the scaled units (``A`` the regressors' block, ``b``
  their products with ``z_y``, ``P`` the identity without the intercept), mapped back to the
  columns' units. The ridge ``λ = max(0, τ - λ_min(A))`` is AdaSSP's rule (Wang 2018), read
  off the noisy ``A`` itself at no cost: ``τ = s (2√k + 2)`` bounds the noise matrix's
  spectral norm with high probability (``s`` the noise's standard deviation per entry);
- standard errors from the sampling variance ``σ² (A + λP)⁻¹`` (``σ²`` from the noisy
  residual sum of squares) plus the noise's, by the delta method: ``(A + λP)⁻¹ Σ_g (A +
  λP)⁻¹`` with ``Σ_g = s² ((1 + |w|²) I + w wᵀ - diag(w²))``, the covariance of ``e - E w``
  for noise ``E`` on ``A`` and ``e`` on ``b``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Protocol

import numpy as np
import pandas as pd

from pandas_dp.errors import DPValueError
from pandas_dp.marks import carries_mark
from pandas_dp.planning.measurement.keys import MeasurementKey
from pandas_dp.planning.measurement.products import ProductLayout
from pandas_dp.planning.statistics.base import F64, Context, Inputs, Statistic
from pandas_dp.planning.statistics.inference import (
    FTestResults,
    Inference,
    ModelSummary,
    TTestResults,
)

if TYPE_CHECKING:
    from pandas_dp.planning.statistics.postprocess import PostProcess


class Design(Protocol):
    """What a fitted model reads of its design: the formula, columns, levels and bounds.

    A :class:`~pandas_dp.transformations.design.FormulaDesign`, which planning cannot import
    (it applies the design to rows inside the engine).
    """

    @property
    def formula(self) -> str:
        """The model's formula, as the user wrote it."""

    @property
    def columns(self) -> tuple[str, ...]:
        """The design's columns, the intercept excluded."""

    @property
    def categorical(self) -> Mapping[Hashable, pd.Index]:
        """Each categorical variable's public levels."""

    @property
    def bounds(self) -> tuple[tuple[float, float], ...]:
        """Each design column's public bounds."""

    def inputs(self, frame: pd.DataFrame, *, clip: bool = True) -> pd.DataFrame:
        """The variables of ``frame`` as the design reads them."""

    def matrix(self, inputs: pd.DataFrame, *, response: bool = False) -> pd.DataFrame:
        """The regressors' (or the response's) model matrix of ``inputs``."""


@dataclass(frozen=True)
class LinearModel(Statistic):
    """The release's one output: the noisy Gram matrix a :class:`OLSResults` is fitted from."""

    layout: ProductLayout | None = None

    how: ClassVar[str] = "ols"

    def measurements(self, context: Context) -> tuple[MeasurementKey, ...]:
        """The one measurement of sums of products."""
        assert self.layout is not None
        return (self.layout.key,)

    def value(self, inputs: Inputs, post: PostProcess | None) -> F64:
        """The noisy Gram matrix of ``(1, z_1, ..., z_m, z_y)`` (scaled units)."""
        assert self.layout is not None
        sums = np.asarray(inputs.real(0), dtype=np.float64).reshape(-1)
        size = len(self.layout.columns)
        gram = np.empty((size + 1, size + 1))
        for j in range(size):
            for k in range(j, size):
                at = self.layout.pair(j, k)
                gram[1 + j, 1 + k] = gram[1 + k, 1 + j] = sums[at.products]
            gram[0, 1 + j] = gram[1 + j, 0] = sums[self.layout.pair(j, j).first]
        gram[0, 0] = sums[self.layout.pair(0, 0).rows]
        return gram

    def weighted_rows(self, inputs: Inputs) -> float | None:
        """The noisy count of the complete rows holding a weight (weighted ``ols``), or None.

        Measured as a sum whose every row counts the upper weight bound (the weighted sums'
        largest term), so it is divided by that bound.
        """
        assert self.layout is not None
        if not self.layout.rows:
            return None
        sums = np.asarray(inputs.real(0), dtype=np.float64).reshape(-1)
        return float(sums[self.layout.rows_position]) / self.layout.weight_unit


def fit(
    gram: np.ndarray,
    noise_sd: float,
    design: Design,
    alpha_level: float = 0.05,
    *,
    laplace: bool = False,
    rows: float | None = None,
    weights: str = "",
) -> OLSResults:
    """Coefficients, their covariance and fit statistics from the noisy Gram matrix.

    With survey weights the Gram matrix is weighted (``Σ w x̃ x̃ᵀ``, in the weights' units)
    and ``rows`` the noisy number of rows: the fit is then statsmodels' WLS, ``σ² = Σ w r²
    / (rows - k)`` and the total sum of squares centred at the weighted mean.
    """
    k = gram.shape[0] - 1  # regressors, the intercept included
    a, b, yy = gram[:k, :k], gram[:k, k], gram[k, k]
    weighted = rows is not None
    rows = max(a[0, 0] if rows is None else rows, k + 1.0)
    weight = max(float(a[0, 0]), 1e-12 * rows) if weighted else rows  # Σ w (or the rows)
    tau = noise_sd * (2.0 * math.sqrt(k) + 2.0)
    ridge = max(0.0, tau - float(np.linalg.eigvalsh(a)[0]))
    penalty = np.eye(k)
    penalty[0, 0] = 0.0
    regular = a + ridge * penalty
    inverse = np.linalg.pinv(regular, hermitian=True)
    w = inverse @ b
    # The residual sum of squares is a small difference of noisy sums: its noise (sd below)
    # is added, an upper bound that keeps the intervals' coverage when n is small.
    rss = max(yy - 2.0 * w @ b + w @ a @ w, 1e-12 * rows)
    quartic = float(np.sum(np.outer(w * w, w * w)))
    rss += noise_sd * math.sqrt(1.0 + 4.0 * (w @ w) + 2.0 * quartic - float(np.sum(w**4)))
    sigma2 = rss / (rows - k)
    bias = ridge * (inverse @ (penalty @ w))  # the ridge's pull towards 0, added to intervals
    sampling = sigma2 * inverse
    spread = noise_sd**2 * ((1.0 + w @ w) * np.eye(k) + np.outer(w, w) - np.diag(w * w))
    noise = inverse @ spread @ inverse
    # From scaled units back to the columns': x_j = c_j + r_j z_j, y = c_y + r_y z_y.
    centres = np.array([(lo + hi) / 2 for lo, hi in design.bounds])
    reach = np.array([(hi - lo) / 2 for lo, hi in design.bounds])
    c, r, cy, ry = centres[:-1], reach[:-1], centres[-1], reach[-1]
    jacobian = np.zeros((k, k))
    jacobian[0, 0] = ry
    jacobian[0, 1:] = -ry * c / r
    jacobian[1:, 1:] = np.diag(ry / r)
    params = jacobian @ w
    params[0] += cy
    names = ["Intercept", *design.columns]
    tss = max(yy - gram[0, k] ** 2 / weight, 1e-12 * rows)
    return OLSResults(
        params=pd.Series(params, index=names, name="coef"),
        ridge_bias=pd.Series(np.abs(jacobian @ bias), index=names, name="ridge_bias"),
        covariance=pd.DataFrame(
            jacobian @ (sampling + noise) @ jacobian.T, index=names, columns=names
        ),
        noise_se=pd.Series(np.sqrt(np.diag(jacobian @ noise @ jacobian.T)), index=names),
        noise_covariance=pd.DataFrame(jacobian @ noise @ jacobian.T, index=names, columns=names),
        laplace=laplace,
        nobs=float(rows),
        df_resid=float(rows - k),
        scale=float(sigma2 * ry * ry),
        rsquared=float(min(1.0, max(0.0, 1.0 - rss / tss))),
        ridge=float(ridge),
        design=design,
        alpha=alpha_level,
        weights=weights,
    )


def linear_predictor(design: Design, params: pd.Series, exog: pd.DataFrame) -> pd.Series:
    """The design of public rows ``exog`` (the model's formula) times ``params``.

    NaN for a row missing a variable, as statsmodels gives. A categorical value outside
    the model's public levels has no coefficient: refused, naming it (the rows are public).
    """
    matrix = design_rows(design, list(params.index), exog)
    return pd.Series(matrix @ params.to_numpy(), index=exog.index)


def design_rows(design: Design, columns: list[str], exog: pd.DataFrame) -> np.ndarray:
    """The model matrix of public rows ``exog`` in ``columns``' order (NaN rows if missing).

    Protected rows (a frame carrying a session, or derived from one) are refused: each row's
    prediction is that person's, as ``fittedvalues`` would be.
    """
    if carries_mark(exog):
        raise DPValueError(
            "predict takes public rows: these rows are protected (or derived from a protected "
            "frame), and a prediction per protected row is private, as fittedvalues are. "
            "Predict on new, public rows (a grid of values, a public sample), or release an "
            "aggregate (priv.dp.mean(...) of a derived column)"
        )
    inputs = design.inputs(exog, clip=False)
    for name in design.categorical:
        if name not in exog.columns:
            continue
        unknown = inputs[name].isna().to_numpy() & exog[name].notna().to_numpy()
        if unknown.any():
            shown = list(dict.fromkeys(exog[name][unknown].tolist()))[:5]
            raise DPValueError(
                f"predict: {name!r} holds {shown} outside the model's levels "
                f"{list(design.categorical[name])}; the model has no coefficient for "
                "them"
            )
    missing = inputs.isna().to_numpy().any(axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # formulaic's note on missing categories
        matrix = design.matrix(inputs)
    values = matrix[columns].to_numpy(np.float64)
    values[missing] = np.nan
    return values


@dataclass(frozen=True, eq=False)
class OLSResults:
    """A released linear model, read as statsmodels' ``RegressionResults``.

    Attributes
    ----------
    params : Series
        The coefficients, named as statsmodels' formulas name them (``Intercept``,
        ``C(g)[T.b]``, ``x``, ``x:z``), in its order (the design's, see
        :func:`~pandas_dp.transformations.design.statsmodels_order`); ``bse``,
        ``conf_int()``, ``cov_params()`` and ``summary()`` follow it.
    nobs : float
        The noisy number of complete rows.
    df_resid : float
        ``nobs`` minus the number of coefficients.
    df_model : float
        The number of coefficients but the intercept (statsmodels' ``df_model``).
    scale : float
        The residual variance ``σ²`` (in the response's units, squared).
    rsquared : float
        ``1 - RSS / TSS`` from the noisy sums, within ``[0, 1]``.
    rsquared_adj : float
        ``1 - (nobs - 1) / df_resid · (1 - rsquared)``, as statsmodels'.
    fvalue, f_pvalue : float
        The overall F test that every coefficient but the intercept is 0 (see
        :attr:`fvalue`).
    ridge : float
        The ridge added to the scaled Gram matrix (0 unless the noise made it ill-conditioned).
    ridge_bias : Series
        How far the ridge pulls each coefficient towards 0 (estimated); intervals are
        widened by it.
    """

    params: pd.Series
    ridge_bias: pd.Series
    covariance: pd.DataFrame
    nobs: float
    df_resid: float
    scale: float
    rsquared: float
    ridge: float
    design: Design
    alpha: float = 0.05
    #: The part of ``bse`` due to the noise, and whether that noise is Laplace (heavier
    #: tails than a normal of its variance: intervals use its own quantile).
    noise_se: pd.Series | None = None
    laplace: bool = False
    noise_covariance: pd.DataFrame | None = None
    #: The survey weights, in words (empty: unweighted); the model is then statsmodels' WLS.
    weights: str = ""

    @property
    def df_model(self) -> float:
        """The number of coefficients but the intercept, as statsmodels'."""
        return float(len(self.params) - 1)

    @property
    def rsquared_adj(self) -> float:
        """``1 - (nobs - 1) / df_resid · (1 - rsquared)`` (noisy ``nobs``), as statsmodels'."""
        return float(1 - (self.nobs - 1) / self.df_resid * (1 - self.rsquared))

    @property
    def fvalue(self) -> float:
        """The F statistic of the hypothesis that every coefficient but the intercept is 0.

        statsmodels computes ``(ESS / df_model) / (RSS / df_resid)``, which without noise is
        the Wald statistic of that hypothesis with the usual covariance. Here it is that
        Wald statistic, ``θ̂_sᵀ V_s⁻¹ θ̂_s / df_model`` (``s`` the slopes), with ``V =
        cov_params()``, which carries the noise's variance (delta method) as well as the
        rows': the noise makes the test more cautious rather than more confident. NaN for
        an intercept-only model. Post-processing: nothing is charged.
        """
        if self.df_model == 0:
            return math.nan
        return self._inference().f_test(np.eye(len(self.params))[1:]).fvalue

    @property
    def f_pvalue(self) -> float:
        """The p-value of :attr:`fvalue`: the F law on ``(df_model, df_resid)``, as statsmodels'.

        The noise enters through ``cov_params()`` (approximately normal).
        """
        if self.df_model == 0:
            return math.nan
        return self._inference().f_test(np.eye(len(self.params))[1:]).pvalue

    def _inference(self) -> Inference:
        k = len(self.params)
        noise = np.zeros((k, k))
        if self.noise_covariance is not None:
            noise = self.noise_covariance.to_numpy()
        elif self.noise_se is not None:
            noise = np.diag(self.noise_se.to_numpy() ** 2)
        return Inference(
            self.params, self.covariance.to_numpy(), noise, self.ridge_bias.to_numpy(),
            self.df_resid, use_t=True, laplace=self.laplace,
        )  # fmt: skip

    def t_test(self, r_matrix: object, q_matrix: object = None) -> TTestResults:
        """Wald t tests of linear hypotheses ``R θ = q``, as statsmodels' ``t_test``.

        Parameters
        ----------
        r_matrix : str, array-like or tuple (R, q)
            ``"x = 0, z = 2*x"`` (comma-separated linear equations over the coefficients'
            names; ``a*name + b*name = c``, ``/`` by a number, parentheses; no ``=`` means
            ``= 0``), or ``R`` with one column per coefficient, or ``(R, q)``.
        q_matrix : array-like, optional
            The right-hand sides with an array ``R`` (0 by default).

        Returns
        -------
        TTestResults
            ``effect`` (``R θ``), ``sd``, ``tvalue``, ``pvalue`` (Student's t on
            ``df_resid``), ``conf_int()``, ``summary_frame()``, statsmodels' names.

        Raises
        ------
        DPValueError
            For a hypothesis that cannot be read (an unknown name, a product of
            coefficients, a wrong shape), before anything else.

        Notes
        -----
        Post-processing of the released model: nothing is charged. ``sd`` reads
        ``cov_params()``, which carries the noise's variance (delta method) as well as the
        rows'; intervals give Laplace noise its own quantile and add the ridge's pull, as
        ``conf_int``.
        """
        return self._inference().t_test(r_matrix, q_matrix)

    def f_test(self, r_matrix: object, q_matrix: object = None) -> FTestResults:
        """A joint Wald F test of ``R θ = q``, as statsmodels' ``f_test``.

        ``fvalue = (Rθ - q)ᵀ (R V Rᵀ)⁻¹ (Rθ - q) / df_num`` with ``V = cov_params()``
        (sampling and noise), ``df_num`` the rank of ``R``, ``pvalue`` from the F law on
        ``(df_num, df_resid)`` degrees of freedom as statsmodels' (``df_resid`` from the
        noisy row count). The hypothesis is read as :meth:`t_test`'s. Post-processing:
        nothing is charged.
        """
        return self._inference().f_test(r_matrix, q_matrix)

    def get_prediction(self, exog: pd.DataFrame) -> OLSPrediction:
        """Predictions for public rows with intervals, as statsmodels' ``get_prediction``.

        ``.summary_frame(alpha)`` gives statsmodels' columns: ``mean``, ``mean_se``,
        ``mean_ci_lower``, ``mean_ci_upper`` (the mean's interval, built as ``conf_int``:
        sampling and noise, plus the ridge's pull) and ``obs_ci_lower``, ``obs_ci_upper``
        (a new observation's: the residual variance ``scale`` added to the sampling part).
        NaN for a row missing a variable; a level outside the keys is refused, naming it.
        Post-processing of public rows and released values: nothing is charged.
        """
        rows = design_rows(self.design, list(self.params.index), exog)
        known = ~np.isnan(rows).any(axis=1)
        clean = np.where(known[:, None], rows, 0.0)
        return OLSPrediction(self, clean, known, exog.index)

    def cov_params(self) -> pd.DataFrame:
        """The coefficients' covariance: sampling and noise (delta method) together."""
        return self.covariance.copy()

    @property
    def bse(self) -> pd.Series:
        """Standard errors of the coefficients (sampling and noise)."""
        return pd.Series(np.sqrt(np.diag(self.covariance)), index=self.params.index, name="bse")

    @property
    def tvalues(self) -> pd.Series:
        """``params / bse``."""
        return (self.params / self.bse).rename("t")

    @property
    def pvalues(self) -> pd.Series:
        """Two-sided p-values of the t statistics on ``df_resid`` degrees of freedom."""
        from scipy import stats

        values = 2 * stats.t.sf(np.abs(self.tvalues.to_numpy()), self.df_resid)
        return pd.Series(values, index=self.params.index, name="P>|t|")

    def conf_int(self, alpha: float = 0.05) -> pd.DataFrame:
        """``1 - alpha`` intervals, columns ``0`` and ``1`` as statsmodels'.

        The sampling part of ``bse`` times the ``t`` quantile and the noise's part times
        the noise's own quantile (for Laplace noise ``ln(1/α)/√2`` standard deviations, the
        quantile of one Laplace variate: the heaviest tail a sum of them has), added in
        quadrature; plus the ridge's estimated pull (0 without ridge).
        """
        from scipy import stats

        t = float(stats.t.ppf(1 - alpha / 2, self.df_resid))
        noise = np.zeros(len(self.params)) if self.noise_se is None else self.noise_se.to_numpy()
        sampling = np.sqrt(np.maximum(self.bse.to_numpy() ** 2 - noise**2, 0.0))
        tail = max(t, math.log(1 / alpha) / math.sqrt(2)) if self.laplace else t
        half = np.hypot(t * sampling, tail * noise) + self.ridge_bias.to_numpy()
        values = self.params.to_numpy()
        return pd.DataFrame({0: values - half, 1: values + half}, index=self.params.index)

    def summary(self, alpha: float | None = None) -> ModelSummary:
        """The summary statsmodels prints: the model's header and the coefficient table.

        The header: ``Dep. Variable``, ``Model``, ``Method``, ``No. Observations`` (noisy),
        ``Df Residuals``, ``Df Model``, ``R-squared``, ``Adj. R-squared``, ``F-statistic``,
        ``Prob (F-statistic)``, the ridge and what the standard errors carry; the table:
        ``coef``, ``std err``, ``t``, ``P>|t|`` and the interval's ends (``.coefficients``,
        or ``.tables[1]``). Text with ``str()``, HTML in a notebook.
        """
        level = self.alpha if alpha is None else alpha
        ends = self.conf_int(level)
        low, high = f"[{level / 2:g}", f"{1 - level / 2:g}]"
        table = pd.DataFrame(
            {
                "coef": self.params,
                "std err": self.bse,
                "t": self.tvalues,
                "P>|t|": self.pvalues,
                low: ends[0],
                high: ends[1],
            }
        )
        model = "WLS" if self.weights else "OLS"
        header = {
            "Dep. Variable:": self.design.formula.split("~")[0].strip(),
            "Model:": model,
            "Method:": "DP, sufficient statistics",
            "No. Observations:": f"{self.nobs:.0f} (noisy)",
            "Df Residuals:": f"{self.df_resid:.0f}",
            "Df Model:": f"{self.df_model:.0f}",
            "R-squared:": f"{self.rsquared:.3f}",
            "Adj. R-squared:": f"{self.rsquared_adj:.3f}",
            "F-statistic:": f"{self.fvalue:.4g}",
            "Prob (F-statistic):": f"{self.f_pvalue:.3g}",
            "Ridge:": f"{self.ridge:.3g}",
            "Std. errors:": "sampling + noise",
        }
        if self.weights:
            header["Weights:"] = self.weights
        return ModelSummary(f"{model} Regression Results (differentially private)", header, table)

    def predict(self, exog: pd.DataFrame) -> pd.Series:
        """Predictions for public rows: their design (the model's formula) times ``params``.

        NaN for a row missing a variable, as statsmodels gives. A categorical value outside
        the model's public levels has no coefficient: refused, naming it (the rows are public).
        """
        return linear_predictor(self.design, self.params, exog)

    def __repr__(self) -> str:
        return str(self.summary())

    def _repr_html_(self) -> str:
        return self.summary()._repr_html_()


@dataclass(frozen=True, eq=False)
class OLSPrediction:
    """Predictions for public rows (statsmodels' ``PredictionResults`` names)."""

    model: OLSResults
    rows: np.ndarray  # the rows' model matrix, 0 where a row misses a variable
    known: np.ndarray  # rows holding every variable
    index: pd.Index

    @property
    def predicted_mean(self) -> np.ndarray:
        """The predictions (NaN for a row missing a variable)."""
        values = self.rows @ self.model.params.to_numpy()
        return np.where(self.known, values, np.nan)

    @property
    def se_mean(self) -> np.ndarray:
        """The predictions' standard errors (sampling and noise, from ``cov_params()``)."""
        cov = self.model.covariance.to_numpy()
        values = np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", self.rows, cov, self.rows), 0.0))
        return np.where(self.known, values, np.nan)

    @property
    def se_obs(self) -> np.ndarray:
        """A new observation's standard error: ``√(se_mean² + scale)``."""
        return np.sqrt(self.se_mean**2 + self.model.scale)

    def conf_int(self, obs: bool = False, alpha: float = 0.05) -> np.ndarray:
        """``(rows, 2)`` intervals of the mean, or of a new observation with ``obs=True``."""
        inference = self.model._inference()
        half = inference.half_widths(self.rows, alpha, self.model.scale if obs else 0.0)
        half = np.where(self.known, half, np.nan)
        mean = self.predicted_mean
        return np.column_stack([mean - half, mean + half])

    def summary_frame(self, alpha: float = 0.05) -> pd.DataFrame:
        """``mean``, ``mean_se``, ``mean_ci_*`` and ``obs_ci_*`` per row, as statsmodels'."""
        mean = self.conf_int(alpha=alpha)
        obs = self.conf_int(obs=True, alpha=alpha)
        return pd.DataFrame(
            {"mean": self.predicted_mean, "mean_se": self.se_mean,
             "mean_ci_lower": mean[:, 0], "mean_ci_upper": mean[:, 1],
             "obs_ci_lower": obs[:, 0], "obs_ci_upper": obs[:, 1]},
            index=self.index,
        )  # fmt: skip
