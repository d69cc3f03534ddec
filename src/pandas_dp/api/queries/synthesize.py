"""Synthetic data: ``priv.dp.synthesize(columns, keys=..., epsilon=..., method="mst")``.

MST (McKenna, Miklau & Sheldon 2021): noisy one-way marginals, a spanning tree of pairs chosen
privately, the chosen pairs' noisy marginals (:mod:`pandas_dp.api.measurement.synthesis`),
then, free, consistent non-negative marginals (:mod:`pandas_dp.mechanisms.reconstruction`)
and rows sampled from the tree model they define (:mod:`pandas_dp.mechanisms.tree_model`).
One call is one release; the rows are post-processing and cost nothing more.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.api.caps import caps_for
from pandas_dp.api.keys import parse_by
from pandas_dp.api.measurement.keys import MeasurementKey
from pandas_dp.api.measurement.marginals import MarginalPart
from pandas_dp.api.measurement.synthesis import TREE, mst_parts
from pandas_dp.api.queries.domains import Domains, check_cells, parse_domains
from pandas_dp.api.queries.tables import release_budget
from pandas_dp.api.release import PlannedRelease, Request, plan, resolve
from pandas_dp.api.release.types import PlannedOutput
from pandas_dp.api.statistics.tables import Synthetic, Table
from pandas_dp.budget import parse_epsilon
from pandas_dp.engines.plan import Aggregate
from pandas_dp.errors import DPTypeError, DPValueError
from pandas_dp.mechanisms.marginals import Clique, residual_variances, table_variance
from pandas_dp.mechanisms.reconstruction import consistent_tables
from pandas_dp.mechanisms.tree_model import sample_tree

METHODS = ("mst", "aim")
#: The most rows one call may generate (they are held in memory).
MAX_ROWS = 10**8


def plan_synthesize(
    obj: pd.DataFrame, columns: Any, keys: Any = None, *, bins: Any = None, epsilon: Any,
    delta: Any = None, method: str = "mst", rows: Any = None,
) -> PlannedRelease[pd.DataFrame]:  # fmt: skip
    """The planned release of synthetic rows (see ``DataFrame.dp.synthesize``)."""
    target = resolve(obj)
    if method not in METHODS:
        raise DPValueError(f"method must be one of {METHODS}, got {method!r}")
    if method == "aim":
        raise DPValueError(
            "method='aim' is not available in this version of pandas-dp (it needs general "
            "graphical-model inference); use method='mst'"
        )
    labels = parse_by(list(columns) if isinstance(columns, list | tuple) else columns)
    count = _rows(rows)
    domains = parse_domains(target, labels, keys, bins)
    eps = parse_epsilon(epsilon)
    d, rho = release_budget(target, eps, delta)
    gaussian = rho is not None
    n = len(labels)
    check_cells(domains, [(i, j) for i in range(n) for j in range(i + 1, n)])
    caps = caps_for(target, False)
    parts = mst_parts(domains.axes, eps, d if gaussian else None, gaussian, caps.contribution.l1)
    everything = tuple(parts)
    stats = [
        Table((label,), None, (i,), domains.sizes, (everything[i],))
        for i, label in enumerate(labels)
    ]
    request = Request(
        (*stats, Synthetic("synthetic rows", None, everything)), eps, "synthesize", caps=caps,
        delta=d if gaussian else None, gaussian=gaussian and d is not None,
        shares=tuple(p.measurement.epsilon / eps for p in parts.values()),
        notes=_notes(domains, gaussian, caps.describe() if caps.bounding else ""),
    )  # fmt: skip
    dtypes = dict(target.engine.dtypes(target.data).items())
    session = target.session

    def finisher(outputs: tuple[PlannedOutput, ...], _: Request) -> Any:
        def finish(_: pd.Index | None, noisy: dict[MeasurementKey, Aggregate]) -> pd.DataFrame:
            words = [int(w) for w in session.priorities(4)]  # the session's CSPRNG
            gen = np.random.Generator(np.random.PCG64(words))
            return _synthesize(parts, noisy, domains, count, gen, dtypes, eps)

        return finish

    planned = plan(target, request, finisher, calibrated=dict(parts))
    release = dataclasses.replace(planned.release, columns=tuple(map(str, labels)))
    return dataclasses.replace(planned, release=release)


def _rows(rows: Any) -> int | None:
    if rows is None:
        return None
    if isinstance(rows, bool) or not isinstance(rows, int | np.integer):
        raise DPTypeError(f"rows must be a whole number or None, got {type(rows).__name__}")
    if not 0 <= rows <= MAX_ROWS:
        raise DPValueError(f"rows must lie in [0, {MAX_ROWS:,}], got {rows}")
    return int(rows)


def _synthesize(
    parts: dict[MeasurementKey, Any], noisy: dict[MeasurementKey, Aggregate], domains: Domains,
    rows: int | None, gen: np.random.Generator, dtypes: dict[Hashable, Any], epsilon: Fraction,
) -> pd.DataFrame:  # fmt: skip
    """Consistent marginals, the tree model, its rows and the report (post-processing)."""
    sizes = domains.sizes
    tables: dict[Clique, np.ndarray] = {}
    variance: dict[Clique, float] = {}
    edges: list[Clique] = []
    for key, part in parts.items():
        if key == TREE:
            continue
        if isinstance(part, MarginalPart):
            clique = part.clique
        else:  # a chosen pair: which one, the tree says
            clique = part.pairs[int(np.asarray(noisy[TREE])[part.position])]
            edges.append(clique)
        shape = [sizes[i] for i in clique]
        tables[clique] = np.asarray(noisy[key], dtype=np.float64).reshape(shape)
        variance[clique] = float(part.mechanism.variance())
    wanted = [(i,) for i in range(len(sizes))] + edges
    estimates = consistent_tables(tables, variance, wanted, sizes)
    total = float(estimates[(0,)].sum())
    count = rows if rows is not None else int(min(round(max(total, 0.0)), MAX_ROWS))
    codes = sample_tree(estimates, edges, sizes, count, gen)
    frame = pd.DataFrame(
        {c: _decode(codes[:, i], domains, i, dtypes[c], gen) for i, c in enumerate(domains.columns)}
    )
    tau = residual_variances(list(tables), list(variance.values()), sizes)
    names = {clique: " × ".join(str(domains.columns[i]) for i in clique) for clique in wanted}
    frame.attrs["synthesis"] = {
        "method": "mst",
        "epsilon": float(epsilon),
        "rows": count,
        "total": total,
        "tree": [[str(domains.columns[i]) for i in edge] for edge in edges],
        "rmse": {names[c]: float(np.sqrt(table_variance(c, tau, sizes))) for c in wanted},
        "note": "post-processing of one release (no further charge); the rows keep the "
        "measured one-way and tree pair marginals up to their noise, nothing else",
    }
    return frame


def _decode(
    codes: np.ndarray, domains: Domains, i: int, dtype: Any, gen: np.random.Generator
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


def _notes(domains: Domains, gaussian: bool, caps: str) -> tuple[str, ...]:
    noise = "discrete Gaussian" if gaussian else "discrete Laplace"
    notes = [
        f"MST over {', '.join(map(str, domains.columns))} (McKenna, Miklau & Sheldon 2021): "
        f"a third of the budget to the one-way marginals and a third to the tree's pairs "
        f"({noise} noise), a third to choosing the tree (exponential mechanism)",
        "a row counts only where every column's value is among its keys or bins",
        "post-processing (no budget): consistent non-negative marginals, rows sampled from "
        "the tree model",
        *domains.sources,
    ]
    if caps:
        notes.append(caps)
    return tuple(notes)
