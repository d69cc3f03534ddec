"""What a release measures: one frozen key per noisy measurement.

A statistic asks for measurements by key (the row count, the clipped sum of ``income``, ...);
the planner calibrates one noisy measurement per distinct key, so statistics that need the
same thing share it. Keys render their own ledger label and description: nothing is built
as text and parsed back.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

Kind = Literal[
    "rows", "nonnull", "distinct", "sum", "centred_sum", "squares", "quantile", "mode",
    "top_k", "level", "keys", "marginal", "residual", "running", "products",
]  # fmt: skip

#: The word a ledger label starts with, per kind.
_LABELS: dict[Kind, str] = {
    "rows": "count", "nonnull": "count", "distinct": "nunique", "sum": "sum",
    "centred_sum": "centred_sum", "squares": "squares", "quantile": "quantile",
    "mode": "mode", "top_k": "top_k", "level": "count", "keys": "keys", "marginal": "marginal",
    "residual": "residual", "running": "running_total", "products": "products",
}  # fmt: skip


_END = {-1: "lower", 1: "upper"}


@dataclass(frozen=True)
class MeasurementKey:
    """One noisy measurement a release makes.

    Attributes
    ----------
    kind : str
        ``rows`` (row count), ``nonnull`` (non-missing values of ``column``), ``distinct``
        (distinct non-missing values of ``column``), ``sum`` and
        ``centred_sum`` (clipped sums on a lattice), ``squares`` (centred squares),
        ``quantile`` (a choice among grid edges), ``mode`` and ``top_k`` (choices among the
        groups), ``level`` (the row count at one level of a hierarchy), ``marginal`` (the
        rows in each cell of a contingency table of several columns), ``residual`` (that
        table centred along each of its columns, measured through an integer frame).
    column : label, optional
        The column measured (for ``level``: the level's name; for ``marginal``: the tuple
        of the table's columns).
    q : Fraction, optional
        The quantile level.
    rounds : int
        Distinct choices made by peeling (``top_k``).
    level : int, optional
        Depth in a hierarchy (``level``).
    side : {0, -1, 1}
        For a quantile: the estimate (0), or the lower (-1) or upper (1) end of its interval.
    weights : label, optional
        For ``rows``, ``nonnull``, ``sum`` and ``centred_sum``: the column of row weights;
        each row then counts (or its value is summed) with its clipped weight.
    """

    kind: Kind
    column: Hashable | None = None
    q: Fraction | None = None
    rounds: int = 1
    level: int | None = None
    side: Literal[0, -1, 1] = 0
    weights: Hashable | None = None

    @property
    def label(self) -> str:
        """Ledger label: ``count``, ``count(income)``, ``quantile(income, 0.5)``, ..."""
        word = _LABELS[self.kind]
        if self.weights is not None:  # count(weights=w), sum(income, weights=w)
            what = "" if self.kind == "rows" else f"{self.column}, "
            return f"{word}({what}weights={self.weights})"
        if self.kind in ("rows", "keys"):
            return word
        if self.kind == "quantile":  # shortest exact text: close levels keep distinct labels
            end = {0: "", -1: ", lower", 1: ", upper"}[self.side]
            return f"{word}({self.column}, {float(self.q or 0)!r}{end})"
        if self.kind == "level":
            return f"{word}(level {self.level}: {self.column})"
        if self.kind == "top_k":
            return f"{word}({self.column}, {self.rounds})"
        if self.kind in ("marginal", "residual"):
            return f"{word}({_table(self.column)})"
        if self.kind == "products":
            return f"{word}({_names(self.column)})"
        return f"{word}({self.column})"

    def describe(self) -> str:
        """What it measures, in words: ``the row count``, ``the centred sum of income``."""
        if self.weights is not None:
            unweighted = MeasurementKey(self.kind, self.column).describe()
            return f"{unweighted.replace('the ', 'the weighted ', 1)} (weights {self.weights})"
        if self.kind == "rows":
            return "the row count"
        if self.kind == "keys":
            return "the choice of keys"
        if self.kind == "nonnull":
            return f"the count of non-missing {self.column}"
        if self.kind == "distinct":
            return f"the count of distinct {self.column}"
        if self.kind == "quantile":
            what = f"the {float(self.q or 0)!r} quantile of {self.column}"
            return what if self.side == 0 else f"the {_END[self.side]} end of {what}'s interval"
        if self.kind == "level":
            return f"the counts of level {self.level} ({self.column})"
        if self.kind == "marginal":
            return f"the counts of {_table(self.column)}"
        if self.kind == "residual":
            return f"the residual of {_table(self.column)}"
        if self.kind == "products":
            return f"the sums of products of {_names(self.column)}"
        if self.kind in ("mode", "top_k"):
            return f"the {self.kind} of {self.column}"
        return f"the {self.kind.replace('_', ' ')} of {self.column}"


def _names(columns: Hashable) -> str:
    """``x, y, z`` for a tuple of columns."""
    return ", ".join(map(str, columns if isinstance(columns, tuple) else (columns,)))


def _table(columns: Hashable) -> str:
    """``age × sex`` for a table's columns (``total`` for none)."""
    names = columns if isinstance(columns, tuple) else (columns,)
    return " × ".join(map(str, names)) or "total"
