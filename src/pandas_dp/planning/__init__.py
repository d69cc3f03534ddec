"""Plan-level algebra: statistics, their measurements and noise, from public inputs only.

Below the API and beside nothing that reads data: :mod:`~pandas_dp.planning.statistics`
(one class per statistic), :mod:`~pandas_dp.planning.measurement` (one class per
measurement kind and its calibration) and :mod:`~pandas_dp.planning.noise` (the source a
measurement draws from, handed down by the runner). It imports neither ``pandas_dp.api``
nor ``pandas_dp.engines``: what an engine computes is named in :mod:`pandas_dp.measures`.
"""
