"""``priv.dp.explode`` and ``priv.dp.melt``: reshapes that turn one protected row into several.

pandas' own ``df.explode(column)`` and ``df.melt(...)`` keep the session, and the row guard
refuses what they return under row-level privacy: one person may now sit in several rows, and
nothing says in how many. These two say it, from public inputs only, so that every later
release is calibrated to it (:mod:`pandas_dp.transformations.stability`):

- ``explode(column, max_items=c)`` keeps at most ``c`` items of each row's list, the *first*
  ``c`` in the list's own iteration order: a rule that reads that row alone, deterministic,
  and bounded in time (at most ``c`` items are read, whatever the value holds). One protected
  row becomes at most ``c`` rows: stability ``c``. An empty list or a missing value is one row
  holding a missing value, as pandas makes it. With several columns, pandas raises when a
  row's lists differ in length; here the shorter ones are padded with missing values (a rule
  that reads that row only): a refusal that depended on one row's values would tell about it.
- ``melt(id_vars, value_vars=[v columns])`` makes each row exactly ``v`` rows: stability
  ``v``, ``v`` the length of the public list ``value_vars`` (which is therefore required).

Under row-level privacy the result is protected by a *view* of the session (one budget) whose
lineage records the step and whose row guard allows each protected label that many times;
with a fresh index (``ignore_index=True``, pandas' default for ``melt``) the guard records the
reshaped frame's own index instead, so that a later duplication of the reshaped rows is still
refused, while the lineage keeps the stability. Under a privacy unit the unit column is
carried to every derived row and every release caps each unit's rows by its id, so nothing
is multiplied; the unit column may therefore not be exploded, and ``melt`` must keep it among
``id_vars``.

The result is shaped as pandas shapes it (columns, row order, the repeated index labels),
with two differences, both because a schema read off the rows would tell about them (and
decides what later releases accept): an exploded object column is always of dtype ``object``
(pandas 3 infers ``str`` or ``datetime64`` when every item happens to be one), and an index
pandas would keep as a ``RangeIndex`` when no row happened to repeat is always materialised
as integers. Pandas frames only: on Dask, explode or melt before protecting.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from itertools import islice
from typing import Any

import numpy as np
import pandas as pd
from pandas.api.types import is_list_like

from pandas_dp.api.attach import attach, session_of
from pandas_dp.api.queries.merge import key_names
from pandas_dp.api.release import resolve
from pandas_dp.api.rowguard import RowGuard
from pandas_dp.api.session import Session
from pandas_dp.api.validation import did_you_mean
from pandas_dp.engines import engine_for
from pandas_dp.engines.lookup import materialised_index
from pandas_dp.errors import DPKeyError, DPTypeError, DPValueError
from pandas_dp.units import positive_int


def explode(
    frame: pd.DataFrame,
    column: Hashable | Sequence[Hashable],
    max_items: object,
    ignore_index: bool,
) -> pd.DataFrame:
    """``frame.explode(column)`` keeping the first ``max_items`` items of each row (see above)."""
    session = _pandas_session(frame, "explode")
    columns = _columns(column, frame, "explode")
    if max_items is None:
        raise DPValueError(
            "explode needs max_items=c, a public bound on the items kept per row: one protected "
            "row becomes up to c rows, so every later release's sensitivity is multiplied by c "
            "(read off the data, the longest list would itself leak). Pick c from what you "
            "know of the data's source (e.g. the form allowed at most 5 answers); rows with "
            "more items keep their first c"
        )
    c = positive_int(max_items, "max_items")
    unit = session.unit.column
    if unit is not None and unit in columns:
        raise DPValueError(
            f"explode would explode the privacy-unit column {unit!r}: its items would become "
            "ids of their own, and rows would lose who they belong to. Explode another column"
        )
    if not isinstance(ignore_index, bool):
        raise DPTypeError(f"ignore_index must be True or False, got {ignore_index!r}")
    truncated = frame.copy(deep=False)
    for name in columns:
        dtype = frame[name].dtype
        if _arrow_list(dtype):
            raise DPTypeError(
                f"column {name!r} has dtype {dtype}: explode keeps at most max_items items of "
                "each row's list in object columns; convert it first with "
                f"priv.astype({{{name!r}: object}})"
            )
    kept = [_first_items(frame[name], c) for name in columns]
    if len(kept) > 1:
        kept = _padded(kept)
    for name, values in zip(columns, kept, strict=True):
        truncated[name] = values
    result = truncated.explode(columns, ignore_index)
    for name in columns:  # pandas infers str or datetime64 when every item is one: the rows'
        if truncated[name].dtype == object:
            result[name] = result[name].astype(object)
    if not ignore_index:
        result = result.set_axis(materialised_index(result.index), axis=0)
    if unit is None:  # one protected row is ≤ c rows of the result
        step = f"explode {key_names(columns)} keeping ≤ {c} items per row"
        session = _reshaped(session, c, step, result.index if ignore_index else None)
    elif ignore_index:
        session = _relabelled(session, result.index)
    return attach(result, session)


def melt(
    frame: pd.DataFrame,
    id_vars: Hashable | Sequence[Hashable] | None,
    value_vars: Hashable | Sequence[Hashable] | None,
    var_name: Any,
    value_name: Any,
    ignore_index: bool,
) -> pd.DataFrame:
    """``frame.melt(...)`` with ``value_vars`` required: each row becomes ``v`` rows."""
    session = _pandas_session(frame, "melt")
    if value_vars is None:
        raise DPValueError(
            "melt needs value_vars=[...], the columns to melt: each protected row becomes one "
            "row per melted column, so their number v multiplies every later release's "
            "sensitivity; name them (pandas' default, every other column, is not taken)"
        )
    values = _columns(value_vars, frame, "melt", empty_ok=False)
    ids = [] if id_vars is None else _columns(id_vars, frame, "melt", empty_ok=True)
    unit = session.unit.column
    if unit is not None and unit not in ids:
        raise DPValueError(
            f"melt must keep the privacy-unit column {unit!r} among id_vars: without it the "
            f"melted rows would lose who they belong to. Pass id_vars=[{unit!r}, ...]"
        )
    if not isinstance(ignore_index, bool):
        raise DPTypeError(f"ignore_index must be True or False, got {ignore_index!r}")
    result = frame.melt(
        id_vars=ids,
        value_vars=values,
        var_name=var_name,
        value_name=value_name,
        ignore_index=ignore_index,
    )
    if not ignore_index:
        result = result.set_axis(materialised_index(result.index), axis=0)
    if unit is None:  # one protected row is exactly v rows of the result
        v = len(values)
        step = f"melt of {v} columns {key_names(values)}"
        session = _reshaped(session, v, step, result.index if ignore_index else None)
    elif ignore_index:
        session = _relabelled(session, result.index)
    return attach(result, session)


def _pandas_session(frame: Any, name: str) -> Session:
    """The frame's session, after the checks every release makes (fails closed)."""
    session_of(frame)  # no session: refused (reads the attrs only)
    engine = engine_for(frame)  # the collection's type: public
    if not engine.in_memory:
        raise DPTypeError(
            f"dp.{name} is for pandas frames; on {engine.name}, {name} before protecting, or "
            "protect a pandas frame (a Dask release cannot tell how many rows a step made "
            "of one row)"
        )
    if not isinstance(frame, pd.DataFrame):
        raise DPTypeError(f"dp.{name} is a DataFrame method, got a {type(frame).__name__}")
    return resolve(frame).session  # fails closed: duplicated rows, a missing unit


