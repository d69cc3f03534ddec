"""One planner for every count / sum / mean release, grouped or not.

A validated request (:mod:`pandas_dp.api.request`) names the statistics wanted
(``n="count"``, ``total=("income", "sum")``, ...). The planner turns it into the smallest set
of noisy *measurements* -- a row count, a count of non-missing values per column, a clipped
sum, a centred clipped sum -- shares each one among the statistics that need it (a mean
reuses the call's count), splits ε (and δ for Gaussian noise) equally among them (sequential
composition inside the release), and describes how to post-process the noisy integers into
the statistics. Grouped and ungrouped releases differ only in the grouping.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from pandas_dp.accounting.events import PARALLEL, SEQUENTIAL, Measurement, Release
from pandas_dp.api.pipeline import (
    NoiseChoice,
    Part,
    Plan,
    Selection,
    SelectPart,
    Target,
    count_part,
    quantile_part,
    squares_part,
    sum_part,
)
from pandas_dp.api.request import SPREADS, Request, Stat
from pandas_dp.api.results import Output, Preview, finisher, preview_of
from pandas_dp.errors import DPValueError
from pandas_dp.mechanisms.laplace import DiscreteLaplace
from pandas_dp.mechanisms.lattice import lattice_at, lattice_exponent
from pandas_dp.mechanisms.selection import selection_threshold


def _nullable(target: Target, column: Hashable) -> bool:
    """Whether the column may hold missing values: the schema's rule, else the dtype's."""
    schema = target.session.schema
    if schema is not None and schema.rules(column).nullable is not None:
        return bool(schema.rules(column).nullable)
    dtype = dict(target.engine.dtypes(target.data).items())[column]
    return not (isinstance(dtype, np.dtype) and dtype.kind in "biu")


def _count_key(
    target: Target, request: Request, column: Hashable | None, *, mean: bool
) -> tuple[Any, ...]:
    """The count a statistic uses: rows, unless missing values may exist and are skipped."""
    if column is None:
        return ("rows",)
    imputed = mean and request.fill.get(column) is not None
    if imputed or not _nullable(target, column):
        return ("rows",)
    return ("nonnull", column)


def _sources(target: Target, request: Request, stat: Stat) -> tuple[tuple[Any, ...], ...]:
    """The measurements a statistic is computed from (the mean's count comes last)."""
    if stat.how == "count":
        return (_count_key(target, request, stat.column, mean=False),)
    if stat.how == "sum":
        return (("sum", stat.column),)
    if stat.how == "quantile":
        return (("quantile", stat.column, stat.q),)
    count = _count_key(target, request, stat.column, mean=True)
    if stat.how in SPREADS:
        return (("csq", stat.column), ("csum", stat.column), count)
    return (("csum", stat.column), count)


#: Measurement labels, as they appear in the ledger: ``count``, ``count(income)``, ...
_LABELS = {
    "rows": "count", "nonnull": "count", "sum": "sum", "csum": "centred_sum",
    "csq": "squares", "quantile": "quantile",
}  # fmt: skip


def _noise(target: Target, request: Request, measurements: int) -> NoiseChoice:
    """Laplace, or Gaussian with the release's δ split equally among its measurements."""
    if not request.gaussian:
        return NoiseChoice()
    if request.selecting:
        raise DPValueError(
            "choosing keys from the data uses Laplace noise; pass public keys to use "
            "mechanism='gaussian'"
        )
    total = target.session.total
    delta = request.delta
    if delta is None:
        if total.delta == 0:
            raise DPValueError(
                "Gaussian noise needs a δ: pass delta=..., or protect the frame with a delta"
            )
        delta = total.delta * min(Fraction(1), request.epsilon / total.epsilon)
    if delta == 0:
        raise DPValueError("Gaussian noise needs delta > 0")
    return NoiseChoice(gaussian=True, delta=delta / measurements)


@dataclass(frozen=True)
class _Built:
    parts: tuple[Part | SelectPart, ...]
    outputs: list[Output]
    release: Release
    selection: Selection | None


def _build(target: Target, request: Request) -> _Built:
    """The measurements, outputs and release record of a request (public parameters only)."""
    sources = {stat.name: _sources(target, request, stat) for stat in request.stats}
    needs = list(dict.fromkeys(key for keys in sources.values() for key in keys))
    if request.selecting and ("rows",) not in needs:
        needs.append(("rows",))
    eps_each = request.epsilon / len(needs)
    noise = _noise(target, request, len(needs))
    contribution = request.caps.contribution
    parts: dict[tuple[Any, ...], Part | SelectPart] = {}
    for key in sorted(needs, key=lambda k: k[0] == "csq"):  # squares use the centred sum's centre
        kind, column = key[0], key[1] if len(key) > 1 else None
        label = _label(key)
        if kind in ("rows", "nonnull"):
            parts[key] = count_part(eps_each, column, label, contribution, noise)
        elif kind == "quantile":
            parts[key] = quantile_part(
                column, request.bounds[column], key[2], eps_each, label=label,
                contribution=contribution, cells=request.cells,
            )  # fmt: skip
        elif kind == "csq":
            centred = parts[("csum", column)]
            assert centred.lattice is not None
            centre = centred.lattice.to_real(centred.lattice.offset)
            parts[key] = squares_part(
                column, request.bounds[column], centre, eps_each, fill=request.fill[column],
                label=label, contribution=contribution, noise=noise,
            )  # fmt: skip
        else:
            parts[key] = sum_part(
                column, request.bounds[column], eps_each, centered=kind == "csum",
                fill=request.fill[column], label=label, contribution=contribution, noise=noise,
                exponent=_shared_exponent(needs, column, request, eps_each / contribution.l1),
            )  # fmt: skip
    parts = {key: parts[key] for key in needs}  # back to the planned order
    selection, selection_note = _selection(target, request, parts)
    outputs = [
        Output(
            s.name,
            s.how,
            tuple(parts[k] for k in sources[s.name]),
            request.bounds.get(s.column),
            s.ddof,
        )
        for s in request.stats
    ]
    release = _release(request, tuple(parts.values()), selection_note)
    return _Built(tuple(parts.values()), outputs, release, selection)


def plan(target: Target, request: Request, *, shape: str) -> Plan[Any]:
    """Turn a validated request into a runnable :class:`Plan`."""
    built = _build(target, request)
    finish = finisher(built.outputs, shape, request.post, request.confidence)
    return Plan(
        built.parts, built.release, finish, request.grouping, request.caps.bounding,
        built.selection,
    )  # fmt: skip


def preview(target: Target, request: Request) -> Preview:
    """What a release would cost and how accurate it would be, without running it."""
    built = _build(target, request)
    confidence = request.confidence if request.confidence is not None else 0.95
    return preview_of(request.query, built.outputs, built.release, confidence)


def _shared_exponent(
    needs: list[tuple[Any, ...]], column: Hashable, request: Request, epsilon: Fraction
) -> int | None:
    """One lattice step for a column's plain and centred sums, when both are released.

    The finer of the two steps, so that the engine rounds the column once and derives the
    centred sum exactly from the plain one; None when only one is needed or the finer step
    would let a row exceed the lattice's range.
    """
    if ("sum", column) not in needs or ("csum", column) not in needs:
        return None
    lower, upper = request.bounds[column]
    exponent = min(
        lattice_exponent(lower, upper, epsilon, centered=False),
        lattice_exponent(lower, upper, epsilon, centered=True),
    )
    try:
        lattice_at(lower, upper, exponent, centered=False)
    except ValueError:
        return None
    return exponent


def _selection(
    target: Target, request: Request, parts: dict[tuple[Any, ...], Part | SelectPart]
) -> tuple[Selection | None, str]:
    """Threshold for private key selection (and the δ it spends), or nothing.

    Replaces the row-count part in ``parts`` with one whose measurement carries that δ.
    """
    if not request.selecting:
        if request.delta is not None and not request.gaussian:
            raise DPValueError(
                "delta is only used when keys are selected privately (keys=None) or with "
                "mechanism='gaussian'; this release is pure ε-DP, so leave delta out"
            )
        return None, ""
    total = target.session.total
    if total.delta == 0:
        raise DPValueError(
            "no keys were given, and choosing keys from the data privately needs δ > 0, but "
            "this session has no δ. Either pass the public keys (keys=[...]), or have the "
            "data owner protect the frame with a delta (e.g. delta=1e-6)."
        )
    delta = request.delta
    if delta is None:  # the same share of the total δ as this release takes of the total ε
        delta = total.delta * min(Fraction(1), request.epsilon / total.epsilon)
    if delta == 0:
        raise DPValueError("partition selection needs delta > 0")
    rows = parts[("rows",)]
    assert isinstance(rows, Part)
    assert isinstance(rows.mechanism, DiscreteLaplace)
    contribution = request.caps.contribution
    threshold = selection_threshold(
        rows.mechanism.effective_scale, delta, contribution.l0, contribution.linf
    )
    parts[("rows",)] = dataclasses.replace(rows, measurement=_with_delta(rows.measurement, delta))
    note = (
        f"keys chosen privately: a key is released when its noisy row count is ≥ {threshold} "
        f"(δ = {float(delta):.3g} for ≤ {contribution.l0} keys per unit, "
        f"≤ {contribution.linf} rows each)"
    )
    return Selection(rows.label, threshold), note


def _with_delta(measurement: Measurement, delta: Fraction) -> Measurement:
    return dataclasses.replace(
        measurement, extra_delta=delta, label=f"{measurement.label}+selection"
    )


def _label(key: tuple[Any, ...]) -> str:
    """Ledger label of a measurement: ``count``, ``sum(income)``, ``quantile(income, 0.5)``."""
    kind = _LABELS[key[0]]
    if len(key) == 1:
        return kind
    if key[0] == "quantile":  # shortest exact text: close levels keep distinct labels
        return f"{kind}({key[1]}, {float(key[2])!r})"
    return f"{kind}({key[1]})"


def _describe(label: str) -> str:
    kind, _, column = label.removesuffix("+selection").partition("(")
    column = column.removesuffix(")")
    if kind == "count":
        return f"the count of non-missing {column}" if column else "the row count"
    if kind == "quantile":
        name, _, level = column.rpartition(", ")
        return f"the {level} quantile of {name}"
    return f"the {kind.replace('_', ' ')} of {column}"


def _release(
    request: Request, parts: tuple[Part | SelectPart, ...], selection_note: str
) -> Release:
    grouping = request.grouping
    columns = [str(c) for c in (grouping.by if grouping else ())]
    columns += [str(s.column) for s in request.stats if s.column is not None]
    groups = 1 if grouping is None or grouping.keys is None else len(grouping.keys)
    if len(parts) == 1:
        notes = [f"ε {request.epsilon} on {_describe(parts[0].label)}"]
    else:
        share = Fraction(1, len(parts))
        shares = ", ".join(f"{share} to {_describe(p.label)}" for p in parts)
        notes = [f"ε {request.epsilon} split equally: {shares}"]
    if request.gaussian:
        delta = sum((p.measurement.delta for p in parts), Fraction(0))
        notes.append(f"discrete Gaussian noise calibrated for δ = {float(delta):.3g} in all")
    if grouping is not None:
        over = groups if grouping.keys is not None else "the released"
        notes.append(f"charged once: parallel composition over {over} disjoint groups")
    if selection_note:
        notes.append(selection_note)
    if request.caps.bounding is not None:
        notes.append(request.caps.describe())
    if any(s.how == "mean" for s in request.stats):
        notes.append("mean = centre + noisy centred sum / max(noisy count, 1), clipped to bounds")
    if any(s.how in SPREADS for s in request.stats):
        notes.append(
            "var = (noisy squares - noisy centred sum²/N) / max(N - ddof, 1), N = max(noisy "
            "count, 1), clipped to [0, ((upper - lower)/2)²]"
        )
    if any(s.how == "quantile" for s in request.stats):
        notes.append("quantiles: exponential mechanism over a public grid (Smith 2011)")
    notes.extend(request.sources)
    if any(f is not None for f in request.fill.values()):
        notes.append("missing values imputed with the public fillna value")
    elif request.fill:
        notes.append("missing values skipped")
    return Release(
        request.query,
        tuple(dict.fromkeys(columns)),
        tuple(p.measurement for p in parts),
        composition=PARALLEL if grouping is not None else SEQUENTIAL,
        groups=groups,
        bounds=tuple((str(c), lo, hi) for c, (lo, hi) in request.bounds.items()),
        note="; ".join(notes),
    )
