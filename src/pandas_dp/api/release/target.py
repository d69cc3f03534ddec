"""Resolve what a query runs on: the live session, the trusted rows and the engine."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import pandas as pd

from pandas_dp.api.attach import session_of
from pandas_dp.api.release.types import Target
from pandas_dp.api.session import Session
from pandas_dp.api.unit_ids import PINNED
from pandas_dp.engines import Engine, engine_for
from pandas_dp.errors import DuplicatedRowsError, NotProtectedError
from pandas_dp.marks import ATTRS_KEY

#: Name given to a Series' values when it has no name of its own.
SERIES_COLUMN = "values"
#: The column that carries a Dask Series' values next to its unit ids (never a user's name).
_VALUES = "\x00pandas-dp values"
#: Why a frame without the unit column cannot be released under a unit.
_LACKS_UNIT = (
    "this frame lacks the privacy-unit column {unit!r}, and which unit a row belongs to is "
    "read from that column (index labels cannot tell: reset_index or set_axis renumber "
    "them), so the rows of one unit cannot be capped. Keep the column when selecting "
    "columns, e.g. priv[[..., {unit!r}]]"
)
#: Why an in-memory Series cannot be released under a unit.
_SERIES_UNDER_A_UNIT = (
    "this session protects units identified by column {unit!r}, which a Series does not "
    "carry, and its index labels cannot tell which unit a row belongs to (reset_index or "
    "set_axis renumber them), so the rows of one unit cannot be capped. Release from the "
    "DataFrame instead, e.g. priv.dp.sum({name!r}, ...), "
    "priv.dp.groupby({name!r}, keys=[...]).count(...) or "
    "priv.dp.histogram({name!r}, bins=[...], ...)"
)


def resolve(obj: pd.DataFrame | pd.Series) -> Target:
    """Find the live session of ``obj`` and check that its rows can be trusted.

    Raises
    ------
    NotProtectedError
        If ``obj`` carries no live session, or (under a privacy unit) lacks the unit column.
    DuplicatedRowsError
        If the session has a row guard and ``obj``'s rows may have been duplicated.
    """
    session = session_of(obj)
    engine = engine_for(obj)
    unit = session.unit.column
    if unit is None and not engine.in_memory:
        _check_rows(obj, session, engine)
    if unit is not None and not engine.in_memory and engine.is_series(obj):
        return _series_with_units(obj, session, unit, engine)
    if session.guard is not None:
        session.guard.check(engine.index(obj))
    if session.unit_ids is not None and engine.in_memory:  # each row's own pinned id
        assert unit is not None
        return _pinned(obj, session, unit, engine)
    if engine.is_series(obj):
        if unit is not None:
            raise NotProtectedError(_SERIES_UNDER_A_UNIT.format(unit=unit, name=obj.name))
        label: Any = obj.name
        name: Hashable = label if label is not None else SERIES_COLUMN
        return Target(session, engine.to_frame(obj, name), engine, column=name)
    if unit is not None and not engine.in_memory:
        _check_lineage(obj, session, unit, engine)
    if unit is not None and unit not in engine.columns(obj):
        raise NotProtectedError(_LACKS_UNIT.format(unit=unit))
    return Target(session, obj, engine, unit=unit)


def _pinned(obj: Any, session: Session, unit: Hashable, engine: Engine) -> Target:
    """An in-memory target whose rows carry the pinned number of their unit's id.

    Only a Series of the ids themselves says whose rows it holds; a frame must hold the
    unit column. Rows whose id was not pinned get no unit (-1) and are dropped.
    """
    assert session.unit_ids is not None
    column: Hashable | None = None
    if engine.is_series(obj):
        if obj.name != unit:
            raise NotProtectedError(_SERIES_UNDER_A_UNIT.format(unit=unit, name=obj.name))
        column, obj = unit, engine.to_frame(obj, unit)
    assert isinstance(obj, pd.DataFrame)  # in memory: a Series became its frame above
    if unit not in engine.columns(obj):
        raise NotProtectedError(_LACKS_UNIT.format(unit=unit))
    frame = obj.copy(deep=False)
    ids = session.unit_ids.lookup(frame[unit])
    frame[PINNED] = pd.arrays.IntegerArray(ids, ids < 0)  # -1: no unit, dropped
    return Target(session, frame, engine, column=column, unit=PINNED)


def _series_with_units(series: Any, session: Session, unit: Hashable, engine: Engine) -> Target:
    """A Dask Series under a unit, released from its frame: its values next to their ids.

    The Series must have been derived elementwise from a frame that holds the unit column
    (:meth:`~pandas_dp.engines.Engine.aligned_frame`): that frame then carries the
    values row by row (``assign``), and its own lineage is checked like any frame's.
    """
    own: Any = series.name
    column: Hashable = own if own is not None else SERIES_COLUMN
    base = engine.aligned_frame(series, unit)
    if base is None:
        raise NotProtectedError(
            f"this {engine.name} Series was derived from the protected frame by steps that do "
            f"not keep it row by row next to the privacy-unit column {unit!r} (a filter or "
            "reduction of the Series itself, or a frame without the unit column), so its rows' "
            "units cannot be capped. Filter the frame first and take the column last, e.g. "
            "priv[priv['x'] > 0]['x'], or release from the frame"
        )
    frame = base.assign(**{_VALUES: series})[[_VALUES, unit]]
    _check_lineage(frame, session, unit, engine)
    ids = PINNED if column == unit else unit  # a Series of the ids themselves: two columns
    frame = frame.rename(columns={_VALUES: column, unit: ids})
    return Target(session, frame, engine, column=column, unit=ids)


def _check_rows(obj: Any, session: Session, engine: Engine) -> None:
    """Refuse a collection whose rows a step after ``protect`` may have repeated.

    Row-level privacy on a collection out of memory: no labels to check, so its expression
    graph (the caller's code, public) is traced back to ``protect`` instead
    (:meth:`~pandas_dp.engines.Engine.duplicating_step`).
    """
    step = engine.duplicating_step(obj, _is_origin(session), session.origin)
    if step is not None:
        raise DuplicatedRowsError(
            f"this {engine.name} frame was derived from the protected one by a step ({step}) "
            "that may repeat rows (or replace them by aggregates), and with one row per person a "
            "repeated row counts one person twice. Derive frames with filters, column "
            "selection, assign, elementwise operations, sort_values, repartition, "
            "sample without replacement, or persist right after protect; or protect with "
            "privacy_unit='<id column>' and max_rows_per_unit=k (the caps then bound copies)"
        )


def _is_origin(session: Session) -> Callable[[Any], bool]:
    """Whether a meta frame's attrs mark ``session``'s own ``protect`` layer."""

    def is_origin(attrs: Any) -> bool:
        return attrs.get(ATTRS_KEY) is session.handle

    return is_origin


def _check_lineage(obj: Any, session: Session, unit: Hashable, engine: Engine) -> None:
    """Refuse a collection whose unit column a step after ``protect`` may have rewritten.

    Collections out of memory have no labels to pin ids to; their expression graph (the
    caller's code, public) is traced back to the ``protect`` layer instead
    (:meth:`~pandas_dp.engines.Engine.rewriting_step`).
    """
    step = engine.rewriting_step(obj, unit, _is_origin(session), session.origin)
    if step is not None:
        raise NotProtectedError(
            f"this {engine.name} frame was derived from the protected one by a step ({step}) that "
            f"may change the privacy-unit column {unit!r}, and the caps trust that column to "
            "hold the ids it held at protect. Derive frames with filters, column selection, "
            "assign/fillna/astype/rename of other columns, sort_values, repartition, concat "
            "of such frames, or persist right after protect; apply map_partitions and other "
            "steps before protect"
        )
