"""Public group keys: parse what the user passed into an Index, and refuse what cannot work.

Keys are public input. They are never read from the data, and never taken from a
Categorical's categories (those often come from the data: ``astype("category")``) unless
``keys="categories"`` asks for it; nor is a key checked against them (a refusal would say
whether some row holds it). A key outside a column's schema ``isin`` values (public) is
refused as a misspelling. Everything here runs before any data is touched.
"""

from __future__ import annotations

import datetime
import difflib
import numbers
from collections.abc import Collection, Hashable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from pandas._typing import DtypeObj
from pandas.api import types as ptypes

from pandas_dp.errors import DPTypeError, DPValueError


def parse_by(by: object) -> tuple[Hashable, ...]:
    """Normalise ``by`` (a label or a list of labels) to a non-empty tuple of labels."""
    labels = list(by) if isinstance(by, list | tuple) else [by]
    if not labels:
        raise DPValueError("by must name at least one column")
    for label in labels:
        if isinstance(label, pd.Series | np.ndarray | list | dict) or not isinstance(
            label, Hashable
        ):
            raise DPTypeError(f"by must be column labels, got {type(label).__name__}")
    if len(set(labels)) != len(labels):
        raise DPValueError(f"by lists a column twice: {labels}")
    return tuple(labels)


def categories_as_keys(
    keys: object, by: Sequence[Hashable], dtypes: Mapping[Hashable, DtypeObj]
) -> tuple[object, str]:
    """``keys="categories"``: the categorical columns' categories, declared public by the user.

    Categories usually come from the data (``astype("category")`` lists the values present),
    so they are never used unless asked for; the ledger notes where the keys came from.
    """
    if not (isinstance(keys, str) and keys == "categories"):
        return keys, ""
    categories: dict[Hashable, list[object]] = {}
    for column in by:
        dtype = dtypes[column]
        if not isinstance(dtype, pd.CategoricalDtype):
            raise DPTypeError(
                f'keys="categories" reads the categories of a categorical column, but '
                f"{column!r} has dtype {dtype}; pass its public values as keys"
            )
        categories[column] = list(dtype.categories)
    names = ", ".join(map(str, by))
    return categories, f"keys of {names}: the categorical dtype's categories (keys='categories')"


def keys_example(by: tuple[Hashable, ...]) -> str:
    """How to pass public keys for ``by``, as error messages that ask for them show it."""
    return "keys=[...]" if len(by) == 1 else "keys={column: [...], ...}"


def parse_keys(by: tuple[Hashable, ...], keys: object) -> pd.Index | None:
    """Turn the user's ``keys`` into an Index (one level per ``by`` column), or None.

    Accepted forms: for one column, any list-like of values (or ``{column: values}``); for
    several columns, ``{column: values}`` (their cross product, first column outermost), a
    list of tuples, or a ``pd.MultiIndex``.

    Raises
    ------
    DPValueError
        If keys are empty, repeated, missing (NaN/None), or do not match ``by``.
    DPTypeError
        If keys are a single string or scalar, or unhashable.
    """
    if keys is None:
        return None
    if isinstance(keys, Mapping):
        index = _from_mapping(by, keys)
    elif isinstance(keys, pd.MultiIndex):
        if keys.nlevels != len(by):
            raise DPValueError(
                f"keys have {keys.nlevels} levels but by has {len(by)} column(s): {list(by)}"
            )
        index = keys.set_names(list(by))
    elif len(by) == 1 and isinstance(keys, pd.Index) and not isinstance(keys, pd.CategoricalIndex):
        index = keys.rename(by[0])  # keeps its dtype (the unit of an IntervalIndex of dates)
    elif len(by) == 1:
        values = _values(keys, by[0])
        index = (
            values.rename(by[0])  # built once, by _values
            if isinstance(values, pd.Index)
            else pd.Index(values, name=by[0], tupleize_cols=False)
        )
    else:
        tuples = _values(keys, "keys")
        for key in tuples:
            if not isinstance(key, tuple) or len(key) != len(by):
                raise DPValueError(
                    f"with by={list(by)}, keys must be {len(by)}-tuples, a dict of "
                    f"{{column: values}} or a pd.MultiIndex; got an entry {key!r}"
                )
        index = pd.MultiIndex.from_tuples(tuples, names=list(by))
    _check_index(index, by)
    return index


