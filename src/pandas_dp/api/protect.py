"""``protect``: the data owner's one call that puts a budget on a frame."""

from __future__ import annotations

import os
from collections.abc import Hashable
from typing import Any, TypeVar

import pandas as pd

from pandas_dp.accounting.composition import ACCOUNTANTS, Accounting
from pandas_dp.accounting.events import LedgerEntry
from pandas_dp.accounting.ledger_file import LedgerFile
from pandas_dp.api.attach import attach, has_session_mark
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
    max_rows_per_unit: int | None = None,
    schema: object = None,
    validate: bool = True,
    ledger: str | os.PathLike[str] | None = None,
) -> PandasObj:
    """Return a protected copy of ``obj`` that carries a new session with the given budget.

    See :meth:`pandas_dp.api.accessors.DataFrameDPAccessor.protect`.
    """
    if not isinstance(replace, bool):
        raise DPTypeError(f"replace must be True or False, got {type(replace).__name__}")
    resuming = ledger is not None and epsilon is None and rho is None
    total = None if resuming else _total(epsilon, delta, rho, accounting)
    if not isinstance(validate, bool):
        raise DPTypeError(f"validate must be True or False, got {type(validate).__name__}")
    rules = None if schema is None else read_schema(schema)
    unit = PrivacyUnit.of(privacy_unit, max_rows_per_unit)
    engine = engine_for(obj)
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
    protected: PandasObj = attach(obj, session)
    session.origin = engine.origin_of(protected)  # what lineage checks trace back to
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
