"""The import contracts bite: a probe import each forbids, added to a copy of the package,
breaks exactly that contract (``lint-imports``, configured in ``pyproject.toml``).

The contracts themselves run in CI (``.ci/run``); this shows they are not vacuous.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONTRACTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
    "contracts"
]
LINT = shutil.which("lint-imports", path=str(Path(sys.executable).parent))

#: (file to add the probe to, the probe, the contracts it must break: those alone)
PROBES = [
    (
        "api/release/target.py",
        "from pandas_dp.engines.dask.lineage import rewriting_step",
        ("Above the engines, Dask is reached through the Engine protocol only",),
    ),
    (
        "engines/cells.py",
        "from pandas_dp.mechanisms.quantile import grid_cells",
        ("Layers: cli > publish",),
    ),
    # Planning below the API: an import of the API breaks planning's own contract, the
    # layers, and the rule against cycles (the API imports planning). In a module of its own
    # (a new file, which nothing imports), so that no other chain runs through it.
    (
        "planning/measurement/probe.py",
        "from pandas_dp.api.session import Session",
        (
            "Measurements draw from the noise source they are handed, never from the session",
            "Planning imports neither the API nor the engines",
            "Layers: cli > publish",
            "No import cycles",
        ),
    ),
    (
        "planning/statistics/probe.py",
        "from pandas_dp.api.keys import keys_example",
        (
            "Planning imports neither the API nor the engines",
            "Layers: cli > publish",
            "No import cycles",
        ),
    ),
    (  # above the engines in the layers, yet forbidden them, lazily too
        "planning/measurement/choices.py",
        "def _probe() -> None: from pandas_dp.engines.codes import level_codes",
        ("Planning imports neither the API nor the engines",),
    ),
    (
        "planning/statistics/moments.py",
        "from pandas_dp.engines.protocol import Engine",
        ("Planning imports neither the API nor the engines",),
    ),
    (  # measurements below statistics (and a cycle between the two packages)
        "planning/measurement/parts.py",
        "from pandas_dp.planning.statistics.base import Statistic",
        ("Inside planning:", "No import cycles"),
    ),
    (  # the planner is plan-level too: no target, no session, no engine, not even for types
        "planning/planner.py",
        "from pandas_dp.api.release.types import Target",
        (
            "Planning imports neither the API nor the engines",
            "Layers: cli > publish",
            "No import cycles",
        ),
    ),
    (
        "planning/planner.py",
        "def _probe() -> None: from pandas_dp.engines.bounding import keep_mask",
        ("Planning imports neither the API nor the engines",),
    ),
    (  # the request below the planner that plans it
        "planning/request.py",
        "from pandas_dp.planning.planner import Plan",
        ("Inside planning:", "No import cycles"),
    ),
    (
        "measures/grids.py",
        "from pandas_dp.mechanisms.quantile import grid_cells",
        ("Layers: cli > publish",),
    ),
]


def _lint(src: Path) -> subprocess.CompletedProcess[str]:
    assert LINT is not None, "import-linter (the lint extra, in dev) must be installed"
    return subprocess.run(
        [LINT, "--config", str(ROOT / "pyproject.toml")],
        cwd=src, capture_output=True, text=True, timeout=120,
        env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip


@pytest.mark.parametrize(("module", "probe", "contracts"), PROBES)
def test_a_forbidden_import_breaks_its_contract(tmp_path, module, probe, contracts) -> None:
    src = tmp_path / "src"
    shutil.copytree(ROOT / "src" / "pandas_dp", src / "pandas_dp")
    clean = _lint(src)
    assert clean.returncode == 0, clean.stdout[-2000:]
    target = src / "pandas_dp" / module
    before = target.read_text() if target.exists() else '"""A probe."""\n'
    target.write_text(before + f"\n{probe}  # noqa\n")
    broken = _lint(src)
    assert broken.returncode != 0
    text = " ".join(broken.stdout.split())  # the report wraps long names
    for contract in contracts:
        (name,) = [c["name"] for c in CONTRACTS if c["name"].startswith(contract)]
        assert f"{name} BROKEN" in text, broken.stdout[-3000:]
    assert f"{len(contracts)} broken" in text, broken.stdout[-3000:]  # those contracts alone
