"""Issue 24: distinct counts and describe's ``count`` row are never negative; ``nunique`` in a
release file reads any hashable column, without bounds, like the Python API.

1. A release file's ``nunique`` of a text column was refused until bounds were added, then
   the column was converted to numbers (every word missing) and released 5 and 4 where the
   truth is 9. It now takes the column as it is, through the API's own measurement.
2. A noisy distinct count could come out negative (``priv[cols].dp.nunique(...)`` gave -2,
   ``describe()`` a ``count`` of -4.0). Both are now clamped at 0 (free post-processing of the
   noisy integer, intervals clamped alike), in pandas' dtypes.

The ``noise`` fixture replaces the noise by a chosen value: a draw of -10**6 drives every
count far below 0, deterministically.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import pandas_dp.publish.runner as spec_runner
from pandas_dp.accounting.ledger_file import read_ledger
from pandas_dp.publish import load_spec, plan_release, run_release

# Counts driven far below 0 are noise-dominated by design; that warning is not under test.
pytestmark = pytest.mark.filterwarnings("ignore::pandas_dp.NoiseDominatedWarning")

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota"]
HUGE = -(10**6)  # a noise draw far below every true count


def whole_and_nonnegative(values: Any) -> bool:
    array = np.asarray(values, dtype=np.float64)
    return bool(np.all(array >= 0) and np.all(array == np.floor(array)))


@pytest.fixture
def frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "word": (WORDS * 4)[:30],
            "x": np.linspace(0.0, 10.0, 30),
            "g": ["N", "S"] * 15,
            "mixed": [1, "1", (1, 2), 2.5, None, "a"] * 5,  # any hashable values
        }
    )


@pytest.fixture
def priv(frame: pd.DataFrame, protect_seeded: Callable[..., Any]) -> pd.DataFrame:
    return protect_seeded(frame, epsilon=100.0)


# --- 2. clamped at 0, integer, in pandas' dtypes -------------------------------------------------


def test_series_nunique_is_clamped_to_an_integer_zero(priv: pd.DataFrame, noise: Callable) -> None:
    with noise(priv, HUGE):
        value = priv["word"].dp.nunique(epsilon=1.0)
        estimate = priv["word"].dp.nunique(epsilon=1.0, ci=0.95)
    assert value == 0
    assert isinstance(value, int | np.integer)
    assert estimate.value == 0
    assert estimate.lower == 0
    assert estimate.upper == 0


def test_frame_nunique_is_clamped_and_keeps_pandas_dtype(
    priv: pd.DataFrame, frame: pd.DataFrame, noise: Callable
) -> None:
    columns = ["word", "x", "mixed"]
    with noise(priv, HUGE):
        counts = priv[columns].dp.nunique(epsilon=1.0)
    expected = frame[columns].nunique()
    assert counts.index.equals(expected.index)
    assert counts.dtype == expected.dtype == np.int64
    assert counts.tolist() == [0, 0, 0]


def test_frame_nunique_with_intervals_is_clamped_and_consistent(
    priv: pd.DataFrame, noise: Callable
) -> None:
    with noise(priv, HUGE):
        table = priv[["word", "mixed"]].dp.nunique(epsilon=1.0, ci=0.95)
    assert list(table.columns) == ["nunique", "nunique_lower", "nunique_upper"]
    assert table["nunique"].dtype == np.int64
    assert table["nunique"].tolist() == [0, 0]
    for column in table.columns:
        assert whole_and_nonnegative(table[column])
    assert (table["nunique_lower"] <= table["nunique"]).all()
    assert (table["nunique"] <= table["nunique_upper"]).all()


def test_frame_nunique_without_noise_is_exact(
    priv: pd.DataFrame, frame: pd.DataFrame, noise: Callable
) -> None:
    with noise(priv, 0):
        counts = priv[["word", "mixed"]].dp.nunique(epsilon=1.0)
    assert counts["word"] == 9
    assert counts["mixed"] == 5  # 1 and "1" differ, (1, 2) is a value, None is missing
    assert counts["word"] == frame["word"].nunique()


def test_grouped_nunique_is_clamped(priv: pd.DataFrame, noise: Callable) -> None:
    grouped = priv.dp.groupby("g", keys=["N", "S"])
    with noise(priv, HUGE):
        series = grouped["word"].nunique(epsilon=1.0)
        table = grouped[["word", "mixed"]].nunique(epsilon=1.0)
        with_ci = grouped["word"].nunique(epsilon=1.0, ci=0.95)
    assert series.dtype == np.int64
    assert series.tolist() == [0, 0]
    assert (table.dtypes == np.int64).all()
    assert (table.to_numpy() == 0).all()
    assert whole_and_nonnegative(with_ci.to_numpy())


def test_agg_nunique_is_clamped(priv: pd.DataFrame, noise: Callable) -> None:
    with noise(priv, HUGE):
        flat = priv.dp.agg(n=("word", "nunique"), epsilon=1.0, ci=0.95)
        grouped = priv.dp.groupby("g", keys=["N", "S"]).agg(
            n=("word", "nunique"), epsilon=1.0, ci=0.95
        )
    for table in (flat, grouped):
        assert table["n"].dtype == np.int64
        assert (table["n"] == 0).all()
        assert whole_and_nonnegative(table[["n_lower", "n_upper"]])


def test_describe_count_row_is_a_nonnegative_whole_float(
    priv: pd.DataFrame, frame: pd.DataFrame, noise: Callable
) -> None:
    with noise(priv, HUGE):
        table = priv.dp.describe(bounds={"x": (0, 10)}, epsilon=1.0)
    expected = frame[["x"]].describe()
    assert table.dtypes.to_dict() == {"x": np.float64} == expected.dtypes.to_dict()
    assert table.loc["count", "x"] == 0.0


def test_grouped_describe_count_is_a_nonnegative_whole_number(
    priv: pd.DataFrame, noise: Callable
) -> None:
    grouped = priv.dp.groupby("g", keys=["N", "S"])
    with noise(priv, HUGE):
        one = grouped["x"].describe(bounds=(0, 10), epsilon=1.0)
    assert one["count"].tolist() == [0, 0]
    assert whole_and_nonnegative(one["count"])


def test_describe_count_is_unchanged_when_positive(priv: pd.DataFrame, noise: Callable) -> None:
    with noise(priv, -3):
        table = priv.dp.describe(bounds={"x": (0, 10)}, epsilon=1.0)
        counts = priv[["word"]].dp.nunique(epsilon=1.0)
    assert table.loc["count", "x"] == 27.0
    assert counts["word"] == 6


# --- 1. nunique in a release file ----------------------------------------------------------------

SPEC = """\
[data]
path = "people.csv"

