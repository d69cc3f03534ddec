"""Plan and run a release spec.

:func:`plan_release` previews every query on an *empty* frame with the spec's columns, so
it reads no data: costs, mechanisms, noise scales and error bounds come from public
parameters only. :func:`run_release` reads the data, protects it with a ledger file in the
output folder, previews every query again on the real frame, admits the whole set against
the budget at once (all-or-nothing), then releases the queries one by one. Each release is
charged -- written to the ledger with its output and fsynced -- before its file is written,
so a crash can only leave a charge without its file; a re-run then writes the file from the
ledger instead of releasing it again. Queries already in the ledger (same name and same
definition) are skipped unless ``force=True``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pandas as pd

import pandas_dp  # noqa: F401  (registers the .dp accessor)
from pandas_dp.accounting.accountant import Accountant
from pandas_dp.accounting.composition import composition_for
from pandas_dp.accounting.events import LedgerEntry, Release
from pandas_dp.accounting.ledger_file import read_ledger
from pandas_dp.api.outputs import output_from_json
from pandas_dp.api.release.consumers import Run
from pandas_dp.errors import (
    BudgetExceededError,
    DPError,
    DPKeyError,
    DPTypeError,
    DPValueError,
    SpecError,
)
from pandas_dp.optional import require
from pandas_dp.planning.statistics import STATISTICS
from pandas_dp.publish.checks import Problems, spec_keys
from pandas_dp.publish.files import as_table, write_outputs
from pandas_dp.publish.loader import read_spec_file
from pandas_dp.publish.model import Draft, QuerySpec, ReleaseSpec, draft_spec
from pandas_dp.publish.outcome import RELEASED_ON, PlannedQuery, ReleaseOutcome, ReleasePlan
from pandas_dp.publish.preflight import check_columns, check_extras, header_of
from pandas_dp.publish.report import write_report
from pandas_dp.publish.where.evaluation import evaluate
from pandas_dp.publish.where.language import check_types, parse_where

T = TypeVar("T")

LEDGER_NAME = "ledger.jsonl"
#: ``progress(query_number, query_count, query_name, stage)``; stages: "releasing",
#: "released in 1.2s", "released on 2026-11-24 20:42 UTC" (by an earlier run), "recovered
#: from the ledger".
Progress = Callable[[int, int, str, str], None]


# -- reading the data and calling the API --------------------------------------------------
def read_data(spec: ReleaseSpec) -> pd.DataFrame:
    """Read the spec's data file (CSV, or Parquet with ``pandas-dp[parquet]``)."""
    if not spec.data_path.exists():
        raise SpecError(f"data.path: no file at {spec.data_path}")
    if spec.data_format == "parquet":
        require("pyarrow", "parquet")
        return pd.read_parquet(spec.data_path)
    return pd.read_csv(spec.data_path)


def as_planned(data: pd.DataFrame, spec: ReleaseSpec) -> pd.DataFrame:
    """Read every summed or averaged column as float64, as the plan assumes.

    A CSV column's inferred dtype depends on its values (one missing income makes the column
    float, and a float column gets its own count of non-missing values), so without this the
    measurements -- and the ledger that lists them -- would depend on the data. Anything that
    is not a number counts as missing. Columns declared in the schema keep its dtype.

    A categorical column of a Parquet file is read as its values: its categories may come
    from the data, and the spec's author (who may be untrusted) must not be able to reach
    them through any release or message. The plan, on an empty frame, never sees them
    either.
    """
    declared = set()
    if spec.schema is not None:
        from pandas_dp.schema import read_schema

        declared = {label for label, _ in read_schema(spec.schema).columns}
    numeric = {
        column
        for query in spec.queries
        for column, how in [*query.aggs.values(), (query.weights, "weights")]
        if column is not None and reads_values(how) and column not in declared
    }
    converted = {
        column: pd.to_numeric(data[column], errors="coerce").astype(np.float64)
        for column in numeric
        if column in data.columns
    }
    converted.update(
        {
            str(column): data[column].astype(object)
            for column, dtype in data.dtypes.items()
            if isinstance(dtype, pd.CategoricalDtype)
            and column not in declared
            and column not in numeric
        }
    )
    return data.assign(**converted) if converted else data


def reads_values(how: str) -> bool:
    """Whether statistic ``how`` (or ``"weights"``) reads its column as numbers.

    Counts and distinct counts (``count``, ``size``, ``nunique``) take any hashable column
    as it is, as the Python API does; sums, means, spreads, quantiles and weights read numbers.
    """
    return how == "weights" or STATISTICS[how].reads_values


