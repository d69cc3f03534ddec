"""Preflight: a parsed release spec against the world, before any data is read.

Its data file's header (the columns the queries name) and the optional dependencies it
needs. Not :mod:`pandas_dp.publish.checks`, the checks of a spec's values that the model
runs while parsing: these take the parsed :class:`~pandas_dp.publish.model.ReleaseSpec`.
"""

from __future__ import annotations

import contextlib
import difflib
from collections.abc import Sequence

import pandas as pd

from pandas_dp.errors import MissingExtraError, SpecError
from pandas_dp.optional import require
from pandas_dp.publish.checks import Problems
from pandas_dp.publish.model import ReleaseSpec
from pandas_dp.publish.where.language import parse_where


def check_extras(spec: ReleaseSpec, charts: bool | None) -> bool:
    """Fail before reading any data when an optional dependency is missing.

    Returns whether the report gets charts: asked for (``True``: matplotlib is required),
    refused (``False``), or, by default, whenever matplotlib is installed; the plain install
    then writes a report without charts (the CLI says how to get them).
    """
    if spec.data_format == "parquet" or "parquet" in spec.formats:
        require("pyarrow", "parquet")
    if spec.schema is not None:
        require("pandera", "pandera")
    if charts is None:
        try:
            require("matplotlib", "report")
        except MissingExtraError:
            return False
        return True
    if charts:
        require("matplotlib", "report")
    return charts


def header_of(spec: ReleaseSpec) -> list[str] | None:
    """The data file's column names (public metadata: the header or the Parquet schema).

    None when the file is not there yet (a plan may be written before the data arrive).
    """
    path = spec.data_path
    if not path.exists():
        return None
    if spec.data_format == "parquet":
        parquet = require("pyarrow.parquet", "parquet")
        return [str(name) for name in parquet.read_schema(path).names]
    return [str(name) for name in pd.read_csv(path, nrows=0).columns]


def check_columns(
    spec: ReleaseSpec, header: list[str] | None, problems: Problems, numbers: Sequence[int] = ()
) -> None:
    """Record every column the spec names that is not in the data file's header.

    Each with where the spec names it (``query[2].aggs.total``; the first place in each
    query) and the closest name in the header; the header itself follows the problems.
    ``numbers``: each query's number in the file (by default 1, 2, ...).
    """
    if header is None:
        return
    named: list[tuple[str, object]] = []
    unit = spec.privacy.get("privacy_unit")
    if unit is not None:
        named.append(("privacy.privacy_unit", unit))
    numbered = numbers or range(1, len(spec.queries) + 1)
    for number, query in zip(numbered, spec.queries, strict=True):
        at = f"query[{number}]"
        used: list[tuple[str, object]] = [(f"{at}.groupby", c) for c in query.groupby]
        used += [(f"{at}.aggs.{name}", column) for name, (column, _) in query.aggs.items()]
        used += [(f"{at}.bounds", column) for column in query.bounds]
        used += [(f"{at}.fillna", column) for column in query.fillna]
        used += [(f"{at}.weights", query.weights)] if query.weights else []
        if query.where is not None:
            with contextlib.suppress(SpecError):  # a broken where is a problem already
                used += [(f"{at}.where", c) for c in parse_where(query.where).columns]
        first: dict[object, str] = {}
        for where, column in used:
            if column is not None:
                first.setdefault(column, where)
        named += [(where, column) for column, where in first.items()]
    unknown = False
    for where, column in named:
        if column not in header:
            close = difflib.get_close_matches(str(column), header, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            problems.add(where, f"column {column!r} is not in the data's header{hint}")
            unknown = True
    if unknown:
        problems.note(f"The data's header has: {', '.join(header)}")
