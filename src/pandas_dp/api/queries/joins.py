"""``left.dp.merge(right, on=...)`` with both sides protected: joins of private tables.

Two protected frames of one budget (the second protected with ``protect(session=...)``, or
frames derived from them) join in two ways, and nothing else is accepted:

- **On the privacy unit** (a session with ``privacy_unit``; ``on`` holds the unit's column,
  perhaps with other keys). Every joined row holds one unit's id, the same on both sides, so
  the join keeps each row's owner: removing a unit from every table removes exactly its
  joined rows. The result is a view under the same unit whose ``max_rows_per_unit`` is
  ``k_left · k_right``: a unit within its caps on both sides has at most that many joined
  rows, so with that cap no such row is dropped. Privacy does not rest on that product:
  every release from the result caps each unit's rows by its id at the view's cap, whatever
  the join made of them, and is calibrated to that cap (the stability stays 1). Each side
  first drops the rows whose id its own table did not hold at ``protect`` (as its releases
  do), so every joined row's id is among the left table's pinned ids.
- **A private join on another key** (row-level sessions only), as Tumult's
  ``join_private``: each side is truncated to at most ``max_rows_per_key`` rows per
  (canonical) key, keeping the first ``m`` in a random order (a priority word per row from
  the session's randomness, drawn independently of the data), then joined. Adding or
  removing one protected row moves the result by at most
  :func:`~pandas_dp.transformations.stability.private_join`'s stability rows (the argument
  is in that module and in the privacy model); the result is a view with that lineage.
  Under a unit a join on another key is refused: a joined row would belong to two people.

Keys match by their canonical forms (the unit's column by
:func:`~pandas_dp.engines.canonical.canonical_unit_ids`, other keys by
:func:`~pandas_dp.engines.canonical.canonical_column`: ``1``, ``1.0`` and ``True`` are one
key; a missing key matches nothing). The result is shaped as ``left.merge(right, on=...)``:
the left columns, then the right's non-key columns (overlapping names with ``suffixes``), a
fresh ``RangeIndex``, the left rows in order each followed by its matches in the right's
order. The key columns hold the left side's values.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
import pandas as pd

from pandas_dp.api.attach import attach, session_of
from pandas_dp.api.queries.merge import key_names
from pandas_dp.api.release import resolve
from pandas_dp.api.rowguard import RowGuard
from pandas_dp.api.session import Session
from pandas_dp.api.validation import did_you_mean
from pandas_dp.engines import engine_for
from pandas_dp.engines.bounding import below_cap
from pandas_dp.engines.canonical import canonical_unit_ids
from pandas_dp.engines.codes import observed_codes, public_codes
from pandas_dp.engines.lookup import I64, expand_rows, grouped_order
from pandas_dp.errors import DPKeyError, DPTypeError, DPValueError
from pandas_dp.transformations.stability import Lineage, private_join
from pandas_dp.units import PrivacyUnit, positive_int


def merge_protected(
    left: pd.DataFrame,
    right: pd.DataFrame,
    on: Hashable | Sequence[Hashable],
    how: str,
    validate: str | None,
    suffixes: tuple[str, str],
    max_rows_per_key: int | None,
) -> pd.DataFrame:
    """``left`` joined to the protected ``right`` (see the module and the accessor)."""
    sessions = session_of(left), session_of(right)
    for frame in (left, right):
        engine = engine_for(frame)
        if not engine.in_memory or not isinstance(frame, pd.DataFrame):
            raise DPTypeError(
                "merge of two protected frames joins pandas DataFrames, got a "
                f"{engine.name} {type(frame).__name__}"
            )
    if sessions[0].root is not sessions[1].root:
        raise DPValueError(
            "the two frames are protected by different sessions, that is two budgets: a "
            "release from their join would spend one and not the other, while reading both "
            "tables. Protect the second table into the first one's budget with "
            "right.dp.protect(session=left.dp.session, ...) and join those"
        )
    if how != "inner":
        raise DPValueError(
            f"how={how!r} is refused for two protected frames: a left (right, outer) join keeps "
            "rows without a match, and whether a row has one is private to the other table "
            "(it also decides the dtypes of the filled columns); use how='inner'"
        )
    if validate not in (None, "many_to_many", "m:m"):
        raise DPValueError(
            f"validate={validate!r}: checking that either protected side's keys are unique "
            "would read the data; leave validate out"
        )
    keys = _keys(on, left, right)
    targets = resolve(left), resolve(right)  # fails closed: duplicated rows, a missing unit
    session, other = targets[0].session, targets[1].session
    unit = session.unit.column
    if unit is not None:
        if unit not in keys:
            raise DPValueError(
                f"under the privacy unit {unit!r} a join of two protected tables must be on it "
                f"(on=[{unit!r}, ...]): a join on other keys would make rows that belong to two "
                "people at once. Join on the unit, or aggregate one side per unit first "
                "(private joins on other keys, max_rows_per_key, are for row-level sessions)"
            )
        if max_rows_per_key is not None:
            raise DPValueError(
                "max_rows_per_key truncates a row-level private join; under a privacy unit "
                "every release caps each unit's rows (max_rows_per_unit), so leave it out"
            )
        return _on_unit(left, right, keys, session, other, suffixes)
    if max_rows_per_key is None:
        raise DPValueError(
            f"a join of two protected tables on {key_names(keys)} needs max_rows_per_key=m: one "
            "row's key may match any number of the other table's rows, so without a bound "
            "one person could move a release by any amount. Each side keeps at most m rows "
            "per key (chosen at random), and later releases are calibrated to 2·m per row"
        )
    m = positive_int(max_rows_per_key, "max_rows_per_key")
    return _private(left, right, keys, session, other, suffixes, m)


def _keys(on: object, left: pd.DataFrame, right: pd.DataFrame) -> list[Hashable]:
    keys: list[Hashable] = list(on) if isinstance(on, list | tuple) else [on]
    if not keys:
        raise DPValueError("merge needs on=<the key column(s)>")
    if len(set(keys)) != len(keys):
        raise DPValueError(f"merge keys repeat: {keys}")
    for key in keys:
        for side, columns in (("left frame", left.columns), ("right frame", right.columns)):
            if key not in columns:
                hint = did_you_mean(key, list(columns))
                raise DPKeyError(f"merge key {key!r} is not a column of the {side}{hint}")
    return keys


def _on_unit(
    left: pd.DataFrame,
    right: pd.DataFrame,
    keys: list[Hashable],
    session: Session,
    other: Session,
    suffixes: tuple[str, str],
) -> pd.DataFrame:
    """The join on the privacy unit: a view capped at ``k_left · k_right`` rows per unit."""
    unit, theirs = session.unit.column, other.unit.column
    if unit != theirs:
        raise DPValueError(
            f"the two tables hold the privacy unit in columns named differently ({unit!r} and "
            f"{theirs!r}); protect one of them with its id column renamed, then merge on it"
        )
    assert unit is not None
    left_codes, right_codes = _codes(left, right, keys, unit)
    for frame, codes, own in ((left, left_codes, session), (right, right_codes, other)):
        if own.unit_ids is not None:  # a row whose id was not pinned belongs to no one
            codes[own.unit_ids.lookup(frame[unit]) < 0] = -1
    result = _joined(left, right, keys, left_codes, right_codes, suffixes)
    cap = session.unit.max_rows * other.unit.max_rows
    step = (
        f"merge on {key_names(keys)}: ≤ {session.unit.max_rows}·{other.unit.max_rows} rows per unit"
    )
    lineage = Lineage(
        1,
        tuple(dict.fromkeys((*session.lineage.steps, *other.lineage.steps, step))),
        session.lineage.tables | other.lineage.tables,
    )
    view = session.root.view(
        lineage=lineage, guard=RowGuard(result.index, labels=False),
        unit=PrivacyUnit(unit, cap), unit_ids=session.unit_ids,
        columns=tuple(result.columns),
    )  # fmt: skip
    view.schema = None  # the tables' schemas name their own columns; give bounds per release
    return attach(result, view)


def _private(
    left: pd.DataFrame,
    right: pd.DataFrame,
    keys: list[Hashable],
    session: Session,
    other: Session,
    suffixes: tuple[str, str],
    m: int,
) -> pd.DataFrame:
    """The row-level private join, each side truncated to ``m`` rows per key."""
    left_codes, right_codes = _codes(left, right, keys, None)
    for codes in (left_codes, right_codes):
        _truncate(codes, session.priorities(len(codes)), m)
    result = _joined(left, right, keys, left_codes, right_codes, suffixes)
    step = f"private join on {key_names(keys)}: ≤ {m} rows per key on each side"
    lineage = private_join(session.lineage, other.lineage, m, step)
    view = session.root.view(
        lineage=lineage, guard=RowGuard(result.index), columns=tuple(result.columns),
    )  # fmt: skip
    view.schema = None
    return attach(result, view)


def _truncate(codes: I64, priority: np.ndarray, m: int) -> None:
    """Keep at most ``m`` rows per key code (the smallest priority words; others become -1).

    Which rows a key keeps depends on its own rows' priorities alone (each row's priority is
    drawn independently of the data): :func:`~pandas_dp.engines.bounding.below_cap`, the
    rule that caps a unit's rows.
    """
    rows = np.flatnonzero(codes >= 0)
    kept = below_cap(codes[rows], priority[rows], m)
    codes[rows[~kept]] = -1


def _codes(
    left: pd.DataFrame, right: pd.DataFrame, keys: list[Hashable], unit: Hashable | None
) -> tuple[I64, I64]:
    """Each row's key as a code shared by both sides (-1: a missing key, or no match).

    The left side's canonical keys are numbered (private, never released), and each right
    row is looked up among them by the matching every release uses.
    """

    def canonical(frame: pd.DataFrame) -> pd.DataFrame:
        columns = {
            i: (canonical_unit_ids(frame[key]) if key == unit else frame[key]).reset_index(
                drop=True
            )
            for i, key in enumerate(keys)
        }
        return pd.DataFrame(columns)

    positions = tuple(range(len(keys)))
    index, left_codes = observed_codes(canonical(left), positions)
    right_codes = public_codes(canonical(right), positions, index)
    return left_codes.copy(), right_codes.copy()


def _joined(
    left: pd.DataFrame,
    right: pd.DataFrame,
    keys: list[Hashable],
    left_codes: I64,
    right_codes: I64,
    suffixes: tuple[str, str],
) -> pd.DataFrame:
    """The inner join of the rows with codes >= 0, shaped as ``left.merge(right, on=keys)``."""
    top = int(max(left_codes.max(initial=-1), right_codes.max(initial=-1))) + 1
    order, bounds = grouped_order(right_codes, top)  # the right rows of each key, in order
    rows, positions = expand_rows(left_codes, order, bounds, "inner")
    values = right.drop(columns=keys)
    overlap = set(left.columns) & set(values.columns)
    head = left.iloc[rows].reset_index(drop=True)
    head = head.rename(columns={c: f"{c}{suffixes[0]}" for c in overlap})
    tail = values.iloc[positions].reset_index(drop=True)
    tail = tail.rename(columns={c: f"{c}{suffixes[1]}" for c in overlap})
    result = pd.concat([head, tail], axis=1)
    result.attrs = {}
    return result
