"""Ledger files: resume, refuse a changed budget, hash chain, torn lines, sharing, outputs."""

from __future__ import annotations

import json
import threading
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import pandas_dp  # noqa: F401
from pandas_dp import Estimate
from pandas_dp.accounting.ledger_file import GENESIS, LedgerFile, canonical, read_ledger, sealed
from pandas_dp.api.outputs import output_from_json, output_to_json
from pandas_dp.errors import BudgetExceededError, DPTypeError, LedgerError


@pytest.fixture
def frame() -> pd.DataFrame:
    return pd.DataFrame({"region": ["north", "south"] * 500, "income": range(1000)})


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _rewrite(path: Path, records: list[dict]) -> None:
    path.write_bytes(b"".join(canonical(r) + b"\n" for r in records))


def test_a_new_ledger_starts_with_a_header_and_records_each_charge(frame, tmp_path):
    path = tmp_path / "l.jsonl"
    priv = frame.dp.protect(epsilon=1.0, delta=1e-6, ledger=path)
    priv.dp.count(epsilon=0.25)
    records = _lines(path)
    assert [r["kind"] for r in records] == ["header", "charge"]
    header, charge = records
    assert header["prev"] == GENESIS
    assert header["total"] == {"epsilon": "1", "delta": "1/1000000", "rho": None}
    assert charge["prev"] == header["hash"]
    assert charge["release"]["measurements"][0]["epsilon"] == "1/4"
    assert charge["sequence"] == 1
    assert "pid" in charge["by"]


def test_resuming_restores_the_exact_spent_budget(frame, tmp_path):
    path = tmp_path / "l.jsonl"
    priv = frame.dp.protect(epsilon=1.0, ledger=path)
    priv.dp.count(epsilon=0.3)
    priv.dp.sum("income", bounds=(0, 1000), epsilon=Fraction(1, 7))
    resumed = frame.dp.protect(ledger=path)  # no budget given: adopt the ledger's
    assert resumed.dp.session.total == priv.dp.session.total
    assert resumed.dp.session.spent.epsilon == Fraction(3, 10) + Fraction(1, 7)
    assert len(resumed.dp.session.releases) == 2


def test_a_new_process_cannot_start_a_fresh_budget_on_the_same_ledger(frame, tmp_path):
    path = tmp_path / "l.jsonl"
    frame.dp.protect(epsilon=1.0, ledger=path).dp.count(epsilon=1.0)
    again = frame.dp.protect(epsilon=1.0, ledger=path)  # same budget: resumed, not fresh
    with pytest.raises(BudgetExceededError, match="Nothing was charged"):
        again.dp.count(epsilon=0.01)
    with pytest.raises(LedgerError, match="cannot be changed or restarted"):
        frame.dp.protect(epsilon=2.0, ledger=path)
    with pytest.raises(LedgerError, match="zcdp"):
        frame.dp.protect(epsilon=1.0, delta=1e-6, accounting="zcdp", ledger=path)


def test_resuming_a_missing_ledger_without_a_budget_is_refused(frame, tmp_path):
    with pytest.raises(LedgerError, match="pass epsilon"):
        frame.dp.protect(ledger=tmp_path / "missing.jsonl")
    assert not (tmp_path / "missing.jsonl").exists()


def test_ledger_must_be_a_path(frame):
    with pytest.raises(DPTypeError, match="file path"):
        frame.dp.protect(epsilon=1.0, ledger=3)


def test_a_failed_protect_creates_no_ledger(frame, tmp_path):
    path = tmp_path / "l.jsonl"
    with pytest.raises(KeyError):
        frame.dp.protect(epsilon=1.0, privacy_unit="nope", max_rows_per_unit=2, ledger=path)
    assert not path.exists()


def test_tight_accounting_resumes_to_the_same_guarantee(frame, tmp_path):
    path = tmp_path / "l.jsonl"
    priv = frame.dp.protect(epsilon=2.0, delta=1e-6, accounting="zcdp", ledger=path)
    priv.dp.count(epsilon=0.2, mechanism="gaussian", delta=1e-8)
    for _ in range(3):
        priv.dp.count(epsilon=0.1)
    resumed = frame.dp.protect(ledger=path)
    assert resumed.dp.session.accounting == "zcdp"
    assert resumed.dp.session.spent == priv.dp.session.spent
    assert resumed.dp.session.releases == priv.dp.session.releases


def test_sessions_sharing_a_ledger_see_each_others_charges(frame, tmp_path):
    path = tmp_path / "l.jsonl"
    first = frame.dp.protect(epsilon=1.0, ledger=path)
    second = frame.dp.protect(ledger=path)
    first.dp.count(epsilon=0.6)
    assert second.dp.session.spent.epsilon == Fraction(3, 5)
    with pytest.raises(BudgetExceededError):
        second.dp.count(epsilon=0.5)
    second.dp.count(epsilon=0.4)
    assert [e.sequence for e in first.dp.session.accountant.entries] == [1, 2]


