"""A logistic model from the noisy sums of products ``ols`` measures, and its result.

The release measures exactly what a linear model's does
(:class:`~pandas_dp.planning.statistics.regression.LinearModel`): the Gram matrix ``G`` of
``(1, z_1, ..., z_m, z_y)`` over the complete rows, each design column scaled to ``z = (x -
c) / r`` in ``[-1, 1]`` and the response, whose public range is ``[0, 1]``, to ``z_y = 2 y -
1``. Everything here is post-processing of that one noisy matrix.

The log-likelihood of a logistic model, ``Σ y_i s_i - Σ log(1 + e^{s_i})`` with scores
``s_i = x̃_iᵀθ`` (``x̃ = (1, z)``), reads the data through ``Σ y x̃`` (in ``G``) and through
the scores' distribution, which ``G`` knows by its mean ``μᵀθ`` and variance ``θᵀSθ`` (``μ``
and ``S`` the design's mean and covariance). PASS-GLM (Huggins, Adams & Broderick 2017)
replaces ``log(1 + e^s)`` by a degree-2 polynomial on a public interval, which makes the
objective a function of these moments; its optimum is the least-squares slope times a
constant set by the interval, and that interval decides the bias (measured 0.07 to 1.8 in
L2 on uniform, normal and binary designs, no interval good for all). Here the expectation
``E log(1 + e^s)`` is instead taken under the normal law of the scores with that mean and
variance (Gauss-Hermite quadrature): the maximum-entropy law of the two moments measured,
exact when the design is jointly normal (where, by Brillinger 1982 and Li & Duan 1989, the
fitted slopes are proportional to the least-squares ones, as here), and within 0.004 to 0.4
in L2 of the exact fit on the same designs. The objective stays convex; a ridge set by AdaSSP's rule
(zero but for a floor unless the noise made the design ill-conditioned) keeps it bounded.

Intervals: the sampling covariance is the inverse of the objective's Hessian (the Fisher
information of the normal-moment model); the noise's is the delta method through the
optimum (implicit differentiation of its gradient with respect to each noisy sum, each with
variance ``s²``), kept apart so that Laplace noise gets its own quantile, as in ``ols``.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import pandas as pd

from pandas_dp.errors import DPValueError
from pandas_dp.planning.statistics.regression import Design, LinearModel, linear_predictor

if TYPE_CHECKING:
    from collections.abc import Callable

#: Gauss-Hermite nodes and weights of the standard normal (probabilists'), 48 points.
_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(48)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()
#: A scaled coefficient's largest magnitude (a score of 60 has probability 1 - 1e-26).
_LIMIT = 60.0


@dataclass(frozen=True)
class LogisticModel(LinearModel):
    """The release's one output: the noisy Gram matrix a :class:`LogitResults` is fitted from."""

    how: ClassVar[str] = "logit"


def _sigmoid(s: np.ndarray) -> np.ndarray:
    return np.exp(-np.logaddexp(0.0, -s))


