"""The accountant: checks and charges releases against a total budget, atomically.

The accountant knows nothing about pandas. It holds the total budget, a composition rule
and the ledger of charged releases. :meth:`Accountant.charge` holds one lock across "would
this fit?" and "record it", so concurrent releases can never overspend; a refused release
leaves no trace. There is no public way to reset, refund or edit the ledger.
"""

from __future__ import annotations

import os
import threading

from pandas_dp.accounting.composition import BasicComposition, Composition
from pandas_dp.accounting.events import LedgerEntry, Release
from pandas_dp.budget import Budget
from pandas_dp.errors import BudgetExceededError, DPValueError, NotProtectedError


def _fmt(budget: Budget) -> str:
    return str(budget)


class Accountant:
    """Keeps one total budget and the ledger of what was spent from it.

    Parameters
    ----------
    total : Budget
        The most that may ever be spent.
    composition : Composition, optional
        How releases compose; :class:`BasicComposition` by default.
    """

    def __init__(self, total: Budget, composition: Composition | None = None) -> None:
        self.total = total
        self.composition: Composition = composition or BasicComposition()
        self._entries: list[LedgerEntry] = []
        self._state = self.composition.start()
        self._lock = threading.Lock()
        self._pid = os.getpid()

    @property
    def entries(self) -> tuple[LedgerEntry, ...]:
        """The ledger, oldest first (a snapshot)."""
        with self._lock:
            return tuple(self._entries)

    @property
    def spent(self) -> Budget:
        """What has been spent so far under the composition rule."""
        with self._lock:
            return self.composition.guarantee(self._state)

    @property
    def remaining(self) -> Budget:
        """``total - spent`` (never negative)."""
        return self.total - self.spent

    def _refusal(self, release: Release) -> str | None:
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
        after = self.composition.guarantee(self.composition.add(self._state, release))
        if self.total.covers(after):
            return None
        before = self.composition.guarantee(self._state)
        return (
            f"{release.query} needs {_fmt(release.cost)} but only "
            f"{_fmt(self.total - before)} of the session's {_fmt(self.total)} budget remains "
            f"({len(self._entries)} releases so far, {self.composition.name} composition). "
            "Nothing was charged. Use a smaller epsilon, or ask the data owner for a budget."
        )

    def check(self, release: Release) -> None:
        """Raise :class:`BudgetExceededError` if ``release`` would not fit now.

        A cheap early refusal before any data is touched; :meth:`charge` checks again.
        """
        with self._lock:
            reason = self._refusal(release)
        if reason:
            raise BudgetExceededError(reason)

    def charge(self, release: Release) -> LedgerEntry:
        """Atomically check that ``release`` fits and record it.

        Raises
        ------
        BudgetExceededError
            If it does not fit; nothing is recorded.
        """
        with self._lock:
            reason = self._refusal(release)
            if reason:
                raise BudgetExceededError(reason)
            entry = LedgerEntry(sequence=len(self._entries) + 1, release=release)
            self._state = self.composition.add(self._state, release)
            self._entries.append(entry)
            return entry
