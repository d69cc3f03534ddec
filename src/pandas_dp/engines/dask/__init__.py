"""The Dask engine: the same exact clipped aggregates over collections that do not fit in memory.

- :mod:`~pandas_dp.engines.dask.engine`: :class:`~pandas_dp.engines.dask.engine.DaskEngine`,
  the :class:`~pandas_dp.engines.Engine` for Dask collections (``engine_for`` imports it on
  first use, so importing pandas-dp never imports Dask);
- :mod:`~pandas_dp.engines.dask.partitions`: what one partition computes and how partitions'
  aggregates combine;
- :mod:`~pandas_dp.engines.dask.divisions` and :mod:`~pandas_dp.engines.dask.exchange`:
  gathering each privacy unit's rows in one bucket (its divisions when the index is the unit,
  else an exchange by unit in stages) so that its caps apply once;
- :mod:`~pandas_dp.engines.dask.lineage` and :mod:`~pandas_dp.engines.dask.rows`: what a
  collection's expression graph proves about its rows since ``protect``.
"""
