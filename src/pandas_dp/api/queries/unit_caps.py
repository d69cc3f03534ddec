"""``max_rows_per_unit="auto"``: the cap on a unit's rows, chosen by a private quantile.

Every release under a privacy unit keeps at most ``max_rows_per_unit`` rows of each unit and
calibrates its noise to that many. Too small a cap drops rows (bias), too large a one adds
noise; the data owner rarely knows the distribution of rows per person. As Amin et al.
("Bounding user contributions", ICML 2019) propose, ``protect(..., max_rows_per_unit="auto")``
releases a high quantile of the number of rows per unit and takes it as the cap.

The release reads one number per unit (its row count, over the ids pinned at ``protect``), so
adding or removing a unit adds or removes one of those numbers: the counts form a frame of one
row per unit, released under row-level privacy, by the scan of ``priv.dp.bounds`` (a
sparse-vector scan from 0 upwards over the public lattice 0, 1, 1.25, 1.5, 1.75, 2, 2.5, ...:
steps of a quarter of a power of two) aimed at their :data:`CAP_QUANTILE` quantile, rounded
up, at least 1 and at most :data:`MAX_CAP`; charged :data:`CAP_SHARE` of the session's
budget and recorded in its ledger as its first row (tag ``max_rows_per_unit='auto'``).
Scanning upwards stops near the data: an exponential mechanism over the candidates would
give every cap beyond the largest count the same score, and at a small ε often pick one.

Why 0.999: a cap ``k`` loses the rows beyond it (for a count, about ``n·P(C > k)`` rows lost
per extra unit of ``k``) and costs noise of scale ``k/ε``; the two balance where
``P(C > k) = 1/(ε n)``, the 0.999 quantile for ``ε n`` near 1,000. Measured against the best
fixed cap in hindsight (``benchmarks/bench_auto_cap.py``, heavy-tailed rows per person):
1.6 to 2.5 times its error for a count, 1.0 to 4.6 times for a mean, at 2,000 and 20,000
people (10 to 20 sessions each). A cap from knowledge of the source (a form filled at most
12 times) is better. Every later release's ledger note gives the cap (``privacy unit pid:
≤ k rows``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from dataclasses import replace
from fractions import Fraction
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from pandas_dp.api.attach import attach
from pandas_dp.api.queries.ungrouped import plan_bounds
from pandas_dp.api.release import PlannedRelease, ReleaseOptions, Target
from pandas_dp.api.release.consumers import Run
from pandas_dp.api.rowguard import RowGuard
from pandas_dp.api.session import Session
from pandas_dp.budget import RhoBudget, exact
from pandas_dp.engines.codes import public_codes
from pandas_dp.errors import DPValueError
from pandas_dp.transformations.stability import Lineage
from pandas_dp.units import PrivacyUnit

#: The share of the session's budget spent on choosing the cap.
CAP_SHARE = Fraction(1, 10)
#: The quantile of the rows per unit the cap aims at: 90% of the units keep all their rows.
CAP_QUANTILE = 0.999
#: The candidates: ``2**(i/4)`` rows for ``i`` in ``0..4·LOG_MAX`` (log-spaced, so that the
#: many caps beyond the data do not outweigh the few within it).
MAX_CAP = 1024
#: The name of the counts' column in the ledger.
COLUMN = "rows per unit"
#: The share of a group-by release's ε spent on ``max_groups_per_unit="auto"``.
GROUPS_SHARE = Fraction(1, 10)
#: The name of the groups-per-unit column in the ledger.
GROUPS_COLUMN = "groups per unit"

T = TypeVar("T")


def rows_per_unit(frame: pd.DataFrame, session: Session) -> pd.Series:
    """Each pinned unit's number of rows in ``frame``: one row per unit (private, unnamed ids).

    Rows whose id was not pinned belong to no unit and are not counted, as in every release.
    """
    unit = session.unit.column
    assert unit is not None
    assert session.unit_ids is not None  # pinned at protect: a pandas frame
    codes = session.unit_ids.lookup(frame[unit])
    counts = np.bincount(codes[codes >= 0], minlength=len(session.unit_ids.ids))
    return pd.Series(counts.astype(np.float64), name=COLUMN)


def _per_unit(counts: pd.Series, session: Session, what: str) -> pd.Series:
    """``counts`` (one number per unit) as a frame of one row per unit, protected as rows.

    Adding or removing a unit adds or removes its one row (its number reads its own rows
    only), so a release over this view under row-level privacy protects the units.
    """
    step = f"{what} of {session.unit.column!r}: one row per unit"
    lineage = Lineage(steps=(step,), tables=session.lineage.tables)
    view = session.view(
        lineage=lineage, guard=RowGuard(counts.index), unit=PrivacyUnit(),
        columns=(counts.name,),
    )  # fmt: skip
    view.unit_ids = None  # its rows are the units themselves: no ids to look up
    return attach(counts, view)


def released_cap(frame: pd.DataFrame, session: Session) -> int:
    """Release the cap for ``frame``'s units (charged to ``session``) and return it."""
    rows = _per_unit(rows_per_unit(frame, session), session, "rows per unit")
    budget: Any = session.total
    cost = (
        {"rho": budget.rho * CAP_SHARE}
        if isinstance(budget, RhoBudget)
        else {"epsilon": budget.epsilon * CAP_SHARE}
    )
    options = ReleaseOptions(**cost)
    levels = (1 - CAP_QUANTILE, CAP_QUANTILE)
    planned = plan_bounds(rows, None, levels, options, lower=0)
    chosen = Run(tag="max_rows_per_unit='auto'")(planned)
    return max(1, min(MAX_CAP, math.ceil(float(chosen["upper"].iloc[0]))))


