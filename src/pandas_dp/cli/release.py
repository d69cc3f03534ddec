"""``pandas-dp plan | release | ledger``: release specs and ledger files from the shell."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TextIO

import pandas as pd

from pandas_dp.accounting.accountant import Accountant
from pandas_dp.accounting.composition import composition_for
from pandas_dp.accounting.events import LedgerEntry
from pandas_dp.accounting.ledger_file import read_ledger
from pandas_dp.errors import LedgerError
from pandas_dp.publish import LEDGER_NAME, plan_spec_file, run_release
from pandas_dp.publish.report import plural

_PLAN_COLUMNS = ["query", "status", "statistic", "how", "mechanism", "scale", "epsilon", "delta",
                 "error", "error_in"]  # fmt: skip


def utc_time(stamp: str) -> str:
    """A ledger entry's ISO time as ``2026-11-24 20:42 UTC``."""
    return f"{stamp[:16].replace('T', ' ')} UTC"


def _show(frame: pd.DataFrame) -> None:
    with pd.option_context("display.width", 160, "display.max_colwidth", 70,
                           "display.float_format", "{:,.6g}".format):  # fmt: skip
        print(frame.to_string(index=False))


def run_plan(args: argparse.Namespace) -> int:
    """Print what the spec would release and cost; exit 3 if it does not fit."""
    ledger = args.ledger or (Path(args.out) / LEDGER_NAME if args.out else None)
    plan = plan_spec_file(args.spec, data=args.data, ledger=ledger)  # every problem at once
    spec = plan.spec
    print(f"{spec.title}: {plural(len(spec.queries), 'query')} from {spec.data_path}")
    print(f"budget {plan.total} ({plan.accounting} accounting); spent so far {plan.spent}\n")
    table = plan.table()
    when = {p.query.name: p.entry.time for p in plan.queries if p.entry is not None}
    table["status"] = [  # a released query shows when it was charged (the ledger's time)
        f"released {utc_time(when[name])}" if name in when else status
        for name, status in zip(table["query"], table["status"], strict=True)
    ]
    _show(table[_PLAN_COLUMNS])
    print(
        f"\nerror: half-width of a {spec.confidence:.0%} interval in the column's units "
        "(ranks for quantiles). A mean's or a spread's error depends on its count: set "
        "expected_rows in the query to see it. Summed and averaged columns are read as "
        "numbers; missing or "
        "non-numeric values are skipped (or filled with the query's fillna)."
    )
    if not plan.fits:
        print(f"\ndoes NOT fit: {plan.refusal}", file=sys.stderr)
        return 3
    if all(p.done for p in plan.queries):
        print("\nnothing pending: every query is already released, and a run spends nothing")
    else:
        print("\nfits the budget: `pandas-dp release` would run every pending query")
    return 0


class _ProgressBar:
    """One line per query: a bar over the queries, updated in place on a terminal."""

    def __init__(self, stream: TextIO, quiet: bool) -> None:
        self.stream, self.quiet = stream, quiet
        self.live = stream.isatty()

    def __call__(self, number: int, count: int, name: str, stage: str) -> None:
        if self.quiet:
            return
        done = number - (stage == "releasing")
        filled = round(24 * done / count)
        line = f"[{'#' * filled}{'.' * (24 - filled)}] {number}/{count} {name}: {stage}"
        if self.live:
            end = "" if stage == "releasing" else "\n"
            print(f"\r\033[K{line}", end=end, file=self.stream, flush=True)
        elif stage != "releasing":
            print(line, file=self.stream, flush=True)


def run_release_command(args: argparse.Namespace) -> int:
    """Run the spec into ``--out``; print where everything went."""
    # Every problem of the spec at once (its columns, queries and budget too), before any
    # data is read; over budget alone, run_release refuses it on the real frame.
    spec = plan_spec_file(args.spec, data=args.data, ledger=Path(args.out) / LEDGER_NAME).spec
    progress = _ProgressBar(sys.stderr, args.quiet)
    charts = False if args.no_charts else (True if args.charts else None)
    outcome = run_release(spec, args.out, force=args.force, charts=charts, progress=progress)
    ledger, entries = read_ledger(outcome.out_dir / LEDGER_NAME)
    assert ledger.total is not None
    spent = Accountant(
        ledger.total, composition_for(ledger.total, ledger.accounting), entries=entries
    ).spent
    print(f"{spec.title}: {plural(len(outcome.status), 'query')} into {outcome.out_dir}/")
    for name, status in outcome.status.items():
        print(f"  {name}: {status}")
    if outcome.rerun_note():
        print(outcome.rerun_note())
    print(f"spent {spent} of {ledger.total}; files written:")
    for path in outcome.files:
        print(f"  {path}")
    print(f"inspect the ledger: pandas-dp ledger {outcome.out_dir / LEDGER_NAME}")
    if not outcome.charts and not args.no_charts:
        print("the report has no charts: pip install 'pandas-dp[report]' (matplotlib) to add them")
    return 0


