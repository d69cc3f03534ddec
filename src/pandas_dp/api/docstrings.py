"""Shared numpydoc parameter blocks, written once (pandas' ``@doc`` pattern).

A docstring names a block on a line of its own, ``{epsilon}``, indented like the parameters
around it; :func:`shared_doc` replaces it by the block at import time, and the docs site's
griffe extension applies the same :func:`fill` to the docstrings it reads statically, so
``help()``, IDEs and the API reference show one text. Only whole lines holding a known block
name are replaced: ``{column: value}`` in prose is left alone, and a misspelt block name
fails at import instead of printing braces.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

_BLOCKS = {
    "epsilon": """\
epsilon : float
    Privacy cost of this release, charged once. In a ρ session, Gaussian noise of this ε
    costs ``ε²/2``, as Laplace noise does, with no δ; an exponential-mechanism choice
    (quantile, mode, top-k) ``ε²/8`` (bounded range).
rho : float, optional
    Instead of ``epsilon``, in a zCDP session (``protect(rho=...)`` or
    ``accounting="zcdp"``): the ρ this release spends, shared by its measurements. In a ρ
    session its noise is discrete Gaussian (``σ² = Δ₂²/(2ρ)``) and its choices use the
    exponential mechanism at ``ε = sqrt(8ρ)``.""",
    "delta": """\
delta : float, optional
    The δ this release spends: on the Gaussian noise with ``mechanism="gaussian"``, on
    choosing keys privately with ``keys=None``. By default the same share of the session's
    δ as ``epsilon`` is of its ε.""",
    "mechanism": """\
mechanism : {"laplace", "gaussian"}, default "laplace"
    Discrete Laplace (pure ε-DP) or discrete Gaussian noise (needs δ > 0, or a ρ budget).""",
    "ci": """\
ci : float, optional
    Confidence level, e.g. 0.95: return an :class:`~pandas_dp.Estimate`
    ``(value, lower, upper, confidence)`` instead of a bare number.""",
    "ci_table": """\
ci : float, optional
    Confidence level, e.g. 0.95: add ``<name>_lower`` / ``<name>_upper`` columns after each
    released column (a Series becomes a DataFrame).""",
    "bounds": """\
bounds : (float, float) or "auto"
    Public ``(lower, upper)`` limits, ``lower < upper``; values are clipped to them.
    Required (or from the session's schema), never read off the data by hand: ``"auto"``
    releases them first, with a fifth of ``epsilon`` (:meth:`DataFrameDPAccessor.bounds`),
    in the same charge.""",
    "fillna": """\
fillna : float, optional
    Public value used for missing entries. By default missing entries are skipped.""",
    "nonnegative": """\
nonnegative : bool, default False
    Clamp counts at 0 (free post-processing; biases small counts upwards).""",
    "total": """\
total : number, optional
    A separately released total to make the counts add up to (least squares; with
    ``nonnegative``, the closest non-negative counts), rounded to integers that sum exactly
    to it when it is an integer.""",
    "min_count": """\
min_count : float, default 1
    A mean or spread is NaN where its noisy count is below this, as pandas gives NaN for an
    empty group (a noisy count below 1 is the best guess that the group is empty). In a
    table, a mean, spread or quantile (and its interval) is also NaN where a count of the
    same rows (``size``, ``count``) or of its column, released in the same table, is below
    this: a row never shows a mean next to a count that says "empty". Raise it to hide
    values that are mostly noise (the count's half-width at 95% is a natural choice; see
    ``preview``); ``0`` keeps every value.""",
    "weights": """\
weights : label, optional
    DataFrame forms only: a numeric column of non-negative row weights (survey weights).
    Each row counts with its weight clipped to ``weight_bounds``; a missing weight counts 0.
    Sensitivities are multiplied by the largest weight (see the weights how-to).
weight_bounds : (float, float), optional
    Public ``(lower, upper)`` limits of one row's weight, ``0 <= lower < upper``; required
    with ``weights`` unless the session's schema bounds the weight column.""",
    "cells": """\
cells : int, optional
    Quantile grid resolution (default 4,096, at most 65,536). An integer column with
    integer bounds at most ``cells`` apart gets the grid of the integers between them.""",
}

#: What a covariance or correlation matrix reads and how it is noised (cov and corr).
_BLOCKS["matrix_inputs"] = "\n".join(
    (
        """\
columns : list of labels, optional
    Numeric or bool columns; by default the keys of ``bounds`` (or the columns the
    session's schema bounds).
bounds : dict or "auto", optional
    ``{column: (lower, upper)}`` for every column whose values are read (or from the
    session's schema); ``"auto"`` releases them first, with a fifth of ``epsilon``, in the
    same charge.""",
        _BLOCKS["epsilon"],
        _BLOCKS["delta"],
        _BLOCKS["mechanism"],
    )
)
#: The correlated example frame ``df`` (protected: ``priv``) of the cov and corr examples.
_BLOCKS["matrix_example"] = """\
>>> import numpy as np, pandas as pd, pandas_dp
>>> rng = np.random.default_rng(0)  # test-only: example data, never noise
>>> x = rng.uniform(0, 10, 20_000)
>>> df = pd.DataFrame({"x": x, "y": 2 * x + rng.normal(0, 1, 20_000)})
>>> priv = df.dp.protect(epsilon=1.0)"""

_TOKEN = re.compile(r"^(?P<indent>[ \t]*)\{(?P<name>[a-z_]+)\}[ \t]*$", re.MULTILINE)

F = TypeVar("F", bound=Callable[..., object])


def fill(text: str) -> str:
    """``text`` with every ``{block}`` line replaced by the block, at that line's indent."""

    def block(match: re.Match[str]) -> str:
        indent, name = match.group("indent"), match.group("name")
        if name not in _BLOCKS:
            raise KeyError(f"no shared docstring block {name!r}; known: {sorted(_BLOCKS)}")
        return "\n".join(indent + line if line else line for line in _BLOCKS[name].split("\n"))

    return _TOKEN.sub(block, text)


def shared_doc(func: F) -> F:
    """Decorator: fill the shared parameter blocks into ``func``'s docstring."""
    if func.__doc__:
        func.__doc__ = fill(func.__doc__)
    return func
