"""``protect``: the data owner's one call that puts a budget on a frame."""

from __future__ import annotations

import os
from collections.abc import Hashable
from typing import Any, Literal, TypeVar

import pandas as pd

from pandas_dp.accounting.composition import ACCOUNTANTS, Accounting
from pandas_dp.accounting.events import LedgerEntry
from pandas_dp.accounting.ledger_file import LedgerFile
from pandas_dp.api.attach import attach, has_session_mark
from pandas_dp.api.queries.unit_caps import released_cap
from pandas_dp.api.release.arguments import Real
from pandas_dp.api.rowguard import RowGuard
from pandas_dp.api.session import Session, random_source
from pandas_dp.api.unit_ids import UnitIds
from pandas_dp.api.validation import did_you_mean
from pandas_dp.budget import AnyBudget, Budget
from pandas_dp.engines import Engine, engine_for
from pandas_dp.errors import DPKeyError, DPTypeError, DPValueError
from pandas_dp.optional import require
from pandas_dp.schema import read_schema, validate_sanitised
from pandas_dp.units import PrivacyUnit

PandasObj = TypeVar("PandasObj", pd.DataFrame, pd.Series)


def protect(
    obj: PandasObj,
    epsilon: Real | None = None,
    delta: Real = 0,
    *,
    rho: Real | None = None,
    accounting: str = "basic",
    rng: int | None = None,
    replace: bool = False,
    privacy_unit: Hashable | None = None,
    max_rows_per_unit: int | Literal["auto"] | None = None,
    schema: object = None,
    validate: bool = True,
    ledger: str | os.PathLike[str] | None = None,
    session: Session | None = None,
    name: str | None = None,
) -> PandasObj:
    """Return a protected copy of ``obj`` that carries a new session with the given budget.

    With ``session``, ``obj`` becomes another table of that session's budget instead (see
    :func:`_join_session`). See :meth:`pandas_dp.api.accessors.DataFrameDPAccessor.protect`.
    """
    if name is not None and (not isinstance(name, str) or not name):
        raise DPTypeError(f"name must be a non-empty str, got {name!r}")
    if session is not None:
        budget = {
            "epsilon": epsilon, "delta": delta or None, "rho": rho, "rng": rng, "ledger": ledger,
            "accounting": None if accounting == "basic" else accounting,
        }  # fmt: skip
        given = [label for label, value in budget.items() if value is not None]
        if given:
            raise DPValueError(
                f"protect(session=...) adds a table to that session's budget, so it takes no "
                f"budget of its own; drop {', '.join(given)} (the session's total, accounting, "
                "ledger and randomness apply to every table)"
            )
        if not (max_rows_per_unit is None or isinstance(max_rows_per_unit, int)):
            raise DPValueError(
                "a table added to a session takes max_rows_per_unit=k (an int): "
                "max_rows_per_unit='auto' spends a share of a new budget, at its protect"
            )
        return _join_session(
            obj, session, name, replace=replace, privacy_unit=privacy_unit,
            max_rows_per_unit=max_rows_per_unit, schema=schema, validate=validate,
        )  # fmt: skip
    if not isinstance(replace, bool):
        raise DPTypeError(f"replace must be True or False, got {type(replace).__name__}")
    resuming = ledger is not None and epsilon is None and rho is None
    total = None if resuming else _total(epsilon, delta, rho, accounting)
    if not isinstance(validate, bool):
        raise DPTypeError(f"validate must be True or False, got {type(validate).__name__}")
    rules = None if schema is None else read_schema(schema)
    auto_cap = isinstance(max_rows_per_unit, str) and max_rows_per_unit == "auto"
    unit = PrivacyUnit.of(privacy_unit, 1 if auto_cap else max_rows_per_unit)
    engine = engine_for(obj)
    if auto_cap and (unit.column is None or not engine.in_memory or resuming):
        raise DPValueError(
            "max_rows_per_unit='auto' releases the cap from a pandas frame under a privacy "
            "unit, at protect (a share of the new budget): give privacy_unit='<id column>', "
            "a pandas DataFrame and a budget; otherwise give max_rows_per_unit=k"
        )
    if unit.column is not None:
        if engine.is_series(obj):
            raise DPValueError("privacy_unit needs a DataFrame that holds the unit column")
        columns = list(engine.columns(obj))
        if unit.column not in columns:
            hint = did_you_mean(unit.column, columns)
            raise DPKeyError(f"privacy_unit column {unit.column!r} not found in this frame{hint}")
    if has_session_mark(obj) and not replace:
        raise DPValueError(
            "this object is already protected (or derived from a protected one); protecting it "
            "again would start a second, independent budget. Keep using its session "
            "(obj.dp.session), or, if you are the data owner and mean to start over, pass "
            "replace=True."
        )
    if unit.is_rows and engine.in_memory and not obj.index.is_unique:
        raise DPValueError(
            "the index has repeated labels, so pandas-dp could not tell later whether rows were "
            "duplicated. Protect df.reset_index(drop=True) instead."
        )
    # Under a unit, the ids present now are recorded: a release drops rows with made-up ids.
    pinned = None
    if unit.column is not None and engine.in_memory:
        assert isinstance(obj, pd.DataFrame)  # a unit needs a frame (checked above)
        pinned = UnitIds.pin(obj, unit.column)
    if schema is not None and validate:
        if not engine.in_memory:
            raise DPValueError(
                f"validating a {engine.name} frame against a schema is not yet supported; "
                "pass validate=False (values are then clipped to the schema's bounds at each "
                "release) or validate the data before protecting it"
            )
        obj = validate_sanitised(schema, obj)  # pandera's copy keeps the caller's frame intact
    store: LedgerFile | None = None
    entries: tuple[LedgerEntry, ...] = ()
    if ledger is not None:
        store, total, accounting, entries = open_ledger(ledger, total, accounting)
    assert total is not None
    source = random_source(rng)
    # With a unit column the library caps each unit's rows itself, so duplicated rows are
    # harmless: only the structural check of the index applies.
    guard = RowGuard(engine.index(obj), labels=unit.is_rows)
    session = Session(
        total, source=source, guard=guard, unit=unit, accounting=accounting, schema=rules,
        ledger=store, entries=entries, unit_ids=pinned, columns=_labels(engine, obj),
    )  # fmt: skip
    if name is not None:
        session.table_names[session.id] = name
    protected: PandasObj = attach(obj, session)
    session.origin = engine.origin_of(protected)  # what lineage checks trace back to
    if auto_cap:  # the session's first release: the cap, by a private quantile
        assert isinstance(protected, pd.DataFrame)
        session.unit = PrivacyUnit(unit.column, released_cap(protected, session))
    return protected


