"""Engines compute exact clipped aggregates; :func:`engine_for` is the one place that picks one."""

from __future__ import annotations

import sys

from pandas_dp.engines.pandas_engine import PandasEngine
from pandas_dp.engines.protocol import Engine

__all__ = ["Engine", "PandasEngine", "engine_for"]

_PANDAS = PandasEngine()


def engine_for(data: object) -> Engine:
    """Return the engine that can aggregate ``data``.

    This is the only function in pandas-dp that decides between pandas and other backends.
    Dask collections get the Dask engine, imported on first use: an object can only be a
    Dask collection once ``dask.dataframe`` has been imported, so nothing else imports it.
    """
    dask = sys.modules.get("dask.dataframe")
    if dask is not None and isinstance(data, dask.DataFrame | dask.Series):
        from pandas_dp.engines.dask.engine import DASK

        return DASK
    return _PANDAS
