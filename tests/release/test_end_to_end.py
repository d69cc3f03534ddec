"""A release spec end to end: plan, release, re-run, recover, force, edit, refuse, fail.

The data are generated (every person has at most ``max_rows_per_unit`` rows, so nothing is
dropped and the truth is known). The noise is real, so values are checked against the truth
with tolerances derived from the noise scales the ledger records: a discrete Laplace draw of
scale ``b`` exceeds ``b ln(2/p)`` in size with probability below ``p``; with ``p = 1e-9``
these tests fail by chance about once in a hundred million runs.
"""

from __future__ import annotations

import base64
import json
import math
import re
import shutil
from fractions import Fraction
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from pandas_dp.accounting.events import LedgerEntry, Measurement
from pandas_dp.accounting.ledger_file import read_ledger
from pandas_dp.budget import Budget
from pandas_dp.cli import main
from pandas_dp.errors import BudgetExceededError
from pandas_dp.measures.grids import quantile_candidates
from pandas_dp.mechanisms.quantile import DEFAULT_CELLS
from pandas_dp.publish import load_spec, plan_release, run_release
from pandas_dp.publish import runner as spec_runner

P = 1e-9
KEYS = ["west", "north", "south", "east"]
INCOME = (0.0, 200_000.0)
AGE = (0.0, 100.0)
NAMES = ["by_region", "overall", "seniors"]
SPEC = """\
[data]
path = "{data}"

[privacy]
epsilon = {budget}
delta = 1e-6
privacy_unit = "person_id"
max_rows_per_unit = 2

[release]
title = "People, {budget}"
formats = {formats}

[[query]]
name = "by_region"
description = "Head count and mean income by region"
groupby = ["region"]
keys = ["west", "north", "south", "east"]
aggs = {{ n = "count", avg_income = ["income", "mean"] }}
bounds = {{ income = [0, 200000] }}
epsilon = {eps}

[[query]]
name = "overall"
aggs = {{ n = "count", total_income = ["income", "sum"], median_age = ["age", "median"] }}
bounds = {{ income = [0, 200000], age = [0, 100] }}
epsilon = 0.2

[[query]]
name = "seniors"
where = "age >= 65"
groupby = ["sex"]
keys = [1, 0]
aggs = {{ n = "count" }}
epsilon = 0.1
"""


def read_released(path: Path) -> pd.DataFrame:
    """Read a released CSV back exactly.

    pandas 2's default parser may miss a float's last digit; pandas 3 reads exactly by default
    and deprecates the option.
    """
    if int(pd.__version__.split(".")[0]) < 3:
        return pd.read_csv(path, float_precision="round_trip")
    return pd.read_csv(path)


@pytest.fixture(scope="module")
def people(tmp_path_factory: pytest.TempPathFactory) -> tuple[pd.DataFrame, Path]:
    """40,000 people with one or two rows each, as CSV and Parquet; returns (frame, folder)."""
    rng = np.random.default_rng(20240607)
    ids = np.repeat(np.arange(40_000), rng.integers(1, 3, 40_000))
    rows = len(ids)
    frame = pd.DataFrame(
        {
            "person_id": ids,
            "region": rng.choice(KEYS, rows),
            "sex": rng.integers(0, 2, rows),
            "income": rng.uniform(0, 150_000, rows),
            "age": rng.uniform(18, 90, rows),
        }
    )
    folder = tmp_path_factory.mktemp("people")
    frame.to_csv(folder / "people.csv", index=False)
    frame.to_parquet(folder / "people.parquet", index=False)
    return frame, folder


def write_spec(
    folder: Path, data: Path, *, budget: float = 2.0, eps: float = 0.5, parquet: bool = False
) -> Path:
    formats = '["csv", "parquet"]' if parquet else '["csv"]'
    path = folder / "release.toml"
    if data.parent != folder:  # a spec names only files in its own folder
        shutil.copy(data, folder / data.name)
    path.write_text(SPEC.format(data=data.name, budget=budget, eps=eps, formats=formats))
    return path


