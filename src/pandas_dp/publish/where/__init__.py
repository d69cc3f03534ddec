"""The ``where`` row filters of release files, in two modules.

``language``: the whitelisted language, parsed and type-checked against the columns' dtypes
(public metadata) before any row is read. ``evaluation``: a parsed ``where`` run on rows,
with one semantics.
"""
