"""``priv.dp.merge(public, on=...)``: enrich protected rows from a public lookup table.

A survey joined to its region names, a price list or a calendar before grouping. The
result stays protected by the same session, and every release from it keeps its
sensitivities, because the join is *stable*: each protected row becomes at most one row
(``how="inner"``) or exactly one row (``how="left"``) of the result, and the public side
adds only public values. That holds when the public table's keys are unique, which is
checked on the public table alone.

A key repeated on the public side (a one-to-many join) turns a row into as many rows as its
key has public rows. Under row-level privacy that is refused: it would multiply a person's
weight in every later release. Under a privacy unit it is allowed, as Tumult's truncation
does: every release caps each unit's rows (``max_rows_per_unit``, ``max_groups_per_unit``,
``max_rows_per_group``) by the unit's id, whatever a join made of them, so the
sensitivities stay those of the caps; rows beyond the caps are dropped at random, which
costs accuracy, not privacy.

The rows are matched here, not by ``pandas.merge``: each protected row's key is looked up
among the public keys by the canonical forms group keys use (``1``, ``1.0`` and ``True``
are one key; ``-0.0`` is ``0.0``; a missing key matches nothing), in a unique index, so no
row can match twice whatever its value. The result is shaped as ``df.merge(public, on=...,
how=...)`` shapes it: the protected columns, then the public ones (overlapping names with
``suffixes``), the protected rows' order; but each row keeps its index label, where pandas
numbers the result afresh: the labels are how pandas-dp tells that no row was repeated
(``reset_index(drop=True)`` on pandas' side gives the same frame when nothing was dropped).
The protected columns are not copied when every row is kept; each public column's values
are taken at the rows' public positions, directly from its array. With ``how="left"`` the
public columns always have the dtypes pandas gives them when some row has no match
(``int64`` becomes ``float64``, ``bool`` becomes ``object``), where pandas keeps the narrow
dtype when every row matches: whether every row matches is private, and the dtype decides
the lattice and type of later releases, so it is read off the public table alone.

Right and outer joins and checks on the protected side are refused, with the reason. A
protected frame on the right is joined by :mod:`pandas_dp.api.queries.joins`.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
import numpy.typing as npt
import pandas as pd
from pandas.api.extensions import ExtensionArray

from pandas_dp.api.attach import attach, session_of
from pandas_dp.api.release import resolve
from pandas_dp.api.validation import did_you_mean
from pandas_dp.engines import engine_for
from pandas_dp.engines.canonical import canonical_column
from pandas_dp.engines.codes import public_codes
from pandas_dp.errors import DPKeyError, DPTypeError, DPValueError, NotProtectedError

_VALIDATE = {None, "many_to_one", "m:1", "many_to_many", "m:m"}


#: Row positions and codes (int64 arrays of public positions).
I64 = npt.NDArray[np.int64]


def merge(
    frame: pd.DataFrame,
    public: pd.DataFrame,
    on: Hashable | Sequence[Hashable],
    how: str,
    validate: str | None,
    suffixes: tuple[str, str],
) -> pd.DataFrame:
    """The protected ``frame`` joined to ``public`` on ``on`` (see the accessor)."""
    session_of(frame)  # fails closed: no session (reads the attrs only)
    engine = engine_for(frame)  # the collection's type: public
    if not engine.in_memory:  # before resolve, whose checks are for releasable frames
        raise DPTypeError(
            f"merge is for pandas frames; on {engine.name}, map the public table's "
            "columns with ddf.assign(...) before protecting, or protect a pandas frame"
        )
    target = resolve(frame)  # fails closed: duplicated rows, a missing unit
    keys = _keys(on, frame, public)
    _check_options(how, validate, public)
    canonical = pd.DataFrame({key: canonical_column(public[key]) for key in keys})
    if canonical.isna().any().any():
        raise DPValueError(
            f"the public table has missing keys in {keys}: a missing key matches nothing; "
            "drop those rows from the public table"
        )
    repeated = bool(canonical.duplicated().any())  # the public table alone
    if repeated and validate in ("many_to_one", "m:1"):
        raise DPValueError(
            f"validate={validate!r}: the public table's keys {keys} repeat (checked on the "
            "public table alone)"
        )
    session = target.session
    if repeated and session.unit.column is None:
        # One protected row becomes at most k rows, k read off the public table alone.
        k = int(canonical.value_counts(sort=False).max())
        step = f"merge on {_names(keys)}: a key matches ≤ {k} public rows"
        guard = None if session.guard is None else session.guard.allowing(k)
        session = session.view(lineage=session.lineage.then(k, step), guard=guard)
    unique = canonical.drop_duplicates()
    index = (
        pd.Index(unique[keys[0]], name=keys[0])
        if len(keys) == 1
        else pd.MultiIndex.from_frame(unique)
    )
    codes = public_codes(frame, tuple(keys), index)  # each row's key among them, or -1
    if repeated:
        order, bounds = _matches(canonical, index)  # public rows of each key, in order
        rows, positions = _expand(codes, order, bounds, how)
        left = frame.iloc[rows]
    elif how == "inner":  # one public row per key: a filter, then a lookup
        matched = codes >= 0
        if matched.all():  # every row, as it is (no copy)
            left, positions = frame, codes
        else:
            rows = np.flatnonzero(matched)
            left, positions = frame.iloc[rows], codes[rows]
    else:  # every protected row, as it is
        left, positions = frame, codes
    if repeated or how == "inner":  # the rows kept (or repeated) depend on the matches
        left = left.set_axis(_labels(left.index), axis=0)
    values = public.drop(columns=keys).reset_index(drop=True)
    right = _looked_up(values, positions, how)
    result = _joined(left, right, keys, suffixes)
    return attach(result, session)


def _names(keys: list[Hashable]) -> str:
    """The key columns as the ledger names them: ``'code'`` or ``['code', 'day']``."""
    return repr(keys[0]) if len(keys) == 1 else repr(keys)


def _looked_up(
    values: pd.DataFrame, positions: I64, how: str
) -> list[tuple[Hashable, ExtensionArray]]:
    """Each public column's name and values at ``positions`` (-1: no public row).

    Each column's array is taken directly; a row without a public row gets a missing
    value, as ``pd.merge`` fills it. With ``how="left"`` every public column has the dtype
    pandas gives it when some row has no match (``int64`` becomes ``float64``, ``bool``
    ``object``), *whether or not* one has: whether a protected row has a match is private,
    so the dtype (and with it the lattice and type of every later release) is read off
    the public table alone (:func:`left_dtypes`).
    """
    # The narrowest signed integers that hold every position: less to read per column.
    narrow = positions.astype(np.min_scalar_type(-max(len(values), 1)))
    dtypes = left_dtypes(values) if how == "left" else values.dtypes
    columns: list[tuple[Hashable, ExtensionArray]] = []
    for j, name in enumerate(values.columns):
        source = values.iloc[:, j].astype(dtypes.iloc[j])
        columns.append((name, source.array.take(narrow, allow_fill=how == "left")))
    return columns


def _labels(index: pd.Index) -> pd.Index:
    """The kept rows' labels in an index type that does not depend on which rows were kept.

    pandas keeps a ``RangeIndex`` when the positions taken happen to be evenly spaced (every
    row, or every other one) and builds an integer ``Index`` otherwise; which rows match is
    private, so a ``RangeIndex`` is always materialised (same labels, same dtype).
    """
    if isinstance(index, pd.RangeIndex):
        return pd.Index(np.asarray(index, dtype=np.int64), name=index.name)
    return index


def left_dtypes(public: pd.DataFrame) -> pd.Series:
    """The dtypes of ``public``'s columns in a left join: those of a row with no match.

    What pandas' reindexing makes of each column when a label is missing, computed on the
    public table alone (one missing row): the same for every protected frame.
    """
    return public.iloc[:0].reindex(pd.RangeIndex(1)).dtypes


def _matches(canonical: pd.DataFrame, index: pd.Index) -> tuple[I64, I64]:
    """The public rows sorted by key (stable: in the table's order) and each key's bounds."""
    key_codes = np.asarray(
        index.get_indexer(
            pd.Index(canonical[canonical.columns[0]])
            if len(canonical.columns) == 1
            else pd.MultiIndex.from_frame(canonical)
        ),
        dtype=np.int64,
    )
    order = np.argsort(key_codes, kind="stable")
    return order, np.searchsorted(key_codes[order], np.arange(len(index) + 1))


def _expand(codes: I64, order: I64, bounds: I64, how: str) -> tuple[I64, I64]:
    """Which protected row each result row comes from, and its public row (-1: none).

    As ``pd.merge``: the protected rows in order, each followed by its matches in the public
    table's order; with ``how="left"`` a row without a match once, with no public row.
    Vectorised: one pass, whatever the number of rows.
    """
    matched = codes >= 0
    counts = np.diff(bounds)[np.maximum(codes, 0)] if len(bounds) > 1 else np.zeros_like(codes)
    sizes = np.where(matched, counts, 0 if how == "inner" else 1)
    rows = np.repeat(np.arange(len(codes)), sizes)
    offsets = np.arange(len(rows)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    code = codes[rows]
    positions = np.full(len(rows), -1, dtype=np.int64)
    hit = code >= 0
    positions[hit] = order[bounds[code[hit]] + offsets[hit]]
    return rows, positions


def _keys(on: object, frame: pd.DataFrame, public: pd.DataFrame) -> list[Hashable]:
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
        for side, columns in (("protected frame", frame.columns), ("public table", public.columns)):
            if key not in columns:
                hint = did_you_mean(key, list(columns))
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


def _joined(
    left: pd.DataFrame,
    right: list[tuple[Hashable, ExtensionArray]],
    keys: list[Hashable],
    suffixes: tuple[str, str],
) -> pd.DataFrame:
    """``left``'s columns then ``right``'s (name, values), named as ``pd.merge`` names them."""
    names = [name for name, _ in right]
    overlap = (set(left.columns) & set(names)) - set(keys)
    result = left.rename(columns={c: f"{c}{suffixes[0]}" for c in overlap})
    if result is left:
        result = left.copy(deep=False)
    for name, values in right:
        target = f"{name}{suffixes[1]}" if name in overlap else name
        if names.count(name) > 1:  # a repeated public column name: as setting both did
            raise ValueError(
                f"Cannot set a DataFrame with multiple columns to the single column {target}"
            )
        # the protected rows' own labels (see the module's note); the values are not copied
        result[target] = pd.Series(values, index=result.index, copy=False)
    return result