def entries_of(out: Path) -> list[LedgerEntry]:
    return read_ledger(out / "ledger.jsonl")[1]


def snapshot(out: Path) -> dict[str, bytes]:
    """Every file of a release folder but the report (which records when it was made)."""
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.name != "report.html"}


def measurements(entry: LedgerEntry) -> dict[str, Measurement]:
    return {m.label: m for m in entry.release.measurements}


def laplace_bound(m: Measurement) -> float:
    """|noise| of a discrete Laplace measurement stays below this with probability 1 - P."""
    assert m.mechanism == "discrete_laplace"
    return float(m.scale) * 2.0**m.exponent * math.log(2 / P)


def sum_bound(m: Measurement, rows: int) -> float:
    """Noise plus rounding each of ``rows`` values to the sum's lattice."""
    return laplace_bound(m) + rows * 2.0**m.exponent


def mean_bound(total: Measurement, count: Measurement, rows: int, width: float) -> float:
    """|c + (S+e)/(N+f) - (c + S/N)| <= (|e| + |S/N| |f|) / (N - |f|), and |S/N| <= width."""
    noise_count = laplace_bound(count)
    assert rows > noise_count
    return (sum_bound(total, rows) + width * noise_count) / (rows - noise_count)


def median_candidates(bounds: tuple[float, float]) -> np.ndarray:
    """The median's candidates: the grid's edges and the round values (numbers)."""
    return quantile_candidates(bounds[0], bounds[1], DEFAULT_CELLS, "number")


def median_excess(values: np.ndarray, released: float, bounds: tuple[float, float]) -> float:
    """How far the released candidate's score ``max(#{x < c} - n/2, n/2 - #{x <= c})`` is
    above the best candidate's."""
    candidates = median_candidates(bounds)
    ordered, half = np.sort(values), len(values) / 2
    scores = np.maximum(
        np.searchsorted(ordered, candidates, side="left") - half,
        half - np.searchsorted(ordered, candidates, side="right"),
    )
    index = int(np.argmin(np.abs(candidates - released)))
    assert released == pytest.approx(candidates[index])  # the median is a candidate
    return float(scores[index] - scores.min())


def check_by_region(table: pd.DataFrame, entry: LedgerEntry, data: pd.DataFrame) -> None:
    assert list(table.columns) == [
        "region", "n", "n_lower", "n_upper", "avg_income", "avg_income_lower", "avg_income_upper",
    ]  # fmt: skip
    assert list(table["region"]) == KEYS  # the spec's keys, in the spec's order
    parts = measurements(entry)
    for row in table.itertuples(index=False):
        group = data.loc[data["region"] == row.region, "income"]
        assert abs(row.n - len(group)) <= laplace_bound(parts["count"])
        tolerance = mean_bound(
            parts["centred_sum(income)"], parts["count(income)"], len(group), INCOME[1]
        )
        # The check says something (the means are near 75,000). The mean gets half of ε
        # (a quarter to each of its parts) and the head count the other half: the split for
        # the least relative error when the two share no measurement.
        assert tolerance < 8_000
        assert abs(row.avg_income - group.mean()) <= tolerance
        assert row.n_lower <= row.n <= row.n_upper
        assert row.avg_income_lower <= row.avg_income <= row.avg_income_upper
        assert INCOME[0] <= row.avg_income_lower
        assert row.avg_income_upper <= INCOME[1]


