"""Protected rows joined to a public lookup table, one row at a time (``priv.dp.merge``).

A :class:`Lookup` is built from the public table alone (its keys in canonical form, its
other columns, ``how`` and the suffixes); :func:`join_rows` joins one in-memory frame (the
whole frame on pandas, one partition on Dask) to it. What each output row holds depends on
one protected row and the public table only:

- each row's key is looked up among the public keys by the one canonical matching step
  (:func:`~pandas_dp.engines.codes.public_codes`: ``1``, ``1.0`` and ``True`` are one key,
  a missing key matches nothing), never by hashing raw values;
- with unique public keys (:attr:`Lookup.repeats` is False) each row becomes at most one
  row (``how="inner"``) or exactly one (``how="left"``); with repeated keys, one row per
  public row of its key, in the public table's order;
- the columns, their names and dtypes come from the public table and the protected frame's
  schema alone (``how="left"``: :func:`left_dtypes`, whether or not some row has no match);
- each row keeps its index label; a ``RangeIndex`` is materialised whenever rows may be
  dropped or repeated (whether it stays a range would tell which rows matched).

So the join is total and row-local, the same on every engine: the pandas engine calls
:func:`join_rows` on the frame, the Dask engine on each partition (a ``map_partitions`` of
this very function, which Dask lineage checks recognise by it and by its :class:`Lookup`).
"""

from __future__ import annotations

import importlib
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd
from pandas.api.extensions import ExtensionArray

from pandas_dp.engines.canonical import canonical_column
from pandas_dp.engines.codes import public_codes

#: pandas' counting sort, the one its own merge groups rows with (linear time); None in a
#: pandas without it, where numpy's stable sort does the same work.
groupsort_indexer = getattr(
    importlib.import_module("pandas._libs.algos"), "groupsort_indexer", None
)

#: Row positions and codes (int64 arrays of public positions).
I64 = npt.NDArray[np.int64]


@dataclass(frozen=True, eq=False)
class Lookup:
    """A public lookup table, ready to join protected rows (public inputs only).

    Build it with :meth:`from_public`. ``index`` holds the distinct canonical keys in the
    public table's order; ``values`` the public table's other columns (one row per public
    row, numbered from 0); ``order`` and ``bounds`` the public rows of each key.
    """

    keys: tuple[Hashable, ...]
    index: pd.Index
    values: pd.DataFrame
    order: I64
    bounds: I64
    how: str
    suffixes: tuple[str, str]
    missing: bool  # some public key is missing (it would match nothing)

    @classmethod
    def from_public(
        cls,
        public: pd.DataFrame,
        keys: Sequence[Hashable],
        how: str,
        suffixes: tuple[str, str],
    ) -> Lookup:
        """The lookup of ``public`` on ``keys`` (reads the public table only)."""
        keys = tuple(keys)
        canonical = pd.DataFrame({key: canonical_column(public[key]) for key in keys})
        missing = bool(canonical.isna().any().any())
        unique = canonical.drop_duplicates()
        index = (
            pd.Index(unique[keys[0]], name=keys[0])
            if len(keys) == 1
            else pd.MultiIndex.from_frame(unique)
        )
        order, bounds = _matches(canonical, index)
        values = public.drop(columns=list(keys)).reset_index(drop=True)
        return cls(keys, index, values, order, bounds, how, tuple(suffixes), missing)  # type: ignore[arg-type]

    @property
    def repeats(self) -> bool:
        """Whether some public key has several public rows (a one-to-many join).

        Read off the lookup's own arrays: :func:`join_rows` takes the one-row-per-key path
        exactly when this is False, so a join of a lookup that does not repeat provably
        keeps each protected row at most once.
        """
        return len(self.index) != len(self.values)

    @property
    def multiplicity(self) -> int:
        """The most public rows any key has (1: unique keys): a protected row's most rows."""
        return int(np.diff(self.bounds).max()) if len(self.index) else 1

    def renames(self, columns: Sequence[Hashable]) -> dict[Hashable, Hashable]:
        """How the protected columns ``columns`` are renamed (overlapping public names)."""
        overlap = (set(columns) & set(self.values.columns)) - set(self.keys)
        return {c: f"{c}{self.suffixes[0]}" for c in columns if c in overlap}

    def output_columns(self, columns: Sequence[Hashable]) -> list[Hashable]:
        """The result's column names, for a protected frame of columns ``columns``."""
        renames = self.renames(columns)
        return [renames.get(c, c) for c in columns] + [
            f"{name}{self.suffixes[1]}" if name in renames else name for name in self.values.columns
        ]

    def keeps(self, columns: Sequence[Hashable], column: Hashable) -> bool:
        """Whether the protected ``column`` leaves the join as it came, under its name.

        Not renamed, and no public column written under its name (schema only).
        """
        if column not in columns or self.renames(columns).get(column, column) != column:
            return False
        written = self.output_columns(columns)[len(columns) :]
        return column not in written


