"""``priv.dp.merge(public, on=...)``: enrich protected rows from a public lookup table.

A survey joined to its region names, a price list or a calendar before grouping. The
result stays protected by the same session, and every release from it keeps its
sensitivities, because the join is *stable*: each protected row becomes at most one row
(``how="inner"``) or exactly one row (``how="left"``) of the result, and the public side
adds only public values. That holds when the public table's keys are unique, which is
checked on the public table alone.

A key repeated on the public side (a one-to-many join) turns a row into as many rows as its
key has public rows, at most ``k``, the public table's largest key multiplicity (read off
the public table alone). Under row-level privacy the joined frame is a view of the session
whose *stability* is ``k`` (:mod:`pandas_dp.transformations.stability`): every later
release calibrates to ``k`` rows per protected row, and the row guard lets each protected
row's label appear up to ``k`` times (pandas frames; on Dask a one-to-many join needs a
unit, as the Dask lineage checks prove each row kept at most once only for unique keys).
Under a privacy unit the stability stays 1: every release caps each unit's rows
(``max_rows_per_unit``, ``max_groups_per_unit``, ``max_rows_per_group``) by the unit's id,
whatever the join made of them, as Tumult's truncation does; rows beyond the caps are
dropped at random, which costs accuracy, not privacy.

The rows are matched by the engine (:meth:`~pandas_dp.engines.Engine.lookup_join`, the
one function :func:`~pandas_dp.engines.lookup.join_rows` on a pandas frame or on each
partition of a Dask collection), not by ``pandas.merge`` nor Dask's hash join: each
protected row's key is looked up among the public keys by the canonical forms group keys
use (``1``, ``1.0`` and ``True`` are one key; ``-0.0`` is ``0.0``; a missing key matches
nothing), in a unique index, so no row can match twice whatever its value. The result is
shaped as ``df.merge(public, on=..., how=...)`` shapes it: the protected columns, then the
public ones (overlapping names with ``suffixes``), the protected rows' order; but each row
keeps its index label, where pandas numbers the result afresh: the labels are how
pandas-dp tells that no row was repeated (``reset_index(drop=True)`` on pandas' side gives
the same frame when nothing was dropped). With ``how="left"`` the public columns always
have the dtypes pandas gives them when some row has no match (``int64`` becomes
``float64``, ``bool`` becomes ``object``), where pandas keeps the narrow dtype when every
row matches: whether every row matches is private, and the dtype decides the lattice and
type of later releases, so it is read off the public table alone.

On Dask the result is a ``map_partitions`` of that function, which the lineage checks of
every later release recognise by the function and its public
:class:`~pandas_dp.engines.lookup.Lookup`: a join whose public keys are unique keeps each
row at most once (row level), and a join that neither renames the privacy-unit column nor
writes a public column under its name keeps each row's unit id (under a unit).

Right and outer joins and checks on the protected side are refused, with the reason. A
protected frame on the right is joined by :mod:`pandas_dp.api.queries.joins`.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import pandas as pd

from pandas_dp.api.attach import attach, session_of
from pandas_dp.api.release import resolve
from pandas_dp.api.validation import did_you_mean
from pandas_dp.engines import engine_for
from pandas_dp.engines.lookup import Lookup
from pandas_dp.errors import DPKeyError, DPTypeError, DPValueError, NotProtectedError

_VALIDATE = {None, "many_to_one", "m:1", "many_to_many", "m:m"}


def merge(
    frame: pd.DataFrame,
    public: pd.DataFrame,
    on: Hashable | Sequence[Hashable],
    how: str,
    validate: str | None,
    suffixes: tuple[str, str],
) -> pd.DataFrame:
    """The protected ``frame`` joined to ``public`` on ``on`` (see the accessor)."""
    session = session_of(frame)  # fails closed: no session (reads the attrs only)
    engine = engine_for(frame)  # the collection's type: public
    resolve(frame)  # fails closed: duplicated rows, a missing unit, a bad lineage
    keys = _keys(on, engine.columns(frame), public)
    _check_options(how, validate, public)
    lookup = Lookup.from_public(public, keys, how, suffixes)  # the public table alone
    if lookup.missing:
        raise DPValueError(
            f"the public table has missing keys in {keys}: a missing key matches nothing; "
            "drop those rows from the public table"
        )
    if lookup.repeats and validate in ("many_to_one", "m:1"):
        raise DPValueError(
            f"validate={validate!r}: the public table's keys {keys} repeat (checked on the "
            "public table alone)"
        )
    view = None
    if lookup.repeats and session.unit.column is None:
        if not engine.in_memory:
            raise DPValueError(
                f"the public table's keys {keys} repeat: on {engine.name}, a one-to-many "
                "join needs a privacy unit (privacy_unit='<id column>', max_rows_per_unit=k), "
                "whose caps bound each unit's rows; without one, make the public keys unique "
                "(drop_duplicates), or join a pandas frame, where the result carries the "
                "join's stability"
            )
        # One protected row becomes at most k rows, k read off the public table alone.
        k = lookup.multiplicity
        step = f"merge on {key_names(keys)}: a key matches ≤ {k} public rows"
        guard = None if session.guard is None else session.guard.allowing(k)
        view = session.view(lineage=session.lineage.then(k, step), guard=guard)
    _check_names(lookup, list(engine.columns(frame)))
    # The engine joins the rows (the whole frame in memory, each partition on Dask); the
    # result derives from the protected frame, so it carries the same session.
    result = engine.lookup_join(frame, lookup)
    assert session_of(result) is session
    return result if view is None else attach(result, view)


def key_names(keys: list[Hashable]) -> str:
    """The key columns as the ledger names them: ``'code'`` or ``['code', 'day']``."""
    return repr(keys[0]) if len(keys) == 1 else repr(keys)


def _check_names(lookup: Lookup, columns: list[Hashable]) -> None:
    """Refuse suffixes that would give two result columns one name (as pandas refuses)."""
    names = lookup.output_columns(columns)
    public = list(lookup.values.columns)
    if len(set(public)) == len(public) and len(set(names)) != len(names):
        repeated = sorted({str(n) for n in names if names.count(n) > 1})
        raise DPValueError(
            f"suffixes={lookup.suffixes!r} give several result columns the name(s) "
            f"{repeated}; choose suffixes that keep the names apart"
        )


def _keys(on: object, columns: pd.Index, public: pd.DataFrame) -> list[Hashable]:
    if not isinstance(public, pd.DataFrame):
        raise DPTypeError(f"merge joins a public pandas DataFrame, got {type(public).__name__}")
    try:
        session_of(public)
    except NotProtectedError:
        pass
    else:
        raise DPValueError(  # the accessor sends protected right sides to joins.py
            "the right side of merge is protected: join it with priv.dp.merge(right, ...), "
            "which joins two protected tables of one budget"
        )
    keys = list(on) if isinstance(on, list | tuple) else [on]
    if not keys:
        raise DPValueError("merge needs on=<the key column(s)>")
    for key in keys:
        for side, names in (("protected frame", columns), ("public table", public.columns)):
            if key not in names:
                hint = did_you_mean(key, list(names))
                raise DPKeyError(f"merge key {key!r} is not a column of the {side}{hint}")
    return keys


def _check_options(how: str, validate: str | None, public: pd.DataFrame) -> None:
    if how in ("right", "outer", "cross"):
        raise DPValueError(
            f"how={how!r} is refused: it adds a row for every public key without a match, "
            "and whether a key has one is private; use how='inner' or how='left' and take "
            "the public keys as group-by keys instead"
        )
    if how not in ("inner", "left"):
        raise DPValueError(f"how must be 'inner' or 'left', got {how!r}")
    if validate not in _VALIDATE:
        raise DPValueError(
            f"validate={validate!r}: merge checks 'many_to_one' (the public keys are unique, "
            "checked on the public table alone) or 'many_to_many' (nothing); checking that "
            "the protected side's keys are unique ('one_to_one', 'one_to_many') would read "
            "the data"
        )
