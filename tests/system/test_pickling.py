"""Serialisation never forks a budget: same session in-process, refused anywhere else.

A pickle loaded in the process that protected the frame resolves to the live session; one
loaded in a fresh interpreter (or after the session is gone) carries only a dead mark, and a
parquet file keeps only the mark's text. Both are refused with an explanation.
"""

from __future__ import annotations

import gc
import json
import os
import pickle
import subprocess
import sys
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import pandas_dp
from pandas_dp import DPValueError, NotProtectedError


@pytest.fixture
def priv(census: pd.DataFrame, protect_seeded: Callable[..., Any]) -> pd.DataFrame:
    return protect_seeded(census, epsilon=1.0)


@pytest.mark.parametrize(
    "select",
    [lambda p: p, lambda p: p["age"], lambda p: p[p["sex"] == 1]],
    ids=["frame", "series", "filter"],
)
@pytest.mark.parametrize("protocol", [2, pickle.HIGHEST_PROTOCOL])
def test_in_process_pickle_keeps_the_same_session(
    priv: pd.DataFrame, select: Callable, protocol: int
) -> None:
    restored = pickle.loads(pickle.dumps(select(priv), protocol=protocol))
    assert restored.dp.session is priv.dp.session
    restored.dp.count(epsilon=0.5)
    assert priv.dp.session.remaining.epsilon == Fraction(1, 2)


def test_pickle_of_a_dead_session_is_refused(census: pd.DataFrame) -> None:
    payload = pickle.dumps(census.dp.protect(epsilon=1.0))
    gc.collect()  # no frame holds the session any more
    restored = pickle.loads(payload)
    with pytest.raises(NotProtectedError, match="does not live in this process"):
        restored.dp.count(epsilon=0.1)


_CHILD = """
import json, pickle, sys
import pandas_dp
from pandas_dp import DPValueError, NotProtectedError

with open(sys.argv[1], "rb") as f:
    obj = pickle.load(f)
report = {}
for name, call in [
    ("count", lambda: obj.dp.count(epsilon=0.1)),
    ("session", lambda: obj.dp.session),
    ("protect", lambda: obj.dp.protect(epsilon=5.0)),
]:
    try:
        call()
        report[name] = ["released", ""]
    except Exception as exc:
        report[name] = [type(exc).__name__, str(exc)]
print(json.dumps(report))
"""


@pytest.mark.parametrize("select", [lambda p: p, lambda p: p["income"]], ids=["frame", "series"])
def test_pickle_in_a_fresh_process_is_refused(
    priv: pd.DataFrame, tmp_path: Path, select: Callable
) -> None:
    path = tmp_path / "priv.pkl"
    path.write_bytes(pickle.dumps(select(priv)))
    src = str(Path(pandas_dp.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert child.returncode == 0, child.stderr
    report = json.loads(child.stdout)
    for name in ("count", "session"):
        kind, message = report[name]
        assert kind == NotProtectedError.__name__
        assert "another process" in message
        assert "protect" in message
    assert report["protect"][0] == DPValueError.__name__  # the mark still blocks a fresh budget
    assert priv.dp.session.spent.epsilon == 0


def test_parquet_round_trip_is_refused(priv: pd.DataFrame, tmp_path: Path) -> None:
    path = tmp_path / "priv.parquet"
    priv[priv["age"] > 30].to_parquet(path)
    back = pd.read_parquet(path)
    with pytest.raises(NotProtectedError, match="read back from a file"):
        back.dp.count(epsilon=0.1)
    with pytest.raises(NotProtectedError):
        back["income"].dp.sum(bounds=(0, 1), epsilon=0.1)
    with pytest.raises(DPValueError, match="replace=True"):
        back.dp.protect(epsilon=1.0)
    assert priv.dp.session.spent.epsilon == 0


def test_parquet_data_can_be_protected_again_by_the_owner(
    priv: pd.DataFrame, tmp_path: Path
) -> None:
    path = tmp_path / "priv.parquet"
    priv.to_parquet(path)
    fresh = pd.read_parquet(path).dp.protect(epsilon=0.5, replace=True)
    assert fresh.dp.session is not priv.dp.session
    assert fresh.dp.session.total.epsilon == Fraction(1, 2)