def _protect_options(spec: ReleaseSpec) -> dict[str, Any]:
    privacy = spec.privacy
    options: dict[str, Any] = {
        key: privacy[key] for key in ("epsilon", "delta", "rho", "accounting") if key in privacy
    }
    if "privacy_unit" in privacy:
        options["privacy_unit"] = privacy["privacy_unit"]
        options["max_rows_per_unit"] = privacy["max_rows_per_unit"]
    if spec.schema is not None:
        options["schema"] = spec.schema  # a Path: never read as YAML text
    return options


def _call(frame: pd.DataFrame, query: QuerySpec, previewing: bool) -> Any:
    """Release (or preview) one query through the public API."""
    named = {name: how if col is None else (col, how) for name, (col, how) in query.aggs.items()}
    options: dict[str, Any] = {
        **({"epsilon": query.epsilon} if query.rho is None else {"rho": query.rho}),
        "bounds": "auto" if query.auto_bounds else (query.bounds or None),
        "mechanism": query.mechanism,
        "fillna": query.fillna or None,
        "ci": query.ci,  # every statistic has an interval, medians included
        "weights": query.weights,
        "weight_bounds": query.weight_bounds,
    }
    if query.delta is not None:
        options["delta"] = query.delta
    # A release carries the query's tag to its ledger row in the consumer of its accessor.
    accessor: Any = frame.dp.preview if previewing else frame.dp._consuming(Run(tag=query.tag))
    if query.groupby:
        grouped = accessor.groupby(
            list(query.groupby), keys=spec_keys(query.keys),
            max_groups_per_unit=query.max_groups_per_unit,
            max_rows_per_group=query.max_rows_per_group, selection=query.selection,
        )  # fmt: skip
        return grouped.agg(**options, nonnegative=query.nonnegative, **named)
    if previewing:
        return accessor.agg(**options, **named)
    return accessor.agg(**options, nonnegative=query.nonnegative, **named)


def _filtered(priv: pd.DataFrame, query: QuerySpec) -> pd.DataFrame:
    """The rows the query's public ``where`` condition keeps (all rows without one)."""
    if query.where is None:
        return priv
    where = parse_where(query.where)  # validated when the spec was loaded
    try:
        check_types(where, dict(priv.dtypes.items()))  # column names and dtypes: public
    except SpecError as error:
        raise SpecError(f"where = {query.where!r}: {error}") from None
    return priv[evaluate(where, priv)]  # total: cannot fail on any value


def _in_query(query: QuerySpec, number: int, action: Callable[..., T], *args: object) -> T:
    """Run ``action(*args)``; prefix a pandas-dp error with the query it came from."""
    try:
        return action(*args)
    except DPError as error:
        raise type(error)(f"query[{number}] ({query.name}): {error}") from None


# -- planning ------------------------------------------------------------------------------
def planning_frame(spec: ReleaseSpec) -> pd.DataFrame:
    """An empty frame with every column the spec names.

    Dtypes from the schema where it declares one (the release reads those columns as
    declared: an integer column keeps the integer quantile grid), else from the keys, else
    float64 for the values a statistic reads (see :func:`as_planned`).
    """
    dtypes: dict[str, Any] = {}
    if spec.schema is not None:
        from pandas_dp.schema import read_schema

        for label, rules in read_schema(spec.schema).columns:
            if rules.dtype is not None:
                dtypes[str(label)] = rules.dtype
    read_as_values: set[str] = set()
    counted: set[str] = set()
    for query in spec.queries:
        keys = spec_keys(query.keys)
        for level, column in enumerate(query.groupby):
            if isinstance(keys, dict):
                values = list(keys.get(column, []))
            elif isinstance(keys, list) and len(query.groupby) > 1:
                values = [k[level] for k in keys if isinstance(k, tuple)]
            else:
                values = list(keys) if isinstance(keys, Iterable) else []  # (validated)
            dtypes.setdefault(column, pd.Index(values).dtype if values else object)
        for value_column, how in [*query.aggs.values(), (query.weights, "weights")]:
            if value_column is not None and reads_values(how):
                read_as_values.add(value_column)
            elif value_column is not None:
                counted.add(value_column)
    for column in read_as_values:  # a number as soon as one statistic reads its values
        dtypes.setdefault(column, np.float64)
    for column in counted:
        dtypes.setdefault(column, object)
    if "privacy_unit" in spec.privacy:
        dtypes.setdefault(spec.privacy["privacy_unit"], object)
    return pd.DataFrame({c: pd.Series([], dtype=d) for c, d in dtypes.items()})


