"""Engines compute exact clipped aggregates; :func:`engine_for` is the one place that picks one."""

from __future__ import annotations

from pandas_dp.engines.pandas_engine import PandasEngine
from pandas_dp.engines.plan import ClippedSum, Engine, Grouping, Measure, NonNull, Rows

__all__ = [
    "ClippedSum",
    "Engine",
    "Grouping",
    "Measure",
    "NonNull",
    "PandasEngine",
    "Rows",
    "engine_for",
]

_PANDAS = PandasEngine()


def engine_for(data: object) -> Engine:
    """Return the engine that can aggregate ``data``.

    This is the only function in pandas-dp that decides between pandas and other backends.
    """
    return _PANDAS
