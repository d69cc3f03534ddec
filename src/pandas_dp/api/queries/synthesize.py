"""Synthetic data: ``priv.dp.synthesize(columns, keys=..., epsilon=..., method="mst")``.

MST (McKenna, Miklau & Sheldon 2021): noisy one-way marginals, a spanning tree of pairs chosen
privately, the chosen pairs' noisy marginals (:mod:`pandas_dp.planning.measurement.synthesis`;
the tree and its pairs on domains compressed by the noisy one-way counts), then, free, the
graphical model that best explains them (:mod:`pandas_dp.mechanisms.graphical_model`, the
paper's Private-PGM fit) and rows sampled from its tree (:mod:`pandas_dp.mechanisms.tree_model`).
One call is one release; the rows are post-processing and cost nothing more.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Hashable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
from pandas._typing import DtypeObj

from pandas_dp.api.caps import caps_for
from pandas_dp.api.keys import parse_by
from pandas_dp.api.queries.domains import Domains, check_cells, parse_domains
from pandas_dp.api.queries.tables import release_budget
from pandas_dp.api.release import PlannedRelease, Presentation, Pricing, Request, plan, resolve
from pandas_dp.api.release.arguments import Real
from pandas_dp.api.release.options import epsilon_of
from pandas_dp.api.release.types import Finish
from pandas_dp.errors import DPTypeError, DPValueError
from pandas_dp.measures.aggregates import Aggregate
from pandas_dp.mechanisms.compression import Compressed
from pandas_dp.mechanisms.graphical_model import Measured, fit, unbiased_total
from pandas_dp.mechanisms.marginals import Clique, residual_variances, table_variance
from pandas_dp.mechanisms.tree_model import sample_tree
from pandas_dp.planning.measurement.aim import AimPlan, aim_parts
from pandas_dp.planning.measurement.keys import MeasurementKey
from pandas_dp.planning.measurement.marginals import MarginalPart
from pandas_dp.planning.measurement.synthesis import TREE, TreeChoicePart, mst_parts
from pandas_dp.planning.noise import NoiseSource
from pandas_dp.planning.request import PlannedOutput
from pandas_dp.planning.statistics.tables import Synthetic, Table

METHODS = ("mst", "aim")
#: The most rows one call may generate (they are held in memory).
MAX_ROWS = 10**8
#: Mirror-descent steps of AIM's last fit, warm-started from its last round's.
FINAL_ITERATIONS = 200
#: MST's mirror-descent steps: its one fit, from scratch (the paper's code runs 10,000; the
#: error on adult is the same from 1,000 to 10,000 here, and 3,000 take about 1.5 s).
MST_ITERATIONS = 3000


def plan_synthesize(
    obj: pd.DataFrame, columns: Sequence[Hashable], keys: object = None, *,
    bins: object = None, epsilon: Real | None = None, delta: Real | None = None,
    rho: Real | None = None, method: str = "mst",
    rows: int | None = None, workload: Sequence[Sequence[Hashable]] | None = None,
) -> PlannedRelease[pd.DataFrame]:  # fmt: skip
    """The planned release of synthetic rows (see ``DataFrame.dp.synthesize``)."""
    target = resolve(obj)
    if method not in METHODS:
        raise DPValueError(f"method must be one of {METHODS}, got {method!r}")
    labels = parse_by(list(columns) if isinstance(columns, list | tuple) else columns)
    count = _rows(rows)
    domains = parse_domains(target, labels, keys, bins)
    eps, asked = epsilon_of(target, "synthesize", epsilon, rho, delta)
    d, spent_rho = release_budget(target, eps, delta, rho)
    gaussian = spent_rho is not None
    n = len(labels)
    pairs: list[Clique] = [(i, j) for i in range(n) for j in range(i + 1, n)]
    cliques = pairs if method == "mst" else _workload(workload, labels, pairs)
    if method == "mst" and workload is not None:
        raise DPValueError("workload= is AIM's (method='aim'); MST always measures a tree of pairs")
    if method == "aim" and not gaussian:
        raise DPValueError(
            "method='aim' measures with Gaussian noise under zCDP, as the paper does: protect "
            "with delta > 0 (or rho=), or use method='mst', which also runs with Laplace noise"
        )
    check_cells(domains, cliques)
    caps = caps_for(target, False)
    k = caps.contribution.l1
    parts: dict[MeasurementKey, Any]
    aim: AimPlan | None = None
    if method == "aim":
        parts, aim = aim_parts(domains.axes, cliques, eps, d, k, aim_rounds(n))
    else:
        parts = mst_parts(domains.axes, eps, d if gaussian else None, gaussian, k)
    everything = tuple(parts)
    stats = [
        Table((label,), None, (i,), domains.sizes, keys=(everything[i],))
        for i, label in enumerate(labels)
    ]
    request = Request(
        stats=(*stats, Synthetic("synthetic rows", None, keys=everything)),
        query="synthesize", caps=caps,
        pricing=Pricing(
            epsilon=eps, delta=d if gaussian else None, gaussian=gaussian and d is not None,
            shares=tuple(p.measurement.epsilon / eps for p in parts.values()), asked=asked,
        ),
        notes=_notes(domains, gaussian, caps.describe() if caps.noteworthy else "", method),
    )  # fmt: skip
    dtypes = dict(target.engine.dtypes(target.data).items())

    def finisher(outputs: tuple[PlannedOutput, ...], _: Presentation) -> Finish:
        def finish(
            _: pd.Index | None, noisy: dict[MeasurementKey, Aggregate], source: NoiseSource
        ) -> pd.DataFrame:
            # Rows are sampled by a PCG64 seeded with 256 bits from the source handed down:
            # the OS CSPRNG, or (tests only) the seeded stream, so seeded runs repeat.
            gen = np.random.Generator(np.random.PCG64([int(w) for w in source.words(4)]))
            if aim is not None:
                return _synthesize_aim(aim, noisy, domains, count, gen, dtypes, eps)
            return _synthesize(parts, noisy, domains, count, gen, dtypes, eps)

        return finish

    planned = plan(target, request, finisher, calibrated=dict(parts))
    release = dataclasses.replace(planned.release, columns=tuple(map(str, labels)))
    return dataclasses.replace(planned, release=release)


def aim_rounds(columns: int) -> int:
    """AIM's rounds over ``columns`` columns (public): three per column.

    The paper's annealing starts from ``16 d`` rounds and halves σ whenever a measurement
    barely moved the model, typically ending after a few rounds per column; a schedule
    fixed in advance needs as many to measure most of the workload (on adult, 8 columns:
    one per column gives a total L1 error of 77,000 on the 2-way marginals, three 25,000).
    """
    return max(3 * columns, 1)


def _workload(workload: object, labels: Sequence[Hashable], pairs: list[Clique]) -> list[Clique]:
    """AIM's workload as cliques of column positions (by default every pair of columns)."""
    if workload is None:
        return pairs or [(0,)]
    if not isinstance(workload, list | tuple) or not workload:
        raise DPTypeError("workload must be a non-empty list of lists of columns")
    cliques = []
    for table in workload:
        names = list(table) if isinstance(table, list | tuple) else [table]
        missing = [c for c in names if c not in labels]
        if missing or not names or len(set(names)) != len(names):
            raise DPValueError(
                f"each workload table must list distinct columns among {labels}, got {table!r}"
            )
        cliques.append(tuple(sorted(list(labels).index(c) for c in names)))
    return list(dict.fromkeys(cliques))


