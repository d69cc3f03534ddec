"""A logistic model from the noisy sums of products ``ols`` measures, and its result.

The release measures exactly what a linear model's does
(:class:`~pandas_dp.planning.statistics.regression.LinearModel`): the Gram matrix ``G`` of
``(1, z_1, ..., z_m, z_y)`` over the complete rows, each design column scaled to ``z = (x -
c) / r`` in ``[-1, 1]`` and the response, whose public range is ``[0, 1]``, to ``z_y = 2 y -
1``. Everything here is post-processing of that one noisy matrix.

The log-likelihood of a logistic model, ``Σ y_i s_i - Σ log(1 + e^{s_i})`` with scores
``s_i = x̃_iᵀθ`` (``x̃ = (1, z)``), reads the data through ``Σ y x̃`` (in ``G``) and through
the law of the design, of which ``G`` holds the mean ``μ`` and covariance ``S``. PASS-GLM
(Huggins, Adams & Broderick 2017) replaces ``log(1 + e^s)`` by a degree-2 polynomial on a
public interval, which makes the objective a function of these moments; its optimum is then
the least-squares slope times a constant that the interval sets, and so does the bias
(0.07 to 1.8 in L2 from the exact fit in our simulations, no interval good for all). We keep
its sufficient statistics and take the expectation of ``log(1 + e^s)`` under the
*maximum-entropy* law of the design given what is known of it: each column's public range
``[-1, 1]`` and its measured mean and variance give the law of density ``∝ exp(a z + b z²)``
there (uniform for a uniform column's variance, two points for a 0/1 column, a truncated
normal for a concentrated one); the columns are joined by a Gaussian copula with the
measured correlations, the law is read on a fixed quasi-Monte Carlo set of
:data:`POINTS` points (Sobol, unscrambled: no randomness, data-independent) and recoloured
to the measured mean and covariance exactly. The objective, ``-Σ y x̃ᵀθ + n mean_i log(1 +
e^{x̃̃_iᵀθ})`` over those points, is a logistic likelihood's: convex, solved by Newton's
method; a ridge set by AdaSSP's rule (zero but for a floor unless the noise made the design
ill-conditioned) keeps it bounded. Measured L2 distance to the exact fit on the same rows
(no noise, 20,000 rows): 0.005 to 0.03 for uniform, normal, binary and correlated designs.

A second step (:func:`refine_logit`): given the data's gradient measured at the first fit
``θ₁`` (the score, ``Σ (σ(x̃ᵀθ₁) - y) x̃``, whose ``k`` sums a row moves by at most 1 each,
measured with one ℓ∞ K-norm noise vector, as ``G``'s ``(k + 1)(k + 2) / 2`` sums are, at
a fraction of their noise per sum), the objective above is corrected by a
linear term so that its gradient at ``θ₁`` is the measured one, and minimised again: a
Newton step on the data's likelihood with the synthetic design's curvature. Its error is
the score's noise through the inverse curvature, plus the curvature's own error times
``θ₁``'s (second order). When the first fit's design is too noisy for that curvature to be
trusted (:attr:`FirstFit.steady`), :func:`refit_logit` averages a second measurement of
``G`` with the first instead.

Intervals: the delta method through the optimum (implicit differentiation of its gradient
with respect to each noisy sum, the design recoloured to the perturbed moments) carries both
the noise's variance (``s²`` per sum) and the rows' (``n`` times the covariance of one
row's contribution to the sums, read on the design's points with ``y`` drawn from the fitted
model), kept apart so that Laplace noise gets its own quantile, as in ``ols``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import pandas as pd

from pandas_dp.errors import DPValueError
from pandas_dp.planning.statistics.inference import (
    FTestResults,
    Inference,
    ModelSummary,
    TTestResults,
)
from pandas_dp.planning.statistics.regression import (
    Design,
    LinearModel,
    design_rows,
    linear_predictor,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from pandas_dp.planning.statistics.base import F64, Inputs
    from pandas_dp.planning.statistics.postprocess import PostProcess

#: Points of the quasi-Monte Carlo design the expectation is read on.
POINTS = 1 << 13
#: The grid on which each column's maximum-entropy law on [-1, 1] is tabulated.
_GRID = np.linspace(-1.0, 1.0, 2001)
#: A scaled coefficient's largest magnitude (a score of 60 has probability 1 - 1e-26).
_LIMIT = 60.0


@dataclass(frozen=True)
class LogisticModel(LinearModel):
    """The release's one output: the noisy Gram matrix a :class:`LogitResults` is fitted from."""

    how: ClassVar[str] = "logit"


