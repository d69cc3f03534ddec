"""``expected_rows``: the one name of the planning row count.

A mean's or a spread's error depends on its count, which is private. Previews
(``priv.dp.preview.mean(..., expected_rows=1400)``), :meth:`Preview.errors`,
``epsilon_for`` and release files (``expected_rows = 1400``) take a public planning value
under this one name; ``n=``, its old name in ``epsilon_for`` and ``Preview.mean_error``,
still works with a :class:`FutureWarning`.

A preview carries the value in its consumer
(:class:`~pandas_dp.api.release.consumers.Describe`), which hands it to
:func:`~pandas_dp.api.release.preview.preview`: ``priv.dp.preview(expected_rows=1400)``
for every call, or ``expected_rows=`` on one call.
"""

from __future__ import annotations

import math
from numbers import Real

import numpy as np

from pandas_dp.errors import DPTypeError, DPValueError, warn

NAME = "expected_rows"


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
