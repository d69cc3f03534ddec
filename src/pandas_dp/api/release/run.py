"""The one runner: check, compute, noise, select, finish, charge.

The release invariant: validation reads public inputs only (arguments, dtypes, column names,
a schema), and a query it refuses charges nothing. Once the budget check has passed, the
release either returns noisy values and charges, or fails for a reason that does not depend
on the private data. Every step after the check is written to be total (it cannot fail on any
data); should one fail all the same, the release is charged and one data-free
:class:`~pandas_dp.errors.ReleaseFailedError` is raised, so a failure can never be an
uncharged observation. Warnings raised by third-party code inside those steps are swallowed
(their occurrence could depend on the data). A release that loses a race for the last of
the budget is discarded unseen.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import TypeVar

import numpy as np
import pandas as pd

from pandas_dp.accounting.events import Release
from pandas_dp.api.release.types import UNRESOLVED, PlannedRelease, chained
from pandas_dp.errors import DPValueError, NoiseDominatedWarning, ReleaseFailedError, warn
from pandas_dp.measures.aggregates import Aggregate
from pandas_dp.planning.measurement.keys import MeasurementKey
from pandas_dp.planning.request import PlannedOutput
from pandas_dp.planning.statistics import Count, Inputs, LevelCount, Sum
from pandas_dp.planning.statistics.postprocess import PostProcess

T = TypeVar("T")


def run(planned: PlannedRelease[T], tag: str = "") -> T:
    """Release ``planned``: the only function that reads private data and charges for it.

    ``tag`` goes on its ledger row (a release file's query id); empty: the release's own.

    Raises
    ------
    BudgetExceededError
        If the session cannot afford the release (checked before the data is read, and again
        atomically at the charge); nothing is charged.
    ReleaseFailedError
        If anything fails after the check (a bug: every step is meant to be total); the
        release is charged and the error carries nothing of the original failure.
    """
    if planned.preview_only:
        raise DPValueError(planned.preview_only)
    if planned.prior is not None:
        return _run_after(planned, tag)
    session = planned.target.session
    session.accountant.check(planned.release)
    failed = False
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            # Process-wide, like every warnings filter: a warning raised here by pandas or
            # numpy could depend on the data, so none may reach the caller.
            warnings.simplefilter("ignore")
            release, result, dominated = _compute(planned)
    except Exception:  # any failure after the check is charged below
        failed = True
    if failed:  # outside the handler, so the new error has no __context__ to show
        session.charge(planned.release, tag=tag)
        raise ReleaseFailedError(
            f"{planned.release.query} failed after reading the data and was charged "
            f"{planned.release.cost} (a failure that depends on the data must not be free). "
            "This is a bug in pandas-dp: please report the call, never the data."
        )
    session.charge(release, result, tag=tag)  # on disk first when the session has a ledger file
    if dominated:  # from the released values only, and after the charge
        warn(NoiseDominatedWarning(dominated))
    return result


def _run_after(planned: PlannedRelease[T], tag: str) -> T:
    """Release ``planned`` after its prior (``bounds="auto"``), both charged as one release.

    The budget is checked for both before anything is read; the prior's result (public once
    released) replans the statistic, whose cost does not depend on it. Any failure after the
    check, the replanning's included (its checks read the released bounds), is charged and
    data-free, as in :func:`run`.
    """
    assert planned.prior is not None
    assert planned.replan is not None
    session = planned.target.session
    session.accountant.check(planned.charged)
    failed = False
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            release, result, dominated = _released(planned)
    except Exception:
        failed = True
    if failed:
        session.charge(planned.charged, tag=tag)
        raise ReleaseFailedError(
            f"{planned.release.query} failed after reading the data and was charged "
            f"{planned.charged.cost} (a failure that depends on the data must not be free). "
            "This is a bug in pandas-dp: please report the call, never the data."
        )
    session.charge(release, result, tag=tag)
    if dominated:
        warn(NoiseDominatedWarning(dominated))
    return result


def _released(planned: PlannedRelease[T]) -> tuple[Release, T, str]:
    """Compute ``planned`` after its priors, each replanning the next: one chained Release.

    A prior may have a prior of its own (the bounds of a date column scan outwards from an
    origin released first). Every replanned release must cost what was checked.
    """
    if planned.prior is None or planned.replan is None:
        return _compute(planned)
    first, found, _ = _released(planned.prior)
    second = planned.replan(found)
    if second.charged.cost != planned.release.cost:  # a bug: never a silent charge
        raise AssertionError("the replanned release costs what was checked")
    release, result, dominated = _released(second)
    shown = found if isinstance(found, pd.DataFrame) else None  # the released values
    unresolved = [] if shown is None else list(shown.attrs.get(UNRESOLVED, ()))
    if unresolved:  # from the released bounds alone, warned after the charge
        dominated = "; ".join(filter(None, [dominated, _unresolved(planned.auto, unresolved)]))
    return chained(first, release, shown, planned.auto, ends=planned.ends), result, dominated


def _unresolved(auto: str, columns: list[object]) -> str:
    """What a release whose bounds' scans ran to the lattice's end says of its values."""
    return (
        f"{auto}: the scans found no end of the data of {columns} (one ran to the lattice's "
        "end, ±2**64: too little data for the bounds' share of ε, or the threshold's noise "
        "drew high), so the statistic is clipped to bounds that wide and may be mostly noise "
        "or coarse. Give bounds (from the domain, or priv.dp.bounds(...) with more ε)"
    )


def _noise_dominated(planned: PlannedRelease[T], noisy: dict[MeasurementKey, Aggregate]) -> str:
    """How many released values are dominated by their noise, in words (empty: none).

    Post-processing of the noisy values and public parameters only. Counts and sums: below
    their noise's 95% half-width. Means, spreads and quantiles: by their own rule
    (:meth:`~pandas_dp.planning.statistics.base.Statistic.dominated`), leaving out values
    already NaN (a noisy count below ``min_count``).
    """
    query = planned.release.query
    flagged: list[Flagged] = []
    small, total, widths = 0, 0, []
    for out in planned.outputs:
        if not out.stat.per_group:
            continue
        inputs = out.inputs(noisy)
        # Counts of every kind (rows, values, sizes, distinct values) and sums: one rule.
        if not isinstance(out.stat, Count | Sum | LevelCount):
            flags = out.stat.dominated(inputs)
            if flags is not None:
                flagged.append((np.asarray(flags, dtype=bool), out, inputs))
            continue
        values = np.abs(np.asarray(out.stat.value(inputs, PostProcess()), dtype=np.float64))
        width = out.stat.preview_error(inputs, 0.05)
        small += int(np.count_nonzero(values < width))
        total += values.size
        widths.append(width)
    found = []
    if small:
        found.append(
            f"{small} of {total} released counts and sums of {query} are smaller than their "
            f"noise's 95% half-width (up to {max(widths):.3g}): they are mostly noise."
        )
    found += _loose(flagged, planned.post or PostProcess(), query)
    if not found:
        return ""
    return " ".join(found) + (
        " Read them with their intervals (ci=0.95), release fewer or coarser groups, or "
        "spend more ε; silence this with warnings.filterwarnings('ignore', "
        "category=pandas_dp.NoiseDominatedWarning)"
    )


#: A statistic's noise-dominated flags (one per group), its output and its noisy inputs.
Flagged = tuple[np.ndarray, PlannedOutput, Inputs]


def _loose(flagged: list[Flagged], post: PostProcess, query: str) -> list[str]:
    """The sentence on means, spreads and quantiles dominated by their error (or none).

    Their values matter only when one of them is flagged (then all count towards "of N").
    """
    if not any(flags.any() for flags, _, _ in flagged):
        return []
    loose, shown, kinds = 0, 0, []
    for flags, out, inputs in flagged:
        values = np.asarray(out.stat.value(inputs, post), dtype=np.float64)
        flags = flags & ~np.isnan(values)
        loose += int(np.count_nonzero(flags))
        shown += int(np.count_nonzero(~np.isnan(values)))
        if flags.any() and out.stat.how not in kinds:
            kinds.append(out.stat.how)
    if not loose:
        return []
    return [
        f"{loose} of {shown} released {'/'.join(kinds)} values of {query} are dominated by "
        "their error (a 95% interval over half the range they can take, or a noisy count too "
        "small for them): they are mostly noise."
    ]


def _compute(planned: PlannedRelease[T]) -> tuple[Release, T, str]:
    """Exact aggregates, noise, key selection and post-processing: every data-touching step."""
    target = planned.target
    source = target.session.noise_source  # handed down: parts never reach for the session
    measures = tuple(part.measure for part in planned.parts.values())
    exact = target.engine.aggregate(target.data, measures, planned.grouping, planned.bounding)
    aggregates = exact.values if planned.derive is None else planned.derive(exact.values)
    noisy: dict[MeasurementKey, Aggregate] = {}
    for (key, part), values in zip(planned.parts.items(), aggregates, strict=True):
        # A staged measurement (the tree of synthetic data) reads what was measured before it.
        after = getattr(part, "release_after", None)
        if after is None:
            noisy[key] = part.release(values, source)
        else:
            noisy[key] = after(values, source, noisy)
    keys, release = exact.keys, planned.release
    if planned.selection is not None:
        assert keys is not None
        chooser, threshold = noisy[planned.selection.key], planned.selection.threshold
        passed = np.asarray(chooser != 0 if threshold is None else chooser >= threshold)
        chosen = _sorted_selection(keys, passed)
        keys = keys[chosen]
        if isinstance(keys, pd.MultiIndex):  # levels must not keep unreleased data values
            keys = keys.remove_unused_levels()
        noisy = {key: values[chosen] for key, values in noisy.items()}
        release = dataclasses.replace(release, groups=len(keys))
    return release, planned.finish(keys, noisy, source), _noise_dominated(planned, noisy)


def _sorted_selection(keys: pd.Index, keep: np.ndarray) -> np.ndarray:
    """Positions of the kept keys in a data-independent order (sorted by key)."""
    positions = np.flatnonzero(keep)
    chosen = keys[positions]
    try:
        order = np.asarray(chosen.argsort())
    except (TypeError, ValueError):  # mixed types, or periods of mixed frequencies: by text
        order = np.argsort(np.asarray([repr(k) for k in chosen]), kind="stable")
    return positions[order]