@dataclass(frozen=True)
class LogitScore(LinearModel):
    """The noisy score of a logistic model at a released fit (``Σ (σ - y) x̃``, scaled)."""

    how: ClassVar[str] = "logit"

    def value(self, inputs: Inputs, post: PostProcess | None) -> F64:
        """The ``k`` noisy sums, the intercept's first (scaled units)."""
        return np.asarray(inputs.real(0), dtype=np.float64).reshape(-1)


def _sigmoid(s: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):  # NaN for a public row missing a variable
        return np.exp(-np.logaddexp(0.0, -s))


def _root(matrix: np.ndarray, power: float) -> np.ndarray:
    """``matrix ** power`` of a symmetric matrix, its eigenvalues floored at 1e-12."""
    values, vectors = np.linalg.eigh((matrix + matrix.T) / 2)
    return (vectors * np.maximum(values, 1e-12) ** power) @ vectors.T


def _maximum_entropy_cdf(mean: float, variance: float) -> np.ndarray:
    """The CDF on :data:`_GRID` of the law ``∝ exp(a z + b z²)`` on ``[-1, 1]`` with these moments.

    The moments are first brought within what a law on ``[-1, 1]`` can have. Found by
    damped Newton steps on the convex dual (``log Z(a, b) - a m₁ - b m₂``).
    """
    mean = min(max(mean, -1 + 1e-6), 1 - 1e-6)
    variance = min(max(variance, 1e-8), (1 - mean * mean) * (1 - 1e-6))
    stats = np.vstack([_GRID, _GRID**2])
    target = np.array([mean, variance + mean * mean])

    def dual(lam: np.ndarray) -> tuple[float, np.ndarray]:
        exponent = lam @ stats
        top = float(exponent.max())
        weights = np.exp(exponent - top)
        total = float(weights.sum())
        return math.log(total) + top - float(lam @ target), weights / total

    lam = np.zeros(2)
    value, weights = dual(lam)
    for _ in range(200):
        moments = stats @ weights
        gap = moments - target
        if float(np.abs(gap).max()) < 1e-10:
            break
        curvature = (stats * weights) @ stats.T - np.outer(moments, moments)
        step = np.linalg.lstsq(curvature, gap, rcond=None)[0]
        size = 1.0
        while size > 1e-8:
            trial = lam - size * step
            trial_value, trial_weights = dual(trial)
            if trial_value <= value:
                break
            size /= 2
        else:
            break
        lam, value, weights = trial, trial_value, trial_weights
    return np.cumsum(weights) - weights / 2


@functools.cache
def _normal_scores(dimension: int) -> np.ndarray:
    """:data:`POINTS` standard normal points in ``dimension`` dimensions (Sobol, fixed)."""
    from scipy import stats
    from scipy.stats import qmc

    uniform = qmc.Sobol(dimension, scramble=False).random(POINTS) + 0.5 / POINTS
    scores = stats.norm.ppf(uniform)
    scores.setflags(write=False)
    return scores


@dataclass(frozen=True)
class _Moments:
    """What the objective reads of the noisy Gram matrix (scaled units)."""

    rows: float
    mean: np.ndarray  # E x̃, x̃ = (1, z)
    cov: np.ndarray  # Cov x̃ (first row and column 0)
    yx: np.ndarray  # Σ y x̃

    @classmethod
    def of(cls, gram: np.ndarray) -> _Moments:
        k = gram.shape[0] - 1
        rows = max(float(gram[0, 0]), k + 1.0)
        second = gram[:k, :k] / rows
        mean = second[0].copy()
        mean[0] = 1.0
        cov = second - np.outer(mean, mean)
        cov[0, :] = cov[:, 0] = 0.0
        yx = (gram[:k, k] + gram[:k, 0]) / 2.0  # z_y = 2 y - 1
        # The count of ones within (0, n) (noise may put it outside): the log-odds exist.
        yx[0] = min(max(yx[0], 0.5), rows - 0.5)
        return cls(rows, mean, (cov + cov.T) / 2, yx)


