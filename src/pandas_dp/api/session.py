"""The public session object: one budget, its ledger, and where its noise comes from."""

from __future__ import annotations

import contextlib
import copy
import html
import math
import uuid
from collections.abc import Hashable, Iterator

import numpy as np
import numpy.typing as npt
import pandas as pd

from pandas_dp.accounting.accountant import Accountant
from pandas_dp.accounting.composition import composition_for
from pandas_dp.accounting.events import LedgerEntry, Release
from pandas_dp.accounting.ledger_file import LedgerFile
from pandas_dp.api.handles import SessionHandle
from pandas_dp.api.outputs import output_to_json
from pandas_dp.api.rowguard import RowGuard
from pandas_dp.api.unit_ids import UnitIds
from pandas_dp.budget import AnyBudget, number_text
from pandas_dp.engines.bounding import SeededPriorities, SystemPriorities
from pandas_dp.errors import DPTypeError, PrivacyLeakWarning, warn
from pandas_dp.measures.bounding import PartitionPriorities, Priorities
from pandas_dp.mechanisms.random import RandomSource, SeededRandomSource, SystemRandomSource
from pandas_dp.planning.noise import NoiseSource
from pandas_dp.schema import SchemaRules
from pandas_dp.transformations.stability import Lineage
from pandas_dp.units import PrivacyUnit

LEDGER_COLUMNS = [
    "sequence", "time", "query", "columns", "epsilon", "delta", "rho", "asked", "composition",
    "groups", "mechanism", "noise", "bounds", "note", "tag", "by", "randomness",
]  # fmt: skip


def random_source(rng: object) -> RandomSource:
    """The OS CSPRNG, or (for tests only, with a warning) a seeded generator."""
    if rng is None:
        return SystemRandomSource()
    if isinstance(rng, bool) or not isinstance(rng, int | np.integer):
        raise DPTypeError(f"rng must be None or an int seed, got {type(rng).__name__}")
    warn(
        "a seeded rng makes the noise predictable and voids the privacy guarantee; use it "
        "for reproducible tests only, never for a real release",
        PrivacyLeakWarning,
    )
    return SeededRandomSource(int(rng))


