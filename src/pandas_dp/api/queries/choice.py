"""The mode and top-k of a column among public candidates (exponential mechanism)."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.api.caps import caps_for
from pandas_dp.api.keys import check_key_types, parse_keys
from pandas_dp.api.queries.groupby import schema_domains, schema_keys
from pandas_dp.api.release import PlannedRelease, Presentation, Pricing, Request, plan, resolve
from pandas_dp.api.release.arguments import Real
from pandas_dp.api.release.options import price
from pandas_dp.api.release.types import Finish
from pandas_dp.api.validation import check_column
from pandas_dp.errors import DPValueError
from pandas_dp.measures.aggregates import Aggregate, Grouping
from pandas_dp.planning.measurement.keys import MeasurementKey
from pandas_dp.planning.noise import NoiseSource
from pandas_dp.planning.request import PlannedOutput
from pandas_dp.planning.statistics import Choice
from pandas_dp.units import positive_int


def plan_top_k(
    obj: pd.DataFrame | pd.Series,
    column: Hashable | None,
    k: object,
    *,
    candidates: object,
    epsilon: Real | None,
    rho: Real | None = None,
    mode: bool = False,
) -> PlannedRelease[Any]:
    """The ``k`` most frequent public candidates, by peeling with the exponential mechanism.

    Scores are counts (monotone, sensitivity 1, or the rows one unit may add to one
    candidate), so each round uses weights ``exp(ε_r count / Δ)`` with ``ε_r = ε / k``.
    """
    target = resolve(obj)
    col = target.column if target.column is not None else column
    check_column(target.engine, target.data, col, numeric=False, known=target.session.columns)
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
    dtype = dict(target.engine.dtypes(target.data).items())[col]
    check_key_types(keys, [dtype], schema_domains(target, [col]))
    query = "mode" if mode else "top_k"
    eps, parsed_rho, asked = price(target, query, epsilon, rho)
    rounds = positive_int(k, "k")
    if rounds > len(keys):
        raise DPValueError(f"k={rounds} exceeds the {len(keys)} candidates")
    caps = caps_for(target, grouped=True)
    sensitivity = caps.contribution.linf
    note = (
        f"exponential mechanism over {len(keys)} public candidates, scores = counts "
        f"(monotone, sensitivity {sensitivity})"
    )
    if rounds > 1:
        note += f"; {rounds} rounds of peeling at ε/{rounds} each"
    if target.session.in_zcdp:
        note += f"; {asked}: priced by bounded range, an ε-DP choice costs ρ = ε²/8" + (
            f" ({rounds} × (ε/{rounds})²/8 in all)" if rounds > 1 else ""
        )
    if source:
        note += f"; candidates: {source}"
    if caps.noteworthy:
        note += f"; {caps.describe()}"
    request = Request(
        stats=(Choice("mode" if mode else "top_k", col, rounds=rounds, mode=mode),),
        query=query, pricing=Pricing(epsilon=eps, rho=parsed_rho, asked=asked),
        grouping=Grouping((col,), keys), caps=caps, notes=(note,),
    )  # fmt: skip

    def finisher(outputs: tuple[PlannedOutput, ...], _: Presentation) -> Finish:
        (key,) = outputs[0].keys

        def finish(
            released: pd.Index | None, noisy: dict[MeasurementKey, Aggregate], source: NoiseSource
        ) -> Any:
            assert released is not None
            chosen = released[np.asarray(noisy[key], dtype=np.int64)]
            return chosen[0] if mode else list(chosen)

        return finish

    return plan(target, request, finisher)