@dataclass(frozen=True)
class _Design:
    """The maximum-entropy design of some moments, whitened: recoloured to any moments."""

    white: np.ndarray  # (POINTS, k - 1), mean 0, covariance I

    @classmethod
    def of(cls, moments: _Moments) -> _Design:
        mean, cov = moments.mean[1:], moments.cov[1:, 1:]
        size = len(mean)
        if size == 0:
            return cls(np.zeros((POINTS, 0)))
        spread = np.sqrt(np.maximum(np.diag(cov), 1e-12))
        correlation = _root(cov / np.outer(spread, spread), 1.0)
        scale = np.sqrt(np.maximum(np.diag(correlation), 1e-12))
        correlation = correlation / np.outer(scale, scale) + 1e-9 * np.eye(size)
        from scipy import stats

        normal = _normal_scores(size) @ np.linalg.cholesky(correlation).T
        shares = stats.norm.cdf(normal)
        columns = [
            np.interp(shares[:, j], _maximum_entropy_cdf(mean[j], cov[j, j]), _GRID)
            for j in range(size)
        ]
        points = np.column_stack(columns)
        centred = points - points.mean(axis=0)
        return cls(centred @ _root(centred.T @ centred / POINTS, -0.5))

    def points(self, moments: _Moments) -> np.ndarray:
        """The design recoloured to ``moments``: ``(1, z)`` rows of that mean and covariance."""
        body = moments.mean[1:] + self.white @ _root(moments.cov[1:, 1:], 0.5)
        return np.column_stack([np.ones(POINTS), body])


@dataclass(frozen=True)
class _Objective:
    """``-Σ y x̃ᵀθ + n mean_i log(1 + e^{x̃_iᵀθ}) + λ/2 |θ_{1:}|²`` on the design's points."""

    moments: _Moments
    points: np.ndarray
    ridge: float

    def __call__(self, theta: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """The value, the gradient and the Hessian at ``theta``."""
        scores = self.points @ theta
        p = _sigmoid(scores)
        share = self.moments.rows / POINTS
        penalty = np.ones_like(theta)
        penalty[0] = 0.0
        value = -self.moments.yx @ theta + share * float(np.logaddexp(0.0, scores).sum())
        value += 0.5 * self.ridge * float(penalty @ theta**2)
        grad = -self.moments.yx + share * (self.points.T @ p) + self.ridge * penalty * theta
        hess = share * (self.points * (p * (1 - p))[:, None]).T @ self.points
        return float(value), grad, hess + self.ridge * np.diag(penalty)

    def start(self) -> np.ndarray:
        """The intercept-only fit: the log-odds of the (noisy) share of ones."""
        rows = self.moments.rows
        share = min(max(self.moments.yx[0] / rows, 0.5 / rows), 1 - 0.5 / rows)
        theta = np.zeros_like(self.moments.yx)
        theta[0] = math.log(share / (1 - share))
        return theta

    def solve(self, theta: np.ndarray | None = None, steps: int = 100) -> np.ndarray:
        """Newton's method with backtracking from ``theta`` (total: never raises)."""
        theta = self.start() if theta is None else theta.copy()
        value, grad, hess = self(theta)
        for _ in range(steps):
            step = np.linalg.lstsq(hess, grad, rcond=None)[0]
            size = 1.0
            while size > 1e-10:
                trial = np.clip(theta - size * step, -_LIMIT, _LIMIT)
                trial_value, trial_grad, trial_hess = self(trial)
                if trial_value <= value:
                    break
                size /= 2
            else:
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
    weights: str = "",
) -> LogitResults:
    """Coefficients, their covariance and fit statistics from the noisy Gram matrix.

    With survey weights the Gram matrix is weighted (``Σ w x̃ x̃ᵀ``, in the weights' units):
    each row counts ``w`` times, as statsmodels' GLM Binomial with ``freq_weights`` (``nobs``
    is the noisy sum of the weights).
    """
    return first_fit(gram, noise_sd, design, alpha_level, laplace=laplace, weights=weights).results