class Session:
    """The privacy budget shared by a protected frame and every frame derived from it.

    Obtain it with ``priv.dp.session``; it is created by ``df.dp.protect(...)``.

    Attributes
    ----------
    id : str
        Random identifier (not derived from the data).
    total, spent, remaining : Budget
        Exact budgets with ``.epsilon`` and ``.delta`` as :class:`fractions.Fraction`.
    """

    def __init__(
        self,
        total: AnyBudget,
        *,
        source: RandomSource,
        guard: RowGuard | None,
        unit: PrivacyUnit | None = None,
        accounting: str = "basic",
        schema: SchemaRules | None = None,
        ledger: LedgerFile | None = None,
        entries: tuple[LedgerEntry, ...] = (),
        unit_ids: UnitIds | None = None,
        columns: tuple[Hashable, ...] = (),
    ) -> None:
        self.id = uuid.uuid4().hex
        self.accountant = Accountant(
            total, composition_for(total, accounting), store=ledger, entries=entries
        )
        self.guard = guard
        self.unit = unit or PrivacyUnit()
        self.unit_ids = unit_ids  # the ids present at protect (in-memory frames under a unit)
        #: The expression name of a Dask ``protect`` layer, where lineage checks stop.
        self.origin = ""
        self.schema = schema
        #: The protected frame's column labels (public structure: for "did you mean").
        self.columns = columns
        self._source = source
        self._noise = NoiseSource.from_random(source)
        #: The session that holds the budget (itself, unless this is a view of another).
        self.root: Session = self
        #: What this view's rows are made of (the protected table itself: stability 1).
        self.lineage = Lineage(tables=frozenset({self.id}))
        #: The protected tables of the budget by id, with the names the ledger gives them
        #: (one dict shared by every view: ``protect(session=...)`` adds a table to it).
        self.table_names: dict[str, str] = {self.id: "table 1"}
        self.handle = SessionHandle(self)

    def view(
        self,
        *,
        lineage: Lineage | None = None,
        guard: RowGuard | None = None,
        unit: PrivacyUnit | None = None,
        unit_ids: UnitIds | None = None,
        columns: tuple[Hashable, ...] | None = None,
        schema: SchemaRules | None = None,
        table: bool = False,
        name: str | None = None,
    ) -> Session:
        """A view of this session's budget for a derived frame or another protected table.

        The view shares the budget, the ledger and the randomness (one accountant: every
        release from any view is charged to the same budget); it has its own row guard,
        privacy unit, pinned unit ids, columns and lineage. ``table``: a table of its own
        (``protect(session=...)``), with a lineage that reads only itself, registered with
        the root under ``name`` (by default ``table N``) for the ledger's notes.
        """
        derived = copy.copy(self)
        derived.id = uuid.uuid4().hex
        if table:
            derived.lineage = Lineage(tables=frozenset({derived.id}))
            names = self.root.table_names
            names[derived.id] = name or f"table {len(names) + 1}"
        if lineage is not None:
            derived.lineage = lineage
        if guard is not None:
            derived.guard = guard
        if unit is not None:
            derived.unit = unit
        if unit_ids is not None or table:
            derived.unit_ids = unit_ids
        if columns is not None:
            derived.columns = columns
        if schema is not None:
            derived.schema = schema
        derived.handle = SessionHandle(derived)
        return derived

    @property
    def tables(self) -> str:
        """Ledger text naming the protected tables this view reads, once there are several.

        ``""`` while the budget protects one table (its notes stay as they were), else
        ``table 'visits'`` or ``tables 'people', 'visits'``.
        """
        names = self.root.table_names
        if len(names) < 2:
            return ""
        read = [repr(name) for table, name in names.items() if table in self.lineage.tables]
        if not read:
            return ""
        return f"{'table' if len(read) == 1 else 'tables'} {', '.join(read)}"

    @property
    def stability(self) -> int:
        """Rows of this view one protected row can add or remove (1: the table itself)."""
        return self.lineage.stability

    @property
    def noise_source(self) -> NoiseSource:
        """Where this session's noise comes from now (its ``kind`` goes in the ledger)."""
        return self.root._noise

    @contextlib.contextmanager
    def using_noise(self, source: NoiseSource) -> Iterator[NoiseSource]:
        """Draw from ``source`` inside the block (tests only: it replaces the private noise).

        Releases charged meanwhile record ``source.kind``; the previous source is restored
        on exit.
        """
        root = self.root  # one noise source for every view of the budget
        previous, root._noise = root._noise, source
        try:
            yield source
        finally:
            root._noise = previous

    @property
    def accounting(self) -> str:
        """The composition rule: ``basic``, ``advanced``, ``zcdp`` or ``pld``."""
        return self.accountant.composition.name

    @property
    def in_zcdp(self) -> bool:
        """Whether releases are priced in zCDP: a ρ budget, or ``accounting="zcdp"``.

        There ``rho=`` is taken, and a choice by the exponential mechanism at ε costs
        ``ε²/8`` (bounded range) instead of the ``ε²/2`` of pure ε-DP.
        """
        return self.accountant.composition.in_zcdp

    def charge(self, release: Release, result: object = None, tag: str = "") -> None:
        """Charge ``release``; a ledger file also records ``result``, the released values.

        With a ``tag`` (a release file's query id) the release carries it. A release that
        failed after reading the data is charged with no result: its ledger entry's output
        is null, which no released value is (a NaN is a value), so a release file can tell it
        apart.
        """
        release = release.with_origin(tag or release.tag, self.root._noise.kind)
        keep = self.accountant.keeps_outputs and result is not None
        output = output_to_json(result) if keep else None
        self.accountant.charge(release, output)

    def priorities(self, n: int) -> npt.NDArray[np.uint64]:
        """``n`` uniform 64-bit words, for choosing at random which rows a unit keeps."""
        return self._source.randbytes(8 * n).view(np.uint64)

    @property
    def cap_priorities(self) -> Priorities:
        """The source of the caps' priorities, for engines that bound rows in this process.

        The OS CSPRNG read directly (:class:`~pandas_dp.engines.bounding.SystemPriorities`,
        stateless: the caps draw only the bits they read), or this session's own stream
        (a seeded session, tests only), whose words are drawn all the same to stay in step.
        """
        if isinstance(self._source, SystemRandomSource):
            return SystemPriorities()
        return self.priorities

    def spawn_priorities(self) -> PartitionPriorities:
        """A picklable priority source for engines that bound rows in other processes.

        The OS CSPRNG of whichever process draws (nothing is decided here). A seeded
        session (tests only) instead draws 128 bits from its own stream, from which each
        partition seeds a PCG64 stream of its own, so seeded releases stay reproducible.
        """
        if isinstance(self._source, SeededRandomSource):
            words = self._source.randbytes(16).view(np.uint64)
            return SeededPriorities(tuple(int(word) for word in words))
        return SystemPriorities()

    @property
    def total(self) -> AnyBudget:
        """The budget the data owner granted."""
        return self.accountant.total

    @property
    def spent(self) -> AnyBudget:
        """What the releases so far have spent."""
        return self.accountant.spent

    @property
    def remaining(self) -> AnyBudget:
        """What is left to spend."""
        return self.accountant.remaining

    @property
    def releases(self) -> tuple[Release, ...]:
        """The charged releases, oldest first, as immutable records."""
        return tuple(entry.release for entry in self.accountant.entries)

    @property
    def ledger(self) -> pd.DataFrame:
        """One row per release: what was released, how, and what it cost."""
        zcdp = self.total.is_zcdp
        rows = [_ledger_row(entry, zcdp) for entry in self.accountant.entries]
        return pd.DataFrame(rows, columns=LEDGER_COLUMNS)

    def __repr__(self) -> str:
        return (
            f"<pandas-dp Session {self.id[:8]}: total {self.total}, spent {self.spent}, "
            f"{len(self.accountant.entries)} releases>"
        )

    def _repr_html_(self) -> str:
        """In a notebook: the budget (total, spent, remaining) over the ledger's main columns.

        Costs read as people write them (``0``, ``0.5``, ``1/3``, ``1e-06``); long text
        (columns, noise, note) wraps inside its cell, so the table fits the notebook's width
        whatever the notebook's own stylesheet says. ``ledger`` itself is unchanged.
        """
        budget = html.escape(
            f"pandas-dp session {self.id[:8]}: total {self.total}, spent {self.spent}, "
            f"remaining {self.remaining}"
        )
        heading = f"<p><strong>{budget}</strong></p>"
        if not self.accountant.entries:
            return heading
        zcdp = self.total.is_zcdp  # the budget's own unit
        # A ρ session charges ρ: the ε or ρ asked for goes next to it, never an ε derived.
        head = [
            "sequence",
            "query",
            "columns",
            *(["rho", "asked"] if zcdp else ["epsilon", "delta"]),
        ]
        head += ["groups", "noise", "note"]
        rows = []
        for entry in self.accountant.entries:
            row = _ledger_row(entry, zcdp)
            release = entry.release
            if zcdp:
                row["rho"] = number_text(release.rho)
            else:
                row["epsilon"] = number_text(release.cost.epsilon)
                row["delta"] = number_text(release.cost.delta)
            rows.append([row[name] for name in head])
        return heading + html_table(head, rows, wrap=("columns", "noise", "note"))


