"""What planning and running a release spec give: a plan, query by query, and an outcome.

Read by the runner (which builds them) and by the report (which renders them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from pandas_dp.accounting.events import LedgerEntry
from pandas_dp.api.release import Preview
from pandas_dp.budget import AnyBudget
from pandas_dp.publish.model import QuerySpec, ReleaseSpec


@dataclass(frozen=True)
class PlannedQuery:
    """One query's preview, and whether the ledger already holds its release."""

    query: QuerySpec
    preview: Preview
    entry: LedgerEntry | None = None

    @property
    def done(self) -> bool:
        """Whether the ledger already holds this query's release."""
        return self.entry is not None


@dataclass(frozen=True)
class ReleasePlan:
    """What a spec would release and cost; ``refusal`` says why it would not fit."""

    spec: ReleaseSpec
    queries: tuple[PlannedQuery, ...]
    total: AnyBudget
    spent: AnyBudget
    accounting: str
    refusal: str = ""

    @property
    def fits(self) -> bool:
        """Whether every pending query fits in what is left of the budget."""
        return not self.refusal

    def table(self) -> pd.DataFrame:
        """One row per statistic: query, mechanism, noise scale, cost and error bound."""
        frames = []
        for planned in self.queries:
            table = planned.preview.table.reset_index()
            table.insert(0, "query", planned.query.name)
            table.insert(1, "status", "released" if planned.done else "pending")
            if planned.query.expected_rows is not None:  # means' and spreads' errors too
                errors = planned.preview.errors(planned.query.expected_rows)
                for name, error in errors.items():
                    table.loc[table["statistic"] == name, "error"] = error
            frames.append(table)
        return pd.concat(frames, ignore_index=True)


#: The status of a query an earlier run released: ``released on 2026-11-24 20:42 UTC``.
RELEASED_ON = "released on"


@dataclass
class ReleaseOutcome:
    """What :func:`run_release` did, query by query."""

    plan: ReleasePlan
    out_dir: Path
    charts: bool = True
    status: dict[str, str] = field(default_factory=dict)
    outputs: dict[str, pd.DataFrame] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)

    def rerun_note(self) -> str:
        """What a re-run did about the queries an earlier run released ("" if none)."""
        earlier = [name for name, s in self.status.items() if s.startswith(RELEASED_ON)]
        if not earlier:
            return ""
        count = len(self.plan.queries)
        which = "every query" if len(earlier) == count else f"{len(earlier)} of {count} queries"
        return (
            f"This run is a re-run: {which} had been released by an earlier run, on the date "
            "shown with each; their tables are the ones released then (kept in the ledger) "
            "and nothing was charged for them again."
        )
