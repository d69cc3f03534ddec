"""The release invariant at its edge: an empty frame and its one-row neighbour.

Every release family, row-level and under a privacy unit, on a protected frame of 0 rows and
of 1 row (same columns and dtypes, same arguments): both must release, or both raise the same
exception type, with the same warnings. A crash on the empty frame alone (as the caps' largest
group code once did) would tell a reader the frame is empty, and was charged besides.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest

from pandas_dp import NoiseDominatedWarning, NotProtectedError

KEYS = [0, 1, 2]
PAIRS = {"g": KEYS, "k": ["p", "q"]}
B = {"x": (0, 100), "y": (0, 100)}
T = (pd.Timestamp("2020"), pd.Timestamp("2021"))
PIVOT = {
    "values": "x",
    "index": "g",
    "columns": "k",
    "keys": PAIRS,
    "bounds": (0, 100),
    "epsilon": 1,
}


def one_row() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "g": [0], "k": ["p"], "x": [50.0], "y": [20.0], "w": [1.0], "pid": [7],
            "t": [pd.Timestamp("2020-05-01")],
            "c": pd.Categorical(["a"], categories=["a", "b"]),
        }
    )  # fmt: skip


def grouped(p: Any) -> Any:
    return p.dp.groupby("g", keys=KEYS)


RELEASES: dict[str, Callable[[Any], Any]] = {
    "count": lambda p: p.dp.count(epsilon=1),
    "sum": lambda p: p.dp.sum("x", bounds=(0, 100), epsilon=1),
    "mean with ci": lambda p: p.dp.mean("x", bounds=(0, 100), epsilon=1, ci=0.95),
    "median with ci": lambda p: p.dp.median("x", bounds=(0, 100), epsilon=1, ci=0.95),
    "std with ci": lambda p: p.dp.std("x", bounds=(0, 100), epsilon=1, ci=0.9),
    "quantiles": lambda p: p.dp.quantile("x", [0.1, 0.5], bounds=(0, 100), epsilon=1),
    "mean of a list": lambda p: p.dp.mean(["x", "y"], bounds=B, epsilon=1),
    "describe": lambda p: p[["x", "y", "pid"]].dp.describe(bounds=B, epsilon=1),
    "frame nunique": lambda p: p[["k", "g", "pid"]].dp.nunique(epsilon=1),
    "g.size": lambda p: grouped(p).size(epsilon=1),
    "g.size, one group per unit": lambda p: p.dp.groupby(
        "g", keys=KEYS, max_groups_per_unit=1
    ).size(epsilon=1),
    "g.sum, one row per group": lambda p: p.dp.groupby("g", keys=KEYS, max_rows_per_group=1).sum(
        "x", bounds=(0, 100), epsilon=1
    ),
    "g[x].mean": lambda p: grouped(p)["x"].mean(bounds=(0, 100), epsilon=1),
    "g.median": lambda p: grouped(p).median("x", bounds=(0, 100), epsilon=1),
    "g[x].quantile": lambda p: grouped(p)["x"].quantile([0.25, 0.75], bounds=(0, 100), epsilon=1),
    "g[x].std": lambda p: grouped(p)["x"].std(bounds=(0, 100), epsilon=1),
    "g[k].nunique": lambda p: grouped(p)["k"].nunique(epsilon=1),
    "g[x].describe": lambda p: grouped(p)["x"].describe(bounds=(0, 100), epsilon=1),
    "g[k].value_counts": lambda p: grouped(p)["k"].value_counts(keys=["p", "q"], epsilon=1),
    "g.agg dict": lambda p: grouped(p).agg(
        {"x": ["sum", "mean", "median"]}, bounds={"x": (0, 100)}, epsilon=1
    ),
    "g.agg with ci": lambda p: grouped(p).agg(
        s=("x", "sum"), m=("x", "mean"), bounds={"x": (0, 100)}, epsilon=1, ci=0.95
    ),
    "g.agg weighted": lambda p: grouped(p).agg(
        s=("x", "sum"), bounds={"x": (0, 100)}, weights="w", weight_bounds=(0, 2), epsilon=1
    ),
    "private keys": lambda p: p.dp.groupby("k", selection="threshold").count(epsilon=1),
    "optimal selection": lambda p: p.dp.groupby("k", selection="optimal").count(epsilon=1),
    "nunique": lambda p: p["k"].dp.nunique(epsilon=1),
    "crosstab with margins": lambda p: p.dp.crosstab("g", "k", keys=PAIRS, margins=True, epsilon=1),
    "crosstab normalized": lambda p: p.dp.crosstab(
        "g", "k", keys=PAIRS, normalize="index", epsilon=1
    ),
    "pivot of means": lambda p: p.dp.pivot_table(aggfunc="mean", margins=True, **PIVOT),
    "pivot of medians": lambda p: p.dp.pivot_table(aggfunc="median", **PIVOT),
    "histogram": lambda p: p["x"].dp.histogram(bins=5, range=(0, 100), epsilon=1),
    "weighted histogram": lambda p: p.dp.histogram(
        "x", bins=5, range=(0, 100), weights="w", weight_bounds=(0, 2), epsilon=1
    ),
    "value_counts": lambda p: p["k"].dp.value_counts(
        keys=["p", "q"], normalize=True, dropna=False, epsilon=1
    ),
    "categories": lambda p: p["c"].dp.value_counts(keys="categories", epsilon=1),
    "datetime mean": lambda p: p["t"].dp.mean(bounds=T, epsilon=1),
    "datetime min": lambda p: p["t"].dp.min(bounds=T, epsilon=1),
    "monthly histogram": lambda p: p["t"].dp.histogram(freq="MS", range=T, epsilon=1),
    "by period": lambda p: p.dp.groupby(
        p["t"].dt.to_period("M"), keys=pd.period_range("2020-01", "2020-12", freq="M")
    ).size(epsilon=1),
    "weighted mean": lambda p: p.dp.mean(
        "x", bounds=(0, 100), weights="w", weight_bounds=(0, 2), epsilon=1
    ),
    "tables": lambda p: p.dp.tables([["g", "k"], ["k"]], keys=PAIRS, epsilon=1),
    "synthesize": lambda p: p.dp.synthesize(columns=["g", "k"], keys=PAIRS, epsilon=1, rows=10),
    "synthesize, AIM": lambda p: p.dp.synthesize(
        columns=["g", "k"], keys=PAIRS, epsilon=1, method="aim"
    ),
    "mode": lambda p: p["k"].dp.mode(candidates=["p", "q"], epsilon=1),
    "top_k": lambda p: p["k"].dp.top_k(2, candidates=["p", "q"], epsilon=1),
    "hierarchy": lambda p: p.dp.hierarchy(["g", "k"], keys=PAIRS).count(epsilon=1),
    # The frame forms of Series releases (under a unit, a Series is refused: SERIES below).
    "histogram of the frame": lambda p: p.dp.histogram("x", bins=5, range=(0, 100), epsilon=1),
    "datetime mean of the frame": lambda p: p.dp.mean("t", bounds=T, epsilon=1),
    "mode of the frame": lambda p: p.dp.mode("k", candidates=["p", "q"], epsilon=1),
    "top_k of the frame": lambda p: p.dp.top_k("k", 2, candidates=["p", "q"], epsilon=1),
    "count of the unit column": lambda p: p["pid"].dp.count(epsilon=1),
}
#: Series releases: under a privacy unit a Series cannot say whose rows it holds (its labels
#: may have been renumbered), so they are refused, alike on both frames, before any charge.
SERIES = {
    "nunique", "histogram", "value_counts", "categories", "datetime mean", "datetime min",
    "monthly histogram", "mode", "top_k",
}  # fmt: skip
CASES = len(RELEASES) * 2  # row-level and under a privacy unit


def outcome(protect_seeded: Any, rows: int, unit: bool, release: Callable[[Any], Any]) -> Any:
    """The exception type (None when it released) and the warnings' categories.

    Left out: NoiseDominatedWarning, post-processing of the released values (as in
    test_differential.py): with one seed, the two frames' noisy counts differ by the row.
    """
    units = {"privacy_unit": "pid", "max_rows_per_unit": 2} if unit else {}
    priv = protect_seeded(one_row().iloc[:rows], seed=3, epsilon=1e4, delta=1e-5, **units)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            release(priv)
            error = None
        except Exception as exc:  # the outcome under test, whatever it is
            error = type(exc)
    kept = [w for w in caught if not issubclass(w.category, NoiseDominatedWarning)]
    return error, sorted(w.category.__name__ for w in kept)


@pytest.mark.parametrize("unit", [False, True], ids=["rows", "unit"])
@pytest.mark.parametrize("name", list(RELEASES))
def test_an_empty_frame_and_its_one_row_neighbour_release_alike(protect_seeded, name, unit):
    empty = outcome(protect_seeded, 0, unit, RELEASES[name])
    one = outcome(protect_seeded, 1, unit, RELEASES[name])
    assert empty == one
    # Only the caps refuse without a unit, and Series under one: the catalogue must not rot
    # into errors.
    expected = ("per group" in name or "per unit" in name) and not unit
    expected = expected or (unit and name in SERIES)
    assert (empty[0] is not None) == expected, empty
    if unit and name in SERIES:
        assert empty[0] is NotProtectedError
