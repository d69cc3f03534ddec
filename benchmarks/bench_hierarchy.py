"""Consistent hierarchical tables: accuracy per level (raw vs consistent) and speed.

Accuracy: a synthetic population over state → county → tract (10 × 10 × 10 = 1,000 tracts).
Each trial does what one ``priv.dp.hierarchy(...).count(epsilon=1)`` release does: exact
discrete Laplace noise on the counts of every level (the total, states, counties, tracts)
with the level's share of ε, then the consistent table from them. The table reports, per
level, the mean absolute error over all nodes and trials of the raw noisy counts and of the
consistent counts. The noise comes from a seeded source, so the numbers are reproducible;
the exact counts come from the library's engine.

Speed: the post-processing alone (least squares over the tree, then top-down projection and
rounding) for 10 × 100 × 100 = 10**5 leaves, and a whole release on ``rows`` rows over the
same hierarchy next to plain pandas' ``groupby().size()`` at the three levels.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd

import pandas_dp  # noqa: F401
from _util import best_time, table
from pandas_dp.engines.pandas_engine import aggregate_frame
from pandas_dp.measures.aggregates import Grouping, Rows
from pandas_dp.mechanisms.consistency import Tree, consistent_counts
from pandas_dp.mechanisms.laplace import DiscreteLaplace
from pandas_dp.mechanisms.random import SeededRandomSource

ROWS = 1_000_000
TRIALS = 1000
BY = ["state", "county", "tract"]
LEVELS = ["total", "state", "county", "tract"]


def population(fanout: tuple[int, int, int], rows: int, empty: float, seed: int) -> pd.DataFrame:
    """``rows`` people over a complete hierarchy; a share ``empty`` of the tracts has nobody.

    Tract sizes are lognormal (a few large tracts, many small ones), as in real geography.
    """
    gen = np.random.default_rng(seed)  # benchmark data, never noise
    leaves = int(np.prod(fanout))
    weights = gen.lognormal(0.0, 1.0, leaves) * (gen.random(leaves) >= empty)
    codes = gen.choice(leaves, size=rows, p=weights / weights.sum())
    s, rest = np.divmod(codes, fanout[1] * fanout[2])
    c, t = np.divmod(rest, fanout[2])
    return pd.DataFrame(
        {
            "state": pd.Series(np.char.add("s", s.astype(str))),
            "county": pd.Series(np.char.add("c", c.astype(str))),
            "tract": pd.Series(np.char.add("t", t.astype(str))),
        }
    )


def keys_for(fanout: tuple[int, int, int]) -> dict:
    """The public hierarchy as a nested dict: ``{state: {county: [tracts]}}``."""
    tracts = [f"t{k}" for k in range(fanout[2])]
    counties = [f"c{k}" for k in range(fanout[1])]
    return {f"s{k}": {c: list(tracts) for c in counties} for k in range(fanout[0])}


def exact_levels(frame: pd.DataFrame, fanout: tuple[int, int, int]) -> tuple[Tree, list]:
    """The tree and its exact counts at every level, from the library's own engine."""
    priv = frame.dp.protect(epsilon=1.0)
    hierarchy = priv.dp.hierarchy(BY, keys=keys_for(fanout)).hierarchy
    grouping = Grouping(tuple(BY), hierarchy.leaves)
    leaves = aggregate_frame(frame, (Rows(),), grouping).values[0]
    return hierarchy.tree, hierarchy.tree.rollup(leaves)


