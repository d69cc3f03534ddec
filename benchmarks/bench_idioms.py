"""pandas idioms on 10**7 rows: ``crosstab`` over 100 × 100 keys and a grouped median.

Each release is timed next to the plain pandas call a user would have written, in the same
run: ``pd.crosstab(df.a, df.b, margins=True)`` and ``df.groupby("key")["x"].median()`` (the
median on values clipped to the bounds, which is what pandas-dp releases). Issue 15's goal is
a ratio of at most 1.5.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

import pandas_dp  # noqa: F401
from _util import best_time, table

ROWS = 10_000_000
SIDE = 100  # crosstab keys per side
KEYS = 1_000  # group-by keys of the median
BOUNDS = (0.0, 100.0)


def make_frame(rows: int) -> pd.DataFrame:
    """Two 100-valued integer columns, a 1,000-valued string key and uniform values."""
    gen = np.random.default_rng(5)  # generates benchmark data, never noise
    names = np.array([f"k{i:04d}" for i in range(KEYS)])
    return pd.DataFrame(
        {
            "a": gen.integers(0, SIDE, rows),
            "b": gen.integers(0, SIDE, rows),
            "key": names[gen.integers(0, KEYS, rows)],
            "x": gen.uniform(-10, 110, rows),
        }
    )


def run(rows: int = ROWS) -> str:
    """Time both idioms and return a markdown section."""
    df = make_frame(rows)
    priv = df.dp.protect(epsilon=1e6)
    keys = {"a": list(range(SIDE)), "b": list(range(SIDE))}
    groups = sorted(df["key"].unique().tolist())  # public in a real release; listed here
    cases = [
        (
            f"crosstab {SIDE}×{SIDE}, margins",
            lambda: priv.dp.crosstab("a", "b", keys=keys, margins=True, epsilon=1.0),
            lambda: pd.crosstab(df["a"], df["b"], margins=True),
        ),
        (
            f"groupby({KEYS} keys)['x'].median()",
            lambda: priv.dp.groupby("key", keys=groups)["x"].median(bounds=BOUNDS, epsilon=1.0),
            lambda: df.assign(x=df["x"].clip(*BOUNDS)).groupby("key")["x"].median(),
        ),
    ]
    out = []
    for name, ours, theirs in cases:
        t_ours, t_base = best_time(ours, repeat=3), best_time(theirs, repeat=3)
        out.append([name, t_ours * 1e3, t_base * 1e3, t_ours / t_base])
    return "\n".join(
        [
            f"### pandas idioms on {rows:,} rows (best of 3, milliseconds)",
            "",
            table(["release", "pandas-dp", "plain pandas", "ratio"], out),
        ]
    )


if __name__ == "__main__":
    print(run())
