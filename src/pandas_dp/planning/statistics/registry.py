"""The statistics ``agg``, the group-by and release files accept, by the name users type."""

from __future__ import annotations

from pandas_dp.planning.statistics.base import Statistic
from pandas_dp.planning.statistics.counting import NUnique, Size
from pandas_dp.planning.statistics.moments import Count, Mean, Sum
from pandas_dp.planning.statistics.selections import Max, Median, Min
from pandas_dp.planning.statistics.spreads import Sem, Std, Var

#: Adding a statistic: one class, one line here.
STATISTICS: dict[str, type[Statistic]] = {
    "count": Count,
    "size": Size,
    "sum": Sum,
    "mean": Mean,
    "var": Var,
    "std": Std,
    "median": Median,
    "min": Min,
    "max": Max,
    "sem": Sem,
    "nunique": NUnique,
}
