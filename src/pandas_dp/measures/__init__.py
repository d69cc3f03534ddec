"""What an engine is asked to compute, as values: the vocabulary engines and planning share.

Below both: :mod:`~pandas_dp.measures.aggregates` (the measures, a grouping over public
keys, an exact aggregate), :mod:`~pandas_dp.measures.axes` (contingency tables' axes) and
:mod:`~pandas_dp.measures.grids` (the public candidate grids of quantiles). Public inputs
only; nothing here reads data or draws noise.
"""
