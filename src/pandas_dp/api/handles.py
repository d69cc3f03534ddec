"""The handle a protected frame carries in ``attrs``: one per session, never copied.

A string subclass, so that pandas copies it as it copies any attrs value; resolved to the live
session in this process only (``_LIVE``, by the session's id). Pickled, or read back in
another process, it becomes a :class:`DetachedMarker`: a session cannot be copied that way.
Kept apart from :mod:`pandas_dp.api.attach` so that the session module can make its handle
without importing the functions that look sessions up.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

_PREFIX = "pandas-dp session "
#: Live sessions by id (weakly: a session dies with the last frame or name that holds it).
_LIVE: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()


class SessionHandle(str):
    """The value stored in ``attrs``: shared, never copied, resolved per process."""

    _session: Any  # a Session (the session module imports this one)

    def __new__(cls, session: Any) -> SessionHandle:
        """Create the one handle of ``session``."""
        handle = super().__new__(cls, _PREFIX + session.id)
        handle._session = session
        _LIVE[session.id] = session
        return handle

    @property
    def session(self) -> Any:
        """The live session."""
        return self._session

    def __copy__(self) -> SessionHandle:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> SessionHandle:
        return self

    def __reduce__(self) -> tuple[Callable[[str], str], tuple[str]]:
        return (_restore, (str(self),))


class DetachedMarker(str):
    """What a handle becomes outside the process (or after the session that owned it died)."""


def _restore(text: str) -> str:
    session = _LIVE.get(text[len(_PREFIX) :])
    if session is not None:
        return session.handle
    return DetachedMarker(text)
