"""``expected_rows``: the one name of the planning row count.

A mean's or a spread's error depends on its count, which is private. Previews
(``priv.dp.preview.mean(..., expected_rows=1400)``), :meth:`Preview.errors`,
``epsilon_for`` and release files (``expected_rows = 1400``) take a public planning value
under this one name; ``n=``, its old name in ``epsilon_for`` and ``Preview.mean_error``,
still works with a :class:`FutureWarning`.

A preview call hands the value to :func:`~pandas_dp.api.release.preview.preview` through a
context variable set for the duration of that call only, so the release methods, shared by
``.dp`` and ``.dp.preview``, keep one signature.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from contextvars import ContextVar
from numbers import Real
from typing import TypeVar

import numpy as np

from pandas_dp.api.session import setting
from pandas_dp.errors import DPTypeError, DPValueError, warn

NAME = "expected_rows"

#: The planning row count of the preview call under way (None: none was given).
EXPECTED_ROWS: ContextVar[float | None] = ContextVar("expected_rows", default=None)


R = TypeVar("R")


def planning_rows(given: object, old: object, public: str) -> float:
    """``expected_rows`` (or its old name ``n``) checked: a finite number >= 1."""
    if old is not None:
        if given is not None:
            raise DPTypeError(f"{public}() got both expected_rows and n: give expected_rows")
        warn(
            f"{public}(n=...) is now {public}(expected_rows=...): one name for the planning "
            "row count in previews, epsilon_for and release files",
            FutureWarning,
        )
        given = old
    if given is None:
        raise DPValueError(
            f"{public}() needs expected_rows=<planning row count>: a mean's or a spread's "
            "error depends on its count, which only the data know"
        )
    if isinstance(given, bool | np.bool_) or not isinstance(given, Real):
        raise DPValueError(f"expected_rows must be a number >= 1, got {given!r}")
    rows = float(given)
    if not rows >= 1:
        raise DPValueError(f"expected_rows must be a number >= 1, got {given!r}")
    if not math.isfinite(rows):
        raise DPValueError(f"expected_rows must be finite, got {given!r}")
    return rows


def previewing(obj: object) -> bool:
    """Whether ``obj`` (an accessor, a group-by, ...) describes releases instead of running them.

    A preview accessor says so itself; a group-by or hierarchy made from one releases
    through its bound ``_execute``.
    """
    if getattr(type(obj), "PREVIEW", False):
        return True
    owner = getattr(getattr(obj, "_execute", None), "__self__", None)
    return bool(getattr(type(owner), "PREVIEW", False))


def with_planning_rows(
    function: Callable[..., R], args: tuple[object, ...], kwargs: dict[str, object]
) -> R:
    """Call ``function``, taking ``expected_rows`` out of ``kwargs`` for a preview's error."""
    if NAME not in kwargs:
        return function(*args, **kwargs)
    if not (args and previewing(args[0])):
        raise DPTypeError(
            f"{function.__name__}() got expected_rows, a planning value for previews: "
            f"priv.dp.preview.{function.__name__}(..., expected_rows=...). A release "
            "measures its own count"
        )
    rows = planning_rows(kwargs.pop(NAME), None, function.__name__)
    with setting(EXPECTED_ROWS, rows):
        result = function(*args, **kwargs)
    if not hasattr(result, "errors"):  # not a release's preview: the value would be lost
        raise DPTypeError(
            f"{function.__name__}() takes no expected_rows: give it to the previewed release "
            "(e.g. priv.dp.preview.groupby(...).mean(..., expected_rows=...))"
        )
    return result