def test_threads_never_overspend_a_ledger(frame, tmp_path):
    path = tmp_path / "l.jsonl"
    priv = frame.dp.protect(epsilon=1.0, ledger=path)
    granted: list[int] = []

    def spend() -> None:
        for _ in range(10):
            try:
                priv.dp.count(epsilon=Fraction(1, 40))
                granted.append(1)
            except BudgetExceededError:
                pass

    threads = [threading.Thread(target=spend) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(granted) == 40
    _, entries = read_ledger(path)
    assert [e.sequence for e in entries] == list(range(1, 41))


@pytest.mark.parametrize("position", [1, 2, 3])
def test_an_edited_line_is_detected(frame, tmp_path, position):
    path = tmp_path / "l.jsonl"
    priv = frame.dp.protect(epsilon=1.0, ledger=path)
    for _ in range(3):
        priv.dp.count(epsilon=0.25)
    records = _lines(path)
    records[position]["release"]["measurements"][0]["epsilon"] = "1/100"  # spend less
    _rewrite(path, records)
    with pytest.raises(LedgerError, match=rf"line {position + 1} .*checksum"):
        read_ledger(path)
    with pytest.raises(LedgerError, match="rewritten"):
        priv.dp.count(epsilon=0.01)  # the live session notices too


def test_a_resealed_edit_breaks_the_chain(frame, tmp_path):
    path = tmp_path / "l.jsonl"
    priv = frame.dp.protect(epsilon=1.0, ledger=path)
    for _ in range(3):
        priv.dp.count(epsilon=0.25)
    records = _lines(path)
    records[1]["release"]["measurements"][0]["epsilon"] = "1/100"
    records[1] = sealed(records[1])  # recompute its own hash: the next line no longer follows
    _rewrite(path, records)
    with pytest.raises(LedgerError, match=r"line 3 .*does not follow"):
        read_ledger(path)


def test_removed_or_reordered_lines_are_detected(frame, tmp_path):
    path = tmp_path / "l.jsonl"
    priv = frame.dp.protect(epsilon=1.0, ledger=path)
    for _ in range(3):
        priv.dp.count(epsilon=0.25)
    records = _lines(path)
    _rewrite(path, [records[0], records[2], records[3]])
    with pytest.raises(LedgerError, match="does not follow"):
        read_ledger(path)
    _rewrite(path, [records[0], records[2], records[1], records[3]])
    with pytest.raises(LedgerError, match="does not follow"):
        read_ledger(path)
    _rewrite(path, [records[1], records[0]])
    with pytest.raises(LedgerError):
        read_ledger(path)


def test_a_shrunk_ledger_is_refused_by_a_live_session(frame, tmp_path):
    path = tmp_path / "l.jsonl"
    priv = frame.dp.protect(epsilon=1.0, ledger=path)
    priv.dp.count(epsilon=0.25)
    priv.dp.count(epsilon=0.25)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]))
    with pytest.raises(LedgerError, match="shrank"):
        priv.dp.count(epsilon=0.25)


def test_truncation_is_caught_by_the_head_hash(frame, tmp_path):
    path = tmp_path / "l.jsonl"
    priv = frame.dp.protect(epsilon=1.0, ledger=path)
    priv.dp.count(epsilon=0.25)
    head = read_ledger(path)[0].head
    priv.dp.count(epsilon=0.25)
    assert read_ledger(path)[0].head != head
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]))
    assert read_ledger(path)[0].head == head  # a valid shorter chain: only the anchor tells


def test_a_torn_partial_line_is_quarantined_and_logged(frame, tmp_path):
    path = tmp_path / "l.jsonl"
    priv = frame.dp.protect(epsilon=1.0, ledger=path)
    priv.dp.count(epsilon=0.25)
    with open(path, "ab") as handle:
        handle.write(b'{"by":"someone","hash":"12')  # a write cut short by a crash
    resumed = frame.dp.protect(ledger=path)
    assert resumed.dp.session.spent.epsilon == Fraction(1, 4)
    assert (tmp_path / "l.jsonl.torn").read_bytes() == b'{"by":"someone","hash":"12\n'
    records = _lines(path)
    assert [r["kind"] for r in records] == ["header", "charge", "repair"]
    assert records[2]["quarantined_bytes"] == 26
    resumed.dp.count(epsilon=0.25)  # the repaired ledger is usable
    assert read_ledger(path)[0].total is not None


def test_a_torn_but_complete_line_is_kept_conservatively(frame, tmp_path):
    path = tmp_path / "l.jsonl"
    priv = frame.dp.protect(epsilon=1.0, ledger=path)
    priv.dp.count(epsilon=0.25)
    priv.dp.count(epsilon=0.5)
    path.write_bytes(path.read_bytes()[:-1])  # the newline never reached the disk
    resumed = frame.dp.protect(ledger=path)
    assert resumed.dp.session.spent.epsilon == Fraction(3, 4)  # counted, not dropped
    assert path.read_bytes().endswith(b"\n")
    assert not (tmp_path / "l.jsonl.torn").exists()


