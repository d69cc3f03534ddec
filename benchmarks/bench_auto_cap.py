"""``max_rows_per_unit="auto"`` against the best fixed cap chosen in hindsight (issue 41).

Simulated user-level data: ``PEOPLE`` people whose numbers of rows follow a heavy-tailed
law (a lognormal, rounded up: median 3 rows, 90% quantile about 12, a few people with
hundreds), one value per row in (0, 100). Two releases: the number of rows (a count) and
the mean value, at ε = 1 for the statistic.

- ``auto``: ``protect(epsilon=2/(1 - CAP_SHARE), ..., max_rows_per_unit="auto")`` spends
  ``CAP_SHARE`` (a tenth) of its budget on the cap, the rest on the two statistics (ε = 1
  each);
- ``fixed k``: ``protect(epsilon=2, ..., max_rows_per_unit=k)`` for k in ``CAPS``, all of
  it on the two statistics; the best of them (in hindsight: the k with the least error, which no
  one can choose without looking at the data) is the oracle.

Median absolute error over ``RUNS`` sessions (the OS CSPRNG), and the ratio auto / best.

``max_groups_per_unit="auto"`` the same way: people visit a heavy-tailed number of the
``GROUP_KEYS`` public keys (most one or two, a few all of them) with ``ROWS_CAP`` rows at
most; a grouped count over the keys at ε = 1, its error the sum over the keys of
``|noisy - true|`` (the true counts uncapped), with ``max_rows_per_group=2`` (what each
person has per key), so that a unit's L1 bound is ``min(24, 2 g)``: a smaller cap on groups
drops visits and cuts the noise. ``auto`` spends ``GROUPS_SHARE`` of that ε on its cap;
``fixed g`` all of it, for g in ``GROUP_CAPS``.
"""

from __future__ import annotations

import sys
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd

import pandas_dp
from _util import table
from pandas_dp.api.queries import unit_caps

PEOPLE = 20_000
RUNS = 30
CAPS = [1, 2, 4, 8, 12, 16, 24, 32, 64, 128]
EPSILON = 1.0  # each statistic's (the budgets below are exact for 2 of them)
BOUNDS = (0.0, 100.0)
GROUP_KEYS = [f"k{j}" for j in range(12)]
GROUP_CAPS = [1, 2, 3, 4, 6, 8, 12]
ROWS_CAP = 24
ROWS_PER_GROUP = 2  # what each person has per key: the L1 bound is min(24, 2 g)


def make_frame(people: int = PEOPLE) -> pd.DataFrame:
    """People with lognormal numbers of rows (median 3), one value per row."""
    gen = np.random.default_rng(411)  # test-only: generates benchmark data, never noise
    rows = np.ceil(gen.lognormal(np.log(3.0), 1.0, people)).astype(np.int64)
    frame = pd.DataFrame({"pid": np.repeat(np.arange(people), rows)})
    frame["x"] = gen.uniform(*BOUNDS, len(frame)) + 10 * (frame.groupby("pid").cumcount() > 5)
    frame["x"] = frame["x"].clip(*BOUNDS)
    return frame


def errors(frame: pd.DataFrame, cap: int | str, runs: int) -> tuple[float, float, list[int]]:
    """Median absolute errors of the count and the mean, and the caps used."""
    # two releases at ε each; auto's budget also pays its cap (CAP_SHARE of the budget)
    budget = Fraction(2) / (1 - unit_caps.CAP_SHARE) if cap == "auto" else Fraction(2)
    count_errors, mean_errors, caps = [], [], []
    truth_n, truth_mean = len(frame), float(frame["x"].mean())
    for _ in range(runs):
        priv = frame.dp.protect(epsilon=budget, privacy_unit="pid", max_rows_per_unit=cap)
        caps.append(priv.dp.session.unit.max_rows)
        count_errors.append(abs(priv.dp.count(epsilon=EPSILON) - truth_n))
        mean_errors.append(abs(priv.dp.mean("x", bounds=BOUNDS, epsilon=EPSILON) - truth_mean))
    return float(np.median(count_errors)), float(np.median(mean_errors)), caps