def accuracy(tree: Tree, exact: list, split: tuple[int, ...], trials: int, seed: int) -> list:
    """MAE per level of the raw noisy counts and of the consistent table, ε = 1."""
    source = SeededRandomSource(seed)
    shares = [Fraction(s, sum(split)) for s in split]
    mechanisms = [DiscreteLaplace.calibrated(1, share) for share in shares]
    variances = [m.variance() for m in mechanisms]
    noise = [
        m.sample(level.size * trials, source).reshape(trials, level.size)
        for m, level in zip(mechanisms, exact, strict=True)
    ]
    raw = np.zeros((trials, tree.levels))
    consistent = np.zeros((trials, tree.levels))
    for trial in range(trials):
        noisy = [level + z[trial] for level, z in zip(exact, noise, strict=True)]
        released = consistent_counts(tree, noisy, variances)
        for depth in range(tree.levels):
            raw[trial, depth] = np.abs(noisy[depth] - exact[depth]).mean()
            consistent[trial, depth] = np.abs(released[depth] - exact[depth]).mean()
    rows = []
    for d, (name, width, share) in enumerate(zip(LEVELS, tree.widths, shares, strict=True)):
        base = raw[:, d].mean()
        change = (consistent[:, d] - raw[:, d]) / base  # paired: the same noise in both
        se = change.std(ddof=1) / np.sqrt(trials)
        rows.append(
            [name, width, f"{share}", base, consistent[:, d].mean(),
             f"{change.mean():+.1%} ± {se:.2%}"]
        )  # fmt: skip
    return rows


def speed(rows: int) -> list[list[object]]:
    """Post-processing of 10**5 leaves, and a whole release against plain pandas."""
    fanout = (10, 100, 100)
    tree = Tree([[10], [100] * 10, [100] * 1000])
    gen = np.random.default_rng(1)
    exact = tree.rollup(gen.poisson(10, tree.widths[-1]))
    mechanisms = [DiscreteLaplace.calibrated(1, Fraction(1, 4))] * 4
    source = SeededRandomSource(1)
    noisy = [
        level + m.sample(level.size, source) for m, level in zip(mechanisms, exact, strict=True)
    ]
    variances = [m.variance() for m in mechanisms]
    post = best_time(lambda: consistent_counts(tree, noisy, variances), repeat=5)
    frame = population(fanout, rows, 0.2, seed=3)
    keys = keys_for(fanout)
    priv = frame.dp.protect(epsilon=1e6)
    whole = best_time(lambda: priv.dp.hierarchy(BY, keys=keys).count(epsilon=1.0), repeat=3)
    base = best_time(
        lambda: [frame.groupby(BY[:d]).size() for d in (1, 2, 3)] + [len(frame)], repeat=3
    )
    return [
        ["post-processing only (least squares + top-down), 10**5 leaves", post * 1e3, "", ""],
        [f"whole release on {rows:,} rows (keys, engine, noise, table)", whole * 1e3, base * 1e3,
         whole / base],
    ]  # fmt: skip


def run(rows: int = ROWS, trials: int = TRIALS) -> str:
    """Accuracy and speed report (markdown)."""
    fanout = (10, 10, 10)
    headers = ["level", "nodes", "ε share", "raw MAE", "consistent MAE", "change ± s.e."]
    sections = [
        "### Consistent hierarchical tables: accuracy per level at ε = 1 "
        f"(10 states × 10 counties × 10 tracts, {trials} seeded releases)",
    ]
    scenarios = [
        ("dense: 100,000 people, every tract populated", 100_000, 0.0, (1, 1, 1, 1)),
        ("sparse: 5,000 people, 60% of tracts empty", 5_000, 0.6, (1, 1, 1, 1)),
        ("dense, leaf-heavy split 1:1:1:3", 100_000, 0.0, (1, 1, 1, 3)),
        ("sparse, leaf-heavy split 1:1:1:3", 5_000, 0.6, (1, 1, 1, 3)),
    ]
    for title, people, empty, split in scenarios:
        tree, exact = exact_levels(population(fanout, people, empty, seed=7), fanout)
        rows_ = accuracy(tree, exact, split, trials, seed=11)
        sections += ["", f"{title}:", "", table(headers, rows_)]
    sections += [
        "",
        "### Consistent hierarchical tables: speed (10 × 100 × 100 = 10**5 leaves; best of "
        "5 / 3, milliseconds)",
        "",
        table(["step", "pandas-dp", "plain pandas (size per level)", "ratio"], speed(rows)),
    ]
    return "\n".join(sections)


if __name__ == "__main__":
    print(run())