def _reshaped(session: Session, factor: int, step: str, fresh: pd.Index | None) -> Session:
    """The view of a frame in which each protected row became ≤ ``factor`` rows.

    With the protected labels repeated (``fresh`` None), the guard allows each ``factor``
    times; with a fresh index, the guard records that index (each label once), so that a
    later duplication of the reshaped rows is refused as any other.
    """
    guard = session.guard
    if guard is not None:
        guard = guard.allowing(factor) if fresh is None else RowGuard(fresh, labels=guard.labels)
    return session.view(lineage=session.lineage.then(factor, step), guard=guard)


def _relabelled(session: Session, fresh: pd.Index) -> Session:
    """Under a privacy unit, a fresh index: the guard's structural check reads it instead."""
    if session.guard is None:
        return session
    return session.view(guard=RowGuard(fresh, labels=session.guard.labels))


def _columns(
    given: Hashable | Sequence[Hashable], frame: pd.DataFrame, name: str, *, empty_ok: bool = False
) -> list[Hashable]:
    # as pandas: explode takes a tuple for one label (of MultiIndex columns), melt a list
    many = isinstance(given, list) or (name == "melt" and isinstance(given, tuple))
    columns = list(given) if many else [given]  # type: ignore[arg-type]
    if not columns and not empty_ok:
        raise DPValueError(f"{name} needs at least one column")
    for column in columns:
        if column not in frame.columns:
            hint = did_you_mean(column, list(frame.columns))
            raise DPKeyError(f"{column!r} is not a column of the protected frame{hint}")
    if name == "explode" and len(set(columns)) != len(columns):
        raise DPValueError(f"explode's columns must be unique, got {columns!r}")
    return columns


