"""Grouped quantiles' shape: the levels as an inner index level, as pandas stacks them.

:meth:`~pandas_dp.api.queries.groupby.DPGroupBy.quantile` releases ``(column, i)`` columns
in one call; :func:`stacked` turns them into ``df.groupby(by)[columns].quantile(q)``'s shape.
"""

from __future__ import annotations

from collections.abc import Hashable
from fractions import Fraction

import numpy as np
import pandas as pd
from pandas.api.extensions import ExtensionArray

from pandas_dp.api.queries.ungrouped import (
    row_major,
    rows_in_level_order,
)
from pandas_dp.api.release.finish import suffixed
from pandas_dp.api.release.types import Table


def stacked(
    table: pd.DataFrame, columns: tuple[Hashable, ...], levels: list[Fraction], series: bool
) -> Table:
    """Quantiles released as ``(column, i)`` columns, with the levels as an inner index."""
    keys = table.index
    count = len(levels)
    outer = keys.repeat(count)
    arrays = [outer.get_level_values(i) for i in range(keys.nlevels)]
    index = pd.MultiIndex.from_arrays(
        [*arrays, np.tile([float(level) for level in levels], len(keys))],
        names=[*keys.names, None],
    )
    out: dict[Hashable, ExtensionArray] = {}
    with_intervals = suffixed((columns[0], 0), "_lower") in table.columns
    for c in columns:
        values = table[[(c, i) for i in range(count)]]
        if not with_intervals:  # sorted (free); with intervals each value stays in its own
            values = rows_in_level_order(levels, values)
        out[c] = row_major(values)  # in the column's dtype (datetimes stay datetimes)
        for suffix in ("_lower", "_upper"):
            names = [suffixed((c, i), suffix) for i in range(count)]
            if names[0] in table.columns:
                out[f"{c}{suffix}"] = row_major(table[names])
    if series and len(out) == 1:
        return pd.Series(out[columns[0]], index=index, name=columns[0])
    return pd.DataFrame(out, index=index)