def _rows(rows: object) -> int | None:
    if rows is None:
        return None
    if isinstance(rows, bool) or not isinstance(rows, int | np.integer):
        raise DPTypeError(f"rows must be a whole number or None, got {type(rows).__name__}")
    if not 0 <= rows <= MAX_ROWS:
        raise DPValueError(f"rows must lie in [0, {MAX_ROWS:,}], got {rows}")
    return int(rows)


def _synthesize(
    parts: dict[MeasurementKey, Any], noisy: dict[MeasurementKey, Aggregate], domains: Domains,
    rows: int | None, gen: np.random.Generator, dtypes: dict[Hashable, DtypeObj],
    epsilon: Fraction,
) -> pd.DataFrame:  # fmt: skip
    """Consistent marginals, the tree model, its rows and the report (post-processing).

    On the compressed domains the tree's pairs were measured on (one column alone: its own);
    a compressed one-way table's merged cell is the sum of the merged values' noisy counts,
    weighted like the other cells in the fit (the paper's code gives it ``m`` times their
    variance, ``m`` the values merged; on adult the two fits' errors agree within 0.2%).
    The ``rmse`` reported is the least-squares estimate's
    (:mod:`pandas_dp.mechanisms.reconstruction`); on adult the fitted model's L1 error on the
    measured tables is about 7% below that estimate's. Rows' rare values become one of the
    values they merged.
    """
    columns = _columns(parts, noisy, domains)
    sizes = tuple(column.size for column in columns)
    measured: list[Measured] = []
    counted: list[int] = []  # noised cells per table, for the total's weights
    edges: list[Clique] = []
    for key, part in parts.items():
        if key == TREE:
            continue
        if isinstance(part, MarginalPart):
            clique = part.clique
            values = columns[clique[0]].table(np.asarray(noisy[key], dtype=np.float64), 0)
            counted.append(domains.sizes[clique[0]])
        else:  # a chosen pair: which one, the tree says
            clique = part.pairs[int(np.asarray(noisy[TREE])[part.position])]
            values = np.asarray(noisy[key], dtype=np.float64)
            counted.append(values.size)
            edges.append(clique)
        sigma = math.sqrt(float(part.mechanism.variance()))
        measured.append(Measured(clique, values.reshape([sizes[i] for i in clique]), sigma))
    wanted = [(i,) for i in range(len(sizes))] + edges
    total = unbiased_total(measured, counted)
    model = fit(measured, sizes, total, iterations=MST_ITERATIONS)
    estimates = {clique: model.marginal(clique) for clique in wanted}
    count = rows if rows is not None else int(min(round(total), MAX_ROWS))
    codes = sample_tree(estimates, edges, sizes, count, gen)
    for i, column in enumerate(columns):
        codes[:, i] = column.values(codes[:, i], gen)
    frame = _frame(codes, domains, dtypes, gen)
    tau = residual_variances([m.clique for m in measured], [m.sigma**2 for m in measured], sizes)
    names = {clique: " × ".join(str(domains.columns[i]) for i in clique) for clique in wanted}
    frame.attrs["synthesis"] = {
        "method": "mst",
        "epsilon": float(epsilon),
        "rows": count,
        "total": total,
        "tree": [[str(domains.columns[i]) for i in edge] for edge in edges],
        "merged": {str(domains.columns[i]): len(c.merged) for i, c in enumerate(columns)},
        "rmse": {names[c]: float(np.sqrt(table_variance(c, tau, sizes))) for c in wanted},
        "note": "post-processing of one release (no further charge); the rows keep the "
        "measured one-way and tree pair marginals up to their noise, nothing else; values "
        "whose noisy count fell below three noise deviations ('merged') were measured as one "
        "in the tree's pairs, and rows drawn there take one of them uniformly",
    }
    return frame