def _join_session(
    obj: PandasObj,
    session: object,
    name: str | None,
    *,
    replace: bool,
    privacy_unit: Hashable | None,
    max_rows_per_unit: int | None,
    schema: object,
    validate: bool,
) -> PandasObj:
    """``obj`` protected as another table of ``session``'s budget (pandas frames).

    Several tables about the same people share one budget: every release from any of them
    (or from a join of them) is charged to it. The privacy unit is the session's: under a
    unit, neighbours differ in every row of one unit *in every table* (the same canonical
    id is the same person in each table, whatever the column's name); under row-level
    privacy, in one row of one table. So a table takes a unit exactly when the session has
    one; its own ``max_rows_per_unit`` caps a unit's rows in releases from it.
    """
    if not isinstance(session, Session):
        raise DPTypeError(
            f"session must be a protected frame's session (priv.dp.session), got "
            f"{type(session).__name__}"
        )
    if not isinstance(replace, bool):
        raise DPTypeError(f"replace must be True or False, got {type(replace).__name__}")
    if not isinstance(validate, bool):
        raise DPTypeError(f"validate must be True or False, got {type(validate).__name__}")
    root = session.root
    engine = engine_for(obj)
    if not engine.in_memory or engine.is_series(obj):
        raise DPTypeError(
            "protect(session=...) adds a pandas DataFrame to a session; protect a "
            f"{engine.name} {'Series' if engine.is_series(obj) else 'frame'} on its own, or "
            "the pandas frame"
        )
    assert isinstance(obj, pd.DataFrame)
    unit = PrivacyUnit.of(privacy_unit, max_rows_per_unit)
    if unit.is_rows != root.unit.is_rows:
        if unit.is_rows:
            raise DPValueError(
                f"this session protects units ({root.unit.column!r}): every table of its "
                "budget must say which column holds the same people's ids; pass "
                "privacy_unit='<id column>', max_rows_per_unit=k"
            )
        raise DPValueError(
            "this session protects rows (one row per person), so another table of its "
            "budget does too (neighbours differ in one row of one table); drop privacy_unit "
            "and max_rows_per_unit, or protect both tables with a privacy unit"
        )
    if unit.column is not None and unit.column not in obj.columns:
        hint = did_you_mean(unit.column, list(obj.columns))
        raise DPKeyError(f"privacy_unit column {unit.column!r} not found in this frame{hint}")
    if name is not None and name in root.table_names.values():
        raise DPValueError(f"this session already has a table named {name!r}; pick another name")
    if has_session_mark(obj) and not replace:
        raise DPValueError(
            "this object is already protected (or derived from a protected one); add the raw "
            "frame to the session, or pass replace=True if you are the data owner"
        )
    if unit.is_rows and not obj.index.is_unique:
        raise DPValueError(
            "the index has repeated labels, so pandas-dp could not tell later whether rows were "
            "duplicated. Protect df.reset_index(drop=True) instead."
        )
    rules = None if schema is None else read_schema(schema)
    if schema is not None and validate:
        obj = validate_sanitised(schema, obj)
    pinned = None if unit.column is None else UnitIds.pin(obj, unit.column)
    table = root.view(
        table=True, name=name, guard=RowGuard(obj.index, labels=unit.is_rows), unit=unit,
        unit_ids=pinned, columns=tuple(obj.columns), schema=rules,
    )  # fmt: skip
    if rules is None:
        table.schema = None  # the root's schema describes the root's columns only
    protected: PandasObj = attach(obj, table)
    return protected


