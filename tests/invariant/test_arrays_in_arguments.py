"""Arrays passed where a label, a number or a pair is expected: the error never shows them.

``pd.crosstab`` takes arrays, numpy users pass arrays, and ``priv["income"]`` is one keystroke
from ``"income"``. Each call below gets, in an argument that takes public input, an array-like
read off the protected frame (its Series, a sub-frame, ``to_numpy()``, an ``Index`` of it). On
a frame ``D`` and its neighbour ``D'`` (one row more) the outcome must be the same: both
succeed (an argument that does take a Series, as ``groupby`` does), or both raise the same
exception with the same message, and that message holds none of the column's values and not
its length. Before ``pandas_dp.errors.shown`` these messages printed the whole column.

Plain Python lists are left out: a list of a column's values is one the user built (and
read) on purpose, and is shown as typed.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

import pandas_dp  # noqa: F401  (registers .dp)

RNG = np.random.default_rng(7)
BASE = pd.DataFrame({
    "g": RNG.integers(0, 3, 30),
    "h": RNG.integers(0, 2, 30),
    "x": RNG.normal(50, 10, 30).round(2) + 0.001,  # values with a digit pattern of their own
    "y": RNG.normal(0, 1, 30).round(3),
})  # fmt: skip
NEIGHBOUR = pd.concat(
    [BASE, pd.DataFrame({"g": [1], "h": [0], "x": [77.771], "y": [9.99]})], ignore_index=True
)
B = {"x": (0, 100), "y": (-5, 5)}
K = {"g": [0, 1, 2], "h": [0, 1]}

#: Array-likes read off a protected frame.
KINDS: dict[str, Callable[[pd.DataFrame], Any]] = {
    "Series": lambda p: p["x"],
    "DataFrame": lambda p: p[["x", "y"]],
    "ndarray": lambda p: p["x"].to_numpy(),
    "Index": lambda p: pd.Index(p["x"]),
}

#: Calls with ``a`` (the array-like) where public input is expected.
CALLS: dict[str, Callable[[pd.DataFrame, Any], object]] = {
    "sum": lambda p, a: p.dp.sum(a, bounds=(0, 100), epsilon=0.1),
    "mean": lambda p, a: p.dp.mean(a, bounds=(0, 100), epsilon=0.1),
    "median": lambda p, a: p.dp.median(a, bounds=(0, 100), epsilon=0.1),
    "quantile": lambda p, a: p.dp.quantile(a, 0.5, bounds=(0, 100), epsilon=0.1),
    "var": lambda p, a: p.dp.var(a, bounds=(0, 100), epsilon=0.1),
    "bounds": lambda p, a: p.dp.bounds(a, epsilon=0.1),
    "histogram": lambda p, a: p.dp.histogram(a, bins=3, range=(0, 100), epsilon=0.1),
    "groupby by": lambda p, a: p.dp.groupby(a, keys=[1, 2]).count(epsilon=0.1),
    "groupby keys": lambda p, a: p.dp.groupby("g", keys=a).count(epsilon=0.1),
    "groupby sum": lambda p, a: p.dp.groupby("g", keys=K["g"]).sum(a, bounds=(0, 100), epsilon=0.1),
    "groupby []": lambda p, a: p.dp.groupby("g", keys=K["g"])[a].mean(bounds=(0, 100), epsilon=0.1),
    "groupby agg": lambda p, a: p.dp.groupby("g", keys=K["g"]).agg(
        m=(a, "mean"), bounds=(0, 100), epsilon=0.1
    ),
    "crosstab values": lambda p, a: p.dp.crosstab(
        "g", "h", values=a, aggfunc="sum", keys=K, bounds=(0, 100), epsilon=0.1
    ),
    "crosstab index": lambda p, a: p.dp.crosstab(a, "h", keys=K, epsilon=0.1),
    "crosstab keys": lambda p, a: p.dp.crosstab("g", "h", keys={"g": a, "h": [0, 1]}, epsilon=0.1),
    "pivot_table values": lambda p, a: p.dp.pivot_table(
        values=a, index="g", aggfunc="mean", keys=K, bounds=(0, 100), epsilon=0.1
    ),
    "pivot_table index": lambda p, a: p.dp.pivot_table(
        values="x", index=a, aggfunc="mean", keys=K, bounds=(0, 100), epsilon=0.1
    ),
    "value_counts": lambda p, a: p.dp.value_counts(a, keys=K, epsilon=0.1),
    "nunique": lambda p, a: p.dp.nunique(a, epsilon=0.1),
    "cov": lambda p, a: p.dp.cov(columns=a, bounds=B, epsilon=0.1),
    "ols y": lambda p, a: p.dp.ols(y=a, x=["y"], bounds=B, epsilon=0.1),
    "ols x": lambda p, a: p.dp.ols(y="y", x=a, bounds=B, epsilon=0.1),
    "ols formula": lambda p, a: p.dp.ols(a, bounds=B, epsilon=0.1),
    "ols data": lambda p, a: p.dp.ols("y ~ x", data=a, bounds=B, epsilon=0.1),
    "bounds=": lambda p, a: p.dp.sum("x", bounds=a, epsilon=0.1),
    "bounds=(a, 100)": lambda p, a: p.dp.sum("x", bounds=(a, 100), epsilon=0.1),
    "epsilon=": lambda p, a: p.dp.sum("x", bounds=(0, 100), epsilon=a),
    "weights=": lambda p, a: p.dp.sum("x", bounds=(0, 100), weights=a, epsilon=0.1),
    "describe bounds": lambda p, a: p.dp.describe(bounds={"x": a}, epsilon=0.1),
    "merge": lambda p, a: p.dp.merge(a, on="g"),
    "Series mean bounds": lambda p, a: p["x"].dp.mean(bounds=a, epsilon=0.1),
    "Series histogram range": lambda p, a: p["x"].dp.histogram(bins=3, range=a, epsilon=0.1),
    "Series histogram bins": lambda p, a: p["x"].dp.histogram(bins=a, range=(0, 100), epsilon=0.1),
    "Series quantile q": lambda p, a: p["x"].dp.quantile(a, bounds=(0, 100), epsilon=0.1),
    "Series value_counts keys": lambda p, a: p["g"].dp.value_counts(keys=a, epsilon=0.1),
    "Series groupby": lambda p, a: (
        p["x"].dp.groupby(a, keys=[0, 1]).mean(bounds=(0, 100), epsilon=0.1)
    ),
    "protect privacy_unit": lambda p, a: p.drop(columns=[]).dp.protect(
        epsilon=1, privacy_unit=a, replace=True
    ),
}


def _outcome(frame: pd.DataFrame, call: str, kind: str) -> tuple[str, str]:
    priv = frame.dp.protect(epsilon=100.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            CALLS[call](priv, KINDS[kind](priv))
        except Exception as error:  # the outcome is what is compared
            return type(error).__name__, str(error)
    return "ok", ""


@pytest.mark.parametrize("call", list(CALLS))
def test_an_array_in_an_argument_is_never_shown(call: str) -> None:
    for kind in KINDS:
        here, there = _outcome(BASE, call, kind), _outcome(NEIGHBOUR, call, kind)
        assert here == there, (kind, here, there)
        message = here[1]
        leaked = [f"{v:.3f}" for v in BASE["x"] if f"{v:.3f}"[:-1] in message]
        assert not leaked, (kind, leaked, message)
        assert "30" not in message, (kind, message)
        assert "31" not in message, (kind, message)


def test_the_message_says_what_to_pass_instead() -> None:
    priv = BASE.dp.protect(epsilon=1.0)
    with pytest.raises(TypeError, match=r"values= names a column of this frame, got a Series"):
        priv.dp.crosstab("g", "h", values=priv["x"], aggfunc="sum", keys=K, bounds=(0, 100),
                         epsilon=0.1)  # fmt: skip
    with pytest.raises(TypeError, match=r"a column label is expected here, got a Series"):
        priv.dp.mean(priv["x"], bounds=(0, 100), epsilon=0.1)
    with pytest.raises(TypeError, match=r"y= and x= name columns, got y=a Series"):
        priv.dp.ols(y=priv["y"], x=["x"], bounds=B, epsilon=0.1)
    with pytest.raises(TypeError, match=r"privacy_unit names the id column, got an ndarray"):
        BASE.dp.protect(epsilon=1.0, privacy_unit=BASE["g"].to_numpy())
    assert priv.dp.session.spent.epsilon == 0
