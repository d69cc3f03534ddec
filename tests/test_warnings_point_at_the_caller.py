"""Every warning pandas-dp issues points at the user's line (issue 26, friction 3).

Before, a warning named a file inside the library (``…/api/accessors/series.py:141:
NoiseDominatedWarning``) or, for a seed, a line that depended on the path that led to it.
Now each one is attributed to the first frame outside pandas-dp, whatever the path: a
DataFrame, a Series, a group-by, a context manager, an import hook.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import pandas_dp
from pandas_dp.optional import when_imported
from pandas_dp.testing import capture_noise

HERE = __file__


def caught(action: Callable[[], Any], category: type[Warning]) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        action()
    found = [w for w in seen if issubclass(w.category, category)]
    assert found, f"no {category.__name__} was issued"
    return found


def tiny() -> pd.DataFrame:
    # The seed is one whose noise makes every release below noise-dominated (with others,
    # the mean's noisy count can fall below one: a NaN mean, which is not flagged).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
        return pd.DataFrame({"g": ["a", "b", "a"], "x": [1.0, 2.0, 3.0]}).dp.protect(
            epsilon=10.0, rng=4
        )


DOMINATED = {
    "frame count": lambda p: p.dp.count(epsilon=0.01),
    "frame mean": lambda p: p.dp.mean("x", bounds=(0, 100), epsilon=0.01),
    "series sum": lambda p: p["x"].dp.sum(bounds=(0, 100), epsilon=0.01),
    "groupby count": lambda p: p.dp.groupby("g", keys=["a", "b"]).count(epsilon=0.01),
    "groupby agg": lambda p: p.dp.groupby("g", keys=["a", "b"]).agg(
        m=("x", "mean"), bounds={"x": (0, 100)}, epsilon=0.01
    ),
    "selected column": lambda p: p.dp.groupby("g", keys=["a", "b"])["x"].sum(
        bounds=(0, 100), epsilon=0.01
    ),
    "value_counts": lambda p: p["g"].dp.value_counts(["a", "b"], epsilon=0.01),
}


@pytest.mark.parametrize("call", list(DOMINATED))
def test_noise_dominated_warnings_point_here(call: str) -> None:
    priv = tiny()
    for warning in caught(lambda: DOMINATED[call](priv), pandas_dp.NoiseDominatedWarning):
        assert warning.filename == HERE


SEEDED = {
    "DataFrame.dp.protect": lambda: pd.DataFrame({"x": [1.0]}).dp.protect(epsilon=1, rng=1),
    "Series.dp.protect": lambda: pd.Series([1.0], name="x").dp.protect(epsilon=1, rng=1),
}


@pytest.mark.parametrize("call", list(SEEDED))
def test_a_seed_warns_at_the_protect_line(call: str) -> None:
    (warning,) = caught(SEEDED[call], pandas_dp.PrivacyLeakWarning)
    assert warning.filename == HERE


def test_capture_noise_warns_at_the_with_line() -> None:
    priv = tiny()

    def use() -> None:
        with capture_noise(priv):
            priv.dp.count(epsilon=1.0)

    (warning,) = caught(use, pandas_dp.PrivacyLeakWarning)
    assert warning.filename == HERE


def test_a_failing_import_hook_warns_at_the_users_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "hooked_lib_for_test.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    def broken(module: Any) -> None:
        raise RuntimeError("no hook today")

    when_imported("hooked_lib_for_test", broken)

    def do_import() -> None:
        import hooked_lib_for_test  # noqa: F401

    try:
        (warning,) = caught(do_import, RuntimeWarning)
    finally:
        sys.modules.pop("hooked_lib_for_test", None)
    assert "could not hook into hooked_lib_for_test" in str(warning.message)
    assert warning.filename == HERE
