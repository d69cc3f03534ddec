"""``DataFrame.dp.cov``, ``.corr`` and ``.ols``: the modelling half of a notebook.

A mixin of the DataFrame accessor (shared by ``.dp.preview``); each method forwards to
:mod:`pandas_dp.api.queries.covariance`.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Literal, Unpack

import pandas as pd

from pandas_dp.api.accessors.base import BaseDPAccessor
from pandas_dp.api.docstrings import shared_doc
from pandas_dp.api.queries.covariance import plan_matrix
from pandas_dp.api.queries.regression import plan_ols
from pandas_dp.api.release import resolve
from pandas_dp.api.release.arguments import EstimateT, MatrixArgs, NumberT, OLSArgs
from pandas_dp.errors import DPTypeError, DPValueError
from pandas_dp.planning.statistics.regression import OLSResults


class FrameModelling(BaseDPAccessor[NumberT, EstimateT]):
    """Covariance and correlation matrices, and linear models."""

    _obj: pd.DataFrame

    @shared_doc
    def cov(
        self,
        columns: Sequence[Hashable] | None = None,
        *,
        ddof: int = 1,
        **options: Unpack[MatrixArgs],
    ) -> pd.DataFrame:
        """Release the covariance matrix of columns clipped to public bounds, as ``df.cov()``.

        Parameters
        ----------
        {matrix_inputs}
            Gaussian noise suits matrices: its scale grows with the square root of the
            number of sums, Laplace noise's with the number itself.
        ci : float, optional
            Confidence level, e.g. 0.95: return one row per pair of columns (indexed as
            ``df.cov().stack()``) with ``cov``, ``cov_lower`` and ``cov_upper``: bounds
            that hold for all of a pair's inputs at once (conservative).
        min_periods : int, optional
            As pandas: NaN where the noisy count of rows holding both values is below it
            (and always where it is below 1, or not above ``ddof``).
        ddof : int, default 1
            Delta degrees of freedom, as pandas (which ignores it when values are missing
            and uses 1; pandas-dp always uses it).
        use : {"pairwise", "complete"}, default "pairwise"
            ``"pairwise"``: each pair over the rows that hold both values, as pandas.
            ``"complete"``: only the rows holding every column (R's ``use="complete.obs"``):
            the same result when no value is missing, with fewer sums to measure, so less
            noise, when columns may hold missing values (a float or object dtype, unless a
            schema says ``nullable=False``): whether a value *is* missing is private, so the
            dtype decides. The ledger's note gives both choices' number of sums.

        Returns
        -------
        DataFrame
            Square, indexed and labelled by the columns, symmetric and positive
            semidefinite. With missing values pandas' pairwise matrix need not be positive
            semidefinite (each pair is over its own rows); pandas-dp returns the nearest one
            that is, so the two then differ even without noise.

        Notes
        -----
        Each value ``x`` is clipped to its bounds ``[l, u]``, centred and scaled to ``z =
        (x - c) / r`` in ``[-1, 1]`` (``c`` the midpoint, ``r`` the half-width) and rounded
        to ``2**-16``. Every pair ``(j, k)`` needs the rows holding both, ``Σz_j``, ``Σz_k``
        and ``Σz_j z_k`` over them; columns that cannot hold missing values (integer or
        bool dtypes, or a schema's ``nullable=False``) share the row count and sums. Each
        of these ``p`` sums moves by at most 1 when a row is added or removed: sensitivity
        ``p`` in L1 norm (discrete Laplace noise of scale ``p/ε`` on each) or ``√p`` in L2
        norm (discrete Gaussian), times the rows a privacy unit may add. The covariance is
        ``r_j r_k (Σz_j z_k - Σz_j Σz_k / n) / (n - ddof)``, and the matrix is projected to
        the nearest positive semidefinite one (free post-processing). Budget cost:
        ``epsilon`` for the whole matrix.

        Examples
        --------
        {matrix_example}
        >>> c = priv.dp.cov(bounds={"x": (0, 10), "y": (-5, 25)}, epsilon=1.0)
        >>> c.shape, list(c.columns), bool(abs(c.loc["x", "y"] - df.cov().loc["x", "y"]) < 2)
        ((2, 2), ['x', 'y'], True)
        """
        planned = plan_matrix(resolve(self._obj), "cov", columns, ddof=ddof, **options)
        return self._execute(planned)

    @shared_doc
    def corr(
        self,
        columns: Sequence[Hashable] | None = None,
        *,
        method: Literal["pearson"] = "pearson",
        **options: Unpack[MatrixArgs],
    ) -> pd.DataFrame:
        """Release the Pearson correlation matrix of bounded columns, as ``df.corr()``.

        Parameters
        ----------
        {matrix_inputs}
        ci : float, optional
            Confidence level: one row per pair (as ``df.corr().stack()``) with ``corr``,
            ``corr_lower`` and ``corr_upper`` (conservative bounds within ``[-1, 1]``).
        min_periods : int, default 1
            As pandas: NaN where the noisy count of rows holding both is below it.
        method : {"pearson"}
            Only Pearson's: Spearman's and Kendall's rank correlations need ranks, which a
            sum of products cannot give.
        use : {"pairwise", "complete"}, default "pairwise"
            As in :meth:`cov`. Pairwise correlations also measure each column's sum of
            squares over every other column's rows (pandas' rule), so ``"complete"``
            saves more here.

        Returns
        -------
        DataFrame
            Square, symmetric, positive semidefinite, unit diagonal, every entry in
            ``[-1, 1]``; NaN for a column whose noisy variance is not positive.

        Notes
        -----
        As :meth:`cov`, with each pair's sums of squares over the rows holding both; the
        correlation is ``(Σz_j z_k - Σz_j Σz_k / n) / sqrt((Σz_j² - (Σz_j)²/n)(Σz_k² -
        (Σz_k)²/n))``, the bounds' scales cancelling. The matrix is projected to the
        nearest positive semidefinite one and rescaled to a unit diagonal (free
        post-processing). Budget cost: ``epsilon``.

        Examples
        --------
        {matrix_example}
        >>> r = priv.dp.corr(bounds={"x": (0, 10), "y": (-5, 25)}, epsilon=1.0)
        >>> bool(abs(r.loc["x", "y"] - df.corr().loc["x", "y"]) < 0.05)
        True
        """
        if method != "pearson":
            raise DPValueError(
                f"method={method!r}: only 'pearson' correlations can be released from sums "
                "of products; rank correlations (spearman, kendall) need ranks"
            )
        planned = plan_matrix(resolve(self._obj), "corr", columns, **options)
        return self._execute(planned)

    def ols(
        self,
        formula: str | None = None,
        data: object = None,
        *,
        y: Hashable | None = None,
        x: Sequence[Hashable] | None = None,
        **options: Unpack[OLSArgs],
    ) -> OLSResults:
        """Release a linear model fitted by least squares, as statsmodels' ``ols(...).fit()``.

        Parameters
        ----------
        formula : str, optional
            A model formula (``"y ~ x + C(g) + x:z + np.log(w)"``, read by formulaic, with
            statsmodels' column names), whose every term reads one row (see Notes). The
            levels of a categorical come from ``keys`` (or the session's schema), its first
            level the reference. Or:
        data : None
            Not taken: the data is the protected frame itself, the one ``.dp`` is called
            on. statsmodels' ``ols("y ~ x", data=df).fit()`` is ``priv.dp.ols("y ~ x",
            bounds=..., epsilon=...)`` here; a frame given as ``data`` is refused.
        y, x : label and list of labels, optional
            The response and the regressors, for ``y ~ x1 + x2 + ...``.
        bounds : dict
            ``{column: (lower, upper)}`` for every numeric variable, the response included
            (or from the session's schema). Each design column's range is what the formula
            gives on a public grid of the bounds (the bounds, an even grid and round
            values between them); values are clipped to it.
        keys : dict, optional
            ``{column: [levels]}``: the public levels of each categorical variable; rows at
            other levels are left out, as rows missing a value are.
        epsilon : float
            Privacy cost of the whole model, charged once.
        rho : float, optional
            Instead of ``epsilon``, in a zCDP session.
        delta : float, optional
            With ``mechanism="gaussian"``: the δ spent.
        mechanism : {"laplace", "gaussian"}, default "laplace"
            The noise on the sums; Gaussian noise suits many regressors (its scale grows
            with the square root of the number of sums, Laplace's with the number).
        alpha : float, default 0.05
            The level of the intervals :meth:`summary` shows.

        Returns
        -------
        OLSResults
            ``params``, ``bse``, ``conf_int()``, ``cov_params()``, ``tvalues``,
            ``pvalues``, ``summary()``, ``predict(frame)``, ``nobs``, ``rsquared``,
            ``scale`` as statsmodels names them, and ``ridge``.

        Notes
        -----
        Sufficient-statistics perturbation (Wang 2018). Over the rows holding every
        variable, each design column and the response are scaled to ``[-1, 1]`` over
        their public ranges and rounded to ``2**-16``; the ``p = (m + 2)(m + 3) / 2`` sums
        of products of ``(1, z_1, ..., z_m, z_y)`` each move by at most 1 when a row is
        added or removed (L1 sensitivity ``p``, L2 ``√p``; times the rows a privacy unit
        may add) and get discrete Laplace (scale ``p/ε``) or Gaussian noise. Coefficients
        solve the noisy normal equations with AdaSSP's ridge, read off the noisy matrix
        (zero unless the noise makes it ill-conditioned); standard errors add the noise's
        variance (delta method) to the sampling variance, so intervals cover the model's
        coefficients, not only the exact fit. Budget cost: ``epsilon``.

        Each term of the formula must give a row a value computed from that row alone and
        public constants; a term that reads other rows (``I(x - x.mean())``,
        ``np.cumsum(x)``) would let one row's presence move every other row's design. The
        grammar, checked on the formula's text before anything is charged:

        - columns (``x``, ```x value```, ``Q('x value')``) and numeric literals;
        - ``+ - * / // % **``, unary ``-``, one comparison (``< <= > >= == !=``) and
          ``& | ^ ~`` between allowed expressions;
        - the elementwise functions ``np.log``, ``np.log1p``, ``np.log2``, ``np.log10``,
          ``np.exp``, ``np.expm1``, ``np.exp2``, ``np.sqrt``, ``np.abs``, ``np.absolute``,
          ``np.square``, ``np.sign`` (or ``numpy.``), ``np.clip(expr, lower, upper)`` with
          numbers as bounds, ``abs()``, formulaic's ``log``, ``log2``, ``log10``, ``exp``,
          ``exp2``;
        - ``I(expr)`` of an allowed expression, and ``C(column)`` of a column with keys;
        - formula operators (``+``, ``:``, ``*``, ``/``, ``**`` on terms, ``- 1``).

        Anything else is refused with a :class:`~pandas_dp.errors.DPValueError` naming the
        part: methods and attributes (``x.mean()``, ``x.shift(1)``, ``x.rank()``), other
        functions (``np.cumsum``, ``sum``, ``center``, ``scale``, ``standardize``,
        ``lag``, ``poly``, splines), subscripts, lambdas, comprehensions, ``and``/``or``/
        ``not``, conditional expressions and chained comparisons. Use public constants
        instead: ``I(x - 5)`` to centre, ``I(x / 10)`` to scale, ``I(x > 5)`` for a
        threshold. The design is also computed on a few public rows (the bounds and keys)
        both together and one at a time, and refused if they differ.

        Examples
        --------
        >>> import numpy as np, pandas as pd, pandas_dp
        >>> rng = np.random.default_rng(0)  # test-only: example data, never noise
        >>> x = rng.uniform(0, 10, 50_000)
        >>> df = pd.DataFrame({"x": x, "y": 1 + 2 * x + rng.normal(0, 1, 50_000)})
        >>> priv = df.dp.protect(epsilon=1.0)
        >>> model = priv.dp.ols("y ~ x", bounds={"x": (0, 10), "y": (-5, 25)}, epsilon=1.0)
        >>> list(model.params.index), bool(abs(model.params["x"] - 2) < 0.1)
        (['Intercept', 'x'], True)
        """
        if data is not None:
            raise DPTypeError(
                f"ols() takes no data (got a {type(data).__name__}): the data is the protected "
                "frame itself, the one .dp is called on. statsmodels' ols('y ~ x', data=df) "
                "is priv.dp.ols('y ~ x', bounds=..., epsilon=...) here"
            )
        return self._execute(plan_ols(resolve(self._obj), formula, y=y, x=x, **options))
