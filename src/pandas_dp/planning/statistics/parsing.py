"""What users pass to ``agg``, read the way pandas reads it.

Named aggregation (``n="count"``, ``m=("income", "mean")``, ``pd.NamedAgg``), a dict of
column to statistic or list of statistics, a list of statistics, or one statistic's name.
Messages teach: a misspelt statistic gets the closest name, and aggregations pandas offers
that no DP release can give (``first``, ``prod``, a function, ...) say why.
"""

from __future__ import annotations

import difflib
from collections.abc import Hashable, Mapping, Sequence

import pandas as pd

from pandas_dp.errors import DPTypeError, DPValueError
from pandas_dp.planning.statistics.base import Statistic
from pandas_dp.planning.statistics.registry import STATISTICS

#: pandas aggregations with no DP counterpart here, and why.
_NOT_DP = {
    "first": "it returns one row's value",
    "last": "it returns one row's value",
    "nth": "it returns one row's value",
    "idxmin": "it returns a row's label",
    "idxmax": "it returns a row's label",
    "prod": "one row can change a product without bound",
    "ohlc": "it returns rows' values",
    "cumsum": "it returns one value per row",
    "cumcount": "it returns one value per row",
    "all": "it reveals whether a single row differs",
    "any": "it reveals whether a single row differs",
}

#: Common names of statistics that pandas spells otherwise, suggested in their place.
ALIASES = {
    "avg": "mean",
    "average": "mean",
    "stdev": "std",
    "sd": "std",
    "variance": "var",
    "n": "count",
    "len": "count",
    "distinct": "nunique",
}


def closest_statistic(how: str) -> str | None:
    """The statistic ``how`` probably means: a synonym's pandas name, or the closest name."""
    if how.lower() in ALIASES:
        return ALIASES[how.lower()]
    close = difflib.get_close_matches(how, list(STATISTICS), n=1)
    return close[0] if close else None


def statistic_class(how: object, where: str) -> type[Statistic]:
    """The registered statistic named ``how``; ``where`` prefixes the error messages."""
    if isinstance(how, str) and how in STATISTICS:
        return STATISTICS[how]
    choices = ", ".join(repr(name) for name in STATISTICS)
    if callable(how):
        raise DPValueError(
            f"{where}: a function cannot be released with differential privacy (its output "
            f"could be anything); name a statistic instead: {choices}"
        )
    if not isinstance(how, str):
        raise DPTypeError(f"{where}: a statistic is named by a string, got {type(how).__name__}")
    if how in _NOT_DP:
        raise DPValueError(
            f"{where}: {how!r} has no differentially private version: {_NOT_DP[how]}. "
            f"Choose from {choices}"
        )
    close = closest_statistic(how)
    hint = f"; did you mean {close!r}?" if close else "."
    raise DPValueError(f"{where}: unsupported statistic {how!r}{hint} Choose from {choices}")


def parse_named(named: Mapping[str, object]) -> list[Statistic]:
    """Parse pandas-style named aggregations (``n="count"``, ``avg=("income", "mean")``)."""
    if not named:
        raise DPValueError('agg needs at least one named statistic, e.g. n="count"')
    stats = []
    for name, spec in named.items():
        column: Hashable | None
        how: object
        if isinstance(spec, str):
            column, how = None, spec
        elif isinstance(spec, pd.NamedAgg):  # a tuple in pandas 2, a plain class in pandas 3
            column, how = spec.column, spec.aggfunc
        elif isinstance(spec, tuple) and len(spec) == 2:
            column, how = spec
        else:
            raise DPTypeError(
                f"{name}={spec!r}: give 'count', or a (column, statistic) pair such as "
                "('income', 'mean')"
            )
        if isinstance(how, list | tuple):
            raise DPValueError(
                f"{name}: a named statistic is one statistic; for several of a column write "
                f"agg({{{column!r}: {list(how)!r}}}) or one name per statistic"
            )
        kind = statistic_class(how, str(name))
        if column is None and kind.reads_values:
            raise DPValueError(f"{name}: {how!r} needs a column, e.g. ('income', {how!r})")
        stats.append(kind(name, column))
    return stats


def parse_func(
    func: object, columns: Sequence[Hashable], series: bool
) -> tuple[list[Statistic], bool]:
    """Statistics for ``agg(func)`` on ``columns`` (a selection), and whether one Series results.

    As pandas: one name on a selected column gives a Series named after the column; a list
    gives one column per statistic (``(column, statistic)`` pairs on several columns); a dict
    maps columns to a name or a list (pairs as soon as one entry is a list).
    """
    if isinstance(func, Mapping):
        if not func:
            raise DPValueError("agg's dict is empty; map at least one column to a statistic")
        paired = any(not isinstance(how, str) for how in func.values())
        stats = []
        for column, hows in func.items():
            for how in _names(hows, f"agg[{column!r}]"):
                name = (column, how) if paired else column
                stats.append(statistic_class(how, f"agg[{column!r}]")(name, column))
        return _unique(stats), False
    if isinstance(func, str) or callable(func):
        stats = [statistic_class(func, "agg")(column, column) for column in columns]
        return stats, series
    hows = _names(func, "agg")
    if series:
        column = columns[0]
        return _unique([statistic_class(how, "agg")(how, column) for how in hows]), False
    return _unique(
        [statistic_class(how, "agg")((column, how), column) for column in columns for how in hows]
    ), False


def _names(hows: object, where: str) -> list[object]:
    if isinstance(hows, str) or callable(hows):
        return [hows]
    if isinstance(hows, list | tuple) and hows:
        return list(hows)
    raise DPTypeError(
        f"{where}: give a statistic's name or a non-empty list of names, e.g. ['sum', 'mean']"
    )


def _unique(stats: list[Statistic]) -> list[Statistic]:
    names = [stat.name for stat in stats]
    if len(set(names)) != len(names):
        raise DPValueError(f"agg names a statistic twice: {names}")
    return stats
