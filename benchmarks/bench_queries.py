"""count / sum / mean on 10**7 rows: pandas-dp against the plain pandas computation.

Each pandas-dp release does strictly more work than the baseline (clip, lattice rounding,
exact integer sums, noise, accounting); the ratio says what that costs. Both sides run in the
same process, on the same frame, best of 5.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

import pandas_dp  # noqa: F401
from _util import best_time, table

ROWS = 10_000_000
BOUNDS = (0.0, 200_000.0)


def make_frame(rows: int) -> pd.DataFrame:
    """Synthetic people: float incomes with a few NaN, integer ages."""
    gen = np.random.default_rng(1)  # test-only: generates benchmark data, never noise
    income = gen.lognormal(10.5, 1.0, rows)
    income[gen.random(rows) < 0.01] = np.nan
    return pd.DataFrame({"income": income, "age": gen.integers(0, 100, rows)})


def run(rows: int = ROWS) -> str:
    """Time each release next to its pandas baseline; return a markdown report."""
    df = make_frame(rows)
    priv = df.dp.protect(epsilon=1e6)
    older = df["age"] >= 65
    priv_older = priv["age"] >= 65
    cases = [
        ("count rows", lambda: priv.dp.count(epsilon=1e-3), lambda: len(df)),
        ("Series.count (non-null)", lambda: priv["income"].dp.count(epsilon=1e-3),
         lambda: df["income"].count()),
        ("sum float column", lambda: priv.dp.sum("income", bounds=BOUNDS, epsilon=1e-3),
         lambda: df["income"].clip(*BOUNDS).sum()),
        ("mean float column", lambda: priv["income"].dp.mean(bounds=BOUNDS, epsilon=1e-3),
         lambda: df["income"].clip(*BOUNDS).mean()),
        ("sum int column", lambda: priv.dp.sum("age", bounds=(0, 100), epsilon=1e-3),
         lambda: df["age"].clip(0, 100).sum()),
        ("count of a filter (incl. filter)", lambda: priv[priv_older].dp.count(epsilon=1e-3),
         lambda: len(df[older])),
    ]  # fmt: skip
    rows_out = []
    for name, ours, base in cases:
        t_ours, t_base = best_time(ours), best_time(base)
        rows_out.append([name, t_ours * 1e3, t_base * 1e3, t_ours / t_base])
    return "\n".join(
        [
            f"### Releases on {rows:,} rows (best of 5, milliseconds)",
            "",
            table(["release", "pandas-dp", "plain pandas", "ratio"], rows_out),
            "",
            "Ratios for counts compare against O(1) `len()`; their absolute time is what matters.",
        ]
    )


if __name__ == "__main__":
    print(run())
