"""What an engine is asked to compute, as values: the vocabulary engines and planning share.

Below both: :mod:`~pandas_dp.measures.aggregates` (the measures, a grouping over public
keys, an exact aggregate), :mod:`~pandas_dp.measures.axes` (contingency tables' axes),
:mod:`~pandas_dp.measures.grids` (the public candidate grids of quantiles) and
:mod:`~pandas_dp.measures.bounding` (the contribution caps an engine enforces). Public inputs
only; nothing here reads data or draws noise.
"""
