"""Exceptions and warnings raised by pandas-dp.

Every exception derives from :class:`DPError` *and* from the standard-library exception a
pandas user already catches for the same kind of mistake::

    DPError (Exception)
    ├── DPValueError (ValueError)          bad ε, δ, bounds, keys or other argument values
    ├── DPTypeError (TypeError)            a column whose dtype cannot be aggregated
    ├── DPKeyError (KeyError)              a column that does not exist
    ├── BudgetExceededError (RuntimeError) the release would overspend the session's budget
    ├── ReleaseFailedError (RuntimeError)  a release failed after reading the data; it was charged
    ├── NotProtectedError (RuntimeError)   the frame has no usable session
    │   └── DuplicatedRowsError            rows may have been duplicated since protect()
    ├── LedgerError (RuntimeError)         a ledger file was edited, damaged or does not match
    ├── SpecError (ValueError)             a release spec is invalid (the message gives the path)
    └── MissingExtraError (ImportError)    an optional dependency is not installed

    PrivacyLeakWarning (UserWarning)       something weakens the privacy guarantee (e.g. a seed)

Messages name what failed, the offending *public* value (an argument, a column name) and the
fix. They never contain a cell value, a group key found only in the data, or a row count:
an error message is a release too.
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from collections.abc import Iterable
from types import FrameType


class DPError(Exception):
    """Base class of every pandas-dp error."""


class DPValueError(DPError, ValueError):
    """An argument has a value pandas-dp cannot use (ε, δ, bounds, keys, ...)."""


class DPTypeError(DPError, TypeError):
    """An argument or a column has a type pandas-dp cannot use."""


class DPKeyError(DPError, KeyError):
    """A column named in a query does not exist."""

    def __str__(self) -> str:  # KeyError would show the message in quotes
        return str(self.args[0]) if self.args else ""


class BudgetExceededError(DPError, RuntimeError):
    """The release would spend more than the session has left. Nothing was charged."""


class ReleaseFailedError(DPError, RuntimeError):
    """A release failed after it had read the data; its budget was charged all the same.

    Once a release has passed validation and the budget check, whether it fails must not
    depend on the private data, or the failure itself would be an uncharged observation of
    it (a query that fails only for some data can be retried until it tells). pandas-dp
    makes every step after the check total, so this error signals a bug; it carries no
    detail of the original failure (which could describe the data), and the release's cost
    is charged as if it had succeeded.
    """


class NotProtectedError(DPError, RuntimeError):
    """The object carries no live pandas-dp session, so nothing can be released from it."""


class DuplicatedRowsError(NotProtectedError):
    """The frame's rows may have been duplicated since it was protected.

    With one row per person, a duplicated row would let one person count twice. Raised when
    the index is not unique, holds labels the protected frame did not have, or is longer.
    """


class LedgerError(DPError, RuntimeError):
    """A ledger file cannot be trusted or does not match the session; nothing was charged.

    Raised when a line does not match its checksum or the chain of hashes (the file was
    edited or damaged), when the file shrank, or when its budget differs from the one given.
    """


class SpecError(DPValueError):
    """A release spec is invalid; the message starts with where (``query[2].bounds.income``)."""


class MissingExtraError(DPError, ImportError):
    """An optional dependency is missing; the message gives the ``pip install`` line."""


class PrivacyLeakWarning(UserWarning):
    """Something in use weakens or voids the differential-privacy guarantee."""


class NoiseDominatedWarning(UserWarning):
    """A released number is mostly noise: smaller than its noise's 95% half-width.

    Decided from the released (noisy) values only, after the release is charged, so it says
    nothing the release did not. Silence it with
    ``warnings.filterwarnings("ignore", category=pandas_dp.NoiseDominatedWarning)``.
    """


#: Frames in these files are not the caller's: pandas-dp itself, the ``with`` machinery of
#: context managers, and the import system (a hook that warns while the user imports dask).
_NOT_CALLERS = (
    os.path.dirname(os.path.abspath(__file__)) + os.sep,
    os.path.abspath(contextlib.__file__),
    "<frozen importlib",
)


def warn(message: str | Warning, category: type[Warning] | None = None) -> None:
    """Issue a warning that points at the user's line, not into pandas-dp.

    The ``stacklevel`` is the first frame outside the package (however many of its own
    calls lead there: an accessor, a group-by, a release file), so ``-W error`` tracebacks,
    notebooks and logs show the call that caused it.
    """
    frame: FrameType | None = sys._getframe(1)
    level = 2  # stacklevel 1 is this function's own line; 2 its caller's
    while frame is not None and frame.f_code.co_filename.startswith(_NOT_CALLERS):
        # warnings.warn skips the import system's frames without counting them; so do we
        internal = (
            "importlib" in frame.f_code.co_filename and "_bootstrap" in frame.f_code.co_filename
        )
        frame, level = frame.f_back, level + (0 if internal else 1)
    warnings.warn(message, category, stacklevel=level if frame is not None else 2)


def holds_data(value: object) -> bool:
    """Whether ``value`` is an array-like that may hold a frame's rows (not a label or number).

    Series, DataFrames, Indexes, numpy and extension arrays (pandas or Dask; anything with a
    ``shape`` of one dimension or more), and lists, tuples, sets and dicts holding one.
    """
    if len(getattr(value, "shape", ())) > 0:
        return True
    if isinstance(value, list | tuple | set | frozenset):
        return any(holds_data(item) for item in value)
    if isinstance(value, dict):
        return any(holds_data(item) for item in (*value, *value.values()))
    return False


def shown(value: object) -> str:
    """An argument as a message shows it: its ``repr``, or only its kind when it may hold rows.

    A user who passes ``priv["income"]`` where a label, a number or a pair is expected (as
    ``pd.crosstab`` takes arrays) must get an error that says so without the column's values
    or its length: an error message is a release. Labels and numbers the user typed are
    shown as they are.

    >>> import pandas as pd
    >>> shown(pd.Series([1.5, 2.5], name="income"))
    'a Series'
    >>> shown(["age", pd.Index([3, 4])])
    'a list holding an Index'
    >>> shown(("age", 2))
    "('age', 2)"
    """
    if not holds_data(value):
        return repr(value)
    kind = type(value).__name__
    article = "an" if kind[:1].lower() in "aeiou" or kind == "ndarray" else "a"
    if len(getattr(value, "shape", ())) > 0:  # not even its name: a row's label may be one
        return f"{article} {kind}"
    items: Iterable[object] = (
        (*value, *value.values()) if isinstance(value, dict) else value  # type: ignore[assignment]
    )
    inner = next(item for item in items if holds_data(item))
    return f"{article} {kind} holding {shown(inner)}"
