"""Tables that agree with themselves (issue 38).

One rule for every grouped table: a mean, a spread or a quantile (and its interval) is NaN
where its group looks empty: its own noisy count, or a count of the same rows (``size``, a
count of rows) or of its column in the same table, below ``min_count``. ``size`` warns like
``count`` when its values are mostly noise.

The property test runs ``agg`` over random tables with constant captured noise (so counts go
below ``min_count`` deterministically); the regressions reproduce the issue's findings.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import pandas_dp
from pandas_dp.testing import capture_noise

SETTINGS = settings(derandomize=True, max_examples=120, deadline=None, database=None)
BOUNDS = (0.0, 98.0)
KEYS = ["a", "b", "c", "d"]

#: The statistics an ``agg`` call may hold, by name: (column, how).
COUNTS = {"rows": "count", "size": ("x", "size"), "n_x": ("x", "count")}
DESCRIPTIVE = {
    "mean": ("x", "mean"), "var": ("x", "var"), "std": ("x", "std"), "sem": ("x", "sem"),
    "median": ("x", "median"), "min": ("x", "min"), "max": ("x", "max"),
}  # fmt: skip
OTHERS = {"total": ("x", "sum"), "mean_y": ("y", "mean"), "n_y": ("y", "count")}


def _quiet_protect(data: pd.DataFrame) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
        return data.dp.protect(epsilon=1e6)


def _frame(sizes: list[int], missing: list[int], seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)  # example data only
    groups, xs = [], []
    for key, size, gaps in zip(KEYS, sizes, missing, strict=True):
        values = rng.uniform(*BOUNDS, size)
        values[: min(gaps, size)] = np.nan  # the first ``gaps`` values of the group missing
        groups += [key] * size
        xs += list(values)
    y = rng.uniform(0, 10, len(xs))
    x = np.asarray(xs, dtype=np.float64)
    return pd.DataFrame({"g": pd.Series(groups, dtype="str"), "x": x, "y": y})


def _release(priv: pd.DataFrame, spec: dict[str, Any], value: int, **options: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
        warnings.simplefilter("ignore", pandas_dp.NoiseDominatedWarning)
        with capture_noise(priv, value=value):
            return priv.dp.groupby("g", keys=KEYS).agg(
                **spec, bounds={"x": BOUNDS, "y": (0.0, 10.0)}, epsilon=1.0, **options
            )


def _looks_empty(table: pd.DataFrame, floor: float, column: str = "x") -> np.ndarray:
    """Rows where a count of the rows, or of ``column``, is below ``floor``."""
    names = [n for n in ("rows", "size") if n in table] + (["n_x"] if column == "x" else [])
    names = [n for n in names if n in table]
    if not names:
        return np.zeros(len(table), dtype=bool)
    return np.logical_or.reduce([table[n].to_numpy(dtype=np.float64) < floor for n in names])


@SETTINGS
@given(
    sizes=st.lists(st.sampled_from([0, 1, 2, 5, 12]), min_size=4, max_size=4),
    missing=st.lists(st.integers(0, 12), min_size=4, max_size=4),
    counts=st.sets(st.sampled_from(sorted(COUNTS)), min_size=1, max_size=2),
    descriptive=st.sets(st.sampled_from(sorted(DESCRIPTIVE)), min_size=1, max_size=2),
    others=st.sets(st.sampled_from(sorted(OTHERS))),
    value=st.integers(-12, 12),
    min_count=st.sampled_from([None, 1, 3, 8]),
    ci=st.booleans(),
    nonnegative=st.booleans(),
)
@example(  # a quantile measures no count of its own: the table's count of rows decides
    sizes=[0, 5, 0, 12],
    missing=[0, 0, 0, 0],
    counts={"rows"},
    descriptive={"median"},
    others=set(),
    value=0,
    min_count=None,
    ci=False,
    nonnegative=False,
)
@example(
    sizes=[1, 5, 2, 12],
    missing=[1, 0, 0, 3],
    counts={"size"},
    descriptive={"max", "min"},
    others={"total"},
    value=-2,
    min_count=3,
    ci=True,
    nonnegative=True,
)
def test_no_finite_statistic_next_to_a_count_below_min_count(
    sizes, missing, counts, descriptive, others, value, min_count, ci, nonnegative
):
    priv = _quiet_protect(_frame(sizes, missing, seed=sum(sizes) + 7 * sum(missing)))
    spec = {name: COUNTS[name] for name in sorted(counts)}
    spec |= {name: DESCRIPTIVE[name] for name in sorted(descriptive)}
    spec |= {name: OTHERS[name] for name in sorted(others)}
    options: dict[str, Any] = {"min_count": min_count, "nonnegative": nonnegative}
    if ci:
        options["ci"] = 0.9
    table = _release(priv, spec, value, **options)
    floor = 1.0 if min_count is None else float(min_count)
    empty = _looks_empty(table, floor)
    assert len(table) == len(KEYS)
    for name in descriptive:
        for column in (name, f"{name}_lower", f"{name}_upper"):
            if column not in table:
                assert not ci
                continue
            shown = table[column].to_numpy(dtype=np.float64)
            assert np.isnan(shown[empty]).all(), (column, table)
    if "mean_y" in others:  # a count of x says nothing of y: its own count decides
        own = table["n_y"].to_numpy(dtype=np.float64) < floor if "n_y" in others else None
        rows = _looks_empty(table, floor, column="y")
        hidden = rows if own is None else rows | own
        assert np.isnan(table["mean_y"].to_numpy(dtype=np.float64)[hidden]).all()


def test_min_count_zero_keeps_every_value():
    priv = _quiet_protect(_frame([5, 0, 3, 1], [0, 0, 0, 0], seed=1))
    table = _release(priv, {"size": ("x", "size"), "m": ("x", "median")}, -4, min_count=0)
    assert (table["size"] < 1).any()
    assert table["m"].notna().all()


# --- regressions: the issue's findings -----------------------------------------------------


def test_issue_a_count_of_minus_nine_never_sits_next_to_a_mean():
    # A labour-force survey: sector "mining" has no rows. The table's count of rows and the
    # mean's count of non-missing hours are two measurements: their noises differ.
    rows = pd.DataFrame({"sector": ["farming"] * 40, "hours": np.linspace(10, 90, 40)})
    priv = _quiet_protect(rows)
    g = priv.dp.groupby("sector", keys=["farming", "mining"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.NoiseDominatedWarning)
        # Draws in the release's order: the row count, the centred sum, the count of hours.
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)  # scripted noise
        with capture_noise(priv, script=[[0, -9], [0, 10_000], [0, 5]]):
            table = g.agg(
                n="size", m=("hours", "mean"), bounds={"hours": BOUNDS}, epsilon=1.0, ci=0.95
            )
    assert table.loc["mining", "n"] == -9
    assert np.isnan(table.loc["mining", "m"])  # was 98.0, the upper bound
    assert np.isnan(table.loc["mining", "m_lower"])
    assert np.isnan(table.loc["mining", "m_upper"])
    assert table.loc["farming", "m"] == pytest.approx(50.0)


def test_issue_a_median_next_to_an_empty_count_is_nan():
    priv = _quiet_protect(_frame([6, 0, 6, 6], [0, 0, 0, 0], seed=3))
    table = _release(priv, {"n": "count", "med": ("x", "median")}, -1)
    assert table.loc["b", "n"] == -1
    assert np.isnan(table.loc["b", "med"])
    assert table.drop(index="b")["med"].notna().all()


def test_crosstab_hides_the_interval_of_a_hidden_mean():
    priv = _quiet_protect(_frame([6, 0, 6, 6], [0, 0, 0, 0], seed=5).assign(h=1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
        warnings.simplefilter("ignore", pandas_dp.NoiseDominatedWarning)
        with capture_noise(priv, value=0):
            table = priv.dp.crosstab(
                "g", "h", values="x", aggfunc="mean", keys={"g": KEYS, "h": [1]},
                bounds={"x": BOUNDS}, epsilon=1.0, ci=0.95,
            )  # fmt: skip
    assert table.loc["b"].isna().all(), table  # mean, mean_lower, mean_upper
    assert table.drop(index="b").notna().all().all()


def test_pivot_table_follows_the_same_rule():
    priv = _quiet_protect(_frame([6, 0, 6, 6], [0, 0, 0, 0], seed=5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
        warnings.simplefilter("ignore", pandas_dp.NoiseDominatedWarning)
        with capture_noise(priv, value=-1):
            table = priv.dp.pivot_table(
                "x", index="g", aggfunc=["count", "median"], keys={"g": KEYS},
                bounds={"x": BOUNDS}, epsilon=1.0,
            )  # fmt: skip
    counts, medians = table.iloc[:, 0], table.iloc[:, 1]
    assert counts["b"] == -1
    assert np.isnan(medians["b"])
    assert medians.drop("b").notna().all()


@pytest.mark.parametrize("how", ["size", "count"])
def test_size_warns_like_count(how):
    # Three runs on a misspelt key gave -2, -49, -66 without a word from size().
    priv = _quiet_protect(pd.DataFrame({"region": ["north"] * 600 + ["south"] * 400}))
    g = priv.dp.groupby("region", keys=["north", "nrth"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
        with capture_noise(priv, value=-2), pytest.warns(pandas_dp.NoiseDominatedWarning) as w:
            counts = getattr(g, how)(epsilon=1.0)
    assert counts.tolist() == [598, -2]
    (warning,) = w
    assert f"1 of 2 released counts and sums of groupby.{how}" in str(warning.message)


def test_size_of_large_groups_does_not_warn():
    priv = _quiet_protect(pd.DataFrame({"region": ["north"] * 600 + ["south"] * 400}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
        warnings.simplefilter("error", pandas_dp.NoiseDominatedWarning)
        with capture_noise(priv, value=0):
            priv.dp.groupby("region", keys=["north", "south"]).size(epsilon=1.0)
            priv.dp.groupby("region", keys=["north", "south"]).agg(n="size", epsilon=1.0)