def check_outputs(out: Path, data: pd.DataFrame, entries: list[LedgerEntry]) -> None:
    by_tag = {e.release.tag.split("@")[0]: e for e in entries}
    check_by_region(read_released(out / "by_region.csv"), by_tag["by_region"], data)

    overall = read_released(out / "overall.csv")
    assert list(overall.columns) == [  # a median has an interval like every other statistic
        f"{name}{end}" for name in ("n", "total_income", "median_age")
        for end in ("", "_lower", "_upper")
    ]  # fmt: skip
    row = overall.iloc[0]
    assert row["median_age_lower"] <= row["median_age"] <= row["median_age_upper"]
    assert len(overall) == 1
    parts = measurements(by_tag["overall"])
    assert abs(overall["n"].iloc[0] - len(data)) <= laplace_bound(parts["count"])
    error = abs(overall["total_income"].iloc[0] - data["income"].sum())
    assert error <= sum_bound(parts["sum(income)"], len(data))
    median = parts["quantile(age, 0.5)"]
    allowed = 2 * median.sensitivity / float(median.epsilon)
    allowed *= math.log(len(median_candidates(AGE))) + math.log(1 / P)
    assert median_excess(data["age"].to_numpy(), overall["median_age"].iloc[0], AGE) <= allowed + 2

    seniors = read_released(out / "seniors.csv")
    assert list(seniors.columns) == ["sex", "n", "n_lower", "n_upper"]
    assert list(seniors["sex"]) == [1, 0]
    truth = data[data["age"] >= 65].groupby("sex").size()
    bound = laplace_bound(measurements(by_tag["seniors"])["count"])
    for row in seniors.itertuples(index=False):
        assert abs(row.n - truth[row.sex]) <= bound
        assert row.n_lower <= row.n <= row.n_upper


