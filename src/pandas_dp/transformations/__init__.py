"""Derived frames the library builds from public inputs: a linear model's design from a formula.

:mod:`~pandas_dp.transformations.formula_grammar` checks that a formula's terms are
row-local; :mod:`~pandas_dp.transformations.design` fixes the design on a public probe and
applies it to private rows inside the engine.
"""
