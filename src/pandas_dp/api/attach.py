"""How a session travels with a pandas object, and how it refuses to travel further.

pandas deep-copies ``attrs`` whenever it propagates them (filters, column selection, copy,
query, assign, head, ...). A session stored there directly would be *cloned* into a fresh
budget by every filter. Instead ``attrs`` holds a :class:`SessionHandle`: a small ``str``
subclass whose ``__copy__`` and ``__deepcopy__`` return itself, so every derived frame shares
the one session.

It is a ``str`` so that ``DataFrame.to_parquet`` (which writes ``attrs`` as JSON) works; the
file then holds only the handle's text, and a frame read back carries a plain string, which
:func:`session_of` rejects. Pickling resolves the handle through a process-local registry:
the same session in this process, a dead marker in any other, so a session never forks into
two budgets by serialisation.

Frames are read and written through their engine (:func:`~pandas_dp.engines.engine_for`):
a Dask collection keeps its ``attrs`` on its meta frame, which dask derives with pandas'
own operations, so the handle propagates to derived collections exactly as on pandas.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from pandas_dp.api.handles import SessionHandle
from pandas_dp.engines import engine_for
from pandas_dp.errors import NotProtectedError
from pandas_dp.marks import ATTRS_KEY

if TYPE_CHECKING:
    from pandas_dp.api.session import Session


HOW_TO_PROTECT = (
    "If you are the data owner, protect the raw frame with "
    "df.dp.protect(epsilon=...); otherwise derive this object from the protected frame "
    "with operations that keep its session (filters, column selection, copy, query, assign, "
    "head, sort_values, ...). Operations that combine it with other data (merge, join, concat "
    "with other frames, pd.DataFrame(df), building frames from numpy, value_counts, "
    "groupby().size(), transform, rolling) drop the session on purpose."
)


def attach(obj: Any, session: Session) -> Any:
    """A shallow copy of ``obj`` carrying ``session``'s handle instead of any earlier one."""
    engine = engine_for(obj)
    attrs = {k: v for k, v in engine.attrs(obj).items() if k != ATTRS_KEY}
    return engine.with_attrs(obj, {**attrs, ATTRS_KEY: session.handle})


def session_of(obj: pd.DataFrame | pd.Series) -> Session:
    """The live session attached to ``obj``.

    Raises
    ------
    NotProtectedError
        If ``obj`` has no handle (it was never protected, or an operation dropped the
        session), or only the text of a handle (read from a file or another process).
    """
    marker = engine_for(obj).attrs(obj).get(ATTRS_KEY)
    if isinstance(marker, SessionHandle):
        session: Session = marker.session
        return session
    kind = type(obj).__name__
    if marker is None:
        raise NotProtectedError(f"this {kind} is not protected by pandas-dp. {HOW_TO_PROTECT}")
    raise NotProtectedError(
        f"this {kind} carries the mark of a pandas-dp session that does not live in this "
        "process: it was unpickled in another process or read back from a file. A session "
        "cannot be copied that way (each copy would be a fresh budget). Query the frame in the "
        "process that protected it, or have the data owner protect it again."
    )


def has_session_mark(obj: pd.DataFrame | pd.Series) -> bool:
    """Whether ``obj`` carries any pandas-dp mark, live or not."""
    return ATTRS_KEY in engine_for(obj).attrs(obj)
