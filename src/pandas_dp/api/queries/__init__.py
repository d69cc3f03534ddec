"""Query families: each turns a call's public arguments into a planned release.

``ungrouped`` (count, sum, mean, spreads, quantiles, agg, describe), ``groupby`` (grouped
tables, value counts, histograms; its releases by kind in the ``grouped`` package),
``choice`` (mode and top-k), ``hierarchy`` (consistent hierarchical tables, a package) and
``epsilon_for``. None of them reads the data: they end in a
:class:`~pandas_dp.api.release.types.PlannedRelease` that the accessors run or preview.
"""
