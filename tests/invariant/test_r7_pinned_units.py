"""R7 (issue 13): rewriting the unit column cannot defeat the caps.

The ids are pinned at ``protect`` and looked up by index label at every release, so
``concat([t.assign(pid=t.pid * R + j) for j in range(R)])`` no longer turns one person into
R people under ``max_rows_per_unit=1``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

import pandas_dp
from pandas_dp import DPValueError, NotProtectedError
from pandas_dp.testing import capture_noise

PEOPLE = 50


def protected() -> pd.DataFrame:
    frame = pd.DataFrame({"pid": np.arange(PEOPLE), "x": 1.0, "g": ["a", "b"] * (PEOPLE // 2)})
    return frame.dp.protect(epsilon=100.0, privacy_unit="pid", max_rows_per_unit=1)


def exact(priv: Any, release: Callable[[Any], Any]) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
        with capture_noise(priv):
            return release(priv)


REWRITES = {
    "R copies with new ids": lambda t: pd.concat([t.assign(pid=t.pid * 10 + j) for j in range(10)]),
    "assign": lambda t: t.assign(pid=np.arange(len(t)) + 1000),
    "where": lambda t: t.assign(pid=t["pid"].where(t["x"] > 5, -7)),
    "replace": lambda t: t.assign(pid=t["pid"].replace({0: 1})),
    "column dropped": lambda t: t[["x", "g"]],
    "copies without the column": lambda t: pd.concat([t[["x", "g"]]] * 5),
}

RELEASES = {
    "count": lambda p: p.dp.count(epsilon=1.0),
    "sum": lambda p: p.dp.sum("x", bounds=(0, 1), epsilon=1.0),
    "group count": lambda p: int(p.dp.groupby("g", keys=["a", "b"]).count(epsilon=1.0).sum()),
    "series count": lambda p: p["x"].dp.count(epsilon=1.0),
}


@pytest.mark.parametrize("rewrite", REWRITES.values(), ids=REWRITES.keys())
@pytest.mark.parametrize("release", RELEASES.values(), ids=RELEASES.keys())
def test_each_person_still_counts_once(rewrite: Callable, release: Callable) -> None:
    priv = protected()
    derived = rewrite(priv)
    assert exact(derived, release) == PEOPLE  # one row per person, however many copies


def test_rows_whose_labels_were_not_protected_belong_to_no_one() -> None:
    """Dropped like rows without an id: a refusal would read labels, which can come from
    values (the one-bit leak of the row guard)."""
    priv = protected()
    relabelled = priv.set_axis(np.where(priv["x"] > 5, -1, np.arange(PEOPLE) + 10_000))
    assert exact(relabelled, lambda p: p.dp.count(epsilon=1.0)) == 0
    half = pd.concat([priv.iloc[:10], priv.iloc[10:].set_axis(np.arange(40) + 10_000)])
    assert exact(half, lambda p: p.dp.count(epsilon=1.0)) == 10


def test_protect_under_a_unit_needs_unique_labels() -> None:
    frame = pd.DataFrame({"pid": [1, 2], "x": [1.0, 2.0]}, index=[0, 0])
    with pytest.raises(DPValueError, match="repeated labels"):
        frame.dp.protect(epsilon=1.0, privacy_unit="pid", max_rows_per_unit=1)


def test_missing_ids_belong_to_no_one() -> None:
    frame = pd.DataFrame({"pid": [1.0, np.nan, 2.0, 2.0], "x": 1.0})
    priv = frame.dp.protect(epsilon=10.0, privacy_unit="pid", max_rows_per_unit=1)
    assert exact(priv, lambda p: p.dp.count(epsilon=1.0)) == 2


DASK_REWRITES = {
    "assign": lambda t: t.assign(pid=t.pid * 10),
    "copies with new ids": lambda t: __import__("dask.dataframe").dataframe.concat(
        [t, t.assign(pid=t.pid + 1000)]
    ),
    "rename onto the id": lambda t: t.rename(columns={"pid": "old", "x": "pid"}),
}


@pytest.mark.parametrize("rewrite", DASK_REWRITES.values(), ids=DASK_REWRITES.keys())
def test_dask_refuses_a_rewritten_unit_column(rewrite: Callable, charges_nothing: Any) -> None:
    import dask.dataframe as dd

    frame = pd.DataFrame({"pid": np.arange(PEOPLE), "x": 1.0})
    priv = dd.from_pandas(frame, npartitions=3).dp.protect(
        epsilon=10.0, privacy_unit="pid", max_rows_per_unit=1
    )
    with charges_nothing(priv), pytest.raises(NotProtectedError, match="'pid'"):
        rewrite(priv).dp.count(epsilon=1.0)
    assert exact(priv[priv.x > 0].assign(y=priv.x), lambda p: p.dp.count(epsilon=1.0)) == PEOPLE
