"""Inference on a released model, as statsmodels offers it: tests, intervals and the summary.

Everything here is post-processing of a model's released values (its coefficients and
their covariance, which carries the noise's variance as well as the rows'): no measurement,
no data. Shared by :class:`~pandas_dp.planning.statistics.regression.OLSResults` and
:class:`~pandas_dp.planning.statistics.logistic.LogitResults`:

- :func:`linear_constraint` reads a linear hypothesis ``R θ = q`` the way statsmodels does
  (patsy's ``linear_constraint``): a string ``"x = 0, 2*z - x = 1"`` over the coefficients'
  names, an array ``R`` (and ``q``), or a pair ``(R, q)``;
- :class:`Inference` runs Wald tests of it (:class:`TTestResults`, :class:`FTestResults`,
  statsmodels' ``ContrastResults`` names) and gives the intervals of linear combinations;
- :class:`ModelSummary` prints statsmodels' summary table.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from pandas_dp.errors import DPValueError

_NUMBER = re.compile(r"(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_OPERATORS = "+-*/=,()"
_WORD = re.compile(r"\w")
_FORM = (
    "a hypothesis is a string of comma-separated linear equations over the coefficients' "
    "names, such as \"x = 0, 2*z - x = 1\" (no '=' means '= 0'), an array R of one column "
    "per coefficient (with q), or a pair (R, q)"
)


def linear_constraint(
    hypothesis: object, names: Sequence[str], q: object = None
) -> tuple[np.ndarray, np.ndarray]:
    """``(R, q)``: the hypothesis ``R θ = q`` over the coefficients ``names``.

    Parameters
    ----------
    hypothesis : str, list of str, array-like or tuple (R, q)
        A string of comma-separated linear equations over ``names`` (``"x = 0, z = 1"``,
        ``"x = z"``, ``"2*x - z/2 = 1"``, ``"x"`` meaning ``x = 0``; a list of such strings
        is joined by commas), as patsy's ``linear_constraint`` reads them; or ``R``, one
        column per coefficient (one row if one-dimensional); or a pair ``(R, q)``.
    names : sequence of str
        The coefficients' names, in the order of the columns of ``R``.
    q : array-like, optional
        With an array ``R``: the right-hand sides (0 when omitted).

    Raises
    ------
    DPValueError
        For anything else, saying which part could not be read. Only public inputs are read.
    """
    if isinstance(hypothesis, str) or (
        isinstance(hypothesis, list | tuple)
        and hypothesis
        and all(isinstance(part, str) for part in hypothesis)
    ):
        if q is not None:
            raise DPValueError(f"q={q!r} goes with an array R; a string holds its own values")
        text = hypothesis if isinstance(hypothesis, str) else ", ".join(hypothesis)
        return _Parser(text, list(names)).constraints()
    if isinstance(hypothesis, tuple) and len(hypothesis) == 2 and q is None:
        hypothesis, q = hypothesis
    try:
        matrix = np.atleast_2d(np.asarray(hypothesis, dtype=np.float64))
        values = np.zeros(len(matrix)) if q is None else np.asarray(q, dtype=np.float64)
    except (TypeError, ValueError):
        raise DPValueError(f"cannot read the hypothesis {hypothesis!r}: {_FORM}") from None
    values = values.reshape(-1)
    if values.size == 1:
        values = np.full(len(matrix), values[0])
    if matrix.ndim != 2 or matrix.shape[1] != len(names) or len(matrix) == 0:
        raise DPValueError(
            f"R has shape {matrix.shape}; it needs one column per coefficient "
            f"({len(names)}: {list(names)}) and at least one row"
        )
    if values.shape != (len(matrix),):
        raise DPValueError(f"q has {values.size} values for {len(matrix)} rows of R")
    if not (np.isfinite(matrix).all() and np.isfinite(values).all()):
        raise DPValueError("R and q must be finite")
    return matrix, values


class _Parser:
    """A recursive-descent reader of linear equations; each expression is ``(coef, const)``."""

    def __init__(self, text: str, names: list[str]) -> None:
        self.text, self.names = text, names
        self.tokens = self._tokens()
        self.at = 0

    def _fail(self, why: str, position: int | None = None) -> DPValueError:
        where = "" if position is None else f" at {self.text[position : position + 20]!r}"
        return DPValueError(
            f"cannot read the hypothesis {self.text!r}{where}: {why}. {_FORM}; the "
            f"coefficients are {self.names}"
        )

    def _tokens(self) -> list[tuple[str, object, int]]:
        by_length = sorted(self.names, key=len, reverse=True)
        tokens: list[tuple[str, object, int]] = []
        i = 0
        while i < len(self.text):
            char = self.text[i]
            if char.isspace():
                i += 1
                continue
            name = next((n for n in by_length if self._name_at(n, i)), None)
            number = _NUMBER.match(self.text, i)
            if name is not None and not (number and number.end() > i + len(name)):
                tokens.append(("name", self.names.index(name), i))
                i += len(name)
            elif number:
                tokens.append(("number", float(number.group()), i))
                i = number.end()
            elif char in _OPERATORS:
                tokens.append((char, None, i))
                i += 1
            else:
                raise self._fail("not a coefficient's name, a number or + - * / = ( ) ,", i)
        return tokens

    def _name_at(self, name: str, i: int) -> bool:
        """Whether ``name`` is written at ``i``, not as the start of a longer word."""
        if not name or not self.text.startswith(name, i):
            return False
        after = self.text[i + len(name) : i + len(name) + 1]
        return not (_WORD.match(name[-1]) and after and _WORD.match(after))

    def _peek(self) -> str | None:
        return self.tokens[self.at][0] if self.at < len(self.tokens) else None

    def _position(self) -> int | None:
        return self.tokens[self.at][2] if self.at < len(self.tokens) else None

    def constraints(self) -> tuple[np.ndarray, np.ndarray]:
        rows: list[np.ndarray] = []
        values: list[float] = []
        while True:
            sides = [self._sum()]
            while self._peek() == "=":
                self.at += 1
                sides.append(self._sum())
            if len(sides) == 1:
                sides.append((np.zeros(len(self.names)), 0.0))
            for (left, lconst), (right, rconst) in itertools.pairwise(sides):
                row = left - right
                if not row.any():
                    raise self._fail("an equation names no coefficient")
                rows.append(row)
                values.append(rconst - lconst)
            if self._peek() is None:
                break
            if self._peek() != ",":
                raise self._fail("expected ',' or the end", self._position())
            self.at += 1
        return np.vstack(rows), np.array(values)

    def _sum(self) -> tuple[np.ndarray, float]:
        coef, const = self._product()
        while self._peek() in ("+", "-"):
            sign = 1.0 if self.tokens[self.at][0] == "+" else -1.0
            self.at += 1
            more, extra = self._product()
            coef, const = coef + sign * more, const + sign * extra
        return coef, const

    def _product(self) -> tuple[np.ndarray, float]:
        coef, const = self._unary()
        while self._peek() in ("*", "/"):
            op, position = self.tokens[self.at][0], self._position()
            self.at += 1
            more, extra = self._unary()
            if op == "/":
                if more.any() or extra == 0:
                    raise self._fail("divide only by a non-zero number", position)
                coef, const = coef / extra, const / extra
            elif more.any() and coef.any():
                raise self._fail("a product of coefficients is not linear", position)
            elif more.any():
                coef, const = more * const, extra * const
            else:
                coef, const = coef * extra, const * extra
        return coef, const

    def _unary(self) -> tuple[np.ndarray, float]:
        if self._peek() in ("+", "-"):
            sign = 1.0 if self.tokens[self.at][0] == "+" else -1.0
            self.at += 1
            coef, const = self._unary()
            return sign * coef, sign * const
        return self._atom()

    def _atom(self) -> tuple[np.ndarray, float]:
        kind = self._peek()
        if kind is None:
            raise self._fail("it ends too early")
        _, value, position = self.tokens[self.at]
        self.at += 1
        coef = np.zeros(len(self.names))
        if kind == "name":
            assert isinstance(value, int)
            coef[value] = 1.0
            return coef, 0.0
        if kind == "number":
            assert isinstance(value, float)
            return coef, value
        if kind == "(":
            inner = self._sum()
            if self._peek() != ")":
                raise self._fail("a '(' is not closed", self._position())
            self.at += 1
            return inner
        raise self._fail(f"unexpected {kind!r}", position)


@dataclass(frozen=True, eq=False)
class TTestResults:
    """A t (or z) test of each row of ``R θ = q``, statsmodels' ``ContrastResults`` names.

    Attributes
    ----------
    effect : ndarray
        ``R θ``, the estimated combinations.
    sd : ndarray
        Their standard errors, from ``cov_params()`` (sampling and noise).
    tvalue : ndarray
        ``(R θ - q) / sd``.
    pvalue : ndarray
        Two-sided, from Student's t on ``df_denom`` degrees of freedom (``ols``) or the
        normal law (``logit``), as statsmodels' models.
    df_denom : float
        The model's ``df_resid`` (from the noisy row count).
    distribution : str
        ``"t"`` or ``"norm"``.
    """

    effect: np.ndarray
    sd: np.ndarray
    tvalue: np.ndarray
    pvalue: np.ndarray
    df_denom: float
    distribution: str
    q: np.ndarray
    inference: Inference = field(repr=False)
    rows: np.ndarray = field(repr=False)

    @property
    def statistic(self) -> np.ndarray:
        """``tvalue`` (statsmodels' generic name)."""
        return self.tvalue

    def conf_int(self, alpha: float = 0.05) -> np.ndarray:
        """``(rows, 2)`` intervals of ``R θ``, as the model's ``conf_int`` builds them.

        The sampling part of ``sd`` times the t (or normal) quantile, the noise's part times
        its own quantile (heavier for Laplace noise), added in quadrature, plus the ridge's
        estimated pull (``ols``); without noise and ridge, ``effect ± quantile · sd``.
        """
        half = self.inference.half_widths(self.rows, alpha)
        return np.column_stack([self.effect - half, self.effect + half])

    def summary_frame(self, alpha: float = 0.05) -> pd.DataFrame:
        """One row per equation (``c0``, ``c1``, ...), statsmodels' columns."""
        ends = self.conf_int(alpha)
        name = "t" if self.distribution == "t" else "z"
        return pd.DataFrame(
            {
                "coef": self.effect,
                "std err": self.sd,
                name: self.tvalue,
                f"P>|{name}|": self.pvalue,
                "Conf. Int. Low": ends[:, 0],
                "Conf. Int. Upp.": ends[:, 1],
            },
            index=[f"c{i}" for i in range(len(self.effect))],
        )

    def __str__(self) -> str:
        with pd.option_context("display.width", 200):
            return f"Test for Constraints (differentially private)\n{self.summary_frame()}"


@dataclass(frozen=True)
class FTestResults:
    """A joint Wald F test of ``R θ = q``, statsmodels' ``ContrastResults`` names.

    Attributes
    ----------
    fvalue : float
        ``(Rθ - q)ᵀ (R V Rᵀ)⁻¹ (Rθ - q) / df_num``, ``V = cov_params()`` (sampling and noise).
    pvalue : float
        From the F law on ``(df_num, df_denom)`` degrees of freedom, as statsmodels'.
    df_num : float
        The rank of ``R`` (the number of independent equations).
    df_denom : float
        The model's ``df_resid`` (from the noisy row count).
    """

    fvalue: float
    pvalue: float
    df_num: float
    df_denom: float

    @property
    def statistic(self) -> float:
        """``fvalue`` (statsmodels' generic name)."""
        return self.fvalue

    def __str__(self) -> str:
        return (
            f"<F test: F={self.fvalue:.6g}, p={self.pvalue:.6g}, "
            f"df_denom={self.df_denom:.6g}, df_num={self.df_num:.6g}>"
        )

    __repr__ = __str__


@dataclass(frozen=True, eq=False)
class Inference:
    """What Wald tests and intervals read of a released model.

    ``covariance`` is ``cov_params()`` (sampling and noise), ``noise`` its noise part (kept
    apart so that Laplace noise gets its own quantile), ``bias`` each coefficient's largest
    estimated pull by a ridge (0 without ridge), ``df_resid`` from the noisy row count;
    ``use_t`` picks Student's t (``ols``) or the normal law (``logit``), as statsmodels.
    """

    params: pd.Series
    covariance: np.ndarray
    noise: np.ndarray
    bias: np.ndarray
    df_resid: float
    use_t: bool
    laplace: bool

    def quantile(self, alpha: float) -> float:
        """The two-sided ``1 - alpha`` quantile of the sampling law."""
        from scipy import stats

        if self.use_t:
            return float(stats.t.ppf(1 - alpha / 2, self.df_resid))
        return float(stats.norm.ppf(1 - alpha / 2))

    def half_widths(
        self, rows: np.ndarray, alpha: float, extra: np.ndarray | float = 0.0
    ) -> np.ndarray:
        """Half-widths of the intervals of ``rows @ params``.

        ``extra`` is variance added to the sampling part, such as a new observation's.
        """
        q = self.quantile(alpha)
        total = np.einsum("ij,jk,ik->i", rows, self.covariance, rows)
        noise = np.maximum(np.einsum("ij,jk,ik->i", rows, self.noise, rows), 0.0)
        sampling = np.maximum(total - noise, 0.0) + extra
        tail = max(q, math.log(1 / alpha) / math.sqrt(2)) if self.laplace else q
        return np.asarray(np.hypot(q * np.sqrt(sampling), tail * np.sqrt(noise))) + (
            np.abs(rows) @ self.bias
        )

    def t_test(self, hypothesis: object, q: object = None) -> TTestResults:
        """A Wald t (or z) test of each equation of the hypothesis."""
        from scipy import stats

        rows, values = linear_constraint(hypothesis, list(self.params.index), q)
        effect = rows @ self.params.to_numpy()
        variance = np.einsum("ij,jk,ik->i", rows, self.covariance, rows)
        sd = np.sqrt(np.maximum(variance, 0.0))
        with np.errstate(divide="ignore", invalid="ignore"):
            tvalue = (effect - values) / sd
        if self.use_t:
            pvalue = 2 * stats.t.sf(np.abs(tvalue), self.df_resid)
        else:
            pvalue = 2 * stats.norm.sf(np.abs(tvalue))
        return TTestResults(
            effect, sd, tvalue, pvalue, self.df_resid, "t" if self.use_t else "norm",
            values, self, rows,
        )  # fmt: skip

    def f_test(self, hypothesis: object, q: object = None) -> FTestResults:
        """A joint Wald F test of the hypothesis (statsmodels' ``f_test``)."""
        from scipy import stats

        rows, values = linear_constraint(hypothesis, list(self.params.index), q)
        gap = rows @ self.params.to_numpy() - values
        middle = rows @ self.covariance @ rows.T
        with np.errstate(all="ignore"):
            try:
                inverse = np.linalg.pinv((middle + middle.T) / 2, hermitian=True)
            except np.linalg.LinAlgError:  # pragma: no cover - a non-finite covariance
                inverse = np.full_like(middle, np.nan)
            df_num = float(np.linalg.matrix_rank(rows))
            fvalue = float(gap @ inverse @ gap) / df_num
            pvalue = float(stats.f.sf(fvalue, df_num, self.df_resid))
        return FTestResults(fvalue, pvalue, df_num, float(self.df_resid))


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