def _columns(
    parts: dict[MeasurementKey, Any], noisy: dict[MeasurementKey, Aggregate], domains: Domains
) -> list[Compressed]:
    """Each column's compressed domain, as the tree and its pairs used it (none: all kept)."""
    tree = parts.get(TREE)
    if isinstance(tree, TreeChoicePart):
        return tree.compressing.columns(noisy)
    return [Compressed(tuple(range(n)), ()) for n in domains.sizes]


def _synthesize_aim(
    plan: AimPlan, noisy: dict[MeasurementKey, Aggregate], domains: Domains, rows: int | None,
    gen: np.random.Generator, dtypes: dict[Hashable, DtypeObj], epsilon: Fraction,
) -> pd.DataFrame:  # fmt: skip
    """The model fitted to every measurement, its rows and the report (post-processing)."""
    rounds = len(plan.measured) - len(plan.sizes)
    model = plan.model(noisy, rounds + 1, FINAL_ITERATIONS)
    count = rows if rows is not None else int(min(round(model.total), MAX_ROWS))
    frame = _frame(model.sample(count, gen), domains, dtypes, gen)
    chosen = [plan.candidate(noisy, r) for r in range(1, rounds + 1)]
    frame.attrs["synthesis"] = {
        "method": "aim",
        "epsilon": float(epsilon),
        "rows": count,
        "total": model.total,
        "measured": [[str(domains.columns[i]) for i in c] for c in chosen],
        "sigma": plan.sigma,
        "model": [[str(domains.columns[i]) for i in c] for c in model.tree.cliques],
        "note": "post-processing of one release (no further charge); every one-way marginal "
        f"and the {rounds} chosen marginals were measured with Gaussian noise of standard "
        f"deviation {plan.sigma:.4g} per cell; the rows follow the graphical model fitted to "
        "them, and other marginals only as far as that model explains them",
    }
    return frame