def first_fit(
    gram: np.ndarray,
    noise_sd: float,
    design: Design,
    alpha_level: float = 0.05,
    *,
    laplace: bool = False,
    weights: str = "",
) -> FirstFit:
    """:func:`fit_logit`'s fit, with what :func:`refine_logit` reads of it (total)."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return _fit(gram, noise_sd, design, alpha_level, laplace=laplace, weights=weights)
        except Exception:  # pragma: no cover - numerical failure: an uninformative result
            k = gram.shape[0] - 1
            return _fit(
                np.eye(k + 1) * (k + 1), noise_sd, design, alpha_level, laplace=laplace,
                weights=weights,
            )  # fmt: skip


#: A first fit is steady (a step from it pays) when its noisy design's smallest curvature
#: is at least this many times the noise's (the ridge rule's ``τ``, :func:`_ridge`).
STEADY = 1.5


@dataclass(frozen=True, eq=False)
class FirstFit:
    """A logistic model's first fit and what a refinement reads of it (public once released).

    ``theta`` and ``covariance`` (the rows' and the noise's) are in scaled units; the
    ``objective`` is the maximum-entropy likelihood the fit maximised, from the noisy Gram
    matrix ``gram`` (noise of standard deviation ``noise_sd`` per sum). ``steady``: the
    design's sums are far enough above their noise (:data:`STEADY`) for a step from this fit
    to be trusted (:func:`refine_logit`); otherwise the Gram matrix is measured again
    (:func:`refit_logit`).
    """

    results: LogitResults
    objective: _Objective
    theta: np.ndarray
    covariance: np.ndarray
    gram: np.ndarray
    noise_sd: float

    @property
    def steady(self) -> bool:
        """Whether the noisy design's smallest eigenvalue is :data:`STEADY` times the noise's."""
        k = self.gram.shape[0] - 1
        block = self.gram[:k, :k]
        smallest = float(np.linalg.eigvalsh((block + block.T) / 2)[0])
        return smallest >= STEADY * _noise_level(k, self.noise_sd)


def refit_logit(first: FirstFit, gram: np.ndarray, noise_sd: float) -> LogitResults:
    """The fit of two measurements of the Gram matrix, averaged by their noise's variance."""
    weights = np.array([first.noise_sd, noise_sd], dtype=np.float64) ** -2.0
    both = (weights[0] * first.gram + weights[1] * gram) / weights.sum()
    before = first.results
    return fit_logit(
        both, float(weights.sum() ** -0.5), before.design, before.alpha, laplace=before.laplace,
        weights=before.weights,
    )  # fmt: skip


def refine_logit(first: FirstFit, score: np.ndarray, noise_sd: float) -> LogitResults:
    """The first fit moved by the data's score measured at it (total: never raises).

    ``score`` is the noisy ``Σ (σ(x̃ᵀθ₁) - y) x̃`` at the first fit's ``θ₁`` (scaled units,
    the intercept first), each of its sums with noise of standard deviation ``noise_sd``.
    The first fit's objective ``F₁`` (the maximum-entropy design's likelihood) is corrected
    so that its gradient at ``θ₁`` is the measured one, ``F₁(θ) - (∇F₁(θ₁) - score)ᵀθ``,
    and minimised: one Newton step on the data's likelihood with ``F₁``'s curvature, taken
    along ``F₁``'s path rather than its tangent (so a far ``θ₁`` does not overshoot).

    The covariance: the rows' (the inverse curvature through the score's sampling
    variance, the model's Fisher information), the score's noise, and the curvature's own
    error times ``θ₁``'s: ``F₁``'s Hessian is off by the first fit's noise on the design's
    sums, weighted by ``p (1 - p) <= 1/4``, which moves the step by about ``s₁ / 8 ·
    √tr Cov θ₁`` per coefficient (the 1/8 calibrated by simulation: 93.5-98.5% coverage at
    95% from 3,000 to 10^5 rows).
    """
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return _refined(first, score, noise_sd)
        except Exception:  # pragma: no cover - numerical failure: the first fit stands
            return first.results


def _refined(first: FirstFit, score: np.ndarray, noise_sd: float) -> LogitResults:
    objective, start = first.objective, first.theta
    score = np.where(np.isfinite(score), score, 0.0)
    shift = objective(start)[1] - score
    moments = dataclasses.replace(objective.moments, yx=objective.moments.yx + shift)
    corrected = _Objective(moments, objective.points, objective.ridge)
    theta = corrected.solve(start)
    inverse = _inverse(corrected(theta)[2], moments.rows)
    unpenalised = _Objective(moments, objective.points, 0.0)
    fisher = unpenalised(theta)[2]
    mismatch = (first.noise_sd / 8) ** 2 * max(float(np.trace(first.covariance)), 0.0)
    noise = (noise_sd**2 + mismatch) * (inverse @ inverse)
    sampling = inverse @ fisher @ inverse
    before = first.results
    return _results(
        theta, sampling, noise, before.design, alpha=before.alpha, laplace=before.laplace,
        nobs=before.nobs, llf=-unpenalised(theta)[0], llnull=before.llnull,
        weights=before.weights,
    )  # fmt: skip


