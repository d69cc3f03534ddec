"""The pandas idioms the conformance suite runs, each with its pandas-dp twin.

An idiom is ``(pandas call, pandas-dp call, tolerance)``: both calls get the same frame (the
pandas-dp one protected with a huge budget, so that the noise is negligible) and must give the
same structure: the same kind of object, index and column labels and names, integer where
pandas gives integers, and values within ``tolerance`` (derived from the noise scale below).

Keys are public in pandas-dp, so each pandas result is reindexed to the keys (a group without
rows has pandas' fill value: 0 for counts, NaN for means). Values are uniform on (0, 100) and
the bounds are (0, 100), so nothing is clipped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

#: ε of each release: a count's noise has scale 1/E, P(|noise| >= 1) = 2e^-E / (1 + e^-1/E)
#: is 0 in float64; a sum's noise on bounds (0, 100) has scale 100/E = 0.01 (lattice steps are
#: far smaller), so a tolerance of 1 is 100 scales: P(miss) < 2e^-100. Means and spreads are
#: ratios of such sums to counts of hundreds of rows: 1e-2 is generous. Quantiles are grid edges
#: (4,096 cells of width 100/4096 = 0.024) chosen at this ε among 600-row groups whose order
#: statistics lie ~0.17 apart: the chosen edge is within a cell of a value whose rank is within
#: one of the target, so 0.5 (about three gaps) covers pandas' interpolation too.
E = 1e4
KEYS = ["a", "b", "c", "d"]  # "d" holds no row
BOUNDS = {"x": (0, 100), "y": (0, 100)}
COUNT, SUM, RATIO, QUANTILE = 0.0, 1.0, 1e-2, 0.5


class Idiom(NamedTuple):
    pandas: Callable[[pd.DataFrame], Any]
    dp: Callable[[pd.DataFrame], Any]
    tolerance: float
    dask: bool = False  # whether the Dask engine offers it too


def _g(df: pd.DataFrame) -> Any:
    return df.groupby("g", observed=False)


def _dg(priv: pd.DataFrame) -> Any:
    return priv.dp.groupby("g", keys=KEYS)


def _keyed(result: Any) -> Any:
    """A pandas group-by result over exactly the public keys, in their order."""
    return result.reindex(pd.Index(KEYS, name="g"))


YEAR = (pd.Timestamp("2024-01-01"), pd.Timestamp("2025-01-01"))
#: A public lookup table for the join idiom (one row per key: a many-to-one join).
REGIONS = pd.DataFrame({"g": ["a", "b", "c"], "region": ["north", "north", "south"]})


def _timed(frame: Any) -> Any:
    """The frame with ``t``: x (0..100) read as 3.6-day steps from 2024-01-01."""
    return frame.assign(t=YEAR[0] + frame["x"].astype("float64") * pd.Timedelta(days=3.6))


def _counts(result: Any) -> Any:
    return _keyed(result).fillna(0).astype(np.int64)


IDIOMS: dict[str, Idiom] = {
    # --- group-by ---------------------------------------------------------------------------
    "g.size()": Idiom(
        lambda d: _counts(_g(d).size()), lambda p: _dg(p).size(epsilon=E), COUNT, True
    ),
    "g['x'].count()": Idiom(
        lambda d: _counts(_g(d)["x"].count()), lambda p: _dg(p)["x"].count(epsilon=E), COUNT, True
    ),
    "g[['x','y']].count()": Idiom(
        lambda d: _counts(_g(d)[["x", "y"]].count()),
        lambda p: _dg(p)[["x", "y"]].count(epsilon=E), COUNT,
    ),
    "g['x'].sum()": Idiom(
        lambda d: _keyed(_g(d)["x"].sum()).fillna(0.0),
        lambda p: _dg(p)["x"].sum(bounds=BOUNDS["x"], epsilon=E), SUM, True,
    ),
    "g.sum('x')": Idiom(
        lambda d: _keyed(_g(d)["x"].sum()).fillna(0.0),
        lambda p: _dg(p).sum("x", bounds=BOUNDS["x"], epsilon=E), SUM, True,
    ),
    "g['x'].mean()": Idiom(
        lambda d: _keyed(_g(d)["x"].mean()),
        lambda p: _dg(p)["x"].mean(bounds=BOUNDS["x"], epsilon=E), RATIO, True,
    ),
    "g[['x','y']].mean()": Idiom(
        lambda d: _keyed(_g(d)[["x", "y"]].mean()),
        lambda p: _dg(p)[["x", "y"]].mean(bounds=BOUNDS, epsilon=E), RATIO, True,
    ),
    # Quantiles spend no ε on finding empty groups unless min_count asks for it (then a
    # group whose noisy count is below it is NaN, as pandas); without it, drop the empty key.
    "g['x'].median()": Idiom(
        lambda d: _keyed(_g(d)["x"].median()),
        lambda p: _dg(p)["x"].median(bounds=BOUNDS["x"], min_count=1, epsilon=E), QUANTILE, True,
    ),
    "g.median('x')": Idiom(
        lambda d: _keyed(_g(d)["x"].median()).drop("d"),
        lambda p: _dg(p).median("x", bounds=BOUNDS["x"], epsilon=E).drop("d"), QUANTILE, True,
    ),
    "g['x'].quantile(0.9)": Idiom(
        lambda d: _keyed(_g(d)["x"].quantile(0.9)),
        lambda p: _dg(p)["x"].quantile(0.9, bounds=BOUNDS["x"], min_count=1, epsilon=E),
        QUANTILE, True,
    ),
    "g['x'].quantile([.25,.75])": Idiom(
        lambda d: _g(d)["x"].quantile([0.25, 0.75]).drop("d", errors="ignore"),
        lambda p: _dg(p)["x"].quantile([0.25, 0.75], bounds=BOUNDS["x"], epsilon=E).drop("d"),
        QUANTILE,
    ),
    "g['x'].var()": Idiom(
        lambda d: _keyed(_g(d)["x"].var()),
        lambda p: _dg(p)["x"].var(bounds=BOUNDS["x"], epsilon=E), 1.0, True,
    ),
    "g['x'].std(ddof=0)": Idiom(
        lambda d: _keyed(_g(d)["x"].std(ddof=0)),
        lambda p: _dg(p)["x"].std(ddof=0, bounds=BOUNDS["x"], epsilon=E), RATIO, True,
    ),
    "g['x'].sem()": Idiom(
        lambda d: _keyed(_g(d)["x"].sem()),
        lambda p: _dg(p)["x"].sem(bounds=BOUNDS["x"], epsilon=E), RATIO,
    ),
    "g['k'].nunique()": Idiom(
        lambda d: _counts(_g(d)["k"].nunique()), lambda p: _dg(p)["k"].nunique(epsilon=E), COUNT
    ),
    "g.agg(n=..., m=...)": Idiom(
        lambda d: _keyed(_g(d).agg(n=("x", "count"), m=("x", "mean"))).astype(
            {"n": "float64"}).fillna({"n": 0}).astype({"n": "int64"}),
        lambda p: _dg(p).agg(n=("x", "count"), m=("x", "mean"), bounds=BOUNDS, epsilon=E),
        RATIO, True,
    ),
    "g.agg(pd.NamedAgg)": Idiom(
        lambda d: _keyed(_g(d).agg(s=pd.NamedAgg("x", "sum"))).fillna(0.0),
        lambda p: _dg(p).agg(s=pd.NamedAgg("x", "sum"), bounds=BOUNDS, epsilon=E), SUM, True,
    ),
    "g.agg({'x': ['sum','mean']})": Idiom(
        lambda d: _keyed(_g(d).agg({"x": ["sum", "mean"]})).fillna({("x", "sum"): 0.0}),
        lambda p: _dg(p).agg({"x": ["sum", "mean"]}, bounds=BOUNDS, epsilon=E), SUM, True,
    ),
    "g.agg({'x': 'mean', 'y': 'median'})": Idiom(
        lambda d: _keyed(_g(d).agg({"x": "mean", "y": "median"})),
        lambda p: _dg(p).agg({"x": "mean", "y": "median"}, bounds=BOUNDS, min_count=1,
                             epsilon=E), QUANTILE,
    ),
    "g['x'].agg(['sum','mean'])": Idiom(
        lambda d: _keyed(_g(d)["x"].agg(["sum", "mean"])).fillna({"sum": 0.0}),
        lambda p: _dg(p)["x"].agg(["sum", "mean"], bounds=BOUNDS["x"], epsilon=E), SUM,
    ),
    "g['x'].agg('mean')": Idiom(
        lambda d: _keyed(_g(d)["x"].agg("mean")),
        lambda p: _dg(p)["x"].agg("mean", bounds=BOUNDS["x"], epsilon=E), RATIO,
    ),
    "g['k'].value_counts()": Idiom(
        lambda d: _g(d)["k"].value_counts().loc[lambda s: s > 0].sort_index(),
        lambda p: _dg(p)["k"].value_counts(keys=["p", "q", "r"], epsilon=E)
        .drop("d", level=0).loc[lambda s: s > 0].sort_index(), COUNT,
    ),
    # --- whole frame ------------------------------------------------------------------------
    "df[['x','y']].mean()": Idiom(
        lambda d: d[["x", "y"]].mean(), lambda p: p.dp.mean(["x", "y"], bounds=BOUNDS, epsilon=E),
        RATIO, True,
    ),
    "df[['x','y']].sum()": Idiom(
        lambda d: d[["x", "y"]].sum(), lambda p: p.dp.sum(["x", "y"], bounds=BOUNDS, epsilon=E),
        SUM, True,
    ),
    "df[['x','y']].median()": Idiom(
        lambda d: d[["x", "y"]].median(),
        lambda p: p.dp.median(["x", "y"], bounds=BOUNDS, epsilon=E), QUANTILE, True,
    ),
    "df[['x','y']].std()": Idiom(
        lambda d: d[["x", "y"]].std(), lambda p: p.dp.std(["x", "y"], bounds=BOUNDS, epsilon=E),
        RATIO, True,
    ),
    "df[['x','y']].quantile(0.5)": Idiom(
        lambda d: d[["x", "y"]].quantile(0.5),
        lambda p: p.dp.quantile(["x", "y"], 0.5, bounds=BOUNDS, epsilon=E), QUANTILE, True,
    ),
    "df[['x','y']].quantile([.1,.9])": Idiom(
        lambda d: d[["x", "y"]].quantile([0.1, 0.9]),
        lambda p: p.dp.quantile(["x", "y"], [0.1, 0.9], bounds=BOUNDS, epsilon=E), QUANTILE,
    ),
    "s.nunique()": Idiom(lambda d: d["k"].nunique(), lambda p: p["k"].dp.nunique(epsilon=E), COUNT),
    "s.value_counts()": Idiom(
        lambda d: d["k"].value_counts().sort_index(),
        lambda p: p["k"].dp.value_counts(keys=["p", "q", "r"], epsilon=E).sort_index(), COUNT,
        True,
    ),
    "s.value_counts(normalize=True)": Idiom(
        lambda d: d["k"].value_counts(normalize=True).sort_index(),
        lambda p: p["k"].dp.value_counts(keys=["p", "q", "r"], normalize=True, epsilon=E)
        .sort_index(), 1e-6,
    ),
    "s.value_counts(dropna=False)": Idiom(
        lambda d: d["y"].round(-2).value_counts(dropna=False).sort_index(),
        lambda p: p.assign(y=p["y"].round(-2))["y"].dp.value_counts(
            keys=[0.0, 100.0], dropna=False, epsilon=E).sort_index(), COUNT,
    ),
    "np.histogram(bins=5, range=)": Idiom(
        lambda d: pd.Series(np.histogram(d["x"], bins=5, range=(0, 100))[0], name="count"),
        lambda p: p["x"].dp.histogram(bins=5, range=(0, 100), epsilon=E).reset_index(drop=True),
        COUNT, True,
    ),
    # --- covariance and correlation: the matrix's noise is that of sums of p products on
    # (0, 100) halved to [-1, 1] (scale p/E ≈ 1e-3 products), over hundreds of rows ----------
    "df[[x,y]].cov()": Idiom(
        lambda d: d[["x", "y"]].cov(),
        lambda p: p.dp.cov(["x", "y"], bounds=BOUNDS, epsilon=E), SUM, True,
    ),
    "df[[x,y]].corr()": Idiom(
        lambda d: d[["x", "y"]].corr(),
        lambda p: p.dp.corr(["x", "y"], bounds=BOUNDS, epsilon=E), RATIO, True,
    ),
    "g[[x,y]].cov()": Idiom(
        lambda d: d[d["g"] != "d"].groupby("g", observed=True)[["x", "y"]].cov(),
        lambda p: p.dp.groupby("g", keys=KEYS[:3])[["x", "y"]].cov(bounds=BOUNDS, epsilon=E),
        SUM, True,
    ),
    "g[[x,y]].corr()": Idiom(
        lambda d: d[d["g"] != "d"].groupby("g", observed=True)[["x", "y"]].corr(),
        lambda p: p.dp.groupby("g", keys=KEYS[:3])[["x", "y"]].corr(bounds=BOUNDS, epsilon=E),
        RATIO, True,
    ),
    # --- time and joins: ``t`` spreads x (0..100) over 360 days of 2024, so every month of the
    # public range holds rows and pandas' data-derived bins are the public ones --------------
    "df.resample('MS', on='t').size()": Idiom(
        lambda d: _timed(d).resample("MS", on="t").size(),
        lambda p: _timed(p).dp.resample("MS", on="t", range=YEAR).size(epsilon=E), COUNT, True,
    ),
    "df.groupby([pd.Grouper(key='t', freq='QS'), 'k']).size()": Idiom(
        lambda d: _timed(d).groupby([pd.Grouper(key="t", freq="QS"), "k"], observed=True).size(),
        lambda p: _timed(p).dp.groupby(
            [pd.Grouper(key="t", freq="QS"), "k"], keys=["p", "q", "r"], range=YEAR
        ).size(epsilon=E), COUNT,
    ),
    "df.merge(public, on='g').groupby('region').size()": Idiom(
        lambda d: d.merge(REGIONS, on="g").groupby("region").size(),
        lambda p: p.dp.merge(REGIONS, on="g").dp.groupby("region", keys=["north", "south"])
        .size(epsilon=E), COUNT, True,
    ),
    # --- tables -----------------------------------------------------------------------------
    "pd.crosstab(margins=True)": Idiom(
        lambda d: pd.crosstab(d["g"], d["k"], margins=True).drop(index="d", errors="ignore"),
        lambda p: p.dp.crosstab("g", "k", keys={"g": KEYS[:3], "k": ["p", "q", "r"]},
                                margins=True, epsilon=E), COUNT, True,
    ),
    "pd.crosstab(normalize='index')": Idiom(
        lambda d: pd.crosstab(d["g"], d["k"], normalize="index"),
        lambda p: p.dp.crosstab("g", "k", keys={"g": KEYS[:3], "k": ["p", "q", "r"]},
                                normalize="index", epsilon=E), 1e-6,
    ),
    "pd.pivot_table(mean, margins)": Idiom(
        lambda d: pd.pivot_table(d, "x", "g", "k", margins=True, observed=False),
        lambda p: p.dp.pivot_table("x", "g", "k", keys={"g": KEYS[:3], "k": ["p", "q", "r"]},
                                   margins=True, bounds=BOUNDS["x"], epsilon=E), RATIO, True,
    ),
    "pd.pivot_table([x,y], [mean,sum])": Idiom(
        lambda d: pd.pivot_table(d, ["x", "y"], "g", "k", aggfunc=["mean", "sum"], observed=False)
        .drop("d", errors="ignore"),
        lambda p: p.dp.pivot_table(["x", "y"], "g", "k", aggfunc=["mean", "sum"],
                                   keys={"g": KEYS[:3], "k": ["p", "q", "r"]}, bounds=BOUNDS,
                                   epsilon=E), SUM,
    ),
}  # fmt: skip