def _entry_rows(entries: list[LedgerEntry], zcdp: bool = False) -> pd.DataFrame:
    """One row per entry: its cost in the budget's unit (ρ for a ρ budget, no derived ε)."""
    costs = ["rho"] if zcdp else ["epsilon", "delta"]
    rows = [
        {
            "seq": e.sequence,
            "time": e.time[:19].replace("T", " "),
            "by": e.by,
            "query": e.release.query,
            "tag": e.release.tag,
            "epsilon": float(e.release.cost.epsilon),
            "delta": float(e.release.cost.delta),
            "rho": float(e.release.rho),
            "mechanism": ", ".join(sorted({m.mechanism for m in e.release.measurements})),
        }
        for e in entries
    ]
    return pd.DataFrame(rows, columns=["seq", "time", "by", "query", "tag", *costs,
                                       "mechanism"])  # fmt: skip


def run_ledger(args: argparse.Namespace) -> int:
    """Verify a ledger's hash chain and print what was spent, by whom, when, how."""
    ledger, entries = read_ledger(args.ledger)
    assert ledger.total is not None
    if args.expect_head and args.expect_head != ledger.head:
        raise LedgerError(
            f"the ledger's head hash is {ledger.head}, not the expected {args.expect_head}: "
            "entries were removed from its end, or it is a different ledger"
        )
    accountant = Accountant(
        ledger.total, composition_for(ledger.total, ledger.accounting), entries=entries
    )
    zcdp = ledger.total.is_zcdp
    if args.json:
        print(json.dumps({
            "ledger": str(ledger.path), "ledger_id": ledger.ledger_id, "head": ledger.head,
            "total": str(ledger.total), "accounting": ledger.accounting,
            "spent": str(accountant.spent), "remaining": str(accountant.remaining),
            "entries": _entry_rows(entries, zcdp).to_dict(orient="records"),
        }, indent=2))  # fmt: skip
        return 0
    print(f"ledger {ledger.path} (id {ledger.ledger_id}): chain of hashes verified")
    print(f"budget {ledger.total} under {ledger.accounting} accounting")
    print(
        f"spent {accountant.spent}; remaining {accountant.remaining}; "
        f"{plural(len(entries), 'release')}\n"
    )
    if entries:
        _show(_entry_rows(entries, zcdp))
    if args.outputs:
        for entry in entries:
            print(f"\n#{entry.sequence} {entry.release.query} {entry.release.tag}:")
            print(json.dumps(entry.output))
    print(f"\nhead hash {ledger.head} (keep it to detect later truncation: --expect-head)")
    return 0


#: The data owner names the data file; a spec may only name files in its own folder.
DATA_HELP = "the data file to release from (instead of the spec's data.path)"


def add_release_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``plan``, ``release`` and ``ledger`` on the sub-command parser."""
    plan = commands.add_parser("plan", help="costs and error bounds of a spec; reads no data")
    plan.add_argument("spec", help="release spec (.toml, .yaml or .json)")
    plan.add_argument("--out", help="release folder whose ledger counts as spent")
    plan.add_argument("--ledger", help="a ledger file whose releases count as spent")
    plan.add_argument("--data", help=DATA_HELP)
    plan.set_defaults(run=run_plan)

    release = commands.add_parser("release", help="run a spec: tables, ledger and report")
    release.add_argument("spec", help="release spec (.toml, .yaml or .json)")
    release.add_argument("--out", required=True, help="output folder (holds the ledger)")
    release.add_argument("--data", help=DATA_HELP)
    release.add_argument(
        "--force", action="store_true",
        help="release queries again even if the ledger has them (charges them again)",
    )  # fmt: skip
    drawing = release.add_mutually_exclusive_group()
    drawing.add_argument("--no-charts", action="store_true", help="report without charts")
    drawing.add_argument(
        "--charts", action="store_true",
        help="require charts (pandas-dp[report]); by default they are drawn when matplotlib "
        "is installed",
    )  # fmt: skip
    release.add_argument("--quiet", action="store_true", help="no progress display")
    release.set_defaults(run=run_release_command)

    ledger = commands.add_parser("ledger", help="verify a ledger file and show its spending")
    ledger.add_argument("ledger", help="ledger file (JSON lines)")
    ledger.add_argument("--expect-head", help="fail unless the last hash is this one")
    ledger.add_argument("--outputs", action="store_true", help="also print released values")
    ledger.add_argument("--json", action="store_true", help="machine-readable summary")
    ledger.set_defaults(run=run_ledger)