def _values(keys: Any, what: Hashable) -> pd.Index | Sequence[Any]:
    if isinstance(keys, str | bytes) or not _is_list_like(keys):
        raise DPTypeError(
            f"keys for {what!r} must be a list of values, got {type(keys).__name__} "
            f"(write keys=[{keys!r}] for a single key)"
        )
    flat = isinstance(keys, pd.Index) or (isinstance(keys, np.ndarray) and keys.ndim == 1)
    as_index = pd.Index(keys if flat else list(keys), tupleize_cols=False)
    if as_index.dtype != object:  # numbers, strings, times: hashable by their dtype
        return as_index
    values = list(as_index)
    for value in values:
        try:
            hash(value)
        except TypeError:
            raise DPTypeError(f"keys must be hashable, got a {type(value).__name__}") from None
    return values


def _is_list_like(value: object) -> bool:
    return bool(ptypes.is_list_like(value)) and not isinstance(value, Mapping)


def _from_mapping(by: tuple[Hashable, ...], keys: Mapping[object, object]) -> pd.Index:
    if set(keys) != set(by):
        raise DPValueError(
            f"keys has entries for {sorted(map(str, keys))} but by is {list(map(str, by))}; "
            "give one list of values per group-by column"
        )
    levels = [_values(keys[column], column) for column in by]
    if len(by) == 1:
        single: pd.Index = pd.Index(levels[0], name=by[0], tupleize_cols=False)
        return single
    return pd.MultiIndex.from_product(levels, names=list(by))


def _check_index(index: pd.Index, by: tuple[Hashable, ...]) -> None:
    if len(index) == 0:
        raise DPValueError("keys is empty; pass at least one key")
    if index.nlevels != len(by):
        raise DPValueError(f"keys have {index.nlevels} levels but by has {len(by)} columns")
    missing = (
        index.isna()
        if index.nlevels == 1
        else np.asarray([any(pd.isna(part) for part in key) for key in index])
    )
    if np.asarray(missing).any():
        raise DPValueError(
            "keys cannot contain missing values (NaN/None); rows with a missing key are "
            "dropped. Map missing values to a category of their own first, e.g. "
            "df.assign(col=df[col].fillna('unknown'))"
        )
    if not index.is_unique:
        raise DPValueError("keys contain duplicates; each key must appear once")


#: ``pandas.api.types.infer_dtype`` answers that mean "every key is a number" (vectorised).
_NUMBER_KINDS = {"integer", "floating", "mixed-integer-float", "decimal", "complex"}
_TIME_KINDS = {"datetime64", "datetime"}


def _all(values: pd.Index, kinds: set[str], test: type | tuple[type, ...]) -> bool:
    """Whether every key is of a type: inferred in C when possible, else key by key."""
    if ptypes.infer_dtype(values, skipna=False) in kinds:
        return True
    return all(isinstance(v, test) for v in values)


def check_key_types(
    index: pd.Index,
    dtypes: Sequence[DtypeObj],
    domains: Sequence[Collection[object] | None] = (),
) -> None:
    """Refuse keys that can never match their column (public information only).

    Numeric or bool columns need number keys; string columns need non-number keys. A
    column with a public domain in ``domains`` (a schema's ``isin`` values, one entry per
    level or None) needs keys among those values: a misspelt key would release a noisy zero.
    A categorical dtype's categories are not such a domain: ``astype("category")`` takes
    them from the rows, so a refusal by them would tell whether a row holds a key.
    """
    _check_types(index, dtypes)
    for level in range(len(dtypes)):
        values = index.get_level_values(level) if index.nlevels > 1 else index
        domain = domains[level] if level < len(domains) else None
        if domain is not None:
            _check_domain(values, domain, "the values of its schema's isin check")


