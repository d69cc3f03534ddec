"""Per-release contribution caps from the session's privacy unit and a query's own bounds.

The caps themselves are a plan value (:class:`~pandas_dp.planning.request.Caps`).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, Protocol

from pandas_dp.errors import DPValueError
from pandas_dp.measures.bounding import Bounding
from pandas_dp.planning.request import Caps
from pandas_dp.units import Contribution, positive_int


class UnitTarget(Protocol):
    """What :func:`caps_for` reads of a release's target (``release.types.Target``).

    A protocol rather than the class: the release package imports this module.
    """

    @property
    def session(self) -> Any:
        """The release's session: its privacy unit and priority sources."""

    @property
    def unit(self) -> Hashable | None:
        """The data's column holding the privacy unit's ids."""


def caps_for(
    target: UnitTarget,
    grouped: bool,
    max_groups: int | None = None,
    max_rows_per_group: int | None = None,
) -> Caps:
    """Contribution caps from the session's privacy unit and the query's own bounds.

    With ``k`` rows per unit, ``g`` groups per unit and ``r`` rows per group (``g`` and ``r``
    default to ``k``): ``l1 = min(k, g·r)``, ``l0 = g``, ``linf = r`` (PipelineDP's L0 × L∞
    for L1, and L0, L∞ for Gaussian noise). Without a unit, the frame's stability ``s``
    (:mod:`pandas_dp.transformations.stability`; 1 for a protected table) gives
    ``l1 = linf = s`` and ``l0 = s`` (grouped) or 1: this is the one place a release reads it.
    """
    unit = target.session.unit
    lineage = target.session.lineage
    if unit.column is None:
        if max_groups is not None or max_rows_per_group is not None:
            raise DPValueError(
                "max_groups_per_unit / max_rows_per_group need a privacy unit; protect with "
                "privacy_unit='<id column>', max_rows_per_unit=k"
            )
        # One protected row is ≤ s rows of the derived frame, anywhere among its groups.
        s = lineage.stability
        contribution = Contribution(l1=s, l0=s if grouped else 1, linf=s)
        return Caps(contribution, lineage=lineage.describe(), tables=target.session.tables)
    k = unit.max_rows
    groups = k if max_groups is None else min(k, positive_int(max_groups, "max_groups_per_unit"))
    per_group = k
    if max_rows_per_group is not None:
        per_group = min(k, positive_int(max_rows_per_group, "max_rows_per_group"))
    if not grouped:
        groups, per_group = 1, k
    assert target.unit is not None
    bounding = Bounding(
        target.unit,
        k,
        max_groups=groups if grouped and groups < k else None,
        max_rows_per_group=per_group if grouped and per_group < k else None,
        priorities=target.session.cap_priorities,
        spawn=target.session.spawn_priorities,
    )
    contribution = Contribution(l1=min(k, groups * per_group), l0=groups, linf=per_group)
    return Caps(
        contribution, bounding, unit.column, lineage=lineage.describe(),
        tables=target.session.tables,
    )  # fmt: skip
