"""Plain-JSON forms of budgets and releases, for ledger files.

Exact numbers are written as ``"p/q"`` strings so that a budget read back is the same
fraction it was; nothing here holds a value computed from private data.
"""

from __future__ import annotations

from fractions import Fraction
from typing import NotRequired, TypedDict

from pandas_dp.accounting.events import MEASUREMENT_KINDS, Measurement, Release
from pandas_dp.budget import AnyBudget, Budget, RhoBudget


class BudgetJSON(TypedDict):
    """A budget in a ledger file: exact numbers as ``"p/q"`` strings."""

    epsilon: NotRequired[str]
    delta: NotRequired[str]
    rho: NotRequired[str | None]


class MeasurementJSON(TypedDict):
    """A :class:`Measurement` in a ledger file (see :func:`measurement_to_json`)."""

    kind: NotRequired[str]  # files written before the tag name only the mechanism
    label: str
    mechanism: str
    epsilon: str
    delta: str
    sensitivity: int
    scale: str
    exponent: int
    coordinates: int
    sigma2: NotRequired[str | None]
    extra_delta: str


class ReleaseJSON(TypedDict):
    """A :class:`Release` in a ledger file (see :func:`release_to_json`)."""

    query: str
    columns: list[str]
    measurements: list[MeasurementJSON]
    composition: str
    groups: int
    bounds: list[list[str | float]]  # [column, lower, upper] per column
    note: NotRequired[str]
    tag: NotRequired[str]
    randomness: NotRequired[str]  # files written before the field existed: "os"
    asked: NotRequired[str]  # files written before the field existed: ""


def _fraction(value: str | int | float) -> Fraction:
    return Fraction(str(value))


def budget_to_json(budget: AnyBudget) -> BudgetJSON:
    """``{"epsilon": "1", "delta": "1/1000000", "rho": null}``."""
    return {
        "epsilon": str(budget.epsilon),
        "delta": str(budget.delta),
        "rho": None if budget.rho is None else str(budget.rho),
    }


def budget_from_json(data: BudgetJSON) -> AnyBudget:
    """Inverse of :func:`budget_to_json`."""
    rho = data.get("rho")
    if rho is not None:
        return RhoBudget(_fraction(rho))
    return Budget(_fraction(data["epsilon"]), _fraction(data["delta"]))


def measurement_to_json(m: Measurement) -> MeasurementJSON:
    """All fields of a measurement, exact numbers as strings."""
    return {
        "kind": m.kind,
        "label": m.label,
        "mechanism": m.mechanism,
        "epsilon": str(m.epsilon),
        "delta": str(m.delta),
        "sensitivity": m.sensitivity,
        "scale": str(m.scale),
        "exponent": m.exponent,
        "coordinates": m.coordinates,
        "sigma2": None if m.sigma2 is None else str(m.sigma2),
        "extra_delta": str(m.extra_delta),
    }


#: Ledger files written before the ``kind`` tag name only the mechanism.
_KIND_OF_MECHANISM = {
    "discrete_laplace": "laplace", "discrete_gaussian": "gaussian", "exponential": "selection",
    "permute_and_flip": "selection",
}  # fmt: skip


def measurement_from_json(data: MeasurementJSON) -> Measurement:
    """Inverse of :func:`measurement_to_json`."""
    sigma2 = data.get("sigma2")
    kind = data.get("kind") or _KIND_OF_MECHANISM.get(data["mechanism"], "measurement")
    event = MEASUREMENT_KINDS.get(kind, Measurement)
    return event(
        label=data["label"],
        mechanism=data["mechanism"],
        epsilon=_fraction(data["epsilon"]),
        sensitivity=int(data["sensitivity"]),
        scale=_fraction(data["scale"]),
        exponent=int(data["exponent"]),
        delta=_fraction(data["delta"]),
        coordinates=int(data["coordinates"]),
        sigma2=None if sigma2 is None else _fraction(sigma2),
        extra_delta=_fraction(data["extra_delta"]),
    )


def release_to_json(r: Release) -> ReleaseJSON:
    """All fields of a release record."""
    return {
        "query": r.query,
        "columns": list(r.columns),
        "measurements": [measurement_to_json(m) for m in r.measurements],
        "composition": r.composition,
        "groups": r.groups,
        "bounds": [[c, lo, hi] for c, lo, hi in r.bounds],
        "note": r.note,
        "tag": r.tag,
        "randomness": r.randomness,
        "asked": r.asked,
    }


def release_from_json(data: ReleaseJSON) -> Release:
    """Inverse of :func:`release_to_json`."""
    return Release(
        query=data["query"],
        columns=tuple(data["columns"]),
        measurements=tuple(measurement_from_json(m) for m in data["measurements"]),
        composition=data["composition"],
        groups=int(data["groups"]),
        bounds=tuple((str(c), float(lo), float(hi)) for c, lo, hi in data["bounds"]),
        note=data.get("note", ""),
        tag=data.get("tag", ""),
        randomness=data.get("randomness", "os"),  # files written before the field existed
        asked=data.get("asked", ""),
    )
