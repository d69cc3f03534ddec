"""Every release finishes in bounded time and memory under every accountant (issue 37).

The matrix: every release family of the README and the cheat sheet (count, sum, mean, var,
std, quantile, median, mode, top_k, describe, group-by agg/size/count, value_counts,
crosstab, pivot_table, histogram, cov, corr, ols, logit, resample, running totals, tables,
hierarchy, synthesize; and the bounds and caps read from the data: ``priv.dp.bounds``,
``bounds="auto"`` on a mean, ``range="auto"`` on a histogram, ``max_groups_per_unit="auto"``
on a grouped count under a privacy unit, ``protect(..., max_rows_per_unit="auto")``) × every
accountant (basic, advanced, zcdp, pld) × both noise kinds (Laplace; Gaussian with the
session's δ), on a small frame. The cells run in two child
processes (``bounded_work_child.py``), each with its address space capped at 2 GiB and a
60 s alarm per cell; a cell that needs more is a failure, not a hang. A cell either releases
(and charges one release) or is refused before any charge (budget and ledger unchanged) with
a pandas-dp error: the families that take no noise kind (selections by the exponential
mechanism, quantiles, describe, hierarchy counts, the bounds scan: Laplace noise only)
refuse ``mechanism="gaussian"`` so. The releases that run a scan first (``"auto"`` bounds,
range and group cap) take either noise kind for the statistic and charge one release; the
cap released at ``protect`` is charged to the new session as its one release, and its
Gaussian cell (a ``rho`` budget) is refused before any session exists where the accountant
is not zCDP. The largest time and peak RSS are written to
``bounded_work.json`` in the test's tmp dir and printed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CHILD = Path(__file__).with_name("bounded_work_child.py")
SRC = Path(__file__).resolve().parents[2] / "src"
FAMILIES = (
    "count", "sum", "mean", "var", "std", "quantile", "median", "mode", "top_k", "describe",
    "groupby.agg", "groupby.size", "groupby.count", "value_counts", "crosstab", "pivot_table",
    "histogram", "cov", "corr", "ols", "logit", "resample.size", "running_totals", "tables",
    "hierarchy", "synthesize", "bounds", "mean.bounds_auto", "histogram.range_auto",
    "groupby.count.max_groups_auto", "protect.max_rows_auto",
)  # fmt: skip
ACCOUNTANTS = ("basic", "advanced", "zcdp", "pld")
NOISES = ("laplace", "gaussian")
#: Families with no Gaussian form: ``mechanism="gaussian"`` is refused before any charge.
LAPLACE_ONLY = {"quantile", "median", "mode", "top_k", "describe", "hierarchy", "bounds"}
#: ``protect(..., max_rows_per_unit="auto")`` takes no noise kind: its Gaussian cell gives the
#: budget as ``rho``, which only zCDP accounts (``accounting="basic"``, the default, becomes
#: zCDP); the other accountants refuse it before any session exists.
RHO_REFUSED = {"advanced", "pld"}
#: Errors a refusal before the charge may raise (never ReleaseFailedError: that is charged).
REFUSALS = {"DPTypeError", "DPValueError", "BudgetExceededError"}
BATCHES = 2
CELL_SECONDS = 60
LIMIT_MB = 2048


def run_batches(cells: list[list[str]]) -> list[dict[str, object]]:
    """Run the cells in :data:`BATCHES` child processes at once; their JSON lines."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
    }
    batches = [cells[i::BATCHES] for i in range(BATCHES)]
    children = [
        subprocess.Popen(
            [sys.executable, str(CHILD), json.dumps(batch)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for batch in batches
    ]
    rows: list[dict[str, object]] = []
    for child, batch in zip(children, batches, strict=True):
        try:
            out, err = child.communicate(timeout=CELL_SECONDS * len(batch))
        except subprocess.TimeoutExpired:
            child.kill()
            out, err = child.communicate()
        lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        assert len(lines) == len(batch), f"a child stopped early (rc {child.returncode}): {err}"
        rows.extend(lines)
    return rows


def refused(family: str, accounting: str, noise: str) -> bool:
    """Whether the cell must be refused before any charge."""
    if noise != "gaussian":
        return False
    if family == "protect.max_rows_auto":
        return accounting in RHO_REFUSED
    return family in LAPLACE_ONLY


def test_every_release_under_every_accountant_is_bounded(tmp_path: Path) -> None:
    cells = [[f, a, n] for f in FAMILIES for a in ACCOUNTANTS for n in NOISES]
    rows = run_batches(cells)
    assert len(rows) == len(FAMILIES) * len(ACCOUNTANTS) * len(NOISES)
    failures = []
    for row in rows:
        cell = f"{row['family']} / {row['accounting']} / {row['noise']}"
        refused_expected = refused(str(row["family"]), str(row["accounting"]), str(row["noise"]))
        if row["outcome"] == "crashed":
            failures.append(f"{cell}: {row['error']}")
        elif row["outcome"] == "released":
            if refused_expected or row["charged"] != 1:
                failures.append(f"{cell}: released, charged {row['charged']}")
        elif not (refused_expected and row["unchanged"] and row["error_type"] in REFUSALS):
            failures.append(f"{cell}: {row['error']} (budget unchanged: {row['unchanged']})")
        if row["outcome"] != "crashed" and (
            float(row["seconds"]) > CELL_SECONDS or float(row["peak_rss_mb"]) > LIMIT_MB  # type: ignore[arg-type]
        ):
            failures.append(f"{cell}: {row['seconds']:.1f} s, {row['peak_rss_mb']:.0f} MB")
    slowest = max(rows, key=lambda r: float(r.get("seconds", 0.0)))  # type: ignore[arg-type]
    largest = max(float(r.get("peak_rss_mb", 0.0)) for r in rows)  # type: ignore[arg-type]
    summary = {
        "cells": len(rows),
        "released": sum(r["outcome"] == "released" for r in rows),
        "refused_before_charge": sum(r["outcome"] == "raised" for r in rows),
        "largest_seconds": slowest["seconds"],
        "slowest_cell": [slowest["family"], slowest["accounting"], slowest["noise"]],
        "largest_peak_rss_mb": largest,
        "rows": rows,
    }
    (tmp_path / "bounded_work.json").write_text(json.dumps(summary, indent=1))
    print(
        f"\nbounded work: {summary['cells']} cells, {summary['released']} released, "
        f"{summary['refused_before_charge']} refused before a charge; slowest "
        f"{slowest['seconds']:.2f} s ({slowest['family']} / {slowest['accounting']} / "
        f"{slowest['noise']}), largest peak RSS {largest:.0f} MB; {tmp_path / 'bounded_work.json'}"
    )
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("accounting", ACCOUNTANTS)
def test_the_audit_reproducer_is_bounded_in_a_child(accounting: str) -> None:
    # A year of daily Gaussian running totals, the case that took 18 GB under pld.
    (row,) = run_batches([["running_totals", accounting, "gaussian"]])[:1]
    assert row["outcome"] == "released", row
    assert float(row["seconds"]) < 10  # type: ignore[arg-type]
