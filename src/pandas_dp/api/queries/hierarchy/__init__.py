"""Consistent hierarchical tables: ``priv.dp.hierarchy(by, keys=...).count(epsilon=...)``.

``counts`` (:class:`~.counts.DPHierarchy` and its release of every level's counts), ``keys``
(the public keys parsed into a tree) and ``forms`` (the accepted forms of those keys).
"""
