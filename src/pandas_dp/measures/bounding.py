"""Contribution caps as values: what an engine must enforce of one privacy unit's rows.

:class:`Bounding` is what a release asks of an engine (see :mod:`pandas_dp.engines.bounding`
for how the engines keep a random subset within the caps); the plan reads it through its
caps (:class:`~pandas_dp.planning.request.Caps`). Public inputs only, and the session's
sources of priorities, handed down.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

#: Draws ``n`` independent uniform 64-bit priorities.
Priorities = Callable[[int], npt.NDArray[np.uint64]]


class PartitionPriorities(Protocol):
    """A picklable source of priorities that hands each partition a stream of its own."""

    #: Whether a partition must put its rows in a canonical order before drawing, so that
    #: the choice does not depend on the order in which a shuffle delivered them.
    canonical: bool

    def for_partition(self, index: int) -> Priorities:
        """The priorities of partition ``index`` (a picklable callable)."""


@dataclass(frozen=True)
class Bounding:
    """Caps on one privacy unit's contribution (see :mod:`pandas_dp.engines.bounding`).

    ``priorities`` draws in this process (the session's own source); ``spawn`` returns a
    picklable :class:`PartitionPriorities` for engines that bound in other processes.
    """

    unit: Hashable
    max_rows: int
    max_groups: int | None = None
    max_rows_per_group: int | None = None
    priorities: Priorities | None = field(default=None, compare=False, repr=False)
    spawn: Callable[[], PartitionPriorities] | None = field(default=None, compare=False, repr=False)
