"""More statistics: spreads, quantiles, the mode and top-k, and a DP ``describe()``.

Spreads and quantiles go through the same planner as counts, sums and means; the mode and
top-k choose among public candidates with the exponential mechanism over exact counts.
"""

from __future__ import annotations

import numbers
from collections.abc import Hashable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.accounting.events import SEQUENTIAL, Measurement, Release
from pandas_dp.api.caps import caps_for
from pandas_dp.api.groupby import schema_keys
from pandas_dp.api.keys import check_key_types, parse_keys
from pandas_dp.api.outputs import Estimate
from pandas_dp.api.pipeline import Plan, SelectPart, resolve, run
from pandas_dp.api.queries import release_many
from pandas_dp.api.request import Stat
from pandas_dp.api.validation import check_column
from pandas_dp.budget import exact, parse_epsilon
from pandas_dp.engines import Grouping, Rows
from pandas_dp.errors import DPTypeError, DPValueError
from pandas_dp.mechanisms.exponential import ExponentialMechanism
from pandas_dp.units import positive_int


def parse_quantiles(q: Any) -> tuple[list[Fraction], bool]:
    """Quantile levels in ``[0, 1]`` as exact fractions, and whether ``q`` was a scalar."""
    scalar = isinstance(q, numbers.Real) and not isinstance(q, bool)
    levels = [q] if scalar else q
    if isinstance(levels, str | bytes) or not isinstance(levels, Sequence | np.ndarray):
        raise DPTypeError(f"q must be a number or a list of numbers, got {type(q).__name__}")
    parsed = [exact(level, "q") for level in levels]
    if not parsed or any(not 0 <= level <= 1 for level in parsed):
        raise DPValueError(f"quantile levels must lie in [0, 1], got {list(map(float, parsed))}")
    if len(set(parsed)) != len(parsed):
        raise DPValueError("quantile levels must be distinct")
    return parsed, scalar


def quantile(
    obj: pd.DataFrame | pd.Series,
    column: Hashable | None,
    q: Any,
    *,
    bounds: Any = None,
    epsilon: Any,
    cells: Any = None,
    previewing: bool = False,
) -> Any:
    """Quantiles by the exponential mechanism; ε split equally among the levels."""
    levels, scalar = parse_quantiles(q)
    stats = [Stat(float(level), "quantile", column, level) for level in levels]
    result = release_many(
        obj, stats, query="quantile", previewing=previewing, bounds=bounds, epsilon=epsilon,
        cells=cells, per_column=False,
    )  # fmt: skip
    if previewing:
        return result
    if scalar:
        return float(result.iloc[0, 0])
    name = column if column is not None else getattr(obj, "name", None)
    return pd.Series(result.iloc[0].to_numpy(), index=[float(x) for x in levels], name=name)


def spread(
    obj: pd.DataFrame | pd.Series,
    column: Hashable | None,
    how: str,
    *,
    ddof: Any = 1,
    previewing: bool = False,
    **kwargs: Any,
) -> Any:
    """Variance or standard deviation (``how``) of one column, clipped to public bounds."""
    if isinstance(ddof, bool) or not isinstance(ddof, numbers.Integral) or ddof < 0:
        raise DPValueError(f"ddof must be a non-negative integer, got {ddof!r}")
    stat = Stat(how, how, column, ddof=int(ddof))
    result = release_many(obj, [stat], query=how, previewing=previewing, per_column=False, **kwargs)
    if previewing:
        return result
    if kwargs.get("ci") is None:
        return float(result.iloc[0, 0])
    row = result.iloc[0]
    return Estimate(float(row.iloc[0]), float(row.iloc[1]), float(row.iloc[2]), kwargs["ci"])