@dataclass(frozen=True)
class _Moments:
    """What the objective reads of the noisy Gram matrix (scaled units)."""

    rows: float
    mean: np.ndarray  # E x̃, x̃ = (1, z)
    cov: np.ndarray  # Cov x̃ (first row and column 0)
    yx: np.ndarray  # Σ y x̃
    ridge: float

    @classmethod
    def of(cls, gram: np.ndarray, ridge: float) -> _Moments:
        k = gram.shape[0] - 1
        rows = max(float(gram[0, 0]), k + 1.0)
        second = gram[:k, :k] / rows
        mean = second[0].copy()
        mean[0] = 1.0
        cov = second - np.outer(mean, mean)
        cov[0, :] = cov[:, 0] = 0.0
        yx = (gram[:k, k] + gram[:k, 0]) / 2.0  # z_y = 2 y - 1
        return cls(rows, mean, (cov + cov.T) / 2, yx, ridge)

    def objective(self, theta: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """The negative approximate log-likelihood, its gradient and its Hessian."""
        spread = self.cov @ theta
        m, v = float(self.mean @ theta), max(float(theta @ spread), 0.0)
        s = m + math.sqrt(v) * _NODES
        p = _sigmoid(s)
        d1 = p * (1 - p)
        d2 = d1 * (1 - 2 * p)
        d3 = d1 * (1 - 6 * p + 6 * p * p)
        g = float(_WEIGHTS @ np.logaddexp(0.0, s))
        g_m, g_v = float(_WEIGHTS @ p), 0.5 * float(_WEIGHTS @ d1)
        g_mm, g_mv, g_vv = 2 * g_v, 0.5 * float(_WEIGHTS @ d2), 0.25 * float(_WEIGHTS @ d3)
        dv = 2 * spread
        penalty = np.ones_like(theta)
        penalty[0] = 0.0
        n, lam = self.rows, self.ridge
        value = -self.yx @ theta + n * g + 0.5 * lam * float(penalty @ theta**2)
        grad = -self.yx + n * (g_m * self.mean + g_v * dv) + lam * penalty * theta
        hess = n * (
            g_mm * np.outer(self.mean, self.mean)
            + g_mv * (np.outer(self.mean, dv) + np.outer(dv, self.mean))
            + g_vv * np.outer(dv, dv)
            + 2 * g_v * self.cov
        ) + lam * np.diag(penalty)
        return float(value), grad, hess

    def gradient(self, theta: np.ndarray) -> np.ndarray:
        """The objective's gradient alone."""
        return self.objective(theta)[1]

    def start(self) -> np.ndarray:
        """The intercept-only fit: the log-odds of the (noisy) share of ones."""
        share = min(max(self.yx[0] / self.rows, 0.5 / self.rows), 1 - 0.5 / self.rows)
        theta = np.zeros_like(self.yx)
        theta[0] = math.log(share / (1 - share))
        return theta

    def solve(self, theta: np.ndarray | None = None, steps: int = 100) -> np.ndarray:
        """Newton's method with backtracking from ``theta`` (total: never raises)."""
        theta = self.start() if theta is None else theta.copy()
        value, grad, hess = self.objective(theta)
        for _ in range(steps):
            step = np.linalg.lstsq(hess, grad, rcond=None)[0]
            size, moved = 1.0, False
            while size > 1e-10:
                trial = np.clip(theta - size * step, -_LIMIT, _LIMIT)
                trial_value, trial_grad, trial_hess = self.objective(trial)
                if trial_value <= value:
                    moved = True
                    break
                size /= 2
            if not moved:
                break
            shift = float(np.max(np.abs(trial - theta)))
            theta, value, grad, hess = trial, trial_value, trial_grad, trial_hess
            if shift < 1e-12:
                break
        return theta


def fit_logit(
    gram: np.ndarray,
    noise_sd: float,
    design: Design,
    alpha_level: float = 0.05,
    *,
    laplace: bool = False,
) -> LogitResults:
    """Coefficients, their covariance and fit statistics from the noisy Gram matrix."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return _fit(gram, noise_sd, design, alpha_level, laplace=laplace)
        except Exception:  # pragma: no cover - numerical failure: an uninformative result
            k = gram.shape[0] - 1
            return _fit(np.eye(k + 1) * (k + 1), noise_sd, design, alpha_level, laplace=laplace)


def _fit(
    gram: np.ndarray, noise_sd: float, design: Design, alpha_level: float, *, laplace: bool
) -> LogitResults:
    k = gram.shape[0] - 1
    gram = np.where(np.isfinite(gram), gram, 0.0)
    moments = _Moments.of(gram, ridge=_ridge(gram, noise_sd))
    theta = moments.solve()
    _, _, hess = moments.objective(theta)
    inverse = np.linalg.pinv(hess, hermitian=True)
    sampling = inverse
    # The noise, by the delta method through the optimum: dθ/dG_e = -H⁻¹ ∂∇/∂G_e, each of
    # the measured sums (the upper triangle of G) with variance s².
    jac = _sum_jacobian(gram, theta, noise_sd, inverse)
    noise = noise_sd**2 * (jac @ jac.T)
    null = _Moments(moments.rows, moments.mean, moments.cov, moments.yx, 0.0)
    intercept_only = null.start()
    llf = -moments.objective(theta)[0] + 0.5 * moments.ridge * float(theta[1:] @ theta[1:])
    llnull = -null.objective(intercept_only)[0]
    # From scaled units back to the columns': z_j = (x_j - c_j) / r_j.
    centres = np.array([(lo + hi) / 2 for lo, hi in design.bounds[:-1]])
    reach = np.array([(hi - lo) / 2 for lo, hi in design.bounds[:-1]])
    jacobian = np.zeros((k, k))
    jacobian[0, 0] = 1.0
    jacobian[0, 1:] = -centres / reach
    jacobian[1:, 1:] = np.diag(1 / reach)
    names = ["Intercept", *design.columns]
    order = statsmodels_order(names)
    jacobian = jacobian[order]
    names = [names[i] for i in order]
    params = jacobian @ theta
    return LogitResults(
        params=pd.Series(params, index=names),
        covariance=pd.DataFrame(
            jacobian @ (sampling + noise) @ jacobian.T, index=names, columns=names
        ),
        noise_se=pd.Series(np.sqrt(np.diag(jacobian @ noise @ jacobian.T)), index=names),
        laplace=laplace,
        nobs=float(moments.rows),
        df_model=float(k - 1),
        df_resid=float(moments.rows - k),
        llf=float(llf),
        llnull=float(llnull),
        design=design,
        alpha=alpha_level,
    )


def statsmodels_order(names: list[str]) -> list[int]:
    """The positions of ``names`` (formulaic's design columns) in statsmodels' order.

    patsy, statsmodels' formula parser, puts the intercept first, then the terms made of
    categorical factors only, then the others, each group in the formula's order
    (``y ~ x + C(g)`` gives ``Intercept, C(g)[T.b], x``). A factor is categorical when its
    name carries a level (``C(g)[T.b]``, ``g[T.b]``).
    """

    def rank(i: int) -> int:
        if names[i] == "Intercept":
            return 0
        factors = names[i].split(":")
        return 1 if all(factor.endswith("]") and "[" in factor for factor in factors) else 2

    return sorted(range(len(names)), key=rank)


def _ridge(gram: np.ndarray, noise_sd: float) -> float:
    """AdaSSP's rule (Wang 2018) on the noisy regressors' block, for the logistic curvature.

    ``τ = s (2√k + 2)`` bounds the noise matrix's spectral norm with high probability; the
    ridge lifts the block's smallest eigenvalue to ``τ`` (zero when it is above), divided
    by 4, the largest curvature of ``log(1 + e^s)``. A floor of ``1e-9`` rows keeps the
    objective bounded whatever the noise did.
    """
    k = gram.shape[0] - 1
    block = gram[:k, :k]
    tau = noise_sd * (2.0 * math.sqrt(k) + 2.0)
    smallest = float(np.linalg.eigvalsh((block + block.T) / 2)[0])
    return max(0.0, tau - smallest) / 4 + 1e-9 * max(float(gram[0, 0]), 1.0)


def _sum_jacobian(
    gram: np.ndarray, theta: np.ndarray, noise_sd: float, inverse: np.ndarray
) -> np.ndarray:
    """``dθ/dG_e`` for each measured sum ``e`` (columns), by central differences of ∇."""
    size = gram.shape[0]
    entries = [(i, j) for i in range(size) for j in range(i, size)]
    step = max(noise_sd, 1.0) * 1e-3
    columns = []
    ridge = _ridge(gram, noise_sd)
    for i, j in entries:
        moved = []
        for sign in (1.0, -1.0):
            shifted = gram.copy()
            shifted[i, j] += sign * step
            if i != j:
                shifted[j, i] += sign * step
            moved.append(_Moments.of(shifted, ridge).gradient(theta))
        columns.append(-inverse @ ((moved[0] - moved[1]) / (2 * step)))
    return np.column_stack(columns)


def _private(name: str) -> Callable[[LogitResults], pd.Series]:
    def refuse(self: LogitResults) -> pd.Series:
        raise DPValueError(
            f"{name} is per row: each value would be one person's outcome or prediction, "
            "which differential privacy does not release. Use predict() on public rows, "
            "or the model's params"
        )

    refuse.__doc__ = f"Not released: ``{name}`` has one value per private row."
    return refuse


@dataclass(frozen=True, eq=False)
class LogitResults:
    """A released logistic model, read as statsmodels' ``LogitResults``.

    Attributes
    ----------
    params : Series
        The coefficients (log-odds), named as statsmodels' formulas name them
        (``Intercept``, ``C(g)[T.b]``, ``x``, ``x:z``), in its order: the intercept, the
        terms of categorical factors only, then the others.
    nobs : float
        The noisy number of complete rows.
    df_model, df_resid : float
        The coefficients but the intercept; ``nobs`` minus the coefficients.
    llf, llnull : float
        The approximate log-likelihood (normal law of the scores, see the module) of the
        model and of the intercept-only model.
    """

    params: pd.Series
    covariance: pd.DataFrame
    nobs: float
    df_model: float
    df_resid: float
    llf: float
    llnull: float
    design: Design
    alpha: float = 0.05
    noise_se: pd.Series | None = None
    laplace: bool = False

    resid = property(_private("resid"))
    fittedvalues = property(_private("fittedvalues"))
    resid_response = property(_private("resid_response"))
    resid_pearson = property(_private("resid_pearson"))
    resid_dev = property(_private("resid_dev"))
    resid_generalized = property(_private("resid_generalized"))

    def cov_params(self) -> pd.DataFrame:
        """The coefficients' covariance: sampling and noise (delta method) together."""
        return self.covariance.copy()

    @property
    def bse(self) -> pd.Series:
        """Standard errors of the coefficients (sampling and noise)."""
        values = np.sqrt(np.maximum(np.diag(self.covariance.to_numpy()), 0.0))
        return pd.Series(values, index=self.params.index)

    @property
    def tvalues(self) -> pd.Series:
        """``params / bse`` (z statistics, as statsmodels' discrete models name them)."""
        return self.params / self.bse

    @property
    def pvalues(self) -> pd.Series:
        """Two-sided p-values of the z statistics (normal law, as statsmodels' ``Logit``)."""
        from scipy import stats

        values = 2 * stats.norm.sf(np.abs(self.tvalues.to_numpy()))
        return pd.Series(values, index=self.params.index)

    @property
    def prsquared(self) -> float:
        """McFadden's pseudo R², ``1 - llf / llnull`` (approximate log-likelihoods)."""
        return float(min(1.0, max(0.0, 1 - self.llf / self.llnull))) if self.llnull else 0.0

    def conf_int(self, alpha: float = 0.05) -> pd.DataFrame:
        """``1 - alpha`` intervals, columns ``0`` and ``1`` as statsmodels'.

        The sampling part of ``bse`` times the normal quantile and the noise's part times
        the noise's own quantile (for Laplace noise ``ln(1/α)/√2`` standard deviations, the
        quantile of one Laplace variate: the heaviest tail a sum of them has), added in
        quadrature.
        """
        from scipy import stats

        z = float(stats.norm.ppf(1 - alpha / 2))
        noise = np.zeros(len(self.params)) if self.noise_se is None else self.noise_se.to_numpy()
        sampling = np.sqrt(np.maximum(self.bse.to_numpy() ** 2 - noise**2, 0.0))
        tail = max(z, math.log(1 / alpha) / math.sqrt(2)) if self.laplace else z
        half = np.hypot(z * sampling, tail * noise)
        values = self.params.to_numpy()
        return pd.DataFrame({0: values - half, 1: values + half}, index=self.params.index)

    def summary(self, alpha: float | None = None) -> ModelSummary:
        """The summary statsmodels prints: a header of the model and a table of the coefficients."""
        level = self.alpha if alpha is None else alpha
        ends = self.conf_int(level)
        table = pd.DataFrame(
            {
                "coef": self.params,
                "std err": self.bse,
                "z": self.tvalues,
                "P>|z|": self.pvalues,
                f"[{level / 2:g}": ends[0],
                f"{1 - level / 2:g}]": ends[1],
            }
        )
        header = {
            "Dep. Variable:": self.design.formula.split("~")[0].strip(),
            "Model:": "Logit",
            "Method:": "DP, normal moments",
            "No. Observations:": f"{self.nobs:.0f} (noisy)",
            "Df Residuals:": f"{self.df_resid:.0f}",
            "Df Model:": f"{self.df_model:.0f}",
            "Pseudo R-squ.:": f"{self.prsquared:.4f}",
            "Log-Likelihood:": f"{self.llf:.5g}",
            "LL-Null:": f"{self.llnull:.5g}",
            "Std. errors:": "sampling + noise",
        }
        return ModelSummary("Logit Regression Results (differentially private)", header, table)

    def predict(self, exog: pd.DataFrame, *, which: str = "mean") -> pd.Series:
        """Predicted probabilities for public rows (``which="linear"``: the log-odds).

        NaN for a row missing a variable, as statsmodels gives. A categorical value outside
        the model's public levels has no coefficient: refused, naming it (the rows are public).
        """
        if which not in ("mean", "linear"):
            raise DPValueError(f"which={which!r}: 'mean' (probabilities) or 'linear' (log-odds)")
        scores = linear_predictor(self.design, self.params, exog)
        if which == "linear":
            return scores
        return pd.Series(_sigmoid(scores.to_numpy()), index=scores.index)

    def __repr__(self) -> str:
        return str(self.summary())

    def _repr_html_(self) -> str:
        return self.summary()._repr_html_()


@dataclass(frozen=True, eq=False)
class ModelSummary:
    """A model's summary as statsmodels prints it: a title, a header and a coefficient table.

    ``str()`` and :meth:`as_text` give the text table; :meth:`as_html` (and notebooks) HTML;
    ``tables`` the header and the coefficients as frames.
    """

    title: str
    header: dict[str, str]
    coefficients: pd.DataFrame

    @property
    def tables(self) -> list[pd.DataFrame]:
        """The header (two columns) and the coefficient table."""
        head = pd.DataFrame({"": list(self.header), "value": list(self.header.values())})
        return [head, self.coefficients.copy()]

    def as_text(self) -> str:
        """The title, the header in two columns of pairs, and the coefficient table."""
        with pd.option_context("display.width", 200, "display.float_format", "{:.4f}".format):
            body = self.coefficients.to_string()
        width = max(len(line) for line in body.splitlines())
        items = list(self.header.items())
        half = (len(items) + 1) // 2
        left, right = items[:half], items[half:]
        cell = max(max(len(k) + len(v) + 2 for k, v in items), (width - 3) // 2)
        lines = []
        for i in range(half):
            parts = [f"{left[i][0]:<{cell - len(left[i][1])}}{left[i][1]}"]
            if i < len(right):
                parts.append(f"{right[i][0]:<{cell - len(right[i][1])}}{right[i][1]}")
            lines.append("   ".join(parts))
        width = max(width, *(len(line) for line in lines), len(self.title))
        rule, thin = "=" * width, "-" * width
        return "\n".join([self.title.center(width), rule, *lines, rule, body, thin])

    def as_html(self) -> str:
        """The same, as HTML tables."""
        head = "".join(
            f"<tr><th>{key}</th><td>{value}</td></tr>" for key, value in self.header.items()
        )
        body = self.coefficients.to_html(float_format="{:.4f}".format)
        return f"<p><b>{self.title}</b></p><table>{head}</table>{body}"

    def __str__(self) -> str:
        return self.as_text()

    def __repr__(self) -> str:
        return self.as_text()

    def _repr_html_(self) -> str:
        return self.as_html()