def groups_per_unit(
    frame: pd.DataFrame, session: Session, by: tuple[Hashable, ...], keys: pd.Index
) -> pd.Series:
    """How many of the public ``keys`` each pinned unit has rows in (one number per unit)."""
    unit = session.unit.column
    assert unit is not None
    assert session.unit_ids is not None  # pinned at protect: a pandas frame
    units = session.unit_ids.lookup(frame[unit])
    codes = public_codes(frame, by, keys)
    inside = (units >= 0) & (codes >= 0)
    pairs = np.unique(units[inside].astype(np.int64) * len(keys) + codes[inside])
    counts = np.bincount(pairs // max(len(keys), 1), minlength=len(session.unit_ids.ids))
    return pd.Series(counts.astype(np.float64), name=GROUPS_COLUMN)


def after_groups_cap(
    target: Target,
    by: tuple[Hashable, ...],
    keys: pd.Index | None,
    options: ReleaseOptions,
    capped: Callable[[int | None, ReleaseOptions], PlannedRelease[T]],
) -> PlannedRelease[T]:
    """``capped(g, rest)`` with ``g`` a cap on groups per unit released first, in one charge.

    ``max_groups_per_unit="auto"`` (Amin et al., ICML 2019, for the L0 bound): a tenth of
    ``epsilon`` (:data:`GROUPS_SHARE`) releases the :data:`CAP_QUANTILE` quantile of the
    number of public keys each unit has rows in, by the scan of ``priv.dp.bounds`` over a
    frame of one row per unit (as ``max_rows_per_unit="auto"``), rounded up, at least 1 and
    at most ``max_rows_per_unit`` and the number of keys; the release follows with that
    cap and the rest of ε. Public keys, a pandas frame under a privacy unit, and ``epsilon=``
    are needed; everything is checked (and priced, with the placeholder cap
    ``max_rows_per_unit``) before anything is read.
    """
    session = target.session
    if session.unit.column is None or keys is None or session.unit_ids is None:
        raise DPValueError(
            "max_groups_per_unit='auto' releases the cap from a pandas frame under a privacy "
            "unit, over public keys: protect with privacy_unit=..., give keys=..., or give "
            "max_groups_per_unit=g"
        )
    if options.epsilon is None or options.rho is not None:
        raise DPValueError(
            "max_groups_per_unit='auto' splits epsilon= between the cap and the release: give "
            "epsilon= (or a cap, max_groups_per_unit=g)"
        )
    epsilon = exact(options.epsilon, "epsilon")
    rest = replace(options, epsilon=epsilon * (1 - GROUPS_SHARE))
    counts = _per_unit(groups_per_unit(target.data, session, by, keys), session, "groups per unit")
    levels = (1 - CAP_QUANTILE, CAP_QUANTILE)
    prior = plan_bounds(
        counts, None, levels, ReleaseOptions(epsilon=epsilon * GROUPS_SHARE), lower=0
    )
    top = min(session.unit.max_rows, len(keys))

    def cap(table: pd.DataFrame) -> PlannedRelease[T]:
        return capped(max(1, min(top, math.ceil(float(table["upper"].iloc[0])))), rest)

    return capped(None, rest).after(prior, cap, auto="max_groups_per_unit='auto'")