[privacy]
epsilon = 1.0

[[query]]
name = "overall"
aggs = { words = ["word", "nunique"], n = "count" }
epsilon = 0.25

[[query]]
name = "by_region"
groupby = ["g"]
keys = ["N", "S"]
aggs = { words = ["word", "nunique"] }
epsilon = 0.25
"""


def release(
    folder: Path, frame: pd.DataFrame, value: int, noise: Callable,
    monkeypatch: pytest.MonkeyPatch,
) -> dict[str, pd.DataFrame]:  # fmt: skip
    """Run ``SPEC`` on ``frame`` (written as CSV) with every noise draw equal to ``value``."""
    frame.to_csv(folder / "people.csv", index=False)
    (folder / "release.toml").write_text(SPEC)
    original = spec_runner._call

    def fixed_noise(target: pd.DataFrame, query: Any, previewing: bool) -> Any:
        if previewing:
            return original(target, query, previewing)
        with noise(target, value):
            return original(target, query, previewing)

    monkeypatch.setattr(spec_runner, "_call", fixed_noise)
    outcome = run_release(load_spec(folder / "release.toml"), folder / "out", charts=False)
    return outcome.outputs


def test_a_release_file_counts_distinct_words_without_bounds(
    tmp_path: Path, frame: pd.DataFrame, noise: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = load_spec_text(tmp_path, frame)  # valid without bounds
    assert spec.queries[0].bounds == {}
    assert plan_release(spec).fits  # planned on an empty frame: no bounds needed either
    outputs = release(tmp_path, frame, 0, noise, monkeypatch)
    assert outputs["overall"]["words"].tolist() == [9]
    assert outputs["overall"]["n"].tolist() == [30]
    expected = frame.groupby("g")["word"].nunique()
    assert outputs["by_region"]["words"].tolist() == expected.tolist()


def test_a_release_file_uses_the_python_measurement(
    tmp_path: Path, frame: pd.DataFrame, noise: Callable, monkeypatch: pytest.MonkeyPatch,
    protect_seeded: Callable[..., Any],
) -> None:  # fmt: skip
    release(tmp_path, frame, 0, noise, monkeypatch)
    _, entries = read_ledger(tmp_path / "out" / "ledger.jsonl")
    from_file = next(e.release for e in entries if e.release.tag.startswith("overall@"))
    priv = protect_seeded(frame, epsilon=1.0)
    with noise(priv, 0):
        assert priv.dp.agg(words=("word", "nunique"), n="count", epsilon=0.25)["words"][0] == 9
    from_python = priv.dp.session.releases[-1]
    assert from_file.measurements == from_python.measurements


def test_a_release_file_clamps_distinct_counts(
    tmp_path: Path, frame: pd.DataFrame, noise: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    outputs = release(tmp_path, frame, HUGE, noise, monkeypatch)
    assert outputs["overall"]["words"].tolist() == [0]
    assert outputs["by_region"]["words"].tolist() == [0, 0]
    for table in outputs.values():
        words = [c for c in table.columns if str(c).startswith("words")]
        assert whole_and_nonnegative(table[words])


def load_spec_text(folder: Path, frame: pd.DataFrame) -> Any:
    frame.head(0).to_csv(folder / "people.csv", index=False)  # the header only
    (folder / "release.toml").write_text(SPEC)
    return load_spec(folder / "release.toml")
