"""Public domains for tables and synthetic data: a workload of tables, each column's keys.

Shared by :mod:`.tables` and :mod:`.synthesize`. A column's domain is its public keys (an
argument or the session's schema, ``isin``) or, for a numeric column, public bin edges; never
the data. Everything here reads public inputs only and runs before the budget check.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd
from pandas._typing import DtypeObj
from pandas.api import types as ptypes

from pandas_dp.api.keys import check_key_types, parse_by, parse_keys
from pandas_dp.api.queries.counts import _parse_edges
from pandas_dp.api.release.types import Target
from pandas_dp.api.validation import check_column
from pandas_dp.errors import DPTypeError, DPValueError
from pandas_dp.measures.aggregates import Axis, Binning

#: The most cells one measured marginal may have (its noisy counts are held in memory).
MAX_CELLS = 10**7


@dataclass(frozen=True)
class Domains:
    """The columns of a release in order, with each one's axis and the Index of its keys."""

    columns: tuple[Hashable, ...]
    axes: tuple[Axis, ...]
    indexes: tuple[pd.Index, ...]
    sources: tuple[str, ...]  # where keys came from, for the ledger

    @property
    def sizes(self) -> tuple[int, ...]:
        """The number of keys (or bins) of each column."""
        return tuple(axis.size for axis in self.axes)

    def positions(self, table: Sequence[Hashable]) -> tuple[int, ...]:
        """The positions of a table's columns."""
        return tuple(self.columns.index(column) for column in table)

    def cells(self, clique: Sequence[int]) -> int:
        """The number of cells of the marginal over ``clique``."""
        return math.prod(self.sizes[i] for i in clique)


def parse_workload(workload: object) -> list[tuple[Hashable, ...]]:
    """The tables asked for: each a tuple of column labels (a single label is one column)."""
    if isinstance(workload, str | bytes | Mapping) or not isinstance(workload, Sequence):
        raise DPTypeError(
            "tables takes a list of tables, each a list of column names, e.g. "
            f"[['age', 'sex'], ['sex', 'region']]; got {type(workload).__name__}"
        )
    tables = [parse_by(list(t) if isinstance(t, list | tuple) else t) for t in workload]
    if not tables:
        raise DPValueError("the list of tables is empty; give at least one, e.g. [['sex']]")
    repeated = [t for i, t in enumerate(tables) if t in tables[:i]]
    if repeated:
        raise DPValueError(f"table {list(repeated[0])} is listed twice; list each table once")
    return tables


def parse_domains(
    target: Target, columns: Sequence[Hashable], keys: object, bins: object
) -> Domains:  # fmt: skip
    """Each column's public keys or bins: from ``keys``, ``bins`` or the schema's ``isin``."""
    keys = _mapping(keys, "keys")  # entries for columns no table uses are ignored
    bins = _mapping(bins, "bins")
    dtypes = dict(target.engine.dtypes(target.data).items())
    schema = target.session.schema
    axes: list[Axis] = []
    indexes: list[pd.Index] = []
    sources: list[str] = []
    for column in columns:
        check_column(
            target.engine,
            target.data,
            column,
            numeric=column in bins,
            known=target.session.columns,
        )
        if column in keys and column in bins:
            raise DPValueError(f"give {column!r} either keys or bins, not both")
        if column in bins:
            binning = Binning(_parse_edges(bins[column]))
            axes.append(Axis(column, (), binning))
            indexes.append(
                pd.IntervalIndex.from_breaks(list(binning.edges), closed="right", name=column)
            )
            continue
        values = keys.get(column)
        if values is None and schema is not None and schema.rules(column).keys:
            values = list(schema.rules(column).keys or ())
            sources.append(f"keys of {column} from the schema (isin)")
        if values is None:
            raise DPValueError(_missing(column, dtypes[column]))
        parsed = parse_keys((column,), values)
        assert parsed is not None
        domain = None if schema is None else schema.rules(column).keys
        check_key_types(parsed, [dtypes[column]], [domain])
        axes.append(Axis(column, tuple(parsed)))
        indexes.append(parsed)
    return Domains(tuple(columns), tuple(axes), tuple(indexes), tuple(sources))


def _mapping(value: object, name: str) -> dict[Hashable, object]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise DPTypeError(
            f"{name} must be a dict {{column: {'values' if name == 'keys' else 'edges'}}}, "
            f"got {type(value).__name__}"
        )
    return dict(value)


def _missing(column: Hashable, dtype: DtypeObj) -> str:
    numeric = ptypes.is_numeric_dtype(dtype) and not ptypes.is_bool_dtype(dtype)
    fix = (
        f"bins={{{column!r}: [edges]}} (public bin edges, e.g. [0, 18, 65, 120]) or "
        f"keys={{{column!r}: [values]}}"
        if numeric
        else f"keys={{{column!r}: [values]}} or a schema whose isin check lists them"
    )
    return (
        f"column {column!r} has no public keys: its values must not be read from the data. "
        f"Pass {fix}"
    )


def check_cells(domains: Domains, cliques: Sequence[Sequence[int]]) -> None:
    """Refuse marginals too large to hold (public: from the keys' sizes)."""
    for clique in cliques:
        if domains.cells(clique) > MAX_CELLS:
            names = " × ".join(str(domains.columns[i]) for i in clique)
            raise DPValueError(
                f"the table {names} has {domains.cells(clique):,} cells, more than "
                f"{MAX_CELLS:,}; use coarser keys or bins, or fewer columns per table"
            )