def _frame(
    codes: np.ndarray, domains: Domains, dtypes: dict[Hashable, DtypeObj], gen: np.random.Generator
) -> pd.DataFrame:
    """The synthetic frame from cell codes, one column per attribute."""
    return pd.DataFrame(
        {c: _decode(codes[:, i], domains, i, dtypes[c], gen) for i, c in enumerate(domains.columns)}
    )


def _decode(
    codes: np.ndarray, domains: Domains, i: int, dtype: DtypeObj, gen: np.random.Generator
) -> pd.Series:
    """A column of values from cell codes: a key, or a value drawn uniformly in its bin."""
    axis = domains.axes[i]
    if axis.binning is not None:
        edges = np.asarray(axis.binning.edges, dtype=np.float64)
        left, width = edges[codes], np.diff(edges)[codes]
        return pd.Series(left + width * (1.0 - gen.random(codes.size)), dtype=np.float64)
    values = pd.Series(domains.indexes[i].take(codes), dtype=domains.indexes[i].dtype)
    if isinstance(dtype, pd.CategoricalDtype):
        return values.astype(pd.CategoricalDtype(list(axis.keys)))
    try:  # the column's own dtype when the keys fit it (public: keys and dtype)
        return values.astype(dtype)
    except (TypeError, ValueError):
        return values


def _notes(domains: Domains, gaussian: bool, caps: str, method: str) -> tuple[str, ...]:
    noise = "discrete Gaussian" if gaussian else "discrete Laplace"
    columns = ", ".join(map(str, domains.columns))
    if method == "aim":
        how = [
            f"AIM over {columns} (McKenna, Mullins, Sheldon & Miklau 2022), planned in zCDP: "
            f"nine tenths of ρ to the one-way marginals and one marginal per round ({noise} "
            "noise, equal shares), a tenth to choosing each round's marginal (exponential "
            "mechanism, accounted as bounded range)",
            "post-processing (no budget): a graphical model fitted to the measurements "
            "(Private-PGM), rows sampled from it",
        ]
    else:
        how = [
            f"MST over {columns} (McKenna, Miklau & Sheldon 2021)"
            + (", planned in zCDP: a third of ρ" if gaussian else ": a third of the budget")
            + f" to the one-way marginals and a third to the tree's pairs ({noise} noise), a "
            "third to choosing the tree (exponential mechanism"
            + (", accounted as bounded range)" if gaussian else ")"),
            "the tree and its pairs on compressed domains: each column's values whose noisy "
            "count is below three noise deviations merged into one (post-processing of the "
            "released one-way counts)",
            "post-processing (no budget): the graphical model fitted to the measurements "
            "(Private-PGM), rows sampled from its tree, a merged value's rows spread uniformly "
            "over the values it merged",
        ]
    notes = [
        how[0],
        "a row counts only where every column's value is among its keys or bins",
        *how[1:],
        *domains.sources,
    ]
    if caps:
        notes.append(caps)
    return tuple(notes)
