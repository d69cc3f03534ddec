"""Grouped releases on 10**7 rows and 1,000 public keys, against plain pandas.

Speed: ``priv.dp.groupby(keys=...).agg(count, sum, mean)`` next to
``df.assign(x=clip).groupby().agg(size, sum, mean)``, measured in the same run; counts with
public keys, with keys chosen privately (partition selection on the string keys), and over
10**6 public integer keys, each next to ``groupby().size()``.

Accuracy: the mean absolute error per group of the noisy mean at ε = 1, for the estimator
pandas-dp uses (centred sum over a shared noisy count, equal ε split) and the alternatives
considered. The exact per-group aggregates come from the library's engine once; each trial
draws fresh exact noise for every group, which is exactly what one release does.
"""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pandas as pd

import pandas_dp
from _util import best_time, table
from pandas_dp.engines.pandas_engine import aggregate_frame
from pandas_dp.measures.aggregates import Grouping
from pandas_dp.mechanisms.random import SystemRandomSource
from pandas_dp.planning.measurement.parts import count_part, sum_part
from pandas_dp.planning.statistics.moments import mean_from

ROWS = 10_000_000
KEYS = 1_000
MANY_KEYS = 1_000_000
BOUNDS = (0.0, 200_000.0)


def make_frame(rows: int, keys: int) -> tuple[pd.DataFrame, list[str]]:
    """Rows spread over ``keys`` string keys with Zipf-like sizes; lognormal incomes."""
    gen = np.random.default_rng(2)  # test-only: generates benchmark data, never noise
    names = [f"k{i:04d}" for i in range(keys)]
    weights = 1.0 / np.arange(1, keys + 1) ** 0.8
    codes = gen.choice(keys, size=rows, p=weights / weights.sum())
    income = gen.lognormal(10.5, 1.0, rows)
    return pd.DataFrame({"key": pd.Series(np.array(names)[codes]), "income": income}), names


def speed(frame: pd.DataFrame, keys: list[str]) -> list[list[object]]:
    """Time the grouped release and its plain-pandas counterpart."""
    priv = frame.dp.protect(epsilon=1e6)
    ours = best_time(
        lambda: priv.dp.groupby("key", keys=keys).agg(
            n="count",
            total=("income", "sum"),
            avg=("income", "mean"),
            bounds={"income": BOUNDS},
            epsilon=1.0,
        ),
        repeat=3,
    )
    base = best_time(
        lambda: (
            frame.assign(income=frame["income"].clip(*BOUNDS))
            .groupby("key")
            .agg(n=("income", "size"), total=("income", "sum"), avg=("income", "mean"))
        ),
        repeat=3,
    )
    counts_only = best_time(lambda: priv.dp.groupby("key", keys=keys).count(epsilon=1.0), repeat=5)
    counts_base = best_time(lambda: frame.groupby("key").size(), repeat=5)
    selecting = frame.dp.protect(epsilon=1e6, delta=1e-6)
    selecting_groups = selecting.dp.groupby("key", selection="threshold")
    selected = best_time(lambda: selecting_groups.count(epsilon=1.0), repeat=3)
    return [
        ["agg(count, sum, mean)", ours * 1e3, base * 1e3, ours / base],
        ["count", counts_only * 1e3, counts_base * 1e3, counts_only / counts_base],
        ["count, keys chosen privately", selected * 1e3, counts_base * 1e3, selected / counts_base],
        many_keys(len(frame)),
    ]


def many_keys(rows: int, keys: int = MANY_KEYS) -> list[object]:
    """Count over ``keys`` public integer keys (ids), next to ``groupby().size()``."""
    gen = np.random.default_rng(3)  # test-only: generates benchmark data, never noise
    frame = pd.DataFrame({"id": gen.integers(0, keys, rows)})
    priv = frame.dp.protect(epsilon=1e6)
    public = np.arange(keys)
    with warnings.catch_warnings():  # about ten rows per key: many counts are mostly noise
        warnings.simplefilter("ignore", pandas_dp.NoiseDominatedWarning)
        ours = best_time(lambda: priv.dp.groupby("id", keys=public).count(epsilon=1.0), repeat=3)
    base = best_time(lambda: frame.groupby("id").size(), repeat=3)
    return [f"count over {keys:,} public keys", ours * 1e3, base * 1e3, ours / base]


def _grouped_errors(frame, keys, share, centered, eps, trials, source):
    grouping = Grouping(("key",), pd.Index(keys, name="key"))
    eps_sum = eps * share
    total = sum_part("income", BOUNDS, eps_sum, centered=centered, label="sum")
    count = count_part(eps - eps_sum, None)
    exact = aggregate_frame(frame, (total.measure, count.measure), grouping).values
    sums = np.asarray(exact[0], dtype=np.int64)[:, None] + total.mechanism.sample(
        len(keys) * trials, source
    ).reshape(len(keys), trials)
    counts = np.asarray(exact[1], dtype=np.int64)[:, None] + count.mechanism.sample(
        len(keys) * trials, source
    ).reshape(len(keys), trials)
    if centered:
        estimates = mean_from(total, sums, counts, BOUNDS)
    else:
        estimates = np.clip(total.to_real(sums) / np.maximum(counts, 1.0), *BOUNDS)
    truth = frame.assign(x=frame["income"].clip(*BOUNDS)).groupby("key")["x"].mean()
    truth = truth.reindex(keys).to_numpy()[:, None]  # NaN: a key with no rows has no mean
    return float(np.nanmean(np.abs(estimates - truth)))


def accuracy(frame: pd.DataFrame, keys: list[str], trials: int) -> list[list[object]]:
    """Mean absolute error per group of each noisy-mean estimator at ε = 1."""
    source = SystemRandomSource()
    eps = Fraction(1)
    candidates = [
        ("centred sum / noisy count, ε split 1/2 (pandas-dp .mean)", Fraction(1, 2), True),
        ("centred sum / noisy count, ε split 2/3", Fraction(2, 3), True),
        ("centred sum / noisy count, ε split 1/3", Fraction(1, 3), True),
        ("uncentred sum / noisy count, ε split 1/2", Fraction(1, 2), False),
    ]
    return [
        [name, _grouped_errors(frame, keys, share, centered, eps, trials, source)]
        for name, share, centered in candidates
    ]


def run(rows: int = ROWS, trials: int = 200) -> str:
    """Speed and accuracy report (markdown)."""
    frame, keys = make_frame(rows, KEYS)
    speed_rows = speed(frame, keys)
    small, small_keys = make_frame(max(rows // 100, 10_000), KEYS)
    acc_rows = accuracy(small, small_keys, trials)
    return "\n".join(
        [
            f"### Group-by on {rows:,} rows, {KEYS:,} public keys (best of 3, milliseconds)",
            "",
            table(["release", "pandas-dp", "plain pandas", "ratio"], speed_rows),
            "",
            f"### Noisy mean per group at ε = 1 ({len(small):,} rows over {KEYS:,} groups, "
            f"{trials} releases): mean absolute error over the groups that have rows",
            "",
            table(["estimator", "MAE per group"], acc_rows),
        ]
    )


if __name__ == "__main__":
    print(run())
