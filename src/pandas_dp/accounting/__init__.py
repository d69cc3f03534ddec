"""Budgets composed over releases, the accountant and its ledger. Knows nothing of pandas."""

from pandas_dp.accounting.accountant import Accountant
from pandas_dp.accounting.composition import BasicComposition, Composition, composition_for
from pandas_dp.accounting.events import LedgerEntry, Measurement, Release

__all__ = [
    "Accountant",
    "BasicComposition",
    "Composition",
    "LedgerEntry",
    "Measurement",
    "Release",
    "composition_for",
]
