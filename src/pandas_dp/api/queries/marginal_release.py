"""The release path shared by tables and synthetic data: measure a strategy's marginals.

A query family says which marginals to measure (a :class:`~pandas_dp.mechanisms.marginals.
Strategy`), which tables it reports (one :class:`~pandas_dp.planning.statistics.tables.Table`
statistic each, for the preview) and how the noisy marginals become its result; this module
builds the planned release through the planner, so a preview and the release read the same
object.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.api.queries.domains import Domains
from pandas_dp.api.release import PlannedRelease, Presentation, Pricing, Request, plan
from pandas_dp.api.release.types import Target
from pandas_dp.measures.aggregates import Aggregate
from pandas_dp.mechanisms.marginals import Clique, Strategy
from pandas_dp.mechanisms.residuals.planner import ResidualPlan
from pandas_dp.planning.measurement.keys import MeasurementKey
from pandas_dp.planning.measurement.marginals import (
    MarginalPart,
    ResidualPart,
    marginal_parts,
    residual_parts,
)
from pandas_dp.planning.noise import NoiseSource
from pandas_dp.planning.request import Caps, PlannedOutput
from pandas_dp.planning.statistics.tables import Table

F64 = np.ndarray
#: Turns the noisy marginals (by clique, shaped; residuals: flat basis values) and their noise
#: variances into the result.
Finish = Callable[[dict[Clique, F64], dict[Clique, float]], Any]


@dataclass(frozen=True)
class MarginalRelease:
    """What a query family measures and reports (public parameters only).

    Attributes
    ----------
    query : str
        The ledger's name of the release.
    domains : Domains
        The columns and their public keys.
    strategy : Strategy or ResidualPlan
        The marginals (or, for ResidualPlanner, the residuals) measured and their shares.
    homes : sequence of cliques
        Cliques the engine counts, each measured marginal summed from the first containing it.
    reported : sequence of (name, clique)
        The tables the result holds (one preview row each).
    finish : callable
        Free post-processing of the noisy marginals into the result.
    notes : tuple of str
        The ledger's note.
    """

    query: str
    domains: Domains
    strategy: Strategy | ResidualPlan
    homes: Sequence[Clique]
    reported: Sequence[tuple[Hashable, Clique]]
    finish: Finish
    notes: tuple[str, ...]


def shaped(domains: Domains, clique: Clique) -> tuple[int, ...]:
    """The array shape of the marginal over ``clique``."""
    return tuple(domains.sizes[i] for i in clique)


def plan_marginals(
    target: Target,
    spec: MarginalRelease,
    epsilon: Fraction,
    delta: Fraction | None,
    caps: Caps,
    asked: str = "",
) -> PlannedRelease[Any]:
    """The planned release of ``spec`` (nothing read, nothing charged)."""
    domains = spec.domains
    homes = [next(h for h in spec.homes if set(b) <= set(h)) for b in spec.strategy.cliques]
    k = caps.contribution.l1
    if isinstance(spec.strategy, ResidualPlan):
        parts = residual_parts(spec.strategy, domains.axes, homes, epsilon, delta, k)
    else:
        parts = marginal_parts(spec.strategy, domains.axes, homes, epsilon, delta, k)
    keys = tuple(parts)
    stats = tuple(
        Table(name, None, clique, domains.sizes, keys=keys) for name, clique in spec.reported
    )
    request = Request(
        stats=stats, query=spec.query, caps=caps, notes=spec.notes,
        pricing=Pricing(
            epsilon=epsilon, delta=delta, gaussian=delta is not None, asked=asked,
            shares=tuple(p.measurement.epsilon / epsilon for p in parts.values()),
        ),
    )  # fmt: skip
    ordered = list(parts.values())

    def derive(exact: list[Aggregate]) -> list[Aggregate]:
        # Each marginal is summed exactly (in integers) from the table of its home clique
        # (and a residual then multiplied by its integer frame).
        return [
            p.from_home(np.asarray(v).reshape(shaped(domains, p.home)))
            for p, v in zip(ordered, exact, strict=True)
        ]

    def finisher(outputs: tuple[PlannedOutput, ...], _: Presentation) -> Any:
        def finish(
            _: pd.Index | None, noisy: dict[MeasurementKey, Aggregate], source: NoiseSource
        ) -> Any:
            tables, sigma2 = {}, {}
            for key, part in parts.items():
                assert isinstance(part, MarginalPart)
                values = np.asarray(noisy[key], dtype=np.float64)
                if not isinstance(part, ResidualPart):  # residuals stay flat basis values
                    values = values.reshape(shaped(domains, part.clique))
                tables[part.clique] = values
                sigma2[part.clique] = part.variance
            return spec.finish(tables, sigma2)

        return finish

    planned = plan(target, request, finisher, derive=derive, calibrated=dict(parts))
    release = dataclasses.replace(planned.release, columns=tuple(map(str, domains.columns)))
    return dataclasses.replace(planned, release=release)
