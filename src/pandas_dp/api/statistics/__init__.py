"""One class per statistic, and the registry that the API and release files read.

Adding a statistic is one class (a :class:`Statistic` subclass naming its measurements and
how its value, interval and preview error follow from them) plus one line in
:data:`STATISTICS`; ``agg``, the group-by, previews and release specs then offer it.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

import pandas as pd

from pandas_dp.api.statistics.base import Context, Inputs, Statistic
from pandas_dp.api.statistics.moments import Count, Mean, Sem, Std, Sum, Var
from pandas_dp.api.statistics.selections import Choice, LevelCount, Median, Quantile
from pandas_dp.errors import DPTypeError, DPValueError

__all__ = [
    "STATISTICS",
    "Choice",
    "Context",
    "Count",
    "Inputs",
    "LevelCount",
    "Mean",
    "Median",
    "Quantile",
    "Sem",
    "Statistic",
    "Std",
    "Sum",
    "Var",
    "parse_named",
]

#: The statistics ``agg`` and release specs accept, by the name users type.
STATISTICS: dict[str, type[Statistic]] = {
    "count": Count,
    "sum": Sum,
    "mean": Mean,
    "var": Var,
    "std": Std,
    "median": Median,
    "sem": Sem,
}


def parse_named(named: Mapping[Any, Any]) -> list[Statistic]:
    """Parse pandas-style named aggregations (``n="count"``, ``avg=("income", "mean")``)."""
    if not named:
        raise DPValueError('agg needs at least one named statistic, e.g. n="count"')
    stats = []
    for name, spec in named.items():
        column: Hashable | None
        if isinstance(spec, str):
            column, how = None, spec
        elif isinstance(spec, pd.NamedAgg):  # a tuple in pandas 2, a plain class in pandas 3
            column, how = spec.column, str(spec.aggfunc)
        elif isinstance(spec, tuple) and len(spec) == 2:
            column, how = spec
        else:
            raise DPTypeError(
                f"{name}={spec!r}: give 'count', or a (column, 'count'|'sum'|'mean') pair"
            )
        if not isinstance(how, str) or how not in STATISTICS:
            raise DPValueError(
                f"{name}: unsupported statistic {how!r}; choose from {tuple(STATISTICS)}"
            )
        if column is None and how != "count":
            raise DPValueError(f"{name}: {how!r} needs a column, e.g. ('income', {how!r})")
        stats.append(STATISTICS[how](name, column))
    return stats
