"""Read what a pandera schema says about each column: bounds, public keys, nullability.

A schema that declares ``age`` in ``[0, 120]`` and ``region`` in four values *is* the public
knowledge a DP release needs; nothing here looks at the data. Checks with statistics supply
rules: ``in_range``, ``greater_than_or_equal_to`` (``ge``), ``less_than_or_equal_to``
(``le``), ``greater_than`` (``gt``), ``less_than`` (``lt``) give bounds (several are
intersected; strict bounds become closed bounds for clipping) and ``isin`` gives keys (the
schema's order, or sorted for an unordered set). Custom checks supply nothing.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pandas_dp.errors import DPTypeError, DPValueError
from pandas_dp.optional import require

if TYPE_CHECKING:
    import pandas as pd
    from pandas._typing import DtypeObj
    from pandera.api.checks import Check
    from pandera.api.pandas.container import DataFrameSchema

#: Which check statistic gives a lower (upper) bound.
_LOWER = {
    "in_range": "min_value", "greater_than_or_equal_to": "min_value", "greater_than": "min_value"
}  # fmt: skip
_UPPER = {"in_range": "max_value", "less_than_or_equal_to": "max_value", "less_than": "max_value"}


@dataclass(frozen=True)
class ColumnRules:
    """What the schema supplies for one column (each item may be absent)."""

    bounds: tuple[float, float] | None = None
    bounds_from: str = ""
    keys: tuple[Hashable, ...] | None = None
    keys_from: str = ""
    nullable: bool | None = None
    #: The declared dtype (a numpy or pandas dtype), when the schema states one.
    dtype: DtypeObj | None = None


@dataclass(frozen=True)
class SchemaRules:
    """Per-column rules of a schema, by column label."""

    name: str
    columns: tuple[tuple[Hashable, ColumnRules], ...]

    def rules(self, column: Hashable) -> ColumnRules:
        """The rules of ``column`` (empty rules for a column the schema does not describe)."""
        for label, rules in self.columns:
            if label == column:
                return rules
        return ColumnRules()


def _as_schema(schema: object) -> DataFrameSchema:
    pandera = require("pandera.pandas", "pandera")
    if isinstance(schema, str) and "\n" in schema:  # YAML text, e.g. from schema.to_yaml()
        return _from_yaml(schema, "the schema YAML")
    if isinstance(schema, str | Path):
        source = f"schema file {str(schema)!r}"
        if not Path(schema).is_file():
            raise DPValueError(
                f"{source} not found; pass the path of a pandera YAML "
                "schema, its YAML text, a DataFrameSchema or a DataFrameModel class"
            )
        try:
            text = Path(schema).read_text(encoding="utf-8")
        except (OSError, UnicodeError):  # the message would quote bytes of the file
            raise DPValueError(f"{source} cannot be read as UTF-8 text") from None
        return _from_yaml(text, source)
    if isinstance(schema, type) and hasattr(schema, "to_schema"):
        return schema.to_schema()
    if isinstance(schema, pandera.DataFrameSchema):
        return schema
    raise DPTypeError(
        "schema must be a pandera DataFrameModel class, a DataFrameSchema, or the path of a "
        f"schema YAML file; got {type(schema).__name__}"
    )


#: The checks a schema YAML may name. pandera turns a check's name into a method of its
#: ``Check`` class with ``getattr``, so a hostile file (a release spec's schema is written by
#: someone else) could otherwise call any classmethod; these are the documented built-ins.
BUILTIN_CHECKS = frozenset(
    [
        "eq", "equal_to", "ne", "not_equal_to", "gt",
        "greater_than", "ge", "greater_than_or_equal_to", "lt", "less_than",
        "le", "less_than_or_equal_to", "in_range", "between", "isin",
        "notin", "str_matches", "str_contains", "str_startswith", "str_endswith",
        "str_length", "unique_values_eq",
    ]
)  # fmt: skip
#: The keys of a column (or index) entry that are not checks.
_FIELDS = frozenset(
    [
        "dtype", "nullable", "unique", "coerce", "required", "regex",
        "description", "title", "default", "report_duplicates", "drop_invalid_rows", "name",
        "checks", "metadata", "parsers",
    ]
)  # fmt: skip
#: The top-level keys of a schema YAML (what pandera writes and reads for a DataFrameSchema).
_SCHEMA_KEYS = frozenset(
    [
        "schema_type", "version", "api", "dataframe_library", "columns", "checks", "index",
        "multiindex", "dtype", "coerce", "strict", "name", "ordered", "unique",
        "report_duplicates", "unique_column_names", "add_missing_columns", "title",
        "description", "metadata", "drop_invalid_rows",
    ]
)  # fmt: skip
#: The options a check may carry in the list form (``options: {check_name: ...}``).
_CHECK_OPTIONS = frozenset(
    [
        "check_name", "ignore_na", "raise_warning", "n_failure_cases", "groupby", "groups",
        "error", "name", "title", "description",
    ]
)  # fmt: skip


class _RefusedError(Exception):
    """What is wrong with a schema mapping, in general terms (no content of the file)."""


def _from_yaml(text: str, source: str) -> DataFrameSchema:
    """A DataFrameSchema from YAML ``text``: parsed here, checked, handed over as a mapping.

    pandera's ``from_yaml`` would open its argument as a path if it can (a file whose text is
    a path names another file) and looks up check names with ``getattr``; so pandas-dp parses
    the text itself (``yaml.safe_load``), requires a mapping whose checks are all built-ins,
    and gives pandera only that mapping. No message quotes the text: a schema path may point
    at a data file.
    """
    yaml = require("yaml", "yaml")
    deserialize = require("pandera.io.pandas_io", "pandera").deserialize_schema
    try:
        loaded = yaml.safe_load(text)
    except Exception:  # YAMLError quotes the offending line; other errors quote values
        raise DPValueError(f"{source} is not valid YAML") from None
    try:
        _check_schema(loaded)
    except _RefusedError as refused:
        raise DPValueError(f"{source}: {refused}") from None
    try:
        return deserialize(loaded)
    except Exception:  # pandera's messages may quote values of the file
        raise DPValueError(
            f"{source} is not a pandera DataFrameSchema that pandera can build (a dtype, a "
            "check's arguments or a field has the wrong form)"
        ) from None


def _check_schema(loaded: object) -> None:
    """Refuse anything but a mapping of known keys whose checks are all pandera built-ins."""
    if not isinstance(loaded, dict):
        raise _RefusedError("does not hold a pandera schema (a YAML mapping with 'columns')")
    if any(key not in _SCHEMA_KEYS for key in loaded):
        raise _RefusedError(f"has a top-level key that a pandera schema does not have; allowed: "
                       f"{sorted(_SCHEMA_KEYS)}")  # fmt: skip
    _check_list(loaded.get("checks"))
    columns = loaded.get("columns")
    if isinstance(columns, dict):
        entries = list(columns.values())
    elif isinstance(columns, list) or columns is None:
        entries = list(columns or [])
    else:
        raise _RefusedError("'columns' must be a mapping of column entries")
    index = loaded.get("index")
    if not isinstance(index, list | type(None)):
        raise _RefusedError("'index' must be a list of index entries")
    for entry in entries + list(index or []):
        if not isinstance(entry, dict):
            raise _RefusedError(
                "each column and index entry must be a mapping of fields and checks"
            )
        if any(key not in _FIELDS and key not in BUILTIN_CHECKS for key in entry):
            raise _RefusedError(_NOT_BUILTIN)
        _check_list(entry.get("checks"))


_NOT_BUILTIN = (
    f"names checks that are not pandera built-ins; only {sorted(BUILTIN_CHECKS)} are read from YAML"
)


def _check_list(checks: object) -> None:
    """``checks``: absent, ``{name: arguments}`` or ``[{..., options: {check_name: name}}]``."""
    if checks is None:
        return
    if isinstance(checks, dict):
        if any(name not in BUILTIN_CHECKS for name in checks):
            raise _RefusedError(_NOT_BUILTIN)
        return
    if not isinstance(checks, list):
        raise _RefusedError("'checks' must be a mapping or a list of checks")
    for item in checks:
        options = item.get("options") if isinstance(item, dict) else None
        if not isinstance(options, dict) or any(key not in _CHECK_OPTIONS for key in options):
            raise _RefusedError("each check in a 'checks' list needs 'options' with a 'check_name'")
        name = options.get("check_name")
        if not isinstance(name, str) or name not in BUILTIN_CHECKS:
            raise _RefusedError(_NOT_BUILTIN)


def _bounds(column: Hashable, checks: list[Check]) -> tuple[tuple[float, float] | None, str]:
    lows: list[float] = []
    highs: list[float] = []
    names: list[str] = []
    for check in checks:
        stats = check.statistics or {}
        for side, keys in ((lows, _LOWER), (highs, _UPPER)):
            value = stats.get(keys[check.name]) if check.name in keys else None
            # Only numbers bound a sum; range checks on dates or text bound nothing here.
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                continue
            side.append(float(value))
            names.append(str(check.name))  # a key of _LOWER or _UPPER
    finite_lows = [x for x in lows if math.isfinite(x)]
    finite_highs = [x for x in highs if math.isfinite(x)]
    if not finite_lows or not finite_highs:
        return None, ""
    lower, upper = max(finite_lows), min(finite_highs)
    if not lower < upper:
        raise DPValueError(
            f"schema checks on column {column!r} ({', '.join(names)}) leave an empty interval "
            f"[{lower:g}, {upper:g}]; fix the schema or pass bounds=(lower, upper)"
        )
    return (lower, upper), f"schema ({', '.join(dict.fromkeys(names))})"


def _keys(column: Hashable, checks: list[Check]) -> tuple[tuple[Hashable, ...] | None, str]:
    allowed: list[Hashable] | None = None
    for check in checks:
        if check.name != "isin":
            continue
        values = (check.statistics or {}).get("allowed_values")
        if values is None:
            continue
        if isinstance(values, set | frozenset):
            try:
                ordered = sorted(values)
            except TypeError:
                ordered = sorted(values, key=repr)
        else:
            ordered = list(values)
        allowed = ordered if allowed is None else [v for v in allowed if v in set(ordered)]
    if allowed is None:
        return None, ""
    if not allowed:
        raise DPValueError(f"schema isin checks on column {column!r} allow no value at all")
    return tuple(dict.fromkeys(allowed)), "schema (isin)"


def read_schema(schema: object) -> SchemaRules:
    """Read bounds, keys and nullability from a pandera schema (never from the data).

    Raises
    ------
    DPValueError
        If checks on a column leave an empty interval or allow no value.
    DPTypeError
        If ``schema`` is not a pandera schema, model class or YAML path.
    MissingExtraError
        If pandera is not installed.
    """
    resolved = _as_schema(schema)
    columns = []
    for label, column in resolved.columns.items():
        checks = list(column.checks)
        bounds, bounds_from = _bounds(label, checks)
        keys, keys_from = _keys(label, checks)
        declared = getattr(column.dtype, "type", None)  # pandera's DataType wraps the dtype
        rules = ColumnRules(bounds, bounds_from, keys, keys_from, bool(column.nullable), declared)
        columns.append((label, rules))
    return SchemaRules(str(resolved.name or "schema"), tuple(columns))


def validate_sanitised(schema: object, frame: Any) -> Any:  # Any: pandera types DataFrames only
    """Validate ``frame`` against ``schema``; on failure raise an error naming checks only.

    pandera's own errors quote failing cell values, which must never reach a user; this
    keeps only the column names and the check names (both from the schema). The error is
    raised outside pandera's ``except`` block, so it carries no chained exception either.
    """
    errors = require("pandera.errors", "pandera")
    failures: list[tuple[str, str]] | None = None
    try:
        return _as_schema(schema).validate(frame, lazy=True)
    except (errors.SchemaErrors, errors.SchemaError) as error:
        failures = _failed_checks(error)
    shown = "; ".join(f"column {column}: check {check}" for column, check in failures or [])
    raise DPValueError(
        f"the data does not satisfy the schema ({shown}). Clean the data, or protect with "
        "validate=False to clip values to the schema's bounds silently instead"
    )


def _failed_checks(error: Exception) -> list[tuple[str, str]]:
    cases = getattr(error, "failure_cases", None)
    if (
        cases is not None
        and hasattr(cases, "columns")
        and {"column", "check"} <= set(cases.columns)
    ):
        pairs = cases[["column", "check"]].drop_duplicates()
        return [(str(c), str(k)) for c, k in pairs.itertuples(index=False)]
    column = getattr(getattr(error, "schema", None), "name", None)
    check = getattr(error, "check", None)
    return [(str(column), str(getattr(check, "name", check)))]


def rules_table(rules: SchemaRules | None) -> pd.DataFrame:
    """A table of what the schema supplies per column (for ``priv.dp.rules``)."""
    import pandas as pd

    rows = []
    for label, column in rules.columns if rules else ():
        low, high = column.bounds if column.bounds else (None, None)
        rows.append(
            {
                "column": label,
                "lower": low,
                "upper": high,
                "bounds_from": column.bounds_from or None,
                "keys": list(column.keys) if column.keys else None,
                "keys_from": column.keys_from or None,
                "nullable": column.nullable,
            }
        )
    columns = ["lower", "upper", "bounds_from", "keys", "keys_from", "nullable"]
    if not rows:
        return pd.DataFrame(columns=columns, index=pd.Index([], name="column"))
    return pd.DataFrame(rows).set_index("column")[columns]