def _fit(
    gram: np.ndarray,
    noise_sd: float,
    design: Design,
    alpha_level: float,
    *,
    laplace: bool,
    weights: str = "",
) -> FirstFit:
    gram = np.where(np.isfinite(gram), gram, 0.0)
    moments = _Moments.of(gram)
    synthetic = _Design.of(moments)
    ridge = _ridge(gram, noise_sd)
    objective = _Objective(moments, synthetic.points(moments), ridge)
    theta = objective.solve()
    _, _, hess = objective(theta)
    inverse = _inverse(hess, moments.rows)
    # The delta method through the optimum: dθ/dG_e = -H⁻¹ ∂∇/∂G_e for each measured sum
    # (the upper triangle of G). The noise adds variance s² to each; the rows, a sum of
    # n independent contributions whose covariance is read on the model (the design's
    # points, y ~ Bernoulli of the fitted probabilities).
    jac = _sum_jacobian(gram, theta, inverse, synthetic)
    noise = noise_sd**2 * (jac @ jac.T)
    sampling = moments.rows * _sampling_covariance(objective.points, theta, jac)
    unpenalised = _Objective(moments, objective.points, 0.0)
    results = _results(
        theta, sampling, noise, design, alpha=alpha_level, laplace=laplace,
        nobs=float(moments.rows), llf=-unpenalised(theta)[0],
        llnull=-unpenalised(unpenalised.start())[0], weights=weights,
    )  # fmt: skip
    return FirstFit(results, objective, theta, sampling + noise, gram, noise_sd)


def _inverse(hess: np.ndarray, rows: float) -> np.ndarray:
    """The inverse curvature (where the fit has none: a huge variance rather than none).

    Probabilities at 0 or 1, or no rows: the interval says nothing rather than too much.
    """
    values, vectors = np.linalg.eigh((hess + hess.T) / 2)
    return (vectors / np.maximum(values, 1e-12 * rows)) @ vectors.T


def _results(
    theta: np.ndarray,
    sampling: np.ndarray,
    noise: np.ndarray,
    design: Design,
    *,
    alpha: float,
    laplace: bool,
    nobs: float,
    llf: float,
    llnull: float,
    weights: str,
) -> LogitResults:
    """The released model in the columns' units, ``z_j = (x_j - c_j) / r_j``."""
    k = len(theta)
    centres = np.array([(lo + hi) / 2 for lo, hi in design.bounds[: k - 1]])
    reach = np.array([(hi - lo) / 2 for lo, hi in design.bounds[: k - 1]])
    jacobian = np.zeros((k, k))
    jacobian[0, 0] = 1.0
    jacobian[0, 1:] = -centres / reach
    jacobian[1:, 1:] = np.diag(1 / reach)
    names = ["Intercept", *design.columns]  # statsmodels' order (the design's)
    return LogitResults(
        params=pd.Series(jacobian @ theta, index=names),
        covariance=pd.DataFrame(
            jacobian @ (sampling + noise) @ jacobian.T, index=names, columns=names
        ),
        noise_covariance=pd.DataFrame(jacobian @ noise @ jacobian.T, index=names, columns=names),
        laplace=laplace,
        nobs=nobs,
        df_model=float(k - 1),
        df_resid=float(nobs - k),
        llf=float(llf),
        llnull=float(llnull),
        design=design,
        alpha=alpha,
        weights=weights,
    )


def _ridge(gram: np.ndarray, noise_sd: float) -> float:
    """AdaSSP's rule (Wang 2018) on the noisy regressors' block, for the logistic curvature.

    ``τ = s (2√k + 2)`` bounds the noise matrix's spectral norm with high probability; the
    ridge lifts the block's smallest eigenvalue to ``τ`` (zero when it is above), divided
    by 4, the largest curvature of ``log(1 + e^s)``. A floor of ``1e-9`` rows keeps the
    objective bounded whatever the noise did.
    """
    k = gram.shape[0] - 1
    block = gram[:k, :k]
    tau = _noise_level(k, noise_sd)
    smallest = float(np.linalg.eigvalsh((block + block.T) / 2)[0])
    return max(0.0, tau - smallest) / 4 + 1e-9 * max(float(gram[0, 0]), 1.0)


def _noise_level(k: int, noise_sd: float) -> float:
    """``τ = s (2√k + 2)``: a bound on the noise matrix's spectral norm, w.h.p. (AdaSSP)."""
    return noise_sd * (2.0 * math.sqrt(k) + 2.0)