def _labels(engine: Engine, obj: Any) -> tuple[Hashable, ...]:
    """The frame's column labels (a Series': its name), as protected."""
    if engine.is_series(obj):
        return (obj.name,)
    return tuple(engine.columns(obj))


def open_ledger(
    path: object, total: AnyBudget | None, accounting: str
) -> tuple[LedgerFile, AnyBudget, str, tuple[LedgerEntry, ...]]:
    """Create or resume a ledger file; returns it with its budget, rule and entries."""
    if not isinstance(path, str | os.PathLike):
        raise DPTypeError(f"ledger must be a file path, got {type(path).__name__}")
    store = LedgerFile(path)
    entries = tuple(store.open(total, accounting))
    assert store.total is not None
    if store.accounting == Accounting.PLD:  # a header's text, not yet checked
        require("dp_accounting", "pld")
    return store, store.total, store.accounting, entries


def _total(epsilon: object, delta: object, rho: object, accounting: object) -> AnyBudget:
    """Validate the budget and the accountant that goes with it."""
    if accounting not in ACCOUNTANTS:
        raise DPValueError(f"accounting must be one of {ACCOUNTANTS}, got {accounting!r}")
    rule = Accounting(accounting)
    if rho is not None:
        if epsilon is not None or delta != 0:
            raise DPValueError("give either epsilon (and delta) or rho, not both")
        if not rule.takes_rho:
            raise DPValueError("a rho budget is accounted by zCDP; leave accounting out")
        return Budget.of_rho(rho)
    if epsilon is None:  # a missing required argument is a TypeError in Python
        raise DPTypeError("protect needs a budget: epsilon=... (and delta=...), or rho=...")
    total = Budget.of(epsilon, delta)
    if rule.trades_delta and total.delta == 0:
        raise DPValueError(
            f"accounting={accounting!r} trades a little δ for a smaller ε, so it needs a budget "
            "with delta > 0 (e.g. delta=1e-6); a pure ε budget composes by simple addition"
        )
    if rule.extra is not None:
        require("dp_accounting", rule.extra)
    return total
