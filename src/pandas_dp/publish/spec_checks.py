"""Checks of a parsed release spec against the world: its data file's header and extras.

Separate from :mod:`pandas_dp.publish.checks` (the checks of a spec's values, which the
model uses while parsing): these take the parsed :class:`~pandas_dp.publish.model.ReleaseSpec`.
"""

from __future__ import annotations

import difflib

import pandas as pd

from pandas_dp.errors import MissingExtraError, SpecError
from pandas_dp.optional import require
from pandas_dp.publish.model import ReleaseSpec
from pandas_dp.publish.where import parse_where


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


def check_columns(spec: ReleaseSpec, header: list[str] | None) -> None:
    """Every column the spec names must be in the data file's header (before any release).

    Raises a :class:`SpecError` listing each unknown column with the query that names it and
    the closest name in the header.
    """
    if header is None:
        return
    problems = []
    unit = spec.privacy.get("privacy_unit")
    named = [("privacy.privacy_unit", unit)] if unit is not None else []
    for query in spec.queries:
        used = [*query.groupby, *(c for c, _ in query.aggs.values() if c is not None)]
        used += [*query.bounds, *query.fillna, *([query.weights] if query.weights else [])]
        if query.where is not None:
            used += list(parse_where(query.where).columns)
        named += [(f"query {query.name!r}", column) for column in dict.fromkeys(used)]
    for where, column in named:
        if column not in header:
            close = difflib.get_close_matches(str(column), header, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            problems.append(f"{where}: column {column!r} is not in the data's header{hint}")
    if problems:
        raise SpecError("; ".join(problems) + f". The header has: {', '.join(header)}")
