"""Test-mode releases are marked in the ledger (issue 13).

``capture_noise`` used to swap a live session's private samplers and leave ordinary-looking
releases behind; seeded sessions looked ordinary too. Every release now records where its
noise came from, in memory and in ledger files.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import pytest

import pandas_dp
from pandas_dp.accounting.ledger_file import LedgerFile
from pandas_dp.testing import capture_noise

FRAME = pd.DataFrame({"x": [1.0, 2.0, 3.0]})


def test_private_seeded_and_captured_releases_are_told_apart(tmp_path: Path) -> None:
    ledger = tmp_path / "spend.ledger.jsonl"
    priv = FRAME.dp.protect(epsilon=1.0, ledger=str(ledger))
    priv.dp.count(epsilon=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
        with capture_noise(priv) as calls:
            priv.dp.count(epsilon=0.1)
    priv.dp.count(epsilon=0.1)  # the capture ended: private again
    assert len(calls) == 1
    assert priv.dp.session.ledger["randomness"].tolist() == ["os", "captured", "os"]
    reopened = LedgerFile(ledger)
    entries = reopened.open(None, "basic")
    assert [e.release.randomness for e in entries] == ["os", "captured", "os"]


def test_seeded_sessions_mark_their_releases() -> None:
    with pytest.warns(pandas_dp.PrivacyLeakWarning, match="seeded"):
        priv = FRAME.dp.protect(epsilon=1.0, rng=3)
    priv.dp.sum("x", bounds=(0, 5), epsilon=0.5)
    assert priv.dp.session.noise_source.kind == "seeded"
    assert [r.randomness for r in priv.dp.session.releases] == ["seeded"]


def test_the_release_record_refuses_an_unknown_mark() -> None:
    from pandas_dp.accounting.events import Measurement, Release

    measurement = Measurement("count", "discrete_laplace", 1, 1, 1)
    with pytest.raises(ValueError, match="randomness"):
        Release("count", (), (measurement,), randomness="lucky")
