"""Which group each row belongs to: codes against public keys, or canonical observed keys.

Everything here must be *total* and *row-local*: it runs after the budget check, so it may
not raise, warn or behave differently because of what another row holds.

- Rows are matched to public keys by value. A value the engine cannot process (unhashable,
  or whose comparison raises) matches no key: it is dropped like a value outside the keys.
- Keys observed in the data (private; only a DP selection step may release some of them) are
  built from canonical values (:mod:`pandas_dp.engines.canonical`), a function of each
  row's value alone, so the released key never carries the representation one row happened
  to use (``pd.factorize`` keeps the first one it sees).
- Codes of several columns are combined by re-numbering densely after each column, never by
  multiplying cardinalities, so nothing can overflow however many columns or values.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, TypeVar, cast

import numpy as np
import numpy.typing as npt
import pandas as pd

from pandas_dp.engines.canonical import canonical_column, canonical_value, is_missing
from pandas_dp.engines.integers import integer_codes

if TYPE_CHECKING:
    from pandas._typing import DtypeObj

    from pandas_dp.measures.aggregates import OtherCells

I64 = npt.NDArray[np.int64]
Codes = TypeVar("Codes", I64, npt.NDArray[np.bool_])


def plain_index(values: pd.Index | pd.Categorical | np.ndarray, name: Hashable) -> pd.Index:
    """An Index of ``values`` that carries no Categorical dtype (whose categories are data)."""
    if isinstance(values, pd.Categorical) or isinstance(
        getattr(values, "dtype", None), pd.CategoricalDtype
    ):
        values = np.asarray(values)
    return pd.Index(values, name=name, tupleize_cols=False)


def _total(fast: Callable[[], Codes], slow: Callable[[], Codes]) -> Codes:
    """The fast, vectorised path; where it raises, the row-by-row path with the same result."""
    try:
        return fast()
    except Exception:  # unhashable or incomparable values: handled row by row
        return slow()


def matching_form(values: pd.Series) -> pd.Series:
    """Each value in the one form that is matched against public keys (row-local).

    The canonical representative of :mod:`pandas_dp.engines.canonical`, computed from each
    value alone and vectorised by dtype: booleans are the integers they equal (``True`` is
    key ``1``), floats lose the sign of zero, tz-aware instants are in UTC, and an object
    column is canonicalised value by value (``True``, ``1``, ``1.0`` and ``Decimal(1)`` are
    one key whatever order the rows come in; a value of a type that cannot be a key is
    missing). Other dtypes already hold one representation per value. Applied to the
    public keys too, so both sides of every comparison are in this form.
    """
    dtype = values.dtype
    if isinstance(dtype, np.dtype) and dtype.kind == "b":
        return values.astype(np.int64)
    if isinstance(dtype, pd.BooleanDtype):
        return values.astype("Int64")
    if isinstance(dtype, pd.DatetimeTZDtype):
        return values.dt.tz_convert("UTC")
    if pd.api.types.is_object_dtype(dtype) and _already_canonical(values):
        return values
    return canonical_column(values)


#: What :func:`pandas.api.types.infer_dtype` calls an object column that is canonical as it
#: stands: plain texts or Python integers (missing values aside), which no other form equals.
_CANONICAL_KINDS = frozenset({"string", "integer", "empty"})


def _already_canonical(values: pd.Series) -> bool:
    """Whether an object column needs no value-by-value canonicalisation (same result).

    Only which of two equivalent computations runs depends on the values, never the forms.
    """
    return pd.api.types.infer_dtype(values, skipna=True) in _CANONICAL_KINDS


def level_codes(column: pd.Series, keys: pd.Index) -> I64:
    """Position of each row's value among the public ``keys`` (one level), or -1.

    The one matching step of pandas-dp: group keys, merge keys, a formula's levels, tables,
    value counts and privacy-unit ids all compare private values with public ones here.
    Both sides are put in :func:`matching_form`, so whether a row matches a key depends on
    that row's value and the keys alone, never on which form another row used. Integer
    columns against dense integer keys read a lookup table
    (:func:`~pandas_dp.engines.integers.integer_codes`); a categorical column is matched
    through its categories (each row reads its category's position).
    """
    table = integer_codes(column, keys)
    if table is not None:
        return table
    if isinstance(column.dtype, pd.CategoricalDtype):
        by_category = _positions(pd.Series(column.dtype.categories), keys)
        codes = np.asarray(column.cat.codes.to_numpy(), dtype=np.int64)
        return np.asarray(np.append(by_category, -1)[codes], dtype=np.int64)  # -1: missing
    if isinstance(column.dtype, pd.StringDtype):
        # Text has one form per value: match each distinct value once (as level_counts does)
        # and let every row read its value's position, instead of hashing every row's text
        # as a Python object. Each row's code is still a function of its value and the keys.
        codes, uniques = pd.factorize(column, use_na_sentinel=True)
        found = _positions(pd.Series(uniques, dtype=column.dtype), keys)
        return np.asarray(np.append(found, -1)[codes], dtype=np.int64)  # -1: missing
    return _positions(column, keys)


def _positions(values: pd.Series, keys: pd.Index) -> I64:
    """Each value's key position by :func:`matching_form` (-1: no key, missing)."""
    target, first = _matching_keys(keys)
    rows = matching_form(values)
    if _inexact(rows.dtype, target):  # compared as Python numbers, exactly
        rows = pd.Series(rows.to_numpy(dtype=object), index=rows.index, dtype=object)

    def fast() -> I64:
        return np.asarray(target.get_indexer(plain_index(rows.array, None)), dtype=np.int64)

    def slow() -> I64:
        positions = {key: i for i, key in enumerate(target)}
        return np.fromiter(
            (_lookup(positions, value) for value in rows.to_numpy(dtype=object)),
            dtype=np.int64,
            count=len(rows),
        )

    found = _total(fast, slow)
    return np.asarray(np.append(first, -1)[found], dtype=np.int64)


def _matching_keys(keys: pd.Index) -> tuple[pd.Index, I64]:
    """The public keys in :func:`matching_form`, unique, and each one's first position.

    Keys that are one value in that form (``1`` and ``True``) match at the first one's
    position; a key that cannot be a key in that form matches nothing. Public: reads no row.
    Texts are their own matching form: unique text keys without a missing one are their own
    matching keys, each at its own position (the same answer, with the keys' own hash table,
    often already built by the uniqueness check of :func:`~pandas_dp.api.keys.parse_keys`).
    """
    if isinstance(keys.dtype, pd.StringDtype) and keys.is_unique and not keys.hasnans:
        return keys.rename(None), np.arange(len(keys), dtype=np.int64)
    canonical = matching_form(pd.Series(plain_index(keys, None), dtype=keys.dtype))
    if pd.api.types.is_float_dtype(canonical.dtype):  # 2.0 is the key 2, exactly
        canonical = pd.Series([canonical_value(key) for key in canonical], dtype=object)
    codes, uniques = pd.factorize(canonical, use_na_sentinel=True)
    valid = np.flatnonzero(codes >= 0)
    code, at = np.unique(codes[valid], return_index=True)  # each key's first position
    first = np.full(len(uniques), -1, dtype=np.int64)
    first[code] = valid[at]
    return plain_index(uniques, None), first


#: Integers beyond this magnitude are not all float64s: comparing them with floats in
#: float64 (as pandas would) could match unequal values.
_FLOAT_EXACT = 1 << 53


def _inexact(dtype: DtypeObj, keys: pd.Index) -> bool:
    """Whether float rows meet integer keys too large to compare in float64 (public)."""
    if not (pd.api.types.is_float_dtype(dtype) and pd.api.types.is_integer_dtype(keys.dtype)):
        return False
    if len(keys) == 0:
        return False
    # the extremes alone, as Python integers (no abs() of the int64 minimum can wrap)
    return max(abs(int(keys.min())), abs(int(keys.max()))) > _FLOAT_EXACT


def level_counts(column: pd.Series, keys: pd.Index) -> I64 | None:
    """Rows per public key (one level), without a code per row: a release of counts only.

    One hash pass over the rows, then each distinct value matched as :func:`level_codes`
    matches it and its rows added to its key: the same counts as coding every row and
    counting the codes. Only for dtypes whose equal values have one form (text, floats,
    times, categoricals); None for integers (which may read a lookup table), booleans and
    object columns (matched value by value): count :func:`level_codes` instead.
    """
    dtype = column.dtype
    if (isinstance(dtype, np.dtype) and dtype.kind in "iubO") or isinstance(
        dtype, pd.CategoricalDtype | pd.BooleanDtype
    ):
        return None
    codes, uniques = pd.factorize(column, use_na_sentinel=True)
    found = _positions(pd.Series(uniques), keys)
    per_value = np.bincount(codes + 1, minlength=len(found) + 1)[1:]  # code -1: missing
    counts = np.zeros(len(keys), dtype=np.int64)
    matched = found >= 0
    np.add.at(counts, found[matched], per_value[matched])  # equal values may share a key
    return counts


def _lookup(positions: dict[Hashable, int], value: object) -> int:
    try:
        if is_missing(value) or not isinstance(value, Hashable):
            return -1
        return positions.get(value, -1)
    except Exception:  # unhashable, or a comparison that raises: no key matches
        return -1


def combine(row_codes: list[I64], key_codes: list[I64]) -> I64:
    """Each row's position among the keys, from per-level codes (-1: no match).

    ``key_codes[l][j]`` is key ``j``'s code at level ``l`` and ``row_codes[l]`` the rows'
    codes against the same level values. After each level both are re-numbered densely
    among the key prefixes seen so far, so no number exceeds the number of keys.
    """
    rows, keys = row_codes[0].copy(), key_codes[0].copy()
    for row_level, key_level in zip(row_codes[1:], key_codes[1:], strict=True):
        width = int(max(key_level.max(initial=-1), row_level.max(initial=-1))) + 1
        key_pairs = keys * width + key_level
        prefixes = np.unique(key_pairs)
        keys = np.searchsorted(prefixes, key_pairs)
        valid = (rows >= 0) & (row_level >= 0) & (row_level < width)
        row_pairs = np.where(valid, rows * width + row_level, -1)
        found = np.searchsorted(prefixes, row_pairs)
        found = np.minimum(found, len(prefixes) - 1)
        rows = np.where(valid & (prefixes[found] == row_pairs), found, -1)
    position = np.full(int(keys.max(initial=-1)) + 1, -1, dtype=np.int64)
    position[keys] = np.arange(len(keys))
    return np.asarray(np.where(rows >= 0, position[np.maximum(rows, 0)], -1), dtype=np.int64)


def public_codes(frame: pd.DataFrame, by: tuple[Hashable, ...], keys: pd.Index) -> I64:
    """Position of each row's key among the public keys, or -1 (dropped)."""
    if len(by) == 1:
        return level_codes(frame[by[0]], keys)
    assert isinstance(keys, pd.MultiIndex)
    row_codes = [level_codes(frame[column], keys.levels[i]) for i, column in enumerate(by)]
    key_codes = [np.asarray(keys.codes[i], dtype=np.int64) for i in range(len(by))]
    return combine(row_codes, key_codes)


def observed_codes(frame: pd.DataFrame, by: tuple[Hashable, ...]) -> tuple[pd.Index, I64]:
    """The canonical key combinations present in the data (private!) and each row's position.

    Keys come from canonical values (:mod:`pandas_dp.engines.canonical`), never decoded
    from arithmetic on codes; every row of a group holds the same canonical values, so any
    of its rows gives the key. Keys are ordered by their codes (first appearance of each
    level's value, then level by level), with hash passes and counting only: no sort of the
    rows.
    """
    per_level = [_observed_level(frame[column]) for column in by]
    valid = np.logical_and.reduce([codes >= 0 for codes, _ in per_level])
    group = np.where(valid, per_level[0][0], -1)
    for codes, _ in per_level[1:]:
        pairs = np.where(valid, group * (int(codes.max(initial=-1)) + 1) + codes, -1)
        group = _dense(pairs, valid)
    slots = int(group.max(initial=-1)) + 1
    rows = np.flatnonzero(valid)
    present = np.flatnonzero(np.bincount(group[rows], minlength=slots))
    remap = np.full(slots + 1, -1, dtype=np.int64)  # slot -1 (an invalid row) reads -1
    remap[present] = np.arange(present.size)
    some_row = np.zeros(slots, dtype=np.int64)
    some_row[group[rows]] = rows  # any row of a group will do: they share their key
    levels = [uniques.take(codes[some_row[present]]) for codes, uniques in per_level]
    codes_out = np.asarray(remap[group], dtype=np.int64)
    if len(by) == 1:
        return levels[0].rename(by[0]), codes_out
    return _multi_index(levels, list(by)), codes_out


def _observed_level(column: pd.Series) -> tuple[I64, pd.Index]:
    """Codes (-1: no key) and canonical uniques of one column.

    A categorical column is coded through its canonicalised categories (each row reads its
    category's code: no row is converted one by one); a category without rows makes no key.
    """
    if isinstance(column.dtype, pd.CategoricalDtype):
        categories = pd.Series(np.asarray(column.dtype.categories, dtype=object))
        canonical = categories.map(canonical_value)
        by_category, uniques = _total_factorize(canonical)
        row_codes = np.asarray(column.cat.codes.to_numpy(), dtype=np.int64)
        return np.append(by_category, -1)[row_codes], uniques  # code -1 (missing) reads -1
    return _total_factorize(canonical_column(column))


def missing_mask(column: pd.Series) -> npt.NDArray[np.bool_]:
    """Which rows hold a missing value, computed so that no value can make it fail.

    ``isna`` compares values, and some comparisons raise (``Decimal("sNaN")``); where the
    vectorised test raises, rows are tested one by one and a value whose test raises is not
    missing (it is then an unprocessable value, which matches no key and no bin).
    """

    def fast() -> npt.NDArray[np.bool_]:
        return np.asarray(column.isna().to_numpy(), dtype=bool)

    def slow() -> npt.NDArray[np.bool_]:
        values = column.to_numpy(dtype=object)
        return np.fromiter((_is_missing(v) for v in values), dtype=bool, count=len(values))

    return _total(fast, slow)


def _is_missing(value: object) -> bool:
    try:
        return is_missing(value)
    except Exception:  # a comparison that raises: not a missing value
        return False


def distinct_codes(column: pd.Series) -> I64:
    """A code per row that is equal exactly when the canonical values are (-1: missing).

    For counting distinct values: the codes themselves are private and never released.
    """
    return _total_factorize(canonical_column(column))[0]


def _total_factorize(values: pd.Series) -> tuple[I64, pd.Index]:
    """Codes and uniques of canonical values (canonical values always hash and compare)."""
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    return np.asarray(codes, dtype=np.int64), plain_index(uniques, None)


def _dense(pairs: I64, valid: npt.NDArray[np.bool_]) -> I64:
    """Re-number non-negative codes densely (0, 1, ... in increasing order); -1 stays -1.

    One hash pass over the rows, then a sort of the distinct values only.
    """
    out = np.full(len(pairs), -1, dtype=np.int64)
    codes, uniques = pd.factorize(pairs[valid])
    rank = np.empty(len(uniques), dtype=np.int64)
    rank[np.argsort(uniques, kind="stable")] = np.arange(len(uniques))
    out[valid] = rank[codes]
    return out


def _multi_index(levels: list[pd.Index], names: list[Hashable]) -> pd.MultiIndex:
    """A MultiIndex of per-level key values, built without parsing them (tuples stay values)."""
    factorised = [pd.factorize(values) for values in levels]
    codes = [codes for codes, _ in factorised]  # arrays; the stubs want sequences of int
    return pd.MultiIndex(
        levels=[pd.Index(uniques, tupleize_cols=False) for _, uniques in factorised],
        codes=cast(list[Sequence[int]], codes),
        names=names,
        verify_integrity=False,
    )


def other_codes(frame: pd.DataFrame, by: tuple[Hashable, ...], cells: OtherCells) -> I64:
    """Each row's cell among the keys and the "other" cells (see ``OtherCells``), -1: none.

    Per axis, the position of the row's key among the axis' public keys, the axis' "other"
    position for a value that matches none (never for a missing one), then the cell of the
    extended grid, renumbered so that the keys' cells come first, in their order.
    """
    split = cells.split
    nrows = 1 if cells.rows is None else len(cells.rows)
    ncols = len(cells.columns)
    if cells.rows is None:
        row = np.zeros(len(frame), dtype=np.int64)
    else:
        row = _axis_codes(frame, by[:split], cells.rows, cells.rows_other)
    column = _axis_codes(frame, by[split:], cells.columns, cells.columns_other)
    width = ncols + int(cells.columns_other)
    height = nrows + int(cells.rows_other)
    grid = np.arange(height * width, dtype=np.int64).reshape(height, width)
    order = np.concatenate([grid[:nrows, :ncols].ravel(), grid[:nrows, ncols:].ravel(),
                            grid[nrows:, :].ravel()])  # fmt: skip
    position = np.empty(height * width, dtype=np.int64)
    position[order] = np.arange(height * width, dtype=np.int64)
    inside = (row >= 0) & (column >= 0)
    cell = np.where(inside, row * width + np.maximum(column, 0), 0)
    return np.asarray(np.where(inside, position[np.maximum(cell, 0)], -1), dtype=np.int64)


def _axis_codes(frame: pd.DataFrame, by: tuple[Hashable, ...], keys: pd.Index, other: bool) -> I64:
    """Positions among ``keys`` (-1: none); with ``other``, ``len(keys)`` for an unmatched value."""
    codes = public_codes(frame, by, keys)
    if not other:
        return codes
    missing = np.logical_or.reduce([missing_mask(frame[column]) for column in by])
    return np.asarray(np.where((codes < 0) & ~missing, len(keys), codes), dtype=np.int64)