def make_visits(people: int = PEOPLE) -> pd.DataFrame:
    """People visiting a heavy-tailed number of the public keys, two rows per key visited."""
    gen = np.random.default_rng(412)  # test-only: generates benchmark data, never noise
    keys = np.minimum(np.ceil(gen.lognormal(0.0, 0.8, people)), len(GROUP_KEYS)).astype(int)
    pid = np.repeat(np.arange(people), 2 * keys)
    first = np.repeat(gen.integers(0, len(GROUP_KEYS), people), 2 * keys)
    step = np.concatenate([np.repeat(np.arange(k), 2) for k in keys])
    names = np.asarray(GROUP_KEYS)[(first + step) % len(GROUP_KEYS)]
    return pd.DataFrame({"pid": pid, "g": names})


def group_errors(frame: pd.DataFrame, cap: int | str, runs: int) -> tuple[float, list[int]]:
    """Median total |error| of the grouped count over the keys, and the caps the rows got."""
    truth = frame["g"].value_counts().reindex(GROUP_KEYS, fill_value=0)
    totals, caps = [], []
    for _ in range(runs):
        priv = frame.dp.protect(epsilon=EPSILON, privacy_unit="pid", max_rows_per_unit=ROWS_CAP)
        grouped = priv.dp.groupby(
            "g", keys=GROUP_KEYS, max_groups_per_unit=cap, max_rows_per_group=ROWS_PER_GROUP
        )
        counts = grouped.count(epsilon=EPSILON)
        totals.append(float((counts - truth).abs().sum()))
        (release,) = priv.dp.session.releases
        caps.append(int(release.note.split(" groups,")[0].rsplit("≤ ", 1)[1]))
    return float(np.median(totals)), caps


def run_groups(runs: int = RUNS, people: int = PEOPLE) -> str:
    """The report section of ``max_groups_per_unit="auto"``."""
    frame = make_visits(people)
    per_unit = frame.groupby("pid")["g"].nunique()
    results = {g: group_errors(frame, g, runs)[0] for g in GROUP_CAPS}
    auto, caps = group_errors(frame, "auto", runs)
    best = min(results, key=lambda g: results[g])
    rows: list[list[object]] = [[f"fixed {g}", f"{e:.0f}"] for g, e in results.items()]
    rows.append([f"auto (caps {min(caps)}–{max(caps)})", f"{auto:.0f}"])
    return "\n".join(
        [
            f"### max_groups_per_unit='auto' (median total |error| of a count over "
            f"{len(GROUP_KEYS)} keys, {runs} sessions, ε = {EPSILON})",
            "",
            f"{people:,} people, {len(frame):,} rows; keys per person: median "
            f"{per_unit.median():.0f}, 99% quantile {per_unit.quantile(0.99):.0f}, "
            f"max {per_unit.max()}; at most {ROWS_CAP} rows per person",
            "",
            table(["max_groups_per_unit", "total count error"], rows),
            "",
            f"auto / best fixed cap in hindsight: {auto / results[best]:.2f} (best g = {best})",
        ]
    )


def run(runs: int = RUNS, people: int = PEOPLE) -> str:
    """The report section."""
    warnings.simplefilter("ignore", pandas_dp.NoiseDominatedWarning)  # errors are measured
    frame = make_frame(people)
    per_unit = frame.groupby("pid").size()
    results = {k: errors(frame, k, runs) for k in CAPS}
    auto_count, auto_mean, auto_caps = errors(frame, "auto", runs)
    best_count = min(results, key=lambda k: results[k][0])
    best_mean = min(results, key=lambda k: results[k][1])
    rows: list[list[object]] = [
        [f"fixed {k}", f"{c:.1f}", f"{m:.4f}"] for k, (c, m, _) in results.items()
    ]
    rows.append(
        [f"auto (caps {min(auto_caps)}–{max(auto_caps)})", f"{auto_count:.1f}", f"{auto_mean:.4f}"]
    )
    return "\n".join(
        [
            f"### max_rows_per_unit='auto' (median |error| over {runs} sessions, ε = {EPSILON})",
            "",
            f"{people:,} people, {len(frame):,} rows; rows per person: median "
            f"{per_unit.median():.0f}, 90% quantile {per_unit.quantile(0.9):.0f}, "
            f"max {per_unit.max()}",
            "",
            table(["cap", "count error", "mean error"], rows),
            "",
            f"auto / best fixed cap in hindsight: count {auto_count / results[best_count][0]:.2f}"
            f" (best k = {best_count}), mean {auto_mean / results[best_mean][1]:.2f} "
            f"(best k = {best_mean})",
            "",
            run_groups(runs, people),
        ]
    )


if __name__ == "__main__":
    print(run(int(sys.argv[1]) if len(sys.argv) > 1 else RUNS))
