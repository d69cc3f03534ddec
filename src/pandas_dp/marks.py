"""The mark a protected frame carries, readable below the API (by results that take rows).

``protect`` attaches its session's handle to a frame's ``attrs`` under :data:`ATTRS_KEY`
(``pandas_dp.api.attach``); pandas and Dask carry it to every frame derived from it. A
released model's ``predict`` takes *public* rows: :func:`carries_mark` lets it refuse
protected ones (each prediction of a protected row is private, as ``fittedvalues`` is).
"""

from __future__ import annotations

#: Key of the session's handle in ``DataFrame.attrs`` / ``Series.attrs``.
ATTRS_KEY = "pandas_dp"


def carries_mark(obj: object) -> bool:
    """Whether ``obj`` (a pandas or Dask frame or Series) carries a pandas-dp mark."""
    attrs = getattr(getattr(obj, "_meta", obj), "attrs", None)  # Dask: the meta frame's
    return isinstance(attrs, dict) and ATTRS_KEY in attrs
