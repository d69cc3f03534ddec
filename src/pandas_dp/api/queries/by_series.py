"""Grouping by a Series, as ``df.groupby(df["t"].dt.to_period("M"))`` does in pandas.

The Series must come from the same protected frame (it carries the same session): group
labels computed from *another* frame's private values would let that frame's data steer a
release without its accountant knowing. It is added to the frame under a private column name
(aligned on the index, as pandas aligns it), and results are renamed back to the Series' name.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Mapping
from typing import TypeVar

import pandas as pd

from pandas_dp.api.attach import session_of
from pandas_dp.api.release import Target
from pandas_dp.api.release.arguments import Keys
from pandas_dp.errors import DPTypeError, DPValueError, NotProtectedError

_PREFIX = "__pandas_dp_by_"


T = TypeVar("T")


def series_by(
    target: Target, by: object, keys: Keys
) -> tuple[Target, object, Keys, dict[Hashable, Hashable]]:
    """``(target, by, keys, renames)`` with every Series in ``by`` made a private column.

    ``renames`` maps the private names back to the Series' names, for the result's index.
    """
    labels = list(by) if isinstance(by, list) else [by]
    if not any(isinstance(label, pd.Series) for label in labels):
        return target, by, keys, {}
    if not target.engine.in_memory:
        raise DPTypeError(
            f"grouping a {target.engine.name} collection by a Series is not supported: assign "
            "it as a column of the protected collection first"
        )
    data, names = target.data, []
    renames: dict[Hashable, Hashable] = {}
    for position, label in enumerate(labels):
        if not isinstance(label, pd.Series):
            names.append(label)
            continue
        _same_session(label, target)
        private = f"{_PREFIX}{position}"
        data = data.assign(**{private: label})
        names.append(private)
        renames[private] = label.name
    if isinstance(keys, Mapping):  # keys named after the Series
        back = {original: private for private, original in renames.items()}
        keys = {back.get(column, column): values for column, values in keys.items()}
    new_by: object = names if isinstance(by, list) else names[0]
    return dataclasses.replace(target, data=data), new_by, keys, renames


def _same_session(series: pd.Series, target: Target) -> None:
    try:
        session = session_of(series)
    except NotProtectedError:
        session = None
    if session is not target.session:
        raise DPValueError(
            f"the grouping Series {series.name!r} does not carry this frame's session (an "
            "operation such as pd.cut dropped it, or it comes from another frame): add it as a "
            "column of the protected frame, e.g. priv.assign(band=pd.cut(priv['age'], bins)), "
            "and group by that column"
        )


def renamed(result: T, renames: Mapping[Hashable, Hashable]) -> T:
    """``result`` with the private group-by names in its index replaced by the Series' names."""
    if not renames or not isinstance(result, pd.Series | pd.DataFrame):
        return result
    index = result.index
    result.index = index.set_names([renames.get(name, name) for name in index.names])
    return result