def _sampling_covariance(points: np.ndarray, theta: np.ndarray, jac: np.ndarray) -> np.ndarray:
    """The covariance of ``jac`` times one row's contribution to the sums of ``G``.

    A row adds ``v vᵀ`` to ``G``, ``v = (x̃, 2y - 1)``; ``jac`` maps the sums (the upper
    triangle) to ``θ``, so a row moves ``θ`` by ``a(x̃) + (2y - 1) b(x̃)`` (and a constant):
    ``a = x̃ᵀ T x̃`` from the design's sums, ``b = B x̃`` from ``Σ (2y - 1) x̃``. Over the
    design's points, ``y`` Bernoulli of the model's probability at each: the covariance of
    ``a + (2p - 1) b`` plus the mean of ``4 p (1 - p) b bᵀ``.
    """
    k = points.shape[1]
    p = _sigmoid(points @ theta)
    entries = [(i, j) for i in range(k + 1) for j in range(i, k + 1)]
    quadratic = np.zeros((len(theta), k, k))
    linear = np.zeros((len(theta), k))
    for at, (i, j) in enumerate(entries):
        if j < k:
            quadratic[:, i, j] = jac[:, at]
        elif i < k:
            linear[:, i] = jac[:, at]
    a = np.column_stack([np.einsum("ij,ij->i", points @ t, points) for t in quadratic])
    b = points @ linear.T
    mean = a + (2 * p - 1)[:, None] * b
    centred = mean - mean.mean(axis=0)
    within = (b * (4 * p * (1 - p))[:, None]).T @ b
    return (centred.T @ centred + within) / len(points)


