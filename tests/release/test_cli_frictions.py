"""Frictions of the command line and the report (issue 26, item 5).

A closed pipe ends quietly; "1 release" (not "1 releases"); a re-run shows when each query
was released; a refusal states the planned total against the budget; integer keys (years,
codes) without thousands separators; wide tables scroll; the ``"size"`` hint names no
column that is not in the data.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import pandas_dp
from pandas_dp.accounting.ledger_file import read_ledger
from pandas_dp.cli import main
from pandas_dp.errors import BudgetExceededError

SPEC = """\
[data]
path = "people.csv"

[privacy]
epsilon = {budget}

[[query]]
name = "by_year"
groupby = ["year"]
keys = [2003, 2004, 2005, 2006]
aggs = {{ n = "count", total = ["hours", "sum"] }}
bounds = {{ hours = [0, 100000] }}
epsilon = 0.2

[[query]]
name = "overall"
aggs = {{ {overall} }}
epsilon = {eps}
"""


def release_folder(
    folder: Path, budget: float = 1.0, eps: float = 0.1, overall: str = 'n = "count"'
) -> Path:
    """A folder with ``people.csv`` (year, sex, hours: no income) and ``release.toml``."""
    gen = np.random.default_rng(3)  # test data only, never noise
    frame = pd.DataFrame(
        {
            "year": gen.integers(2003, 2007, 2000),
            "sex": gen.integers(0, 2, 2000),
            "hours": gen.uniform(0, 9e4, 2000),
        }
    )
    frame.to_csv(folder / "people.csv", index=False)
    spec = folder / "release.toml"
    spec.write_text(SPEC.format(budget=budget, eps=eps, overall=overall))
    return spec


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def child_env() -> dict[str, str]:
    """The environment for ``python -m pandas_dp``: it imports this very pandas_dp."""
    source = str(Path(pandas_dp.__file__).resolve().parents[1])
    return {**os.environ, "PYTHONPATH": source}


# -- 1. a closed pipe ----------------------------------------------------------------------
def test_ledger_into_a_pipe_closed_early_ends_quietly(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    frame = pd.DataFrame({"code": np.arange(6000) % 3000})
    priv = frame.dp.protect(epsilon=50.0, ledger=ledger)
    for _ in range(20):  # enough output to fill any pipe buffer (well over 64 KiB)
        priv.dp.groupby("code", keys=list(range(3000))).agg(n="count", epsilon=1.0)
    command = [sys.executable, "-m", "pandas_dp", "ledger", str(ledger), "--outputs"]
    pipe = subprocess.PIPE
    with subprocess.Popen(command, stdout=pipe, stderr=pipe, env=child_env()) as child:
        assert child.stdout is not None
        assert child.stderr is not None
        first = child.stdout.readline()
        child.stdout.close()  # as `| head -1` does
        err = child.stderr.read().decode()
        code = child.wait(timeout=120)
    assert first.startswith(b"ledger ")
    assert "Traceback" not in err
    assert "Broken pipe" not in err
    assert err == ""
    assert code in (0, 141)


# -- 2. plural agreement -------------------------------------------------------------------
def test_one_release_is_singular(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    priv = pd.DataFrame({"x": range(100)}).dp.protect(epsilon=1.0)
    priv.dp.count(epsilon=0.6)
    with pytest.raises(BudgetExceededError) as refused:
        priv.dp.count(epsilon=0.6)
    assert "(1 release so far" in str(refused.value)
    assert "1 releases" not in str(refused.value)

    ledger = tmp_path / "one.jsonl"
    priv = pd.DataFrame({"x": range(100)}).dp.protect(epsilon=1.0, ledger=ledger)
    priv.dp.count(epsilon=0.1)
    code, out, _ = run(capsys, "ledger", ledger)
    assert code == 0
    assert "; 1 release\n" in out
    assert "1 releases" not in out


# -- 3. when a query was released ----------------------------------------------------------
def test_rerun_shows_when_each_query_was_released(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = release_folder(tmp_path)
    out_dir = tmp_path / "out"
    assert run(capsys, "release", spec, "--out", out_dir, "--quiet", "--no-charts")[0] == 0
    _, entries = read_ledger(out_dir / "ledger.jsonl")
    when = {e.release.tag.split("@")[0]: e.time[:16].replace("T", " ") for e in entries}
    assert len(when) == 2

    code, out, _ = run(capsys, "release", spec, "--out", out_dir, "--quiet", "--no-charts")
    assert code == 0
    for name, time in when.items():
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d", time)
        assert f"  {name}: released on {time} UTC\n" in out
    assert out.count("This run is a re-run: every query had been released by an earlier run") == 1
    report = (out_dir / "report.html").read_text()
    assert report.count(f"released on {when['overall']} UTC") >= 2  # table and heading
    assert "already released" not in report

    code, out, _ = run(capsys, "plan", spec, "--out", out_dir)
    assert code == 0
    rows = [line for line in out.splitlines() if line.strip().startswith(("by_year", "overall"))]
    assert len(rows) == 3
    for row in rows:
        name = row.split()[0]
        assert f" released {when[name]} UTC " in row
    assert out.rstrip().endswith(
        "nothing pending: every query is already released, and a run spends nothing"
    )
    assert "would run every pending query" not in out


def test_a_synonym_in_a_release_file_gets_its_pandas_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = release_folder(tmp_path, overall='avg = ["hours", "average"]')
    code, _, err = run(capsys, "plan", spec)
    assert code == 2
    assert "unknown statistic 'average'; did you mean 'mean'?" in err


# -- 4. the planned total against the budget -----------------------------------------------
def test_refusal_states_the_planned_total_and_the_budget(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = release_folder(tmp_path, budget=1.0, eps=0.9)  # 0.2 + 0.9 = 1.1 > 1
    code, _, err = run(capsys, "plan", spec)
    assert code == 3
    assert "together they need ε=1.1, δ=0 against the budget of ε=1, δ=0" in err

    code, _, err = run(capsys, "release", spec, "--out", tmp_path / "out", "--quiet")
    assert code == 3
    assert "together they need ε=1.1, δ=0 against the budget of ε=1, δ=0" in err
    assert not (tmp_path / "out" / "ledger.jsonl").exists()

    # with earlier releases: the total with what was spent
    cheap = release_folder(tmp_path, budget=1.0, eps=0.1)
    assert run(capsys, "release", cheap, "--out", tmp_path / "out", "--quiet")[0] == 0
    code, _, err = run(capsys, "release", cheap, "--out", tmp_path / "out", "--force")
    assert code == 0
    code, _, err = run(capsys, "release", cheap, "--out", tmp_path / "out", "--force")
    assert code == 0
    code, _, err = run(capsys, "plan", release_folder(tmp_path, eps=0.5), "--out", tmp_path / "out")
    assert code == 3
    assert (
        "together they need ε=0.5, δ=0 (ε=1.4, δ=0 with the ε=0.9, δ=0 already spent) "
        "against the budget of ε=1, δ=0" in err
    )


# -- 5. and 6. the report: integer keys, wide tables ---------------------------------------
def test_report_keys_without_separators_and_scrolling_tables(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = release_folder(tmp_path)
    out_dir = tmp_path / "out"
    assert run(capsys, "release", spec, "--out", out_dir, "--quiet", "--no-charts")[0] == 0
    report = (out_dir / "report.html").read_text()
    for year in (2003, 2004, 2005, 2006):
        assert f'<td class="text">{year}</td>' in report
    assert not re.search(r'class="text">2,00[3-6]<', report)  # (the overall n may be 2,004)
    # values keep their separators: the hours summed are in the tens of millions
    assert re.search(r'<td class="">-?\d{1,3}(,\d{3}){2,}</td>', report)
    # every table scrolls sideways inside its box instead of being cut
    assert ".scroll { overflow-x: auto" in report
    assert report.count("<table>") >= 3
    assert report.count("<table>") == report.count("<div class='scroll'><table>")


# -- 7. the hint for "size" ----------------------------------------------------------------
def test_size_hint_names_no_column_missing_from_the_data(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = release_folder(tmp_path, overall='n = "size"')
    code, _, err = run(capsys, "plan", spec)
    assert code == 2
    assert "'size' needs a column" in err
    header = pd.read_csv(tmp_path / "people.csv", nrows=0).columns
    named = re.findall(r'\["([^"]*)", "size"\]', err)
    assert named
    assert all(n == "<column>" or n in header for n in named)
    assert "income" not in err
