"""What a group-by's releases share with other releases, by what it shapes.

``counts``: the options of a release of counts and the shape of ``value_counts`` within
groups (shared with ``Series.dp.value_counts`` and histograms). ``quantiles``: grouped
quantiles stacked as pandas stacks them. The releases themselves are the methods of
:class:`~pandas_dp.api.queries.groupby.DPGroupBy`.
"""
