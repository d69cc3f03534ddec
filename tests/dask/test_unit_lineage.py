"""R7 on Dask: a collection whose privacy-unit column may have been rewritten is refused.

Rows are not in memory, so ids cannot be pinned by label; each release traces the
collection's expression graph back to ``protect`` and accepts only steps that leave the unit
column untouched (:mod:`pandas_dp.engines.dask.lineage`). The decision reads code, not data.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import pandas_dp
from pandas_dp import NotProtectedError
from pandas_dp.testing import capture_noise

PEOPLE = 30


@pytest.fixture(autouse=True)
def threads() -> Any:
    with dask.config.set(scheduler="threads"):
        yield


@pytest.fixture
def priv() -> Any:
    pid = np.arange(PEOPLE)
    frame = pd.DataFrame({"pid": pid, "x": pid % 5 * 1.0, "tag": np.where(pid % 2, "a", "b")})
    raw = dd.from_pandas(frame, npartitions=3)
    return raw.dp.protect(epsilon=1000.0, privacy_unit="pid", max_rows_per_unit=1)


def exact_count(frame: Any, priv: Any) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
        with capture_noise(priv):
            return int(frame.dp.count(epsilon=1))


REWRITTEN: dict[str, Callable[[Any], Any]] = {
    "concat-assign": lambda p: dd.concat([p.assign(pid=p.pid * 7 + j) for j in range(7)]),
    "assign": lambda p: p.assign(pid=p.pid + 1),
    "where": lambda p: p.where(p.x > 100, 0),
    "mask": lambda p: p.mask(p.x > 100, 0),
    "replace": lambda p: p.replace({"pid": {1: 2}}),
    "fillna-all": lambda p: p.fillna(0),
    "fillna-pid": lambda p: p.fillna({"pid": 0}),
    "astype-pid": lambda p: p.astype({"pid": "float64"}),
    "rename-to-pid": lambda p: p.drop(columns="pid").rename(columns={"x": "pid"}),
    "map_partitions": lambda p: p.map_partitions(lambda part: part.assign(pid=0)),
    "persist-after-assign": lambda p: p.assign(pid=p.pid * 2).persist(),
}


@pytest.mark.parametrize("derive", REWRITTEN.values(), ids=REWRITTEN.keys())
def test_a_possibly_rewritten_unit_column_is_refused(priv, derive, charges_nothing) -> None:
    derived = derive(priv)
    assert derived.dp.session is priv.dp.session
    with charges_nothing(priv), pytest.raises(NotProtectedError, match="'pid'"):
        derived.dp.count(epsilon=1)


KEPT: dict[str, Callable[[Any], Any]] = {
    "filter": lambda p: p[p.x >= 0],
    "assign-other": lambda p: p.assign(y=p.x * 2),
    "astype-other": lambda p: p.astype({"x": "float32"}),
    "fillna-other": lambda p: p.fillna({"x": 0.0}),
    "rename-other": lambda p: p.rename(columns={"x": "z"}),
    "loc": lambda p: p.loc[p.x >= 0, ["pid", "x"]],
    "persist": lambda p: p.persist(),
    "optimize": lambda p: p.optimize(),
}


@pytest.mark.parametrize("derive", KEPT.values(), ids=KEPT.keys())
def test_steps_that_keep_the_unit_column_are_accepted(priv, derive) -> None:
    assert exact_count(derive(priv), priv) == PEOPLE


def test_copies_of_the_protected_collection_are_capped(priv) -> None:
    assert exact_count(dd.concat([priv, priv[priv.x >= 0], priv]), priv) == PEOPLE


def test_a_collection_of_another_session_in_a_concat_is_refused(priv) -> None:
    second = priv.dp.protect(epsilon=1.0, privacy_unit="pid", max_rows_per_unit=1, replace=True)
    mixed = dd.concat([priv, second.assign(pid=second.pid + 1000)])
    with pytest.raises(NotProtectedError):
        mixed.dp.count(epsilon=1)