def test_a_damaged_complete_line_is_not_mistaken_for_a_torn_one(frame, tmp_path):
    path = tmp_path / "l.jsonl"
    priv = frame.dp.protect(epsilon=1.0, ledger=path)
    priv.dp.count(epsilon=0.25)
    path.write_bytes(path.read_bytes()[:-40] + b"\n")  # cut inside, but newline-terminated
    with pytest.raises(LedgerError, match=r"line 2 .*not valid JSON"):
        frame.dp.protect(ledger=path)


def test_a_file_that_is_not_a_ledger_is_refused(frame, tmp_path):
    path = tmp_path / "notes.jsonl"
    path.write_text('{"hello": "world"}\n')
    with pytest.raises(LedgerError):
        frame.dp.protect(epsilon=1.0, ledger=path)
    other = sealed({"kind": "header", "format": "someone-else/9", "prev": GENESIS})
    path.write_bytes(canonical(other) + b"\n")
    with pytest.raises(LedgerError, match="not a pandas-dp ledger"):
        frame.dp.protect(epsilon=1.0, ledger=path)


def test_a_refused_release_writes_nothing(frame, tmp_path):
    path = tmp_path / "l.jsonl"
    priv = frame.dp.protect(epsilon=1.0, ledger=path)
    before = path.read_bytes()
    with pytest.raises(BudgetExceededError):
        priv.dp.count(epsilon=2.0)
    with pytest.raises(KeyError):
        priv.dp.sum("missing", bounds=(0, 1), epsilon=0.1)
    assert path.read_bytes() == before


def test_the_ledger_keeps_released_outputs_and_nothing_else_from_the_data(tmp_path):
    secret = pd.DataFrame({"code": ["SECRET-7731"] * 10 + ["x"] * 10, "v": [123457.0] * 20})
    path = tmp_path / "l.jsonl"
    priv = secret.dp.protect(epsilon=1.0, ledger=path)
    counts = priv.dp.groupby("code", keys=["x", "y"]).count(epsilon=0.5)
    total = priv.dp.sum("v", bounds=(0, 10), epsilon=0.25)
    text = path.read_text()
    assert "SECRET-7731" not in text
    assert "123457" not in text
    _, entries = read_ledger(path)
    assert output_from_json(entries[0].output).tolist() == counts.tolist()
    assert output_from_json(entries[1].output) == total


@pytest.mark.parametrize(
    "value",
    [
        7,
        -2.5,
        [1, "a"],
        Estimate(1.5, 0.5, 2.5, 0.95),
        pd.Series([1, 2], index=pd.Index(["a", "b"], name="k"), name="count"),
        pd.DataFrame(
            {"n": [1, 2], "m": [0.5, float("nan")]},
            index=pd.MultiIndex.from_tuples([("a", 1), ("b", 2)], names=["x", "y"]),
        ),
    ],
)
def test_outputs_round_trip_through_json(value):
    data = json.loads(json.dumps(output_to_json(value)))
    back = output_from_json(data)
    if isinstance(value, pd.Series | pd.DataFrame):
        assert type(back) is type(value)
        pd.testing.assert_index_equal(back.index, value.index)
        expected = value.to_numpy(dtype=float).ravel().tolist()
        assert back.to_numpy(dtype=float).ravel().tolist() == pytest.approx(expected, nan_ok=True)
    else:
        assert back == value


def test_repr_names_the_file(tmp_path):
    ledger = LedgerFile(tmp_path / "l.jsonl")
    assert "l.jsonl" in repr(ledger)


def test_each_mechanism_has_its_event_class_and_kind_tag(tmp_path) -> None:
    """One frozen event class per mechanism; the ledger JSON carries its kind (issue 14)."""
    from pandas_dp.accounting.events import (
        GaussianMeasurement,
        LaplaceMeasurement,
        SelectionMeasurement,
    )
    from pandas_dp.accounting.records import measurement_from_json, measurement_to_json

    frame = pd.DataFrame({"x": np.linspace(0, 1, 50), "g": [0, 1] * 25})
    priv = frame.dp.protect(epsilon=10.0, delta=1e-6, ledger=str(tmp_path / "l.jsonl"))
    priv.dp.count(epsilon=1.0)
    priv.dp.count(epsilon=1.0, mechanism="gaussian")
    priv.dp.median("x", bounds=(0, 1), epsilon=1.0)
    kinds = [type(r.measurements[0]) for r in priv.dp.session.releases]
    assert kinds == [LaplaceMeasurement, GaussianMeasurement, SelectionMeasurement]
    lines = [json.loads(line) for line in (tmp_path / "l.jsonl").read_text().splitlines()]
    tags = [m["kind"] for line in lines[1:] for m in line["release"]["measurements"]]
    assert tags == ["laplace", "gaussian", "selection"]
    for release in priv.dp.session.releases:  # the JSON round trip keeps the class
        (m,) = release.measurements
        assert measurement_from_json(measurement_to_json(m)) == m
        old = {k: v for k, v in measurement_to_json(m).items() if k != "kind"}
        assert type(measurement_from_json(old)) is type(m)  # files written before the tag
    with pytest.raises(ValueError, match="Laplace"):
        LaplaceMeasurement("x", "exponential", 1, 1, 1)
