"""The ``pandas-dp`` command line: exit codes, messages and the ledger command.

Exit codes: 0 ok, 1 error, 2 invalid spec or usage, 3 refused for privacy (nothing charged),
4 missing optional dependency (the message gives the ``pip install`` line).
"""

from __future__ import annotations

import importlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd
import pytest

import pandas_dp.optional
from pandas_dp.accounting.ledger_file import read_ledger
from pandas_dp.cli import main

SPEC = """\
[data]
path = "{data}"

[privacy]
epsilon = {budget}

[release]
formats = {formats}

[[query]]
name = "a"
groupby = ["sex"]
keys = [0, 1]
aggs = {{ n = "count", total = ["income", "sum"] }}
bounds = {{ income = [0, 100000] }}
epsilon = 0.1

[[query]]
name = "b"
aggs = {{ n = "count" }}
epsilon = 0.1

[[query]]
name = "c"
aggs = {{ n = "count" }}
epsilon = {eps_c}
"""


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(7)
    frame = pd.DataFrame({"sex": rng.integers(0, 2, 2000), "income": rng.uniform(0, 9e4, 2000)})
    path = tmp_path_factory.mktemp("data") / "people.csv"
    frame.to_csv(path, index=False)
    return path


def write_spec(
    folder: Path,
    data: Path,
    *,
    budget: float = 1.0,
    eps_c: float = 0.1,
    parquet: bool = False,
    name: str = "release.toml",
) -> Path:
    formats = '["csv", "parquet"]' if parquet else '["csv"]'
    path = folder / name
    if data.parent != folder:  # a spec names only files in its own folder
        shutil.copy(data, folder / data.name)
    path.write_text(SPEC.format(data=data.name, budget=budget, eps_c=eps_c, formats=formats))
    return path