#: Inline styles of the notebook views: inline, so that no notebook stylesheet (some set
#: ``white-space: nowrap`` on table cells) can make a long note push the table off the page.
TABLE_STYLE = "border-collapse: collapse; table-layout: auto; max-width: 100%;"
WRAP_STYLE = (
    "text-align: left; white-space: normal; max-width: 26em; min-width: 8em; "
    "overflow-wrap: anywhere; word-break: break-word;"
)


def html_table(head: list[str], rows: list[list[object]], wrap: tuple[str, ...] = ()) -> str:
    """A small HTML table for the notebook views (every cell escaped); ``wrap`` cells wrap."""
    wrapped = {i for i, name in enumerate(head) if name in wrap}

    def cell(i: int, value: object) -> str:
        style = f' style="{WRAP_STYLE}"' if i in wrapped else ""
        return f"<td{style}>{html.escape(str(value))}</td>"

    titles = "".join(
        f'<th style="{WRAP_STYLE}">{html.escape(n)}</th>'
        if i in wrapped
        else f"<th>{html.escape(n)}</th>"
        for i, n in enumerate(head)
    )
    body = "".join(
        "<tr>" + "".join(cell(i, v) for i, v in enumerate(row)) + "</tr>" for row in rows
    )
    return (
        f'<table class="dataframe" style="{TABLE_STYLE}">'
        f'<thead><tr style="text-align: right;">{titles}</tr></thead>'
        f"<tbody>{body}</tbody></table>"
    )


def _ledger_row(entry: LedgerEntry, zcdp: bool = False) -> dict[str, object]:
    """One ledger row. ``zcdp``: the session's budget is ρ, which is all it charges.

    A ρ session charges each release its ρ (the ``rho`` column) and no ε or δ, so its
    ``epsilon`` and ``delta`` columns are NaN rather than an ε derived from ρ; ``asked`` says
    what the call asked for (``epsilon=0.2`` of Gaussian noise is charged ρ = 0.02).
    """
    release = entry.release
    cost = release.cost
    return {
        "sequence": entry.sequence,
        "time": entry.time,
        "query": release.query,
        "columns": ", ".join(release.columns),
        "epsilon": math.nan if zcdp else float(cost.epsilon),
        "delta": math.nan if zcdp else float(cost.delta),
        "rho": float(release.rho),  # exact zCDP
        "asked": release.asked,
        "composition": release.composition,
        "groups": release.groups,
        "mechanism": ", ".join(sorted({m.mechanism for m in release.measurements})),
        "noise": "; ".join(m.describe() for m in release.measurements),
        "bounds": "; ".join(f"{c}: [{lo:.6g}, {hi:.6g}]" for c, lo, hi in release.bounds),
        "note": release.note,
        "tag": release.tag,
        "by": entry.by,
        "randomness": release.randomness,
    }
