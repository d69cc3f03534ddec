"""The releases of a group-by, by what they release; :class:`~.groupby.DPGroupBy` joins them.

``statistics``: column selection and one statistic per column (spreads, quantiles,
``nunique``, ``describe``). ``counts``: ``count``, ``size`` and ``value_counts`` within
groups. ``matrices``: ``cov`` and ``corr`` per group.
"""
