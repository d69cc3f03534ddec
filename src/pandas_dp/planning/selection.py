"""Keys chosen from the data: the δ they spend, and the rule that chooses them.

A threshold on the noisy row count (released with the same noise), or the optimal rule of
Desfontaines, Voss, Gipson & Mandayam (2022), which spends a share of ε on the choice alone
(see :mod:`pandas_dp.mechanisms.selection` and :mod:`pandas_dp.mechanisms.optimal_selection`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from pandas_dp.accounting.events import Measurement
from pandas_dp.budget import AnyBudget, Budget
from pandas_dp.errors import DPValueError
from pandas_dp.mechanisms.laplace import DiscreteLaplace
from pandas_dp.mechanisms.optimal_selection import first_at_least
from pandas_dp.mechanisms.selection import selection_threshold
from pandas_dp.planning.measurement.choices import AnyPart, KeyChoicePart
from pandas_dp.planning.measurement.keys import MeasurementKey
from pandas_dp.planning.measurement.kinds import KeyChoice, RowCount
from pandas_dp.planning.measurement.parts import Part
from pandas_dp.planning.request import Granted, Request

ROWS = RowCount()
KEYS = KeyChoice()


@dataclass(frozen=True)
class Selection:
    """Which keys a release keeps when they are chosen from the data.

    Those whose noisy row count is at least ``threshold``, or (``threshold`` None) those
    that measurement ``key`` chose.
    """

    key: MeasurementKey
    threshold: int | None


def select_keys(
    session: Granted, request: Request, parts: dict[MeasurementKey, AnyPart]
) -> tuple[Selection | None, str]:
    """Threshold for private key selection (and the δ it spends), or nothing.

    Replaces the row-count part in ``parts`` with one whose measurement carries that δ.
    """
    if not request.selecting:
        if request.pricing.delta is not None and not request.pricing.gaussian:
            raise DPValueError(
                "delta is only used when keys are selected privately (keys=None) or with "
                "mechanism='gaussian'; this release is pure ε-DP, so leave delta out"
            )
        return None, ""
    delta = selection_delta(request.pricing.delta, session.total, request.pricing.epsilon)
    contribution = request.caps.contribution
    if request.selection == "optimal":
        table = key_choice(parts)
        half, most = first_at_least(table, 0.5), first_at_least(table, 0.99)
        unit = "rows" if contribution.linf == 1 else f"units ({contribution.linf} rows each)"
        note = (
            "keys chosen privately by the optimal rule (Desfontaines et al. 2022): a key with "
            f"n {unit} is kept with probability π(n), 50% from n = {half} and 99% from n = "
            f"{most} (δ = {float(delta):.3g} for ≤ {contribution.l0} keys per unit)"
        )
        return Selection(KEYS, None), note
    rows = parts[ROWS]
    assert isinstance(rows, Part)
    assert isinstance(rows.mechanism, DiscreteLaplace)
    threshold = selection_threshold(
        rows.mechanism.effective_scale, delta, contribution.l0, contribution.linf
    )
    parts[ROWS] = dataclasses.replace(rows, measurement=_with_delta(rows.measurement, delta))
    note = (
        f"keys chosen privately: a key is released when its noisy row count is ≥ {threshold} "
        f"(δ = {float(delta):.3g} for ≤ {contribution.l0} keys per unit, "
        f"≤ {contribution.linf} rows each)"
    )
    return Selection(ROWS, threshold), note


def selection_delta(given: Fraction | None, total: AnyBudget, epsilon: Fraction) -> Fraction:
    """The δ a private key selection spends: as given, or the release's share of the total."""
    if total.delta == 0:
        raise DPValueError(
            "no keys were given, and choosing keys from the data privately needs δ > 0, but "
            "this session has no δ. Either pass the public keys (keys=[...]), or have the "
            "data owner protect the frame with a delta (e.g. delta=1e-6)."
        )
    delta = given
    if delta is None:  # the same share of the total δ as this release takes of the total ε
        assert isinstance(total, Budget)
        delta = total.delta * min(Fraction(1), epsilon / total.epsilon)
    if delta == 0:
        raise DPValueError("partition selection needs delta > 0")
    return delta


def key_choice(parts: dict[MeasurementKey, AnyPart]) -> np.ndarray:
    """The optimal rule's table of keep probabilities, from the planned key choice."""
    part = parts[KEYS]
    assert isinstance(part, KeyChoicePart)
    return part.table


def _with_delta(measurement: Measurement, delta: Fraction) -> Measurement:
    return dataclasses.replace(
        measurement, extra_delta=delta, label=f"{measurement.label}+selection"
    )
