"""Released values as plain JSON, for ledger files, and back.

A ledger file keeps what each charge released, so a release spec interrupted between the
charge and writing its output can recover the output instead of paying for it again. These
values are released outputs (public by definition); nothing else goes in.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

#: A JSON value of a released result (NaN as None, keys as text).
Plain = bool | int | float | str | list["Plain"] | None


class Estimate(NamedTuple):
    """A released value with its confidence interval (for ungrouped releases with ``ci=``).

    ``value``, ``lower`` and ``upper`` are floats for numeric columns, and ``Timestamp``
    (``Timedelta``) for datetime (timedelta) columns, as the pandas statistic would be.
    """

    value: Any
    lower: Any
    upper: Any
    confidence: float


def _plain(value: object) -> Plain:
    """A JSON-able Python scalar (floats stay floats, NaN becomes None, keys become text)."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        number = float(value)
        return number if math.isfinite(number) else None
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if value is pd.NA or value is pd.NaT:
        return None
    return str(value)  # intervals, timestamps, categories: their text


def output_to_json(result: object) -> dict[str, object]:
    """``{"type": "scalar" | "estimate" | "series" | "frame" | "list" | "tables", ...}``.

    ``"tables"`` is a dict of Series and frames (``dp.tables``): a list of ``[key, table]``
    pairs, each key the list of its columns' names.
    """
    if isinstance(result, dict):
        return {
            "type": "tables",
            "value": [[_plain(key), output_to_json(table)] for key, table in result.items()],
        }
    if isinstance(result, Estimate):
        return {
            "type": "estimate",
            "value": _plain(result.value),
            "lower": _plain(result.lower),
            "upper": _plain(result.upper),
            "confidence": _plain(result.confidence),
        }
    if isinstance(result, pd.Series | pd.DataFrame):
        frame = result.to_frame() if isinstance(result, pd.Series) else result
        return {
            "type": "series" if isinstance(result, pd.Series) else "frame",
            "index_names": [_plain(n) for n in frame.index.names],
            "index": [_plain(k) for k in frame.index],
            "columns": [_plain(c) for c in frame.columns],
            "data": [[_plain(v) for v in row] for row in frame.itertuples(index=False)],
        }
    if isinstance(result, list):
        return {"type": "list", "value": [_plain(v) for v in result]}
    return {"type": "scalar", "value": _plain(result)}


def output_from_json(data: dict[str, Any]) -> Any:
    """Rebuild a released value; keys come back as their JSON form (text for intervals)."""
    kind = data["type"]
    if kind == "tables":
        return {tuple(key): output_from_json(table) for key, table in data["value"]}
    if kind == "estimate":
        return Estimate(data["value"], data["lower"], data["upper"], data["confidence"])
    if kind in ("scalar", "list"):
        return data["value"]
    names = data["index_names"]
    if len(names) > 1:
        index = pd.MultiIndex.from_tuples([tuple(k) for k in data["index"]], names=names)
    else:
        index = pd.Index(data["index"], name=names[0])
    frame = pd.DataFrame(data["data"], index=index, columns=data["columns"])
    if kind == "series":
        return frame.iloc[:, 0]
    return frame
