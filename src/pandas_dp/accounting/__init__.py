"""Budgets composed over releases, the accountant and its ledger. Knows nothing of pandas."""

from pandas_dp.accounting.accountant import Accountant, BasicComposition, Composition
from pandas_dp.accounting.events import LedgerEntry, Measurement, Release

__all__ = ["Accountant", "BasicComposition", "Composition", "LedgerEntry", "Measurement", "Release"]