#: The most known values a refusal lists.
_LISTED = 20


def _check_domain(values: pd.Index, domain: Collection[object], source: str) -> None:
    """Refuse the keys of ``values`` outside ``domain`` (matched as keys match: 1 == 1.0)."""
    known = list(dict.fromkeys(domain))
    allowed = set(known)
    unknown = [key for key in dict.fromkeys(values) if key not in allowed]
    if not unknown:
        return
    texts = [str(k) for k in known if isinstance(k, str)]
    close = [difflib.get_close_matches(k, texts, n=1) for k in unknown if isinstance(k, str)]
    hint = ", ".join(repr(c[0]) for c in close if c)
    listed = ", ".join(repr(k) for k in known[:_LISTED])
    more = f" ... ({len(known)} in all)" if len(known) > _LISTED else ""
    one = len(unknown) == 1
    raise DPValueError(
        f"keys of {values.name!r}: {', '.join(map(repr, unknown))} "
        f"{'is not one of' if one else 'are not among'} {source}"
        f"{f' (did you mean {hint}?)' if hint else ''}, which are {listed}{more}. A key no "
        "row can hold would release only noise: correct it or leave it out"
    )


def _check_types(index: pd.Index, dtypes: Sequence[DtypeObj]) -> None:
    """Numeric or bool columns need number keys; string columns need non-number keys."""
    for level, dtype in enumerate(dtypes):
        values = index.get_level_values(level) if index.nlevels > 1 else index
        if ptypes.is_bool_dtype(dtype) and not _all(values, {"boolean"}, (bool, np.bool_)):
            raise DPTypeError(
                f"column {values.name!r} holds booleans but its keys are not True/False"
            )
        if ptypes.is_datetime64_any_dtype(dtype) and not _all(
            values, _TIME_KINDS, (pd.Timestamp, datetime.datetime, np.datetime64)
        ):
            raise DPTypeError(
                f"column {values.name!r} holds datetimes; give keys as timestamps "
                "(e.g. pd.to_datetime([...]))"
            )
        if isinstance(dtype, pd.PeriodDtype):
            _check_periods(values, dtype)
        numeric_column = ptypes.is_numeric_dtype(dtype) and not isinstance(
            dtype, pd.CategoricalDtype
        )
        numeric_keys = _all(values, _NUMBER_KINDS, numbers.Number)
        if numeric_column and not numeric_keys:
            raise DPTypeError(
                f"column {values.name!r} holds numbers ({dtype}) but its keys are not all "
                "numbers; keys are matched by value and would never match"
            )
        text_column = ptypes.is_string_dtype(dtype) and not ptypes.is_object_dtype(dtype)
        if text_column and not isinstance(dtype, pd.CategoricalDtype) and numeric_keys:
            raise DPTypeError(
                f"column {values.name!r} holds strings ({dtype}) but its keys are numbers"
            )


def _check_periods(values: pd.Index, dtype: pd.PeriodDtype) -> None:
    """Keys of a Period column must be Periods of its frequency (else none would match)."""
    alias = str(dtype)[len("period[") : -1]  # "M" (the offset's own name is "ME")
    example = f"pd.period_range('2020-01', '2020-12', freq='{alias}')"
    if not _all(values, {"period"}, pd.Period):
        raise DPTypeError(
            f"column {values.name!r} holds periods ({dtype}); give keys as Periods, "
            f"e.g. keys={example}"
        )
    if any(key.freq != dtype.freq for key in values):
        raise DPTypeError(
            f"column {values.name!r} holds periods of frequency {alias} but "
            f"some keys have another frequency and would never match; e.g. keys={example}"
        )
