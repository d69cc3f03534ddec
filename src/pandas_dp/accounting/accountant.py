"""The accountant: checks and charges releases against a total budget, atomically.

The accountant knows nothing about pandas. It holds the total budget, a composition rule
and the ledger of charged releases. :meth:`Accountant.charge` holds one lock across "would
this fit?" and "record it", so concurrent releases can never overspend; a refused release
leaves no trace. There is no public way to reset, refund or edit the ledger.

With a :class:`~pandas_dp.accounting.ledger_file.LedgerFile` the ledger also lives on disk:
every check and charge first takes the file's lock and reads what other processes charged,
and a charge is on disk (fsynced) before :meth:`Accountant.charge` returns.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterable, Iterator

from pandas_dp.accounting.composition import BasicComposition, Composition
from pandas_dp.accounting.events import LedgerEntry, Release
from pandas_dp.accounting.ledger_file import LedgerFile, who
from pandas_dp.budget import AnyBudget, RhoBudget
from pandas_dp.errors import BudgetExceededError, DPValueError, NotProtectedError


def _fmt(budget: AnyBudget) -> str:
    return str(budget)


class Accountant:
    """Keeps one total budget and the ledger of what was spent from it.

    Parameters
    ----------
    total : Budget
        The most that may ever be spent.
    composition : Composition, optional
        How releases compose; :class:`BasicComposition` by default.
    store : LedgerFile, optional
        A ledger file, already opened, shared with other processes.
    entries : iterable of LedgerEntry
        What the ledger file held when it was opened.
    """

    def __init__(
        self,
        total: AnyBudget,
        composition: Composition | None = None,
        *,
        store: LedgerFile | None = None,
        entries: Iterable[LedgerEntry] = (),
    ) -> None:
        self.total = total
        self.composition: Composition = composition or BasicComposition()
        self.store = store
        self._entries: list[LedgerEntry] = []
        self._state = self.composition.start()
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._fold(entries)

    def _fold(self, entries: Iterable[LedgerEntry]) -> None:
        for entry in entries:
            self._state = self.composition.add(self._state, entry.release)
            self._entries.append(entry)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold the process lock and the ledger file's (after reading others' charges)."""
        with self._lock:
            if self.store is None:
                yield
                return
            with self.store.locked():
                self._fold(self.store.read_new())
                yield

    @property
    def keeps_outputs(self) -> bool:
        """Whether charges record the released values (a ledger file keeps them)."""
        return self.store is not None

    @property
    def entries(self) -> tuple[LedgerEntry, ...]:
        """The ledger, oldest first (a snapshot)."""
        with self._locked():
            return tuple(self._entries)

    @property
    def spent(self) -> AnyBudget:
        """What has been spent so far under the composition rule."""
        with self._locked():
            return self.composition.guarantee(self._state)

    @property
    def remaining(self) -> AnyBudget:
        """``total - spent`` (never negative)."""
        return self.total - self.spent

    def _refusal(self, release: Release, state: object = None, count: int = 0) -> str | None:
        """Why ``release`` cannot follow ``state`` (default: the current one), or None."""
        return self._admit(release, state, count)[1]

    def _admit(
        self, release: Release, state: object = None, count: int = 0
    ) -> tuple[object, str | None]:
        """``release`` after ``state`` (default: the current one): the new state, and why not.

        The reason is None when the release fits.
        """
        if state is None:
            state, count = self._state, len(self._entries)
        if os.getpid() != self._pid:
            raise NotProtectedError(
                "this session belongs to another process (it was inherited through fork); "
                "a forked child would spend a copy of the budget. Protect the data in the "
                "process that queries it."
            )
        if self.total.is_pure and release.cost.delta > 0:
            raise DPValueError(
                f"{release.query} needs δ > 0 (Gaussian noise or keys chosen from the data) "
                "but the session is pure ε-DP (δ = 0); protect the frame with a delta "
                "(e.g. delta=1e-6), or use Laplace noise with public keys"
            )
        if self.total.is_zcdp and any(m.extra_delta for m in release.measurements):
            raise DPValueError(
                f"{release.query} chooses keys from the data, which spends δ, but the session "
                "has a ρ-zCDP budget with no δ; pass public keys"
            )
        following = self.composition.add(state, release)
        if self.total.covers(self.composition.guarantee(following)):
            return following, None
        before = self.composition.guarantee(state)
        # What the release costs in the budget's own unit: a ρ session's is its ρ.
        needs = RhoBudget(release.rho) if isinstance(self.total, RhoBudget) else release.cost
        smaller = "rho or epsilon" if isinstance(self.total, RhoBudget) else "epsilon"
        return following, (
            f"{release.query} needs {_fmt(needs)} but only "
            f"{_fmt(self.total - before)} of the session's {_fmt(self.total)} budget remains "
            f"({count} release{'' if count == 1 else 's'} so far, "
            f"{self.composition.name} composition). "
            f"Nothing was charged. Use a smaller {smaller}, or ask the data owner for a budget."
        )

    def check(self, release: Release) -> None:
        """Raise :class:`BudgetExceededError` if ``release`` would not fit now.

        A cheap early refusal before any data is touched; :meth:`charge` checks again.
        """
        with self._locked():
            reason = self._refusal(release)
        if reason:
            raise BudgetExceededError(reason)

    def check_all(self, releases: Iterable[Release]) -> None:
        """Raise :class:`BudgetExceededError` unless *all* of ``releases`` fit together now.

        All-or-nothing admission of a planned set of releases; charges nothing.
        """
        with self._locked():
            state, count = self._state, len(self._entries)
            for release in releases:
                following, reason = self._admit(release, state, count)
                if reason:
                    raise BudgetExceededError(f"the planned releases do not fit: {reason}")
                state, count = following, count + 1

    def charge(self, release: Release, output: dict[str, object] | None = None) -> LedgerEntry:
        """Atomically check that ``release`` fits and record it.

        With a ledger file the entry (and ``output``, the released values in plain JSON) is
        written and fsynced before this returns: write-ahead of the release itself.

        Raises
        ------
        BudgetExceededError
            If it does not fit; nothing is recorded.
        """
        with self._locked():
            following, reason = self._admit(release)
            if reason:
                raise BudgetExceededError(reason)
            entry = LedgerEntry(
                sequence=len(self._entries) + 1,
                release=release,
                by=who() if self.store is not None else "",
                output=output if self.store is not None else None,
            )
            if self.store is not None:
                self.store.append(entry)  # raises before anything is recorded in memory
            self._state = following  # what _fold([entry]) would compute, computed once
            self._entries.append(entry)
            return entry
