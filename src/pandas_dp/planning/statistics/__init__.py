"""One class per statistic, and the registry that the API and release files read.

Adding a statistic is one class (a :class:`Statistic` subclass naming its measurements and
how its value, interval and preview error follow from them) plus one line in
:data:`STATISTICS` (:mod:`.registry`); ``agg``, the group-by, previews and release specs
then offer it.
"""

from __future__ import annotations

from pandas_dp.planning.statistics.base import Context, Inputs, Statistic
from pandas_dp.planning.statistics.counting import NUnique, Size
from pandas_dp.planning.statistics.moments import Count, Mean, Sum
from pandas_dp.planning.statistics.parsing import parse_func, parse_named, statistic_class
from pandas_dp.planning.statistics.registry import STATISTICS
from pandas_dp.planning.statistics.selections import (
    Bound,
    Choice,
    LevelCount,
    Max,
    Median,
    Min,
    Quantile,
)
from pandas_dp.planning.statistics.spreads import Sem, Std, Var

__all__ = [
    "STATISTICS",
    "Bound",
    "Choice",
    "Context",
    "Count",
    "Inputs",
    "LevelCount",
    "Max",
    "Mean",
    "Median",
    "Min",
    "NUnique",
    "Quantile",
    "Sem",
    "Size",
    "Statistic",
    "Std",
    "Sum",
    "Var",
    "parse_func",
    "parse_named",
    "statistic_class",
]