def _sum_jacobian(
    gram: np.ndarray, theta: np.ndarray, inverse: np.ndarray, synthetic: _Design
) -> np.ndarray:
    """``dθ/dG_e`` for each measured sum ``e`` (columns, the upper triangle of ``G``).

    Implicit differentiation of the optimum's gradient, ``dθ = -H⁻¹ d∇``, the design's
    points recoloured to the perturbed moments (their maximum-entropy shape kept): a sum
    moves the count ``n``, the mean ``μ``, the covariance ``S = Q/n - μμᵀ`` (its root ``R``
    by the Sylvester equation ``R dR + dR R = dS``) or ``Σ y x̃``; each moves ``∇ = -Σ y x̃ +
    (n / N) Xᵀ σ(Xθ)`` (``X = [1, μ + W R]`` the ``N`` points, ``W`` whitened) linearly.
    """
    size = gram.shape[0]
    k = size - 1
    moments = _Moments.of(gram)
    n, mean = moments.rows, moments.mean[1:]
    counted = float(gram[0, 0]) > k + 1.0  # else the count is held at k + 1
    raw_ones = (float(gram[0, k]) + float(gram[0, 0])) / 2.0
    free_ones = 0.5 < raw_ones < n - 0.5  # else the count of ones is held
    points = synthetic.points(moments)
    scores = points @ theta
    p = _sigmoid(scores)
    w = p * (1 - p)
    white = synthetic.white
    beta = theta[1:]
    scale = n / POINTS
    by_count = points.T @ p / POINTS  # ∂∇/∂n, the points fixed
    white_p = white.T @ p
    by_shift = points.T @ w  # times dμᵀβ
    linked = (points * w[:, None]).T @ white  # Xᵀ diag(w) W
    values, vectors = np.linalg.eigh(moments.cov[1:, 1:])
    roots = np.sqrt(np.maximum(values, 1e-12))
    second = gram[1:k, 1:k] / n

    def moved(d_n: float, d_mean: np.ndarray, d_cov: np.ndarray, d_yx: np.ndarray) -> np.ndarray:
        grad = -d_yx + by_count * d_n
        if k > 1:
            shift = np.zeros(k)
            shift[1:] = d_mean * float(p.sum())
            grad = grad + scale * (shift + by_shift * float(d_mean @ beta))
            rotated = vectors.T @ d_cov @ vectors / (roots[:, None] + roots[None, :])
            d_root = vectors @ rotated @ vectors.T
            spread = np.zeros(k)
            spread[1:] = d_root @ white_p
            grad = grad + scale * (spread + linked @ (d_root @ beta))
        return -inverse @ grad

    columns = []
    body = k - 1
    for i in range(size):
        for j in range(i, size):
            d_n, d_mean = 0.0, np.zeros(body)
            d_cov, d_yx = np.zeros((body, body)), np.zeros(k)
            if i == 0 and j == 0:
                d_n = 1.0 if counted else 0.0
                d_mean = -mean * d_n / n
                d_cov = -second * d_n / n
                d_yx[0] = 0.5 if free_ones else 0.0
            elif i == 0 and j < k:
                d_mean[j - 1] = 1.0 / n
                d_yx[j] = 0.5
            elif i == 0:
                d_yx[0] = 0.5 if free_ones else 0.0
            elif j < k:
                d_cov[i - 1, j - 1] += 1.0 / n
                if i != j:
                    d_cov[j - 1, i - 1] += 1.0 / n
            elif i < k:
                d_yx[i] = 0.5
            if body:
                d_cov = d_cov - np.outer(d_mean, mean) - np.outer(mean, d_mean)
            columns.append(moved(d_n, d_mean, d_cov, d_yx))
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
        (``Intercept``, ``C(g)[T.b]``, ``x``, ``x:z``), in its order (the design's, see
        :func:`~pandas_dp.transformations.design.statsmodels_order`)
    nobs : float
        The noisy number of complete rows.
    df_model, df_resid : float
        The coefficients but the intercept; ``nobs`` minus the coefficients.
    llf, llnull : float
        The approximate log-likelihood (on the maximum-entropy design, see the module) of the
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
    #: The part of the covariance due to the noise, and whether that noise is Laplace
    #: (intervals give it its own quantile).
    noise_covariance: pd.DataFrame | None = None
    laplace: bool = False
    #: The survey weights, in words (empty: unweighted; each row counts its weight times).
    weights: str = ""

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
        return float(np.clip(1 - self.llf / self.llnull, 0.0, 1.0)) if self.llnull else 0.0

    @property
    def noise_se(self) -> pd.Series:
        """The part of ``bse`` due to the noise."""
        if self.noise_covariance is None:
            return pd.Series(0.0, index=self.params.index)
        values = np.sqrt(np.maximum(np.diag(self.noise_covariance.to_numpy()), 0.0))
        return pd.Series(values, index=self.params.index)

    def conf_int(self, alpha: float = 0.05) -> pd.DataFrame:
        """``1 - alpha`` intervals, columns ``0`` and ``1`` as statsmodels'.

        The sampling part of ``bse`` times the normal quantile and the noise's part times
        the noise's own quantile (for Laplace noise ``ln(1/α)/√2`` standard deviations, the
        quantile of one Laplace variate: the heaviest tail a sum of them has), added in
        quadrature.
        """
        half = self._half_widths(np.eye(len(self.params)), alpha)
        values = self.params.to_numpy()
        return pd.DataFrame({0: values - half, 1: values + half}, index=self.params.index)

    def _half_widths(self, rows: np.ndarray, alpha: float) -> np.ndarray:
        """Half-widths of the intervals of ``rows @ params`` (each row a linear combination)."""
        from scipy import stats

        z = float(stats.norm.ppf(1 - alpha / 2))
        total = np.einsum("ij,jk,ik->i", rows, self.covariance.to_numpy(), rows)
        noise = np.zeros(len(rows))
        if self.noise_covariance is not None:
            noise = np.einsum("ij,jk,ik->i", rows, self.noise_covariance.to_numpy(), rows)
        sampling = np.sqrt(np.maximum(total - noise, 0.0))
        tail = max(z, math.log(1 / alpha) / math.sqrt(2)) if self.laplace else z
        return np.asarray(np.hypot(z * sampling, tail * np.sqrt(np.maximum(noise, 0.0))))

    def _inference(self) -> Inference:
        k = len(self.params)
        noise = np.zeros((k, k))
        if self.noise_covariance is not None:
            noise = self.noise_covariance.to_numpy()
        return Inference(
            self.params, self.covariance.to_numpy(), noise, np.zeros(k), self.df_resid,
            use_t=False, laplace=self.laplace,
        )  # fmt: skip

    def t_test(self, r_matrix: object, q_matrix: object = None) -> TTestResults:
        """Wald z tests of linear hypotheses ``R θ = q``, as statsmodels' ``t_test``.

        Parameters
        ----------
        r_matrix : str, array-like or tuple (R, q)
            ``"x = 0, C(g)[T.b] = 2*z"`` (comma-separated linear equations over the
            coefficients' names), or ``R`` with one column per coefficient, or ``(R, q)``.
        q_matrix : array-like, optional
            The right-hand sides with an array ``R`` (0 by default).

        Returns
        -------
        TTestResults
            ``effect`` (``R θ``), ``sd``, ``tvalue``, ``pvalue`` (normal law, as
            statsmodels' ``Logit``), ``conf_int()``, ``summary_frame()``.

        Notes
        -----
        Post-processing of the released model: nothing is charged. ``sd`` reads
        ``cov_params()``, which carries the noise's variance as well as the rows'; the
        intervals give Laplace noise its own quantile, as ``conf_int``.
        """
        return self._inference().t_test(r_matrix, q_matrix)

    def f_test(self, r_matrix: object, q_matrix: object = None) -> FTestResults:
        """A joint Wald F test of ``R θ = q``, as statsmodels' ``f_test``.

        ``fvalue = (Rθ - q)ᵀ (R V Rᵀ)⁻¹ (Rθ - q) / df_num`` with ``V = cov_params()``
        (sampling and noise), ``pvalue`` from the F law on ``(df_num, df_resid)`` degrees of
        freedom, as statsmodels' (``df_resid`` from the noisy row count). The hypothesis
        is read as :meth:`t_test`'s. Post-processing: nothing is charged.
        """
        return self._inference().f_test(r_matrix, q_matrix)

    def get_prediction(self, exog: pd.DataFrame, *, which: str = "mean") -> LogitPrediction:
        """Predictions for public rows with standard errors and intervals, as statsmodels'.

        ``which="mean"``: probabilities, their standard errors by the delta method and
        intervals mapped from the log-odds' (statsmodels' monotonic transform);
        ``which="linear"``: the log-odds. ``.summary_frame(alpha)`` gives ``predicted``,
        ``se``, ``ci_lower``, ``ci_upper``; the intervals carry the noise as ``conf_int``.
        """
        if which not in ("mean", "linear"):
            raise DPValueError(f"which={which!r}: 'mean' (probabilities) or 'linear' (log-odds)")
        rows = design_rows(self.design, list(self.params.index), exog)
        known = ~np.isnan(rows).any(axis=1)
        clean = np.where(known[:, None], rows, 0.0)
        return LogitPrediction(self, clean, known, exog.index, which)

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
            "Method:": "DP, max-entropy design",
            "No. Observations:": f"{self.nobs:.0f} (noisy)",
            "Df Residuals:": f"{self.df_resid:.0f}",
            "Df Model:": f"{self.df_model:.0f}",
            "Pseudo R-squ.:": f"{self.prsquared:.4f}",
            "Log-Likelihood:": f"{self.llf:.5g}",
            "LL-Null:": f"{self.llnull:.5g}",
            "Std. errors:": "sampling + noise",
        }
        if self.weights:
            header["Weights:"] = f"{self.weights} (freq_weights)"
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
class LogitPrediction:
    """Predictions for public rows (statsmodels' ``PredictionResults`` names)."""

    model: LogitResults
    rows: np.ndarray  # the rows' model matrix, 0 where a row misses a variable
    known: np.ndarray  # rows holding every variable
    index: pd.Index
    which: str

    @property
    def linear(self) -> np.ndarray:
        """The log-odds (NaN for a row missing a variable)."""
        values = self.rows @ self.model.params.to_numpy()
        return np.where(self.known, values, np.nan)

    @property
    def linear_se(self) -> np.ndarray:
        """The log-odds' standard errors (sampling and noise)."""
        cov = self.model.covariance.to_numpy()
        values = np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", self.rows, cov, self.rows), 0.0))
        return np.where(self.known, values, np.nan)

    @property
    def predicted(self) -> np.ndarray:
        """Probabilities (``which="mean"``) or log-odds (``which="linear"``)."""
        return _sigmoid(self.linear) if self.which == "mean" else self.linear

    @property
    def se(self) -> np.ndarray:
        """Their standard errors (delta method for probabilities: ``p (1 - p) se``)."""
        if self.which == "linear":
            return self.linear_se
        p = self.predicted
        return p * (1 - p) * self.linear_se

    def conf_int(self, alpha: float = 0.05) -> np.ndarray:
        """``(rows, 2)`` intervals: the log-odds' (as ``conf_int``), mapped for probabilities."""
        half = np.where(self.known, self.model._half_widths(self.rows, alpha), np.nan)
        ends = np.column_stack([self.linear - half, self.linear + half])
        return _sigmoid(ends) if self.which == "mean" else ends

    def summary_frame(self, alpha: float = 0.05) -> pd.DataFrame:
        """``predicted``, ``se``, ``ci_lower``, ``ci_upper`` per row, as statsmodels'."""
        ends = self.conf_int(alpha)
        return pd.DataFrame(
            {"predicted": self.predicted, "se": self.se, "ci_lower": ends[:, 0],
             "ci_upper": ends[:, 1]},
            index=self.index,
        )  # fmt: skip