def join_rows(frame: pd.DataFrame, lookup: Lookup) -> pd.DataFrame:
    """``frame`` (protected rows, in memory) joined to the public ``lookup`` (see module)."""
    codes = public_codes(frame, lookup.keys, lookup.index)  # each row's key, or -1
    how = lookup.how
    if lookup.repeats:
        rows, positions = expand_rows(codes, lookup.order, lookup.bounds, how)
        left = frame.iloc[rows]
    elif how == "inner":  # one public row per key (its position: the key's code)
        matched = codes >= 0
        if matched.all():  # every row, as it is (no copy)
            left, positions = frame, codes
        else:
            rows = np.flatnonzero(matched)
            left, positions = frame.iloc[rows], codes[rows]
    else:  # every protected row, as it is
        left, positions = frame, codes
    if lookup.repeats or how == "inner":  # the rows kept (or repeated) depend on the matches
        left = left.set_axis(materialised_index(left.index), axis=0)
    right = _looked_up(lookup.values, positions, how)
    return _joined(left, right, lookup)


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


def materialised_index(index: pd.Index) -> pd.Index:
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


def grouped_order(codes: I64, groups: int) -> tuple[I64, I64]:
    """The rows with a code in ``[0, groups)`` sorted by code (stably), and each code's bounds.

    ``order[bounds[c]:bounds[c + 1]]`` are the rows of code ``c`` in their own order; rows
    with code -1 are left out. A counting sort in linear time (pandas' ``groupsort_indexer``,
    what its merge uses), or numpy's stable sort where pandas does not offer it.
    """
    if groupsort_indexer is not None:
        indexer, counts = groupsort_indexer(codes.astype(np.intp, copy=False), groups)
        order = np.asarray(indexer[counts[0] :], dtype=np.int64)  # counts[0]: the -1 rows
        bounds = np.zeros(groups + 1, dtype=np.int64)
        np.cumsum(counts[1:], out=bounds[1:])
        return order, bounds
    valid = np.flatnonzero(codes >= 0)
    order = valid[np.argsort(codes[valid], kind="stable")]
    return order, np.searchsorted(codes[order], np.arange(groups + 1))


def expand_rows(codes: I64, order: I64, bounds: I64, how: str) -> tuple[I64, I64]:
    """Which protected row each result row comes from, and its public row (-1: none).

    As ``pd.merge``: the protected rows in order, each followed by its matches in the public
    table's order; with ``how="left"`` a row without a match once, with no public row.
    Vectorised: one pass, whatever the number of rows.
    """
    matched = codes >= 0
    if len(bounds) > 1:
        starts = bounds[:-1][np.maximum(codes, 0)]
        counts = bounds[1:][np.maximum(codes, 0)] - starts
    else:
        starts = counts = np.zeros_like(codes)
    sizes = np.where(matched, counts, 0 if how == "inner" else 1)
    # Result row j of protected row i is match j - first[i] of i's key: its public row is
    # order[starts[i] + j - first[i]], one gather of the per-row shift per result row.
    first = np.cumsum(sizes) - sizes
    rows = np.repeat(np.arange(len(codes)), sizes)
    shift = (starts - first)[rows]
    shift += np.arange(len(rows))
    if how == "inner" or matched.all():  # every result row has a public row
        return rows, order[shift]
    positions = np.full(len(rows), -1, dtype=np.int64)
    hit = matched[rows]
    positions[hit] = order[shift[hit]]
    return rows, positions


def _joined(
    left: pd.DataFrame, right: list[tuple[Hashable, ExtensionArray]], lookup: Lookup
) -> pd.DataFrame:
    """``left``'s columns then ``right``'s (name, values), named as ``pd.merge`` names them."""
    names = [name for name, _ in right]
    renames = lookup.renames(list(left.columns))
    result = left.rename(columns=renames) if renames else left.copy(deep=False)
    for name, values in right:
        target = f"{name}{lookup.suffixes[1]}" if name in renames else name
        if names.count(name) > 1:  # a repeated public column name: as setting both did
            raise ValueError(
                f"Cannot set a DataFrame with multiple columns to the single column {target}"
            )
        # the protected rows' own labels (see the module's note); the values are not copied
        result[target] = pd.Series(values, index=result.index, copy=False)
    return result
