"""Crash safety of ledger files: kill real processes at the worst moments.

Each test runs a child Python process that protects data with a ledger file and is killed
(``os._exit`` from a fault-injection wrapper, or SIGKILL from the parent) between writing a
charge and producing its output, or in the middle of writing the charge. Afterwards the
ledger must account for at least every value the child managed to emit: the budget is never
under-counted, and a re-run never charges twice for what the ledger already holds.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pandas_dp.accounting.ledger_file import read_ledger

CRASH = 70  # the child's exit code when the injected fault fires

SPEC = """
[data]
path = "people.csv"
[privacy]
epsilon = 1.0
[[query]]
name = "by_region"
groupby = ["region"]
keys = ["north", "south"]
aggs = { n = "count", avg = ["income", "mean"] }
bounds = { income = [0, 1000] }
epsilon = 0.5
[[query]]
name = "overall"
aggs = { n = "count" }
epsilon = 0.25
"""


def _child(script: str, cwd: Path, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        **kwargs,
    )


@pytest.fixture
def release_dir(tmp_path: Path) -> Path:
    gen = np.random.default_rng(5)
    pd.DataFrame(
        {"region": gen.choice(["north", "south"], 2000), "income": gen.integers(0, 1000, 2000)}
    ).to_csv(tmp_path / "people.csv", index=False)
    (tmp_path / "release.toml").write_text(SPEC)
    return tmp_path


def test_crash_between_ledger_write_and_output_never_under_counts(release_dir):
    """The fault fires right after the first charge is fsynced, before its CSV is written."""
    crashed = _child(
        f"""
        import os
        from pandas_dp.accounting.ledger_file import LedgerFile
        from pandas_dp.publish import load_spec, run_release

        original = LedgerFile.append
        def append_then_die(self, entry, *args):
            original(self, entry, *args)
            os._exit({CRASH})  # the charge is on disk; the output never will be
        LedgerFile.append = append_then_die
        run_release(load_spec("release.toml"), "out", charts=False)
        """,
        release_dir,
    )
    assert crashed.returncode == CRASH, crashed.stderr
    out = release_dir / "out"
    assert not (out / "by_region.csv").exists()  # the crash came before the output
    _, entries = read_ledger(out / "ledger.jsonl")
    assert [e.release.tag.split("@")[0] for e in entries] == ["by_region"]
    assert sum(e.release.cost.epsilon for e in entries) == Fraction(1, 2)  # charged anyway

    # The re-run recovers the crashed query's output from the ledger: no second charge.
    rerun = _child(
        """
        from pandas_dp.publish import load_spec, run_release
        outcome = run_release(load_spec("release.toml"), "out", charts=False)
        print(outcome.status)
        """,
        release_dir,
    )
    assert rerun.returncode == 0, rerun.stderr
    assert "'by_region': 'recovered from the ledger'" in rerun.stdout
    _, entries = read_ledger(out / "ledger.jsonl")
    assert sum(e.release.cost.epsilon for e in entries) == Fraction(3, 4)
    table = pd.read_csv(out / "by_region.csv")
    assert table["region"].tolist() == ["north", "south"]


def test_crash_in_the_middle_of_the_ledger_write(release_dir):
    """Half a line reaches the disk; the child never returns the value."""
    crashed = _child(
        f"""
        import os
        import pandas as pd, pandas_dp
        from pandas_dp.accounting import ledger_file

        priv = pd.read_csv("people.csv").dp.protect(epsilon=1.0, ledger="l.jsonl")
        print(priv.dp.count(epsilon=0.25), flush=True)
        def torn_append(path, data):
            with open(path, "ab") as handle:
                handle.write(data[: len(data) // 2])
            os._exit({CRASH})
        ledger_file.append_durably = torn_append
        print(priv.dp.count(epsilon=0.5), flush=True)  # never printed
        """,
        release_dir,
    )
    assert crashed.returncode == CRASH, crashed.stderr
    assert len(crashed.stdout.split()) == 1  # one value left the process
    resumed = _child(
        """
        import pandas as pd, pandas_dp
        priv = pd.read_csv("people.csv").dp.protect(ledger="l.jsonl")
        print(priv.dp.session.spent.epsilon)
        """,
        release_dir,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip() == "1/4"  # exactly what was released: nothing lost
    assert (release_dir / "l.jsonl.torn").exists()
    ledger, _ = read_ledger(release_dir / "l.jsonl")
    assert ledger.total is not None


def test_sigkill_at_random_moments_never_under_counts(release_dir):
    """A child releasing as fast as it can is killed; every printed value is in the ledger."""
    script = textwrap.dedent(
        """
        import pandas as pd, pandas_dp
        priv = pd.read_csv("people.csv").dp.protect(epsilon=1000.0, ledger="k.jsonl")
        while True:
            print(priv.dp.count(epsilon=0.01), flush=True)
        """
    )
    printed = 0
    with subprocess.Popen(
        [sys.executable, "-c", script], cwd=release_dir, stdout=subprocess.PIPE, text=True
    ) as child:
        assert child.stdout is not None
        for _ in range(40):  # let it get well into its loop, then kill it mid-flight
            child.stdout.readline()
            printed += 1
        child.send_signal(signal.SIGKILL)
        printed += len(child.stdout.read().split())
        child.wait(timeout=60)
    _, entries = read_ledger(release_dir / "k.jsonl")
    assert len(entries) >= printed
    assert len(entries) <= printed + 1  # at most the one in flight was charged but not seen


def test_concurrent_processes_share_one_budget_exactly(release_dir):
    """Three processes race for ε = 1 in steps of 1/100: exactly 100 charges succeed."""
    script = textwrap.dedent(
        """
        import pandas as pd, pandas_dp
        from fractions import Fraction
        priv = pd.read_csv("people.csv").dp.protect(epsilon=1.0, ledger="shared.jsonl")
        granted = 0
        for _ in range(50):
            try:
                priv.dp.count(epsilon=Fraction(1, 100))
                granted += 1
            except pandas_dp.BudgetExceededError:
                pass
        print(granted)
        """
    )
    # Create the ledger first so that all three resume the same one.
    setup = _child(
        """
        import pandas as pd, pandas_dp
        pd.read_csv("people.csv").dp.protect(epsilon=1.0, ledger="shared.jsonl")
        """,
        release_dir,
    )
    assert setup.returncode == 0, setup.stderr
    children = [
        subprocess.Popen([sys.executable, "-c", script], cwd=release_dir, stdout=subprocess.PIPE)
        for _ in range(3)
    ]
    granted = [int(c.communicate(timeout=180)[0]) for c in children]
    assert sum(granted) == 100
    _, entries = read_ledger(release_dir / "shared.jsonl")
    assert [e.sequence for e in entries] == list(range(1, 101))
    assert sum(e.release.cost.epsilon for e in entries) == 1
    assert len({e.by for e in entries}) >= 2  # the processes really interleaved
