"""The one planner: from a validated request to its :class:`Plan`.

It asks every statistic for the measurements it needs, keeps one noisy measurement per
distinct key (a mean reuses the call's count; a sum next to a mean is derived from its
measurements), splits ε among them for the least relative error (a Gaussian δ equally;
sequential composition inside the release; see :mod:`~pandas_dp.planning.measurement.split`),
calibrates each one, adds private key selection when keys are not public, and writes the
ledger record from that structure. Grouped and ungrouped releases differ only in the
grouping. Every decision reads public parameters only; the API adds where the release runs
and how it is shaped (``api.release.planned``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable
from dataclasses import dataclass
from fractions import Fraction

from pandas_dp.accounting.events import (
    PARALLEL,
    SEQUENTIAL,
    BoundedRangeMeasurement,
    Release,
)
from pandas_dp.budget import AnyBudget, number_text
from pandas_dp.errors import DPValueError
from pandas_dp.planning.measurement.choices import (
    FLIP_MAX_COINS,
    AnyPart,
    SelectPart,
    by_exponential,
)
from pandas_dp.planning.measurement.keys import CalibrationInputs, MeasurementKey
from pandas_dp.planning.measurement.kinds import NonNullCount, QuantileChoice, TopKChoice
from pandas_dp.planning.measurement.parts import NoiseChoice
from pandas_dp.planning.measurement.split import optimal_shares
from pandas_dp.planning.request import ColumnFacts, Granted, PlannedOutput, Presentation, Request
from pandas_dp.planning.selection import KEYS, ROWS, Selection, select_keys, selection_delta
from pandas_dp.planning.statistics import Mean, Quantile, Sum, Var
from pandas_dp.planning.statistics.postprocess import PostProcess


@dataclass(frozen=True)
class _Measuring:
    """What a statistic reads when it chooses its measurements (the statistics' ``Context``).

    The request's column facts and presentation, and what the release's other statistics
    measure anyway: no fact of its own.
    """

    columns: ColumnFacts
    presentation: Presentation
    others: frozenset[MeasurementKey] = frozenset()

    def imputed(self, column: Hashable) -> bool:
        return self.columns.imputed(column)

    def measured(self, key: MeasurementKey) -> bool:
        return key in self.others

    def bounds_of(self, column: Hashable) -> tuple[float, float]:
        return self.columns.bounds_of(column)

    def count_for(self, column: Hashable | None, *, imputed: bool) -> MeasurementKey:
        return self.columns.count_for(column, imputed=imputed)

    @property
    def confidence(self) -> float | None:
        return self.presentation.confidence

    @property
    def count_quantiles(self) -> bool:
        return self.presentation.count_quantiles


@dataclass(frozen=True)
class Plan:
    """A planned release as plan values: nothing is read, drawn or charged.

    Attributes
    ----------
    parts : dict
        The noisy measurements by key, in the order they are calibrated.
    outputs : tuple of PlannedOutput
        The statistics and the measurements each reads.
    release : Release
        The ledger record the release is charged as.
    selection : Selection or None
        How keys are chosen from the data (None: they are public).
    """

    parts: dict[MeasurementKey, AnyPart]
    outputs: tuple[PlannedOutput, ...]
    release: Release
    selection: Selection | None = None


def plan(
    session: Granted,
    request: Request,
    *,
    calibrated: dict[MeasurementKey, AnyPart] | None = None,
) -> Plan:
    """Turn a validated request into its plan (nothing is read or charged).

    ``session`` is read for its total budget and how it prices releases. ``calibrated``
    holds a query family's own measurements, calibrated jointly (a workload of marginals),
    by key.
    """
    sources, needs, context = _measurements(request)
    pricing = request.pricing
    shares = pricing.shares or optimal_shares(
        needs,
        [
            (pricing.priority(stat.name), stat.error_weights(sources[stat.name], context))
            for stat in request.stats
        ],
    )
    parts = _calibrated(session, request, needs, shares, calibrated or {})
    selection, selection_note = select_keys(session, request, parts)
    outputs = tuple(
        PlannedOutput(
            stat,
            sources[stat.name],
            tuple(parts[key] for key in sources[stat.name]),
            request.columns.bounds.get(stat.column),
        )
        for stat in request.stats
    )
    release = _release(request, parts, _notes(request, parts, outputs, selection_note, shares))
    return Plan(parts, outputs, release, selection)


def _measurements(
    request: Request,
) -> tuple[dict[Hashable, tuple[MeasurementKey, ...]], list[MeasurementKey], _Measuring]:
    """What each statistic reads, every measurement once (in order), and the context.

    Two passes: what each statistic measures on its own, then again knowing what the others
    measure anyway (a sum is derived from a mean's centred sum and count). A release that
    chooses its keys measures what chooses them too.
    """
    alone = _Measuring(request.columns, request.presentation)
    first = {key for stat in request.stats for key in stat.measurements(alone)}
    context = dataclasses.replace(alone, others=frozenset(first))
    sources = {stat.name: stat.measurements(context) for stat in request.stats}
    needs = list(dict.fromkeys(key for keys in sources.values() for key in keys))
    chooser = KEYS if request.selection == "optimal" else ROWS
    if request.selecting and chooser not in needs:
        needs.append(chooser)
    return sources, needs, context


def _calibrated(
    session: Granted,
    request: Request,
    needs: list[MeasurementKey],
    shares: tuple[Fraction, ...],
    calibrated: dict[MeasurementKey, AnyPart],
) -> dict[MeasurementKey, AnyPart]:
    """Every measurement's calibrated part, in the planned order.

    A query family's own joint calibrations (``calibrated``) are taken as given.
    """
    noise = noise_choice(session, request, shares)
    groups = _public_groups(request)
    pricing = request.pricing
    parts: dict[MeasurementKey, AnyPart] = {}
    # Some read others' calibrations (squares: the centred sum's centre), so come last.
    for key, share in sorted(zip(needs, shares, strict=True), key=lambda k: k[0].calibrated_last):
        if key in calibrated:
            parts[key] = calibrated[key]
            continue
        total = session.total
        if session.in_zcdp and _bounded_range(key):
            epsilon = pricing.choice_budget_of(share, key.rounds)
            part = _calibrate(key, request, epsilon, noise, parts, total)
            parts[key] = _priced_by_bounded_range(part)
            continue
        part = _calibrate(key, request, pricing.budget_of(share), noise, parts, total)
        parts[key] = _flip_or_exponential(part, groups)
    return {key: parts[key] for key in needs}


def _public_groups(request: Request) -> int | None:
    """How many groups the release computes: public keys (and a missing-key group), else None.

    None when the keys are the data's own (chosen privately after the choices are drawn).
    """
    grouping = request.grouping
    if grouping is None:
        return 1
    if grouping.keys is None:
        return None
    return len(grouping.keys) + grouping.missing


def _flip_or_exponential(part: AnyPart, groups: int | None) -> AnyPart:
    """``part``, by the exponential mechanism if permute-and-flip would flip too many coins.

    Permute-and-flip (a quantile's sampler in a pure-ε release) flips ``groups × candidates``
    coins; above :data:`FLIP_MAX_COINS` the exponential mechanism (ε-DP at the same ε) is
    used. Public inputs only: the candidates and the public keys. With keys from the data
    (their number private) permute-and-flip stays, its work bounded per chunk of rows.
    """
    if not (isinstance(part, SelectPart) and part.mechanism.flip and groups is not None):
        return part
    return by_exponential(part) if groups * part.candidates > FLIP_MAX_COINS else part


def _sampler_notes(parts: dict[MeasurementKey, AnyPart]) -> list[str]:
    """Which sampler the pure-ε quantile choices use (permute-and-flip, or why not)."""
    chosen = [p for p in parts.values() if isinstance(p, SelectPart) and p.candidates]
    notes = []
    if any(p.mechanism.flip for p in chosen):
        notes.append(
            "quantiles by permute-and-flip (McKenna & Sheldon 2020): the exponential "
            "mechanism's weights as acceptance coins, ε-DP at the same ε"
        )
    big = [
        p.label for p in chosen
        if not p.mechanism.flip and not isinstance(p.measurement, BoundedRangeMeasurement)
    ]  # fmt: skip
    if big:
        notes.append(
            f"{', '.join(big)}: exponential mechanism (groups × candidates exceed "
            f"{FLIP_MAX_COINS} permute-and-flip coins)"
        )
    return notes


def _bounded_range(key: MeasurementKey) -> bool:
    """Whether ``key`` is a choice by the exponential mechanism (a quantile, mode, top-k).

    Not the ends of a quantile's interval (the sparse vector technique), which stay pure ε.
    """
    return isinstance(key, QuantileChoice | TopKChoice) and key.side == 0


def _priced_by_bounded_range(part: AnyPart) -> AnyPart:
    """``part``'s choice recorded as bounded range: ``rounds · (ε/rounds)²/8`` in zCDP.

    The exponential mechanism at ε (weights ``exp(-ε score / (2Δ))``, or ``exp(ε score / Δ)``
    for a monotone score) is ε-bounded-range, hence ``ε²/8``-zCDP (Cesar & Rogers 2021), so a
    quantile is sampled by it here, not by permute-and-flip (whose bounded-range analysis is
    not this one); top-k peels ``rounds`` choices at ``ε / rounds`` each. The record's
    fields are set so that its :attr:`~BoundedRangeMeasurement.choice_epsilon`
    (``2 · sensitivity / scale``) is exactly each round's ε.
    """
    assert isinstance(part, SelectPart)
    part = by_exponential(part)  # the bound holds for the exponential mechanism's law
    epsilon, rounds = part.mechanism.epsilon, part.rounds
    sensitivity = part.measurement.sensitivity
    record = BoundedRangeMeasurement(
        part.label, part.mechanism.name, epsilon, sensitivity,
        2 * sensitivity * rounds / epsilon, coordinates=rounds,
    )  # fmt: skip
    return dataclasses.replace(part, measurement=record)


def _calibrate(
    key: MeasurementKey,
    request: Request,
    epsilon: Fraction,
    noise: NoiseChoice,
    parts: dict[MeasurementKey, AnyPart],
    total: AnyBudget,
) -> AnyPart:
    """The calibrated noise of one measurement: the key calibrates itself from these facts."""
    columns, pricing = request.columns, request.pricing
    return key.calibrate(
        CalibrationInputs(
            epsilon, request.caps.contribution, noise, columns.bounds, columns.fill,
            columns.grid_cells, request.grid_rounding, request.presentation.confidence,
            lambda: selection_delta(pricing.delta, total, pricing.epsilon), parts,
            columns.weights,
        )
    )  # fmt: skip


def noise_choice(session: Granted, request: Request, shares: tuple[Fraction, ...]) -> NoiseChoice:
    """Laplace, or Gaussian with the release's δ split among its measurements."""
    pricing = request.pricing
    if not pricing.gaussian:
        return NoiseChoice()
    if request.selecting:
        raise DPValueError(
            "choosing keys from the data uses Laplace noise; pass public keys to use "
            "mechanism='gaussian'"
        )
    total = session.total
    if pricing.rho is not None:  # priced in zCDP: no δ
        return NoiseChoice(gaussian=True, zcdp=True)
    delta = pricing.delta
    if delta is None:
        if total.delta == 0:
            raise DPValueError(
                "Gaussian noise needs a δ: pass delta=..., or protect the frame with a delta"
            )
        delta = total.delta * min(Fraction(1), pricing.epsilon / total.epsilon)
    if delta == 0:
        raise DPValueError("Gaussian noise needs delta > 0")
    return NoiseChoice(gaussian=True, delta=delta / len(shares))


def _release(request: Request, parts: dict[MeasurementKey, AnyPart], notes: list[str]) -> Release:
    """The ledger record; ``notes`` are its note's lines (see :func:`_notes`)."""
    grouping = request.grouping
    columns = [str(c) for c in (grouping.by if grouping else ())]
    columns += [str(s.column) for s in request.stats if s.column is not None]
    weights = request.columns.weights
    columns += [str(weights.column)] if weights is not None else []
    if not all(s.per_group for s in request.stats):  # a choice among the groups
        grouping = None
    groups = 1 if grouping is None or grouping.keys is None else len(grouping.keys)
    return Release(
        request.query,
        tuple(dict.fromkeys(columns)),
        tuple(p.measurement for p in parts.values()),
        composition=PARALLEL if grouping is not None else SEQUENTIAL,
        groups=groups,
        bounds=tuple((str(c), lo, hi) for c, (lo, hi) in request.columns.bounds.items())
        + tuple((f"{w.column} (weights)", w.lower, w.upper) for w in [weights] if w),
        note="; ".join(notes),
        asked=request.pricing.asked,
    )


def _notes(
    request: Request,
    parts: dict[MeasurementKey, AnyPart],
    outputs: tuple[PlannedOutput, ...],
    selection_note: str,
    shares: tuple[Fraction, ...],
) -> list[str]:
    """The ledger note's lines.

    The query family's own (or the generic ones), then derivations, sources, weights, time
    columns and missing values.
    """
    notes = list(request.notes) or _generic_notes(request, parts, shares, selection_note)
    notes.extend(dict.fromkeys(note for out in outputs for note in out.stat.notes()))
    notes.extend(_sampler_notes(parts))
    shown, columns = request.presentation, request.columns
    notes.extend(_derivation_notes(outputs, parts, shown.post or PostProcess()))
    notes.extend(request.sources)
    weights = columns.weights
    if weights is not None:
        notes.append(weights.describe())
        notes.extend(
            f"{key.label}: sensitivity {part.measurement.sensitivity * 2.0**part.exponent:.6g}"
            for key, part in parts.items()
            if key.weights is not None
        )
    notes.extend(kind.note(column) for column, kind in shown.kinds.items())
    if any(f is not None for f in columns.fill.values()):
        notes.append("missing values imputed with the public fillna value")
    elif columns.fill:
        notes.append("missing values skipped")
    return notes


def _derivation_notes(
    outputs: tuple[PlannedOutput, ...],
    parts: dict[MeasurementKey, AnyPart],
    post: PostProcess | None,
) -> list[str]:
    """Sums derived from a mean's measurements, and counts kept apart (and why)."""
    notes = [
        f"{out.stat.name} = centre × count + centred sum (derived; no ε of its own)"
        for out in outputs
        if isinstance(out.stat, Sum) and len(out.keys) == 2
    ]
    hidden = [
        out for out in outputs
        if isinstance(out.stat, Mean | Var)
        or (isinstance(out.stat, Quantile) and len(out.keys) in (2, 4))  # and its count
    ]  # fmt: skip
    if hidden and post is not None and post.min_count != 0:
        names = ", ".join(str(out.stat.name) for out in hidden)
        notes.append(f"{names}: NaN where the noisy count is below {post.min_count:g} (min_count)")
    if ROWS in parts:
        apart = [str(k.column) for k in parts if isinstance(k, NonNullCount) and k.weights is None]
        if apart:
            notes.append(
                f"non-missing counts of {', '.join(apart)} measured apart from the row count: "
                "the dtype can hold missing values (a schema with nullable=False or fillna= "
                "would let them share it)"
            )
    return notes


def _generic_notes(
    request: Request,
    parts: dict[MeasurementKey, AnyPart],
    shares: tuple[Fraction, ...],
    selection_note: str,
) -> list[str]:
    """How ε was split, the noise, the composition, key selection and the caps.

    A query family that explains its release in its own words (``Request.notes``) replaces
    these lines.
    """
    keys = list(parts)
    pricing = request.pricing
    asked = f"ε {number_text(pricing.epsilon)}"
    if pricing.rho is not None:  # priced in zCDP: ρ, and the ε asked if one was
        rho = f"ρ {number_text(pricing.rho)}"
        asked = f"{asked} ({rho})" if pricing.asked.startswith("epsilon") else rho
    if len(keys) == 1:
        notes = [f"{asked} on {keys[0].describe()}"]
    else:
        equal = len(set(shares)) == 1
        split = ", ".join(
            f"{s if s.denominator <= 12 else f'{float(s):.3g}'} to {k.describe()}"
            for s, k in zip(shares, keys, strict=True)
        )
        how = "equally" if equal else "for the least relative error"
        notes = [f"{asked} split {how}: {split}"]
    measurements = [p.measurement for p in parts.values()]
    if pricing.gaussian and any(m.is_gaussian for m in measurements):
        if all(m.delta == 0 for m in measurements):  # priced in zCDP
            notes.append("discrete Gaussian noise calibrated to ρ (σ² = Δ²/(2ρ)), no δ")
        else:
            delta = sum((m.delta for m in measurements), Fraction(0))
            notes.append(f"discrete Gaussian noise calibrated for δ = {float(delta):.3g} in all")
    if any(isinstance(m, BoundedRangeMeasurement) for m in measurements):
        notes.append("exponential mechanism priced by bounded range: ε-DP costs ρ = ε²/8")
    grouping = request.grouping
    if grouping is not None:
        over = len(grouping.keys) if grouping.keys is not None else "the released"
        notes.append(f"charged once: parallel composition over {over} disjoint groups")
    if selection_note:
        notes.append(selection_note)
    if request.caps.noteworthy:
        notes.append(request.caps.describe())
    return notes