class Report(HTMLParser):
    """Tables (rows of cell texts) and images by section (the enclosing h2's id)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.section: str | None = None
        self.ids: list[str] = []
        self.tables: dict[str | None, list[list[list[str]]]] = {}
        self.images: dict[str | None, list[str]] = {}
        self.row: list[str] | None = None
        self.cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "h2":
            self.section = found.get("id")
            if self.section:
                self.ids.append(self.section)
        elif tag == "table":
            self.tables.setdefault(self.section, []).append([])
        elif tag == "tr":
            self.row = []
        elif tag in ("td", "th"):
            self.cell = []
        elif tag == "img":
            self.images.setdefault(self.section, []).append(found.get("src") or "")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self.cell is not None and self.row is not None:
            self.row.append("".join(self.cell).strip())
            self.cell = None
        elif tag == "tr" and self.row is not None:
            self.tables[self.section][-1].append(self.row)
            self.row = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


def shown(text: str) -> float:
    return float(text.replace(",", ""))


def check_report(out: Path, head: str) -> None:
    text = (out / "report.html").read_text(encoding="utf-8")
    assert "http://" not in text
    assert "https://" not in text
    report = Report()
    report.feed(text)
    report.close()
    assert report.ids == NAMES
    assert head in text  # the ledger's head hash, to detect later truncation
    for name in NAMES:
        (table,) = report.tables[name]
        released = read_released(out / f"{name}.csv")
        assert table[0] == list(released.columns)
        assert len(table) == len(released) + 1
        for cells, values in zip(table[1:], released.itertuples(index=False), strict=True):
            for cell, value in zip(cells, values, strict=True):
                if isinstance(value, str):
                    assert cell == value
                else:  # six significant digits, or whole units from a million up
                    slack = 0.5 if abs(value) >= 1e6 else 1e-9
                    assert shown(cell) == pytest.approx(value, rel=1e-5, abs=slack)
    for name in ("by_region", "seniors"):  # grouped: bar charts with error bars
        assert report.images.get(name), f"no chart for {name}"
        for src in report.images[name]:
            prefix = "data:image/png;base64,"
            assert src.startswith(prefix)
            assert base64.b64decode(src[len(prefix) :], validate=True).startswith(b"\x89PNG")
    assert "overall" not in report.images
    (breakdown,) = report.tables[None]
    header = breakdown[0]
    rows = {r[header.index("query")]: r for r in breakdown[1:]}
    assert list(rows) == NAMES
    for name, eps in zip(NAMES, (0.5, 0.2, 0.1), strict=True):
        assert shown(rows[name][header.index("epsilon")]) == pytest.approx(eps)


def test_plan_then_release(
    people: tuple[pd.DataFrame, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, folder = people
    spec_path = write_spec(tmp_path, folder / "people.csv")
    out = tmp_path / "out"
    assert main(["plan", str(spec_path)]) == 0
    assert "fits the budget" in capsys.readouterr().out
    assert not out.exists()

    assert main(["release", str(spec_path), "--out", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    for name in NAMES:
        assert f"{name}: released" in printed

    ledger, entries = read_ledger(out / "ledger.jsonl")
    spec = load_spec(spec_path)
    assert [e.release.tag for e in entries] == [q.tag for q in spec.queries]
    assert [e.sequence for e in entries] == [1, 2, 3]
    costs = [e.release.cost.epsilon for e in entries]
    assert costs == [Fraction("0.5"), Fraction("0.2"), Fraction("0.1")]
    assert all(e.release.cost.delta == 0 and e.by for e in entries)
    assert ledger.total == Budget(Fraction(2), Fraction(1, 10**6))
    assert main(["ledger", str(out / "ledger.jsonl"), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["spent"] == str(Budget(sum(costs, Fraction(0))))
    assert sum(costs, Fraction(0)) == Fraction(4, 5)
    assert summary["head"] == ledger.head

    for entry, name in zip(entries, NAMES, strict=True):  # the ledger holds what was released
        released = read_released(out / f"{name}.csv")
        assert released[entry.output["columns"]].values.tolist() == entry.output["data"]
    check_outputs(out, data, entries)
    check_report(out, ledger.head)


def test_rerun_charges_nothing(
    people: tuple[pd.DataFrame, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec_path = write_spec(tmp_path, people[1] / "people.csv")
    argv = ["release", str(spec_path), "--out", str(tmp_path / "out"), "--no-charts", "--quiet"]
    assert main(argv) == 0
    before = snapshot(tmp_path / "out")
    capsys.readouterr()
    assert main(argv) == 0
    printed = capsys.readouterr().out
    for name in NAMES:
        assert f"{name}: released on " in printed
    assert snapshot(tmp_path / "out") == before  # ledger and tables byte for byte
    assert len(entries_of(tmp_path / "out")) == 3


def released_at(out: Path, name: str) -> str:
    """The status of a query released before: with the UTC time its ledger entry records."""
    (entry,) = [e for e in entries_of(out) if e.release.tag.split("@")[0] == name]
    return f"released on {entry.time[:16].replace('T', ' ')} UTC"


def test_deleted_output_is_recovered_from_the_ledger(
    people: tuple[pd.DataFrame, Path], tmp_path: Path
) -> None:
    spec = load_spec(write_spec(tmp_path, people[1] / "people.csv"))
    out = tmp_path / "out"
    run_release(spec, out, charts=False)
    before = snapshot(out)
    (out / "by_region.csv").unlink()
    outcome = run_release(spec, out, charts=False)
    assert outcome.status == {
        "by_region": "recovered from the ledger",
        "overall": released_at(out, "overall"),
        "seniors": released_at(out, "seniors"),
    }
    assert snapshot(out) == before  # same table, byte for byte; no new charge


def test_force_charges_again_within_the_budget(
    people: tuple[pd.DataFrame, Path], tmp_path: Path
) -> None:
    spec = load_spec(write_spec(tmp_path, people[1] / "people.csv"))
    out = tmp_path / "out"
    run_release(spec, out, charts=False)
    outcome = run_release(spec, out, force=True, charts=False)
    assert outcome.status == dict.fromkeys(NAMES, "released")
    entries = entries_of(out)
    assert [e.release.tag for e in entries] == [q.tag for q in spec.queries] * 2
    assert sum((e.release.cost.epsilon for e in entries), Fraction(0)) == Fraction(8, 5)
    before = snapshot(out)
    with pytest.raises(BudgetExceededError, match="nothing was released"):
        run_release(spec, out, force=True, charts=False)  # 2.4 > 2: refused as a whole
    assert snapshot(out) == before


def test_editing_one_query_releases_only_it_again(
    people: tuple[pd.DataFrame, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    first = load_spec(write_spec(tmp_path, people[1] / "people.csv"))
    run_release(first, out, charts=False)
    before = snapshot(out)
    spec_path = write_spec(tmp_path, people[1] / "people.csv", eps=0.4)
    edited = load_spec(spec_path)

    plan = plan_release(edited, out / "ledger.jsonl")
    assert [p.done for p in plan.queries] == [False, True, True]
    statuses = plan.table().groupby("query", sort=False)["status"].unique()
    assert [list(s) for s in statuses] == [["pending"], ["released"], ["released"]]
    assert plan.spent == Budget(Fraction(4, 5))
    assert main(["plan", str(spec_path), "--out", str(out)]) == 0
    assert "spent so far ε=0.8" in capsys.readouterr().out

    outcome = run_release(edited, out, charts=False)
    assert outcome.status == {
        "by_region": "released",
        "overall": released_at(out, "overall"),
        "seniors": released_at(out, "seniors"),
    }
    entries = entries_of(out)
    assert len(entries) == 4
    assert entries[-1].release.tag == edited.queries[0].tag != first.queries[0].tag
    assert entries[-1].release.cost.epsilon == Fraction(2, 5)
    after = snapshot(out)
    for name in ("overall.csv", "seniors.csv"):
        assert after[name] == before[name]


def test_over_budget_releases_nothing(
    people: tuple[pd.DataFrame, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec_path = write_spec(tmp_path, people[1] / "people.csv", budget=1.0, eps=0.8)
    out = tmp_path / "out"
    assert main(["plan", str(spec_path)]) == 3  # each fits alone; all three do not
    assert "does NOT fit" in capsys.readouterr().err
    assert main(["release", str(spec_path), "--out", str(out), "--quiet"]) == 3
    assert "refused" in capsys.readouterr().err
    assert list(out.iterdir()) == []  # not even a ledger header pinning the budget


def test_failing_query_leaves_the_release_consistent(
    people: tuple[pd.DataFrame, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    spec_path = write_spec(tmp_path, people[1] / "people.csv")
    base = spec_path.read_text()
    argv = ["release", str(spec_path), "--out", str(out), "--no-charts", "--quiet"]
    assert main(argv) == 0
    before = snapshot(out)
    broken = {  # a missing column is a spec error, found in the header before any release
        'where = "nosuch > 1"\naggs = { n = "count" }': 2,
        'aggs = { t = ["nosuch", "sum"] }\nbounds = { nosuch = [0, 1] }': 2,
    }
    for body, code in broken.items():
        spec_path.write_text(base + f'\n[[query]]\nname = "broken"\n{body}\nepsilon = 0.1\n')
        capsys.readouterr()
        assert main(argv) == code
        err = capsys.readouterr().err
        assert re.search(r"query\[4\]\.(where|aggs\.t): column 'nosuch' is not in the data's", err)
        assert snapshot(out) == before  # nothing charged, earlier tables untouched
        assert main(["ledger", str(out / "ledger.jsonl")]) == 0


def test_crash_between_charge_and_file_is_recovered(
    people: tuple[pd.DataFrame, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "out"
    spec_path = write_spec(tmp_path, people[1] / "people.csv")
    argv = ["release", str(spec_path), "--out", str(out), "--no-charts", "--quiet"]
    original = spec_runner.write_outputs

    def disk_full(table: pd.DataFrame, folder: Path, name: str, formats: Any) -> list[Path]:
        if name == "overall":
            raise OSError(28, "No space left on device")
        return original(table, folder, name, formats)

    with monkeypatch.context() as patched:
        patched.setattr(spec_runner, "write_outputs", disk_full)
        assert main(argv) == 1
        assert "No space left on device" in capsys.readouterr().err
    entries = entries_of(out)  # the charge was written first
    assert [e.release.tag.split("@")[0] for e in entries] == ["by_region", "overall"]
    assert (out / "by_region.csv").exists()
    assert not (out / "overall.csv").exists()
    assert main(["ledger", str(out / "ledger.jsonl")]) == 0

    outcome = run_release(load_spec(spec_path), out, charts=False)
    assert outcome.status == {
        "by_region": released_at(out, "by_region"),
        "overall": "recovered from the ledger",
        "seniors": "released",
    }
    after = entries_of(out)
    assert after[:2] == entries
    assert len(after) == 3
    overall = read_released(out / "overall.csv")
    assert overall.values.tolist() == entries[1].output["data"]


def test_parquet_input_and_output(people: tuple[pd.DataFrame, Path], tmp_path: Path) -> None:
    data, folder = people
    spec = load_spec(write_spec(tmp_path, folder / "people.parquet", parquet=True))
    assert spec.data_format == "parquet"
    out = tmp_path / "out"
    run_release(spec, out, charts=False)
    entries = entries_of(out)
    check_outputs(out, data, entries)
    tables = {name: pd.read_parquet(out / f"{name}.parquet") for name in NAMES}
    for name, table in tables.items():
        csv = read_released(out / f"{name}.csv")
        pd.testing.assert_frame_equal(table, csv, check_dtype=False)
    before = snapshot(out)
    (out / "seniors.parquet").unlink()
    outcome = run_release(spec, out, charts=False)
    assert outcome.status["seniors"] == "recovered from the ledger"
    pd.testing.assert_frame_equal(pd.read_parquet(out / "seniors.parquet"), tables["seniors"])
    after = snapshot(out)
    assert {k: v for k, v in after.items() if k != "seniors.parquet"} == {
        k: v for k, v in before.items() if k != "seniors.parquet"
    }


def test_ledger_with_a_different_budget_is_refused(
    people: tuple[pd.DataFrame, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    spec_path = write_spec(tmp_path, people[1] / "people.csv")
    argv = ["release", str(spec_path), "--out", str(out), "--no-charts", "--quiet"]
    assert main(argv) == 0
    before = snapshot(out)
    write_spec(tmp_path, people[1] / "people.csv", budget=3.0)
    capsys.readouterr()
    assert main(argv) == 3
    err = capsys.readouterr().err
    assert "refused" in err
    assert "budget" in err
    assert snapshot(out) == before


def test_a_charged_release_that_failed_is_reported_not_recovered(
    people: tuple[pd.DataFrame, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A release that fails after reading the data is charged with no output in the ledger
    # (a bug by definition). Re-running the spec must say so, release the other queries, and
    # leave --force as the only way to release it again: it used to crash on the missing output.
    from pandas_dp.errors import ReleaseFailedError
    from pandas_dp.planning.noise import NoiseSource

    spec = load_spec(write_spec(tmp_path, people[1] / "people.csv"))
    out = tmp_path / "out"

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug after the check")

    with monkeypatch.context() as patched:
        patched.setattr(NoiseSource, "draw", boom)
        with pytest.raises(ReleaseFailedError):
            run_release(spec, out, charts=False)
    (failed,) = entries_of(out)
    assert failed.output is None
    outcome = run_release(spec, out, charts=False)
    assert outcome.status["by_region"] == spec_runner.FAILED
    assert outcome.status["overall"] == outcome.status["seniors"] == "released"
    assert not (out / "by_region.csv").exists()
    assert "by_region" not in outcome.outputs
    forced = run_release(spec, out, force=True, charts=False)
    assert forced.status["by_region"] == "released"
