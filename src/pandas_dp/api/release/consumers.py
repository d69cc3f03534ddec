"""Who consumes a planned release: run it, or describe it. A value, chosen by the caller.

A query builds one :class:`~pandas_dp.api.release.types.PlannedRelease`; what happens to it
is the consumer the accessor holds: ``df.dp`` holds a :class:`Run` (check, read, noise,
charge: :func:`~pandas_dp.api.release.run.run`), ``df.dp.preview`` a :class:`Describe`
(cost, noise and error: :func:`~pandas_dp.api.release.preview.preview`). Group-bys,
hierarchies and resamplers made from an accessor carry its consumer, so
``priv.dp.preview.groupby(...).mean(...)`` describes. The release tag a release file puts on
its ledger rows travels in :class:`Run`, and a preview's planning row count in
:class:`Describe`; nothing is ambient.

Public methods are marked with :func:`checked_keywords`: a misspelt keyword is refused
with the closest name before anything is planned, read or charged, and ``expected_rows=``
on a previewing object's call describes at that planning row count.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ParamSpec, Protocol, Self, TypeAlias, TypeVar, cast

from pandas_dp.api.release.arguments import check_keywords, check_named, keywords_of
from pandas_dp.api.release.planning_rows import NAME as PLANNING_ROWS
from pandas_dp.api.release.planning_rows import planning_rows
from pandas_dp.api.release.preview import preview
from pandas_dp.api.release.run import run
from pandas_dp.api.release.types import PlannedRelease
from pandas_dp.errors import DPTypeError

T = TypeVar("T")
P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True)
class Run:
    """Release a planned release: check, read, noise, charge (what ``df.dp`` does).

    Parameters
    ----------
    tag : str
        Put on the ledger row of every release this consumer charges (a release file's
        query id); empty: the release's own tag.
    """

    tag: str = ""

    def __call__(self, planned: PlannedRelease[T]) -> T:
        """Release ``planned`` and return its result."""
        return run(planned, tag=self.tag)


@dataclass(frozen=True)
class Describe:
    """Describe a planned release instead of running it (what ``df.dp.preview`` does).

    Parameters
    ----------
    expected_rows : float, optional
        A planning row count: the preview then states means' and spreads' errors at it.
    """

    expected_rows: float | None = None

    def __call__(self, planned: PlannedRelease[object]) -> Any:  # a Preview, typed as the result
        """Describe ``planned``: cost, noise and error, without reading or charging."""
        return preview(planned, expected_rows=self.expected_rows)


#: What an accessor, group-by, hierarchy or resampler hands its planned releases to.
Consumer: TypeAlias = Run | Describe

#: The consumer of ``df.dp`` and ``s.dp``: release, with the release's own tag.
RUN = Run()


class Consuming(Protocol):
    """An object whose release methods hand their plans to a consumer it holds."""

    _consumer: Consumer

    def _consuming(self, consumer: Consumer) -> Self:
        """The same object, handing its plans to ``consumer``."""
        ...


def checked_keywords(function: Callable[P, R]) -> Callable[P, R]:
    """Mark a public release method: its keywords' names are checked, ``expected_rows`` taken.

    ``priv.dp.count(epsilion=0.1)`` then says ``count() got an unexpected keyword argument
    'epsilion'; did you mean 'epsilon'?`` (a :class:`~pandas_dp.DPTypeError`) instead of an
    internal function's complaint, and before anything is planned, read or charged. On a
    previewing object (one holding a :class:`Describe`), ``expected_rows=`` is a planning
    row count for that one call; elsewhere it is refused.
    """

    @functools.wraps(function)
    def checked(*args: P.args, **kwargs: P.kwargs) -> R:
        if not kwargs:
            return function(*args, **kwargs)
        spec = keywords_of(function)
        if spec is None:
            return function(*args, **kwargs)
        allowed, kind = spec
        if PLANNING_ROWS in allowed:  # its own argument (epsilon_for)
            return function(*args, **kwargs)
        given = [name for name in kwargs if name != PLANNING_ROWS]
        if kind == "closed":
            check_keywords(function.__name__, given, allowed)
        elif kind == "named":
            check_named(
                function.__name__, {k: kwargs[k] for k in given if k not in allowed}, allowed
            )
        if PLANNING_ROWS not in kwargs:
            return function(*args, **kwargs)
        return _with_planning_rows(function, args, kwargs)

    checked.__keywords_checked__ = True  # type: ignore[attr-defined]
    return checked


def _with_planning_rows(
    function: Callable[..., R], args: tuple[object, ...], kwargs: dict[str, object]
) -> R:
    """Call ``function`` on its object made to describe at ``kwargs``' ``expected_rows``."""
    owner = args[0] if args else None
    if not isinstance(getattr(owner, "_consumer", None), Describe):
        raise DPTypeError(
            f"{function.__name__}() got expected_rows, a planning value for previews: "
            f"priv.dp.preview.{function.__name__}(..., expected_rows=...). A release "
            "measures its own count"
        )
    rows = planning_rows(kwargs.pop(PLANNING_ROWS), None, function.__name__)
    describing = cast(Consuming, owner)._consuming(Describe(expected_rows=rows))
    result = function(describing, *args[1:], **kwargs)
    if not hasattr(result, "errors"):  # not a release's preview: the value would be lost
        raise DPTypeError(
            f"{function.__name__}() takes no expected_rows: give it to the previewed release "
            "(e.g. priv.dp.preview.groupby(...).mean(..., expected_rows=...))"
        )
    return result
