"""The ``.dp`` accessors: thin, stateless doorways to the query families.

One class per object kind (:class:`DataFrameDPAccessor` in :mod:`.frame`,
:class:`SeriesDPAccessor` in :mod:`.series`, what both have in :mod:`.base`). pandas 3 builds
a new accessor object on every ``df.dp`` access, so nothing is stored here but the object
and a consumer value. Every release method plans its release and hands it to that consumer:
:class:`~pandas_dp.api.release.consumers.Run` on ``df.dp``, and
:class:`~pandas_dp.api.release.consumers.Describe` on ``df.dp.preview``, whose methods are
the same methods, so a preview accepts exactly what a release accepts.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import pandas as pd

from pandas_dp.api.accessors.frame import DataFrameDPAccessor, DataFramePreview
from pandas_dp.api.accessors.series import SeriesDPAccessor, SeriesPreview
from pandas_dp.optional import when_imported

__all__ = [
    "DataFrameDPAccessor",
    "DataFramePreview",
    "SeriesDPAccessor",
    "SeriesPreview",
    "register",
    "register_dask",
]


def register() -> None:
    """Register ``.dp`` on DataFrame and Series (idempotent), and on Dask's once imported."""
    for register_accessor, cls in (
        (pd.api.extensions.register_dataframe_accessor, DataFrameDPAccessor),
        (pd.api.extensions.register_series_accessor, SeriesDPAccessor),
    ):
        owner = pd.DataFrame if cls is DataFrameDPAccessor else pd.Series
        if getattr(owner, "dp", None) is not cls:  # the class attribute is the accessor class
            register_accessor("dp")(cls)
    when_imported("dask.dataframe", register_dask)


def register_dask(dd: ModuleType) -> None:
    """Register the same ``.dp`` accessors on Dask DataFrame and Series (idempotent)."""
    from dask.dataframe import extensions

    accessors: list[tuple[Callable[[str], Callable[[type], type]], type, type]] = [
        (extensions.register_dataframe_accessor, dd.DataFrame, DataFrameDPAccessor),
        (extensions.register_series_accessor, dd.Series, SeriesDPAccessor),
    ]
    for register_accessor, owner, cls in accessors:
        if getattr(owner, "dp", None) is not cls:
            register_accessor("dp")(cls)