def top_k(
    obj: pd.DataFrame | pd.Series,
    column: Hashable | None,
    k: Any,
    *,
    candidates: Any,
    epsilon: Any,
    mode: bool = False,
) -> Any:
    """The ``k`` most frequent public candidates, by peeling with the exponential mechanism.

    Scores are counts (monotone, sensitivity 1, or the rows one unit may add to one
    candidate), so each round uses weights ``exp(ε_r count / Δ)`` with ``ε_r = ε / k``.
    """
    target = resolve(obj)
    col = target.column if target.column is not None else column
    check_column(target.engine, target.data, col, numeric=False)
    source = ""
    if candidates is None:
        candidates, source = schema_keys(target, (col,))
        if candidates is None:
            raise DPValueError(
                f"pass the public candidates (candidates=[...]) for {col!r}; they are never "
                "read from the data (a schema's isin check can supply them)"
            )
    keys = parse_keys((col,), candidates)
    assert keys is not None
    check_key_types(keys, [dict(target.engine.dtypes(target.data).items())[col]])
    eps = parse_epsilon(epsilon)
    rounds = positive_int(k, "k")
    if rounds > len(keys):
        raise DPValueError(f"k={rounds} exceeds the {len(keys)} candidates")
    caps = caps_for(target, grouped=True)
    sensitivity = caps.contribution.linf
    mechanism = ExponentialMechanism(eps, Fraction(sensitivity), monotone=True)
    query = "mode" if mode else "top_k"
    label = f"{query}({col})" if mode else f"top_k({col}, {rounds})"
    record = Measurement(label, mechanism.name, eps, sensitivity, sensitivity / eps)
    part = SelectPart(
        label, Rows(), mechanism, record,
        lambda counts: (-np.asarray(counts, dtype=np.int64)[None, :], 1),
        lambda index: index, rounds=rounds,
    )  # fmt: skip
    note = (
        f"exponential mechanism over {len(keys)} public candidates, scores = counts "
        f"(monotone, sensitivity {sensitivity})"
    )
    if rounds > 1:
        note += f"; {rounds} rounds of peeling at ε/{rounds} each"
    if source:
        note += f"; candidates: {source}"
    release = Release(query, (str(col),), (record,), SEQUENTIAL, 1, note=note)

    def finish(released_keys: pd.Index | None, noisy: dict[str, Any]) -> Any:
        assert released_keys is not None
        chosen = released_keys[np.asarray(noisy[label], dtype=np.int64)]
        return chosen[0] if mode else list(chosen)

    plan = Plan((part,), release, finish, Grouping((col,), keys), caps.bounding)
    return run(target, plan)


DESCRIBE_PERCENTILES = (0.25, 0.5, 0.75)


def describe(
    frame: pd.DataFrame,
    *,
    bounds: Any = None,
    epsilon: Any,
    percentiles: Any = DESCRIBE_PERCENTILES,
    cells: Any = None,
    previewing: bool = False,
) -> Any:
    """``count``, ``mean``, ``std`` and percentiles of every column with bounds.

    ε is split equally among all the measurements behind the table (per column: a count, a
    centred sum, a sum of squares and one quantile per percentile); the ledger lists them.
    ``min`` and ``max`` are left out: a DP minimum or maximum is a quantile at 0 or 1 and
    says little about the true extremes, so the table does not pretend otherwise.
    """
    if bounds is None:  # every column with schema bounds; the planner reads (and notes) them
        schema = resolve(frame).session.schema
        bounds = {c: None for c, r in (schema.columns if schema else ()) if r.bounds}
    if not isinstance(bounds, dict) or not bounds:
        raise DPTypeError(
            "describe needs bounds={column: (lower, upper), ...} (or a schema with bounds)"
        )
    levels, _ = parse_quantiles(list(percentiles))
    rows = ["count", "mean", "std"] + [f"{100 * float(p):.10g}%" for p in levels]  # "12.5%"
    stats = []
    for column in bounds:
        stats += [
            Stat((column, "count"), "count", column),
            Stat((column, "mean"), "mean", column),
            Stat((column, "std"), "std", column),
        ]
        stats += [
            Stat((column, label), "quantile", column, p)
            for label, p in zip(rows[3:], levels, strict=True)
        ]
    result = release_many(
        frame, stats, query="describe", previewing=previewing, bounds=bounds,
        epsilon=epsilon, cells=cells,
    )  # fmt: skip
    if previewing:
        return result
    table = pd.DataFrame(index=rows, columns=list(bounds), dtype=np.float64)
    for (column, row), value in result.iloc[0].items():
        table.loc[row, column] = value
    return table