@pytest.fixture
def released(data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A release folder holding three charges (ledger lines 2-4); returns its ledger."""
    spec = write_spec(tmp_path, data)
    argv = ["release", str(spec), "--out", str(tmp_path / "out"), "--no-charts", "--quiet"]
    assert main(argv) == 0
    capsys.readouterr()
    return tmp_path / "out" / "ledger.jsonl"


def block_imports(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    """Make ``pandas_dp.optional.require`` see ``names`` as not installed."""
    real = importlib.import_module

    def import_module(name: str, package: str | None = None) -> ModuleType:
        if name.split(".")[0] in names:
            raise ImportError(f"No module named {name!r}")
        return real(name, package)

    monkeypatch.setattr(pandas_dp.optional.importlib, "import_module", import_module)


def test_invalid_spec_exits_2_naming_where(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = write_spec(tmp_path, data)
    spec.write_text(spec.read_text().replace("[0, 100000]", "[10, 5]").replace('"a"', '"b"'))
    for command in (["plan", str(spec)], ["release", str(spec), "--out", str(tmp_path / "o")]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert err.startswith("pandas-dp: invalid spec: ")
        assert "  query[1].bounds.income: bounds must satisfy lower < upper, got (10, 5)" in err
        assert "  query[2].name: 'b' is used twice\n" in err
    assert not (tmp_path / "o").exists()


def test_missing_spec_and_bad_usage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", str(tmp_path / "nope.toml")]) == 2
    assert "cannot read the spec" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        main(["release", str(tmp_path / "nope.toml")])  # --out is required
    assert exited.value.code == 2
    assert "--out" in capsys.readouterr().err


def test_plan_prints_every_statistic(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plan", str(write_spec(tmp_path, data))]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [
        line.split() for line in lines if line.split()[:2] in (["a", "pending"], ["b", "pending"])
    ]
    assert [row[2] for row in rows] == ["n", "total", "n"]
    assert any(line.split()[:3] == ["c", "pending", "n"] for line in lines)


def test_over_budget_exits_3(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = write_spec(tmp_path, data, budget=0.25)  # 0.1 each: any two fit, not all three
    assert main(["plan", str(spec)]) == 3
    assert "does NOT fit" in capsys.readouterr().err
    out = tmp_path / "out"
    assert main(["release", str(spec), "--out", str(out), "--no-charts"]) == 3
    assert capsys.readouterr().err.startswith("pandas-dp: refused: nothing was released")
    assert sorted(p.name for p in out.iterdir()) == []  # no ledger pins the refused budget
    spec = write_spec(tmp_path, data, budget=0.5)
    assert main(["release", str(spec), "--out", str(out), "--no-charts"]) == 0  # a new budget
    assert len(read_ledger(out / "ledger.jsonl")[1]) == 3


def test_ledger_json(released: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ledger", str(released), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["total"] == "ε=1, δ=0"
    assert summary["spent"] == "ε=0.3, δ=0"
    assert summary["remaining"] == "ε=0.7, δ=0"
    assert [e["tag"].split("@")[0] for e in summary["entries"]] == ["a", "b", "c"]
    assert [e["epsilon"] for e in summary["entries"]] == [0.1, 0.1, 0.1]
    assert summary["head"] == read_ledger(released)[0].head


def test_ledger_outputs(released: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ledger", str(released), "--outputs"]) == 0
    out = capsys.readouterr().out
    assert "chain of hashes verified" in out
    assert "spent ε=0.3, δ=0; remaining ε=0.7, δ=0; 3 releases" in out
    outputs = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert [o["type"] for o in outputs] == ["frame"] * 3
    assert outputs[0]["index"] == [0, 1]


def test_expect_head(released: Path, capsys: pytest.CaptureFixture[str]) -> None:
    head = read_ledger(released)[0].head
    assert main(["ledger", str(released), "--expect-head", head]) == 0
    capsys.readouterr()
    wrong = ("0" if head[0] != "0" else "1") + head[1:]
    assert main(["ledger", str(released), "--expect-head", wrong]) == 3
    err = capsys.readouterr().err
    assert f"head hash is {head}, not the expected {wrong}" in err


def test_tampered_ledger_is_refused(
    released: Path, data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = released.read_bytes().splitlines(keepends=True)
    assert len(lines) == 4  # header, a, b, c
    assert lines[2].count(b'"epsilon":"1/10"') == 1
    lines[2] = lines[2].replace(b'"epsilon":"1/10"', b'"epsilon":"1/20"')  # one character
    released.write_bytes(b"".join(lines))
    assert main(["ledger", str(released)]) == 3
    err = capsys.readouterr().err
    assert "line 3 of the ledger" in err
    assert "does not match its checksum" in err
    spec = write_spec(tmp_path, data, eps_c=0.2)  # c changed: it would be charged again
    assert main(["plan", str(spec), "--ledger", str(released)]) == 3
    argv = ["release", str(spec), "--out", str(released.parent), "--no-charts", "--quiet"]
    assert main(argv) == 3
    assert "line 3 of the ledger" in capsys.readouterr().err
    assert released.read_bytes() == b"".join(lines)  # nothing appended


def test_plan_against_a_ledger_with_another_budget_is_refused(
    released: Path, data: Path, tmp_path: Path
) -> None:
    spec = write_spec(tmp_path, data, budget=5.0)
    argv = ["release", str(spec), "--out", str(released.parent), "--no-charts", "--quiet"]
    assert main(argv) == 3
    assert main(["plan", str(spec), "--out", str(released.parent)]) == 3  # as release would


def test_missing_matplotlib_exits_4_only_when_charts_are_required(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    block_imports(monkeypatch, "matplotlib")
    spec = write_spec(tmp_path, data)
    out = tmp_path / "out"
    assert main(["release", str(spec), "--out", str(out), "--quiet", "--charts"]) == 4
    assert "pip install 'pandas-dp[report]'" in capsys.readouterr().err
    assert not out.exists()  # no ledger: nothing was read, nothing charged
    assert main(["release", str(spec), "--out", str(out), "--quiet", "--no-charts"]) == 0
    assert len(read_ledger(out / "ledger.jsonl")[1]) == 3
    assert "<img" not in (out / "report.html").read_text(encoding="utf-8")


@pytest.mark.parametrize(("module", "extra"), [("pyarrow", "parquet"), ("yaml", "yaml")])
def test_other_missing_extras_exit_4(
    data: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    module: str,
    extra: str,
) -> None:
    spec = write_spec(tmp_path, data, parquet=True)
    if module == "yaml":
        spec = tmp_path / "release.yaml"
        spec.write_text(
            f"data:\n  path: {data}\nprivacy:\n  epsilon: 1.0\n"
            "query:\n  - {name: b, aggs: {n: count}, epsilon: 0.1}\n"
        )
    block_imports(monkeypatch, module)
    out = tmp_path / "out"
    assert main(["release", str(spec), "--out", str(out), "--no-charts"]) == 4
    assert f"pip install 'pandas-dp[{extra}]'" in capsys.readouterr().err
    assert not out.exists()


def test_demo(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--epsilon", "0.8"]) == 0
    out = capsys.readouterr().out
    assert "total budget ε = 0.8" in out
    assert "spent ε=0.8" in out


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pandas_dp", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_python_m_pandas_dp(released: Path) -> None:
    shown = _run("--help")
    assert shown.returncode == 0, shown.stderr
    for command in ("plan", "release", "ledger", "demo"):
        assert command in shown.stdout
    assert "exit codes" in shown.stdout
    refused = _run("ledger", str(released), "--expect-head", "f" * 64)
    assert refused.returncode == 3
    assert "pandas-dp: refused: " in refused.stderr


def test_release_on_the_plain_install_writes_a_report_without_charts(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The README's plain install has no matplotlib: make it unimportable, as it would be.
    block_imports(monkeypatch, "matplotlib")
    spec = write_spec(tmp_path, data)
    out = tmp_path / "out"
    assert main(["release", str(spec), "--out", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "pip install 'pandas-dp[report]'" in printed  # says how to get the charts
    report = (out / "report.html").read_text(encoding="utf-8")
    assert "<img" not in report  # no charts, and nothing failed for lack of them
    assert (out / "a.csv").exists()
    assert len(read_ledger(out / "ledger.jsonl")[1]) == 3


def test_plan_and_release_check_column_names_against_the_header(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = write_spec(tmp_path, data)
    text = spec.read_text().replace('["income", "sum"]', '["incom", "sum"]')
    text = text.replace("income = [0, 100000]", "incom = [0, 100000]")
    spec.write_text(text + 'where = "sexx == 1"\n')  # the last query filters on a typo too
    assert main(["plan", str(spec)]) == 2
    err = capsys.readouterr().err
    assert "query[1].aggs.total: column 'incom' is not in the data's header (did you mean " in err
    assert "query[3].where: column 'sexx' is not in the data's header (did you mean 'sex'?)" in err
    out = tmp_path / "out"
    assert main(["release", str(spec), "--out", str(out), "--no-charts", "--quiet"]) == 2
    assert not out.exists()  # refused before reading the data or charging


def test_report_and_messages_read_well(data: Path, tmp_path: Path, capsys) -> None:
    from pandas_dp.publish.report import plural

    assert [plural(n, "row") for n in (0, 1, 2, 1234)] == [
        "0 rows",
        "1 row",
        "2 rows",
        "1,234 rows",
    ]
    assert [plural(n, "query") for n in (1, 3)] == ["1 query", "3 queries"]
    spec = write_spec(tmp_path, data)
    out = tmp_path / "out"
    assert main(["release", str(spec), "--out", str(out), "--no-charts", "--quiet"]) == 0
    report = (out / "report.html").read_text(encoding="utf-8")
    assert "<div class='scroll'><table>" in report  # wide tables scroll in their column
    assert "1 row;" in report
    assert "1 rows" not in report
    capsys.readouterr()
    assert main(["release", str(spec), "--out", str(out), "--no-charts", "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "3 queries into" in printed
    assert re.search(r"\n  a: released on \d{4}-\d\d-\d\d \d\d:\d\d UTC\n", printed)
    assert "already" not in printed
