"""Stability: how many rows of a derived frame one privacy unit can change.

A frame the library derives from protected rows (a join, an ``explode``, a ``melt``) may turn
one protected row into several. Under row-level privacy (add or remove one row of one
protected table) a later release on the derived frame must then be calibrated to the number
of derived rows one protected row can move: its *stability*, Tumult Analytics' word. This
module is the one place that computes it, from public inputs only (a public table's largest
key multiplicity, a truncation bound, an explode cap, a number of columns); releases read it
once (:func:`pandas_dp.api.caps.caps_for`) and multiply every sensitivity and cap by it.

Under a privacy unit a derived frame carries the unit's id on every row, and every release
caps each unit's rows by that id whatever a transformation made of them; the stability then
stays 1 and the derived frame's own cap (``max_rows_per_unit``) bounds a unit's rows.

The rules, for add/remove-one-row neighbours of the protected tables (``s`` the input's
stability):

- a row-local map (filter, ``assign``, a join to a public table with unique keys): ``s``;
- a join to a public table whose keys repeat, at most ``k`` public rows per key: ``s·k``;
- ``explode`` keeping at most ``c`` items per row: ``s·c``; ``melt`` of ``v`` columns: ``s·v``;
- a private join on a key, each side truncated to at most ``m`` rows per key by priorities
  drawn independently of the data: adding (removing) one row of a side adds (removes) it and
  may evict (admit) one other row of its key among the kept ones, so each side's kept rows
  move by at most ``2·s_side``; each of those rows meets at most ``m`` kept rows of the
  other side, so the join moves by at most ``2·m·(s_left + s_right)`` rows, and by
  ``2·m·max(s_left, s_right)`` when the two sides read disjoint protected tables (one
  protected row is then in one side only).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pandas_dp.errors import DPValueError

#: The largest stability a derived frame may have: beyond it every release is mostly noise,
#: and the products that compute it stay exact small integers.
MAX_STABILITY = 10**6


@dataclass(frozen=True)
class Lineage:
    """What a derived frame's rows are made of: its stability and the steps that set it.

    Attributes
    ----------
    stability : int
        Rows of this frame one protected row can add or remove (row-level privacy).
    steps : tuple of str
        The transformations that set it, for the ledger's note (public inputs only).
    tables : frozenset of str
        The protected tables the frame reads (ids of the sessions' tables, not data).
    """

    stability: int = 1
    steps: tuple[str, ...] = ()
    tables: frozenset[str] = field(default_factory=frozenset)

    def then(self, factor: int, step: str) -> Lineage:
        """The lineage after a transformation that makes each row ``factor`` rows."""
        return Lineage(_bounded(self.stability * factor, step), (*self.steps, step), self.tables)

    def describe(self) -> str:
        """Ledger text: ``stability 3 (merge on 'code': a key matches ≤ 3 public rows)``."""
        if self.stability == 1:  # under a unit (a join on it), or nothing done: the steps
            return "; ".join(self.steps)
        return f"stability {self.stability} ({'; '.join(self.steps)})"


def private_join(left: Lineage, right: Lineage, truncation: int, step: str) -> Lineage:
    """The lineage of a join of two protected frames, each side truncated to ``truncation``.

    See the module's notes: ``2·m·max(s_left, s_right)`` for disjoint tables, else
    ``2·m·(s_left + s_right)``.
    """
    if left.tables.isdisjoint(right.tables):
        moved = max(left.stability, right.stability)
    else:
        moved = left.stability + right.stability
    stability = _bounded(2 * truncation * moved, step)
    steps = (*left.steps, *right.steps, step)
    return Lineage(stability, tuple(dict.fromkeys(steps)), left.tables | right.tables)


def _bounded(stability: int, step: str) -> int:
    if stability > MAX_STABILITY:
        raise DPValueError(
            f"{step} would let one protected row become {stability} rows (more than "
            f"{MAX_STABILITY}): every later release would be noise. Lower the cap or "
            "aggregate the public table first"
        )
    return stability