def _tagged_entries(entries: tuple[LedgerEntry, ...]) -> dict[str, LedgerEntry]:
    """The latest ledger entry of every tag."""
    return {entry.release.tag: entry for entry in entries if entry.release.tag}


def _admit(
    spec: ReleaseSpec, accountant: Accountant, planned: list[PlannedQuery], force: bool
) -> ReleasePlan:
    pending = [p.preview.release for p in planned if force or not p.done]
    refusal = ""
    try:
        accountant.check_all([r for r in pending if r is not None])
    except BudgetExceededError as error:
        refusal = _over_budget([r for r in pending if r is not None], accountant, str(error))
    return ReleasePlan(
        spec, tuple(planned), accountant.total, accountant.spent,
        accountant.composition.name, refusal,
    )  # fmt: skip


def _over_budget(pending: list[Release], accountant: Accountant, reason: str) -> str:
    """The refusal, led by the planned total against the budget (in the session's unit)."""
    composition = accountant.composition
    planned, after = composition.start(), composition.start()
    for entry in accountant.entries:
        after = composition.add(after, entry.release)
    for release in pending:
        planned, after = composition.add(planned, release), composition.add(after, release)
    spent = f" ({composition.guarantee(after)} with the {accountant.spent} already spent)"
    return (
        f"the planned releases do not fit: together they need {composition.guarantee(planned)}"
        f"{spent if accountant.entries else ''} against the budget of {accountant.total}; "
        + reason.removeprefix("the planned releases do not fit: ")
    )


def plan_release(spec: ReleaseSpec, ledger: str | os.PathLike[str] | None = None) -> ReleasePlan:
    """Preview every query and check the whole release against the budget; reads no data.

    Column names are checked against the data file's header (public metadata) when the file
    is there. ``ledger``: an existing ledger whose releases count as spent (and as done).

    Raises
    ------
    SpecError
        Listing every column not in the header and every query the API refuses, and then
        the budget too if the queries it could price do not fit. Over budget alone, the
        plan is returned with its ``refusal``.
    """
    numbers = tuple(range(1, len(spec.queries) + 1))
    return _plan(Draft(spec, Problems(str(spec.path)), numbers, spec.queries), ledger)


def plan_spec_file(
    path: str | os.PathLike[str],
    *,
    data: str | os.PathLike[str] | None = None,
    ledger: str | os.PathLike[str] | None = None,
) -> ReleasePlan:
    """:func:`load_spec` and :func:`plan_release` in one pass: every problem listed at once.

    The spec's structure and values, its columns against the data's header, each query's
    preview and the budget are all checked before the one :class:`SpecError` is raised; a
    check is skipped only where it depends on a part already found broken (a query whose
    epsilon is broken is not priced; one whose bounds are missing is, as its price does not
    depend on them).
    """
    draft = draft_spec(read_spec_file(path), Path(path), None if data is None else Path(data))
    return _plan(draft, ledger)


def _plan(draft: Draft, ledger: str | os.PathLike[str] | None) -> ReleasePlan:
    spec, problems = draft.spec, draft.problems
    if not problems.under("data.path") and not problems.under("data.format"):
        check_columns(spec, header_of(spec), problems, draft.numbers)
    if not draft.budget_known:  # every preview needs the budget and the schema
        problems.raise_if_any()
    try:
        frame = planning_frame(spec).dp.protect(**_protect_options(spec), validate=False)
    except (DPValueError, DPTypeError, DPKeyError) as error:
        if not problems.items:
            raise
        problems.add("data.schema" if spec.schema is not None else "privacy", str(error))
        problems.raise_if_any()
    session = frame.dp.session
    entries: tuple[LedgerEntry, ...] = ()
    if ledger is not None and Path(ledger).exists():
        store, read = read_ledger(ledger)
        store.check_budget(session.total, session.accounting)
        entries = tuple(read)
    accountant = Accountant(
        session.total, composition_for(session.total, session.accounting), entries=entries
    )
    done = _tagged_entries(entries)
    planned, stand_ins, unpriced = [], [], []
    for number, query, pricing in zip(draft.numbers, spec.queries, draft.pricing, strict=True):
        preview = None
        if pricing is not None:
            try:
                preview = _call(frame, pricing, True)
            except (DPValueError, DPTypeError, DPKeyError) as error:  # SpecError included
                if pricing is query:  # a stand-in's refusal repeats a problem already listed
                    problems.add(f"query[{number}] ({query.name})", str(error))
            except DPError as error:
                raise type(error)(f"query[{number}] ({query.name}): {error}") from None
        if preview is None:
            unpriced.append(f"query[{number}]")
        elif pricing is query:
            planned.append(PlannedQuery(query, preview, done.get(query.tag)))
        elif preview.release is not None:
            stand_ins.append(preview.release)
    if not problems.items:
        return _admit(spec, accountant, planned, force=False)
    pending = [p.preview.release for p in planned if not p.done and p.preview.release is not None]
    try:
        accountant.check_all([*pending, *stand_ins])
    except BudgetExceededError as error:
        refusal = _over_budget([*pending, *stand_ins], accountant, str(error))
        if unpriced:
            refusal += f" (not counted, as what they spend is unknown: {', '.join(unpriced)})"
        problems.add(f"privacy.{'rho' if 'rho' in spec.privacy else 'epsilon'}", refusal)
    raise problems.error()


