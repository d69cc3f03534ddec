"""The privacy unit: whose data a release protects.

By default one row is one person (add/remove-one-row neighbours). With a privacy-unit column,
all rows sharing an id are one person; pandas-dp then keeps at most ``max_rows`` rows per id
(a random, data-independent choice) before every release and multiplies sensitivities
accordingly, so the guarantee holds per person however many rows they have.
"""

from __future__ import annotations

import numbers
from collections.abc import Hashable
from dataclasses import dataclass

from pandas_dp.errors import DPTypeError, DPValueError, holds_data, shown


def positive_int(value: object, name: str) -> int:
    """Validate a contribution bound: a positive integer (bools refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise DPTypeError(f"{name} must be a positive integer, got {type(value).__name__}")
    if value < 1:
        raise DPValueError(f"{name} must be at least 1, got {value}")
    return int(value)


@dataclass(frozen=True)
class PrivacyUnit:
    """Who is protected: rows (``column=None``) or the ids in ``column``.

    Attributes
    ----------
    column : label or None
        The privacy-unit (person id) column, or None for one row per person.
    max_rows : int
        Most rows any one unit may contribute to a release (1 for row-level privacy).
    """

    column: Hashable | None = None
    max_rows: int = 1

    def __post_init__(self) -> None:
        positive_int(self.max_rows, "max_rows_per_unit")
        if self.column is None and self.max_rows != 1:
            raise DPValueError("max_rows_per_unit needs privacy_unit='<id column>'")

    @classmethod
    def of(cls, column: Hashable | None, max_rows: object) -> PrivacyUnit:
        """Validate ``protect``'s ``privacy_unit`` / ``max_rows_per_unit`` arguments."""
        if holds_data(column):
            raise DPTypeError(
                f"privacy_unit names the id column, got {shown(column)}: pass its label "
                "(privacy_unit='person_id'); the values of an array given here are never shown"
            )
        if column is None:
            if max_rows is not None:
                raise DPValueError(
                    "max_rows_per_unit only makes sense with privacy_unit='<id column>'"
                )
            return cls()
        if max_rows is None:
            raise DPValueError(
                f"privacy_unit={column!r} needs max_rows_per_unit=k, the most rows one unit may "
                "contribute (rows beyond k are dropped at random before each release)"
            )
        return cls(column, positive_int(max_rows, "max_rows_per_unit"))

    @property
    def is_rows(self) -> bool:
        """True for row-level privacy (no id column)."""
        return self.column is None

    def describe(self) -> str:
        """Human-readable description for the ledger."""
        if self.column is None:
            return "one row"
        return f"unit {self.column!s} (≤ {self.max_rows} rows)"


@dataclass(frozen=True)
class Contribution:
    """How much one privacy unit can change one release, after the library's caps.

    Attributes
    ----------
    l1 : int
        Rows one unit can add in total (multiplies every L1 sensitivity).
    l0 : int
        Groups (outputs) one unit can change.
    linf : int
        Rows one unit can add to one group.
    """

    l1: int = 1
    l0: int = 1
    linf: int = 1

    def __post_init__(self) -> None:
        for name in ("l1", "l0", "linf"):
            positive_int(getattr(self, name), name)
