"""Many tables at once: ``priv.dp.tables(workload, keys=..., epsilon=...)``.

The workload's marginals are measured together with discrete Gaussian noise, the measured
marginals and their shares of the budget chosen from the workload and the keys' sizes alone
(:mod:`pandas_dp.mechanisms.marginals`); the noisy marginals are then post-processed into
tables that are mutually consistent and non-negative
(:mod:`pandas_dp.mechanisms.reconstruction`). One call is one release: one charge, one
ledger entry listing every measured marginal and its noise.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from fractions import Fraction

import numpy as np
import pandas as pd

from pandas_dp.api.caps import caps_for
from pandas_dp.api.queries.domains import Domains, check_cells, parse_domains, parse_workload
from pandas_dp.api.queries.marginal_release import MarginalRelease, plan_marginals
from pandas_dp.api.release import PlannedRelease, resolve
from pandas_dp.api.release.arguments import Real
from pandas_dp.api.release.options import epsilon_of
from pandas_dp.api.release.types import Target
from pandas_dp.budget import RhoBudget, number_text, parse_delta
from pandas_dp.errors import DPValueError
from pandas_dp.mechanisms.marginals import Clique, Strategy, maximal
from pandas_dp.mechanisms.reconstruction import consistent_tables, tables_from_residuals
from pandas_dp.mechanisms.residuals.planner import ResidualPlan, choose_plan, residuals
from pandas_dp.planning.measurement.marginals import release_rho
from pandas_dp.planning.request import Caps

#: The most marginals a release may measure (the strategy's optimisation is quadratic in it).
MAX_MARGINALS = 4096

#: The released tables by their columns: a Series for one column, else like ``pd.crosstab``.
Tables = dict[tuple[Hashable, ...], pd.Series | pd.DataFrame]


def release_budget(
    target: Target, epsilon: Fraction, delta: Real | None, rho: object = None
) -> tuple[Fraction | None, float | None]:
    """The release's δ (None when priced in ρ) and the ρ Gaussian noise may spend (None: none).

    In a ρ-zCDP session ``epsilon=ε`` spends ``ρ = ε²/2`` with either noise, and so does a
    release given ``rho=`` (validated by :func:`~pandas_dp.api.release.options.epsilon_of`:
    a session accounted in zCDP) with the ``ε`` of its ρ. Otherwise Gaussian noise needs the
    release's δ > 0: by default the session's δ in proportion to ε.
    """
    total = target.session.total
    if isinstance(total, RhoBudget) or rho is not None:
        if delta is not None:
            raise DPValueError("a ρ-zCDP session has no δ to spend; leave delta out")
        return None, release_rho(epsilon, None)
    if delta is None:
        share = total.delta * min(Fraction(1), epsilon / total.epsilon)
    else:
        share = parse_delta(delta)
    return share, release_rho(epsilon, share) if share > 0 else None


def plan_tables(
    obj: pd.DataFrame, workload: object, keys: object = None, *, bins: object = None,
    epsilon: Real | None = None, delta: Real | None = None, rho: Real | None = None,
) -> PlannedRelease[Tables]:  # fmt: skip
    """The planned release of a workload of tables (see ``DataFrame.dp.tables``)."""
    return plan_workload(resolve(obj), workload, keys, bins, epsilon, delta, rho)


def plan_workload(
    target: Target,
    workload: object,
    keys: object,
    bins: object,
    epsilon: Real | None,
    delta: Real | None,
    rho: Real | None = None,
) -> PlannedRelease[Tables]:
    """The planned release on ``target``, whose engine is asked only for columns and dtypes."""
    tables = parse_workload(workload)
    columns = list(dict.fromkeys(column for table in tables for column in table))
    domains = parse_domains(target, columns, keys, bins)
    eps, asked = epsilon_of(target, "tables", epsilon, rho, delta)
    d, rho = release_budget(target, eps, delta, rho)
    cliques = [tuple(sorted(domains.positions(table))) for table in tables]
    check_cells(domains, cliques)
    caps = caps_for(target, False)
    strategy = choose_plan(cliques, domains.sizes, float(eps), rho)
    if len(strategy.cliques) > MAX_MARGINALS:
        raise DPValueError(
            f"this workload needs {len(strategy.cliques)} marginals, more than "
            f"{MAX_MARGINALS}; ask for fewer or smaller tables"
        )

    def finish(noisy: dict[Clique, np.ndarray], sigma2: dict[Clique, float]) -> Tables:
        if isinstance(strategy, ResidualPlan):  # each table from its subsets' residuals
            parts = residuals(noisy, cliques, domains.sizes)
            estimates = tables_from_residuals(parts, cliques, domains.sizes)
        else:
            estimates = consistent_tables(noisy, sigma2, cliques, domains.sizes)
        return {
            table: shape_table(estimates[clique], table, clique, domains)
            for table, clique in zip(tables, cliques, strict=True)
        }

    spec = MarginalRelease(
        "tables", domains, strategy, maximal(cliques), list(zip(tables, cliques, strict=True)),
        finish, _notes(tables, domains, strategy, eps, rho, caps, target.session.total.is_zcdp),
    )  # fmt: skip
    delta_used = d if strategy.noise == "gaussian" else None
    return plan_marginals(target, spec, eps, delta_used, caps, asked=asked)


def shape_table(
    values: np.ndarray, table: Sequence[Hashable], clique: Clique, domains: Domains
) -> pd.Series | pd.DataFrame:
    """A table shaped like pandas: a Series for one column, else like ``pd.crosstab``.

    ``values`` has one axis per attribute of ``clique`` (sorted positions); the result's
    axes follow the table's own column order.
    """
    positions = domains.positions(table)
    array = np.transpose(values, [clique.index(p) for p in positions]).astype(np.float64)
    indexes = [domains.indexes[p].rename(domains.columns[p]) for p in positions]
    if len(table) == 1:
        return pd.Series(array, index=indexes[0])
    rows: pd.Index = (
        indexes[0]
        if len(table) == 2
        else pd.MultiIndex.from_product(indexes[:-1], names=list(table[:-1]))
    )
    return pd.DataFrame(array.reshape(len(rows), -1), index=rows, columns=indexes[-1])


def _notes(
    tables: list[tuple[Hashable, ...]], domains: Domains, strategy: Strategy | ResidualPlan,
    epsilon: Fraction, rho: float | None, caps: Caps, zcdp: bool = False,
) -> tuple[str, ...]:  # fmt: skip
    k = caps.contribution.l1
    if isinstance(strategy, ResidualPlan):
        return _residual_notes(tables, domains, strategy, epsilon, rho, caps, zcdp)
    if strategy.noise == "laplace":
        noise = (
            f"discrete Laplace noise per marginal, ε {number_text(epsilon)} split by the shares "
            f"(sequential composition); a unit is in one cell of each marginal (L1 "
            f"sensitivity {k} per marginal)"
        )
    else:
        noise = (
            f"discrete Gaussian noise per marginal, calibrated jointly: {rho:.6g}-zCDP in all "
            f"(Canonne, Kamath & Steinke 2020){_gives(epsilon, zcdp)}; a unit is "
            f"in one cell of each marginal (L2 sensitivity {k} per marginal)"
        )
    notes = [
        f"{len(tables)} tables over {', '.join(map(str, domains.columns))}; "
        f"{len(strategy.cliques)} marginals measured (subsets of the tables, each with the "
        f"share of the budget that minimises the tables' total variance under {strategy.noise} "
        "noise, the smaller of the two)",
        noise,
        "a row counts only where every column's value is among its keys or bins",
        "post-processing (no budget): least squares through residuals (every table a "
        "marginal of one estimate: consistent), then the nearest consistent non-negative "
        "tables",
        *domains.sources,
    ]
    if caps.noteworthy:
        notes.append(caps.describe())
    return tuple(notes)


def _gives(epsilon: Fraction, zcdp: bool) -> str:
    """The (ε, δ) a ρ converts to, in an (ε, δ) session; nothing in a ρ session (ρ is charged)."""
    return "" if zcdp else f", which gives the release's ε {number_text(epsilon)}"


def _residual_notes(
    tables: list[tuple[Hashable, ...]], domains: Domains, plan: ResidualPlan, epsilon: Fraction,
    rho: float | None, caps: Caps, zcdp: bool = False,
) -> tuple[str, ...]:  # fmt: skip
    k = caps.contribution.l1
    notes = [
        f"{len(tables)} tables over {', '.join(map(str, domains.columns))}; "
        f"{len(plan.cliques)} residuals measured (ResidualPlanner, Xiao et al. 2023: every "
        "subset of the tables, centred along each of its columns, with the share of ρ that "
        "minimises the tables' total variance in closed form)",
        "residual A released as F_A m_A plus independent discrete Gaussian noise, "
        f"{plan.draws} values in all (F_A an integer orthogonal basis of the residual space, "
        "Π(n_i - 1) rows; each ledger line's sigma2 is the base variance v_A, and a row of "
        "squared norm N gets variance at least v_A N / Π n_i, so that a privacy unit (at "
        f"most {k} rows) costs at most ρ = {k * k}·Π(n_i - 1) / (2 v_A)), {rho:.6g}-zCDP in all "
        f"(Canonne, Kamath & Steinke 2020){_gives(epsilon, zcdp)}",
        "a row counts only where every column's value is among its keys or bins",
        "post-processing (no budget): every table assembled from the residuals of its "
        "subsets (unbiased, consistent), then the nearest consistent non-negative tables",
        *domains.sources,
    ]
    if caps.noteworthy:
        notes.append(caps.describe())
    return tuple(notes)