# -- running -------------------------------------------------------------------------------
def run_release(
    spec: ReleaseSpec,
    out_dir: str | os.PathLike[str],
    *,
    force: bool = False,
    charts: bool | None = None,
    progress: Progress | None = None,
) -> ReleaseOutcome:
    """Release every query of ``spec`` into ``out_dir`` (module docstring).

    Raises
    ------
    BudgetExceededError
        Before any query runs, if the pending queries do not all fit.
    """
    charts = check_extras(spec, charts)
    problems = Problems(str(spec.path))
    check_columns(spec, header_of(spec), problems)
    problems.raise_if_any()  # typos fail before anything is read or charged
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    data = as_planned(read_data(spec), spec)
    ledger_path = out / LEDGER_NAME
    existed = ledger_path.exists()
    priv = data.dp.protect(**_protect_options(spec), ledger=ledger_path)
    accountant = priv.dp.session.accountant
    done = _tagged_entries(accountant.entries)
    frames, planned = [], []
    for number, query in enumerate(spec.queries, start=1):
        frame = _in_query(query, number, _filtered, priv, query)
        frames.append(frame)
        preview = _in_query(query, number, _call, frame, query, True)
        planned.append(PlannedQuery(query, preview, done.get(query.tag)))
    plan = _admit(spec, accountant, planned, force)
    if not plan.fits:
        if not existed and not accountant.entries:  # leave no budget pinned by a refusal
            ledger_path.unlink()
            ledger_path.with_name(ledger_path.name + ".lock").unlink(missing_ok=True)
        raise BudgetExceededError(f"nothing was released: {plan.refusal}")
    outcome = ReleaseOutcome(plan, out, charts)
    try:
        for number, (item, frame) in enumerate(zip(planned, frames, strict=True), start=1):
            _release_one(item, frame, number, outcome, force, progress)
    finally:
        outcome.files.append(write_report(outcome, accountant))
    return outcome


#: The status of a query whose release was charged but failed (its ledger entry has no output).
FAILED = "charged but failed: no output to recover (release it again with --force, charged again)"


def _release_one(
    item: PlannedQuery, frame: pd.DataFrame, number: int, outcome: ReleaseOutcome,
    force: bool, progress: Progress | None,
) -> None:  # fmt: skip
    query, count, spec = item.query, len(outcome.plan.queries), outcome.plan.spec
    report = progress or (lambda *args: None)
    if item.entry is not None and item.entry.output is None and not force:
        # Charged, then failed after reading the data (a pandas-dp bug, reported then): the
        # charge stands and there is nothing to recover; only --force releases it again.
        outcome.status[query.name] = FAILED
        report(number, count, query.name, FAILED)
        return
    if item.entry is not None and not force:
        table = as_table(output_from_json(item.entry.output))
        missing = [f for f in spec.formats if not (outcome.out_dir / f"{query.name}.{f}").exists()]
        when = item.entry.time[:16].replace("T", " ")  # the charge's UTC time, from the ledger
        stage = "recovered from the ledger" if missing else f"{RELEASED_ON} {when} UTC"
        if missing:
            outcome.files += write_outputs(table, outcome.out_dir, query.name, tuple(missing))
    else:
        report(number, count, query.name, "releasing")
        started = time.perf_counter()
        result = _in_query(query, number, _call, frame, query, False)
        table = as_table(result)  # the charge is on disk: now the files may be written
        outcome.files += write_outputs(table, outcome.out_dir, query.name, spec.formats)
        stage = f"released in {time.perf_counter() - started:.1f}s"
    outcome.status[query.name] = stage.split(" in ")[0]
    outcome.outputs[query.name] = table
    report(number, count, query.name, stage)
