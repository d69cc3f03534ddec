"""Plan-level algebra: the planner, statistics, their measurements and noise, from public inputs.

Below the API and beside nothing that reads data: :mod:`~pandas_dp.planning.planner` (from a
request to its measurements, their calibration and ledger record),
:mod:`~pandas_dp.planning.selection` (keys chosen from the data: their δ and rule),
:mod:`~pandas_dp.planning.request` (what a release asks for, by reader),
:mod:`~pandas_dp.planning.statistics` (one class per statistic),
:mod:`~pandas_dp.planning.measurement` (one class per measurement kind and its calibration)
and :mod:`~pandas_dp.planning.noise` (the source a measurement draws from, handed down by the
runner). It imports neither ``pandas_dp.api`` nor ``pandas_dp.engines``: what an engine
computes is named in :mod:`pandas_dp.measures`.
"""