def _arrow_list(dtype: object) -> bool:
    """Whether ``dtype`` is a pyarrow list type (its own explode, not this module's cap)."""
    if not isinstance(dtype, pd.ArrowDtype):
        return False
    return str(dtype.pyarrow_dtype).split("<", 1)[0] in {"list", "large_list", "fixed_size_list"}


def _first_items(values: pd.Series, c: int) -> pd.Series:
    """Each row's list-like cut to its first ``c`` items (at most ``c`` read); others as they are.

    Built as an object array, never through ``Series.map``, whose result dtype would depend on
    what the rows hold (all scalars: ``int64``).
    """
    if values.dtype != object:
        return values
    source = values.to_numpy(dtype=object)
    out = np.empty(len(source), dtype=object)
    for i, value in enumerate(source):
        out[i] = _first(value, c)
    return pd.Series(out, index=values.index, name=values.name, dtype=object, copy=False)


def _first(value: object, c: int) -> object:
    """A list-like's first ``c`` items, anything else as it is (one row, as pandas keeps it).

    A list-like that fails to iterate becomes an empty list (one row holding a missing
    value): an error would tell about that one row.
    """
    if not is_list_like(value):
        return value
    try:
        return list(islice(value, c))  # type: ignore[call-overload]
    except Exception:
        return []


def _padded(kept: list[pd.Series]) -> list[pd.Series]:
    """The columns with each row's lists padded with missing values to the row's longest.

    pandas counts a row's items as its list's length, or 1 for a scalar, a missing value or
    an empty list, and raises when the columns disagree; here a disagreeing row's items are
    padded instead (a scalar becomes its own first item), reading that row only.
    """
    objects = [s.to_numpy(dtype=object) for s in kept]
    lengths = np.array([[_length(v) for v in column] for column in objects]).reshape(
        len(objects), -1
    )
    longest = lengths.max(axis=0) if len(lengths[0]) else lengths[0]
    padded = []
    for source, column, length in zip(kept, objects, lengths, strict=True):
        out = column.copy()
        for i in np.flatnonzero(length != longest):
            out[i] = _as_items(column[i]) + [np.nan] * int(longest[i] - length[i])
        padded.append(pd.Series(out, index=source.index, name=source.name, dtype=object))
    return padded


def _length(value: object) -> int:
    return max(len(value), 1) if isinstance(value, list) else 1


def _as_items(value: object) -> list[object]:
    if isinstance(value, list):
        return value if value else [np.nan]
    return [value]
