"""Stratified samples of the neighbour grids, and the refusals a grid expects (issue 39).

The differential grids (a release on a frame ``D`` and on its neighbour ``D'``, for every
release, adversarial value and dtype) hold thousands of cases. By default the suite runs a
seeded, stratified sample of each: every stratum (release x dtype, and route where a grid has
routes) keeps ``round(FRACTION * size)`` cases and at least one, chosen by a hash of the
grid's seed, the stratum and the case's id, so the sample depends on neither the order of
the cases nor the process that collects them (``pytest -n``). The other cases are marked
``full_grid`` and deselected unless ``--full-grid`` is given (``tests/conftest.py``);
``--full-grid -m full_grid`` runs only them.

A case whose neighbours are both refused compares nothing, so each grid states why: a
``Refusal`` rule (a predicate on the case, the exception type, a pattern of its message, the
reason) is expected for exactly the cases it applies to, and ``assert_refusal`` fails a
double refusal no rule states, a refusal other than the rule's, and a case a rule expects
refused that releases.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest

SEED = "pandas-dp neighbour grids, issue 39"
FRACTION = 0.15
FULL_GRID = pytest.mark.full_grid

T = TypeVar("T")


# --- the sample -------------------------------------------------------------------------------


def _score(stratum: Hashable, name: str) -> int:
    digest = hashlib.sha256(f"{SEED}\0{stratum!r}\0{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def sample(
    cases: Iterable[T],
    *,
    name: Callable[[T], str],
    stratum: Callable[[T], Hashable],
    refused: Callable[[T], bool] = lambda case: False,
    fraction: float = FRACTION,
) -> set[str]:
    """The names of the cases the default run keeps.

    Per stratum: the ``max(1, round(fraction * size))`` cases of lowest score, and, when
    those are all expected refusals, the lowest-scored case that releases (if any does).
    """
    strata: dict[Hashable, list[T]] = defaultdict(list)
    for case in cases:
        strata[stratum(case)].append(case)
    kept: set[str] = set()
    for key, members in strata.items():
        ranked = sorted(members, key=lambda case: (_score(key, name(case)), name(case)))
        chosen = ranked[: max(1, math.floor(fraction * len(ranked) + 0.5))]
        if all(refused(case) for case in chosen):
            chosen += [case for case in ranked if not refused(case)][:1]
        kept.update(name(case) for case in chosen)
    return kept


def params(
    cases: Sequence[T],
    *,
    name: Callable[[T], str],
    stratum: Callable[[T], Hashable],
    refused: Callable[[T], bool] = lambda case: False,
    values: Callable[[T], tuple[Any, ...]] = lambda case: (case,),
) -> list[Any]:
    """The cases as ``pytest.param``s, in their order, those outside the sample marked."""
    names = [name(case) for case in cases]
    assert len(set(names)) == len(names), "case names must be unique"
    kept = sample(cases, name=name, stratum=stratum, refused=refused)
    return [
        pytest.param(*values(case), id=name(case), marks=() if name(case) in kept else FULL_GRID)
        for case in cases
    ]


# --- expected refusals ------------------------------------------------------------------------


@dataclass(frozen=True)
class Refusal:
    """Both neighbours of the cases ``applies`` selects are refused: ``error``, ``match``."""

    applies: Callable[[Any], bool]
    error: str  #: the exception's type name
    match: str  #: a regular expression searched in its message
    reason: str
    #: The release never runs on these cases' strata (e.g. on that dtype): the cases check
    #: only that both neighbours are refused alike, and every case of the stratum is refused.
    never_runs: bool = False


def expected(rules: Sequence[Refusal], case: Any) -> Refusal | None:
    """The one rule that applies to ``case``, or None (it must release)."""
    found = [rule for rule in rules if rule.applies(case)]
    assert len(found) <= 1, [rule.reason for rule in found]
    return found[0] if found else None


def assert_refusal(
    name: str,
    rule: Refusal | None,
    before: tuple[str | None, str],
    after: tuple[str | None, str],
) -> bool:
    """Whether both neighbours were refused (as ``rule`` expects); fails where not expected.

    ``before`` and ``after``: (exception type name or None, message). The caller has
    compared the types already.
    """
    (error, text), (_, text_after) = before, after
    if error is None:
        assert rule is None, f"{name}: released, but expected refused: {rule.reason}"
        return False
    assert rule is not None, (
        f"{name}: both neighbours refused with {error}: {text!r}, and no rule states why"
    )
    for message in (text, text_after):
        matches = error == rule.error and re.search(rule.match, message) is not None
        assert matches, (
            f"{name}: refused with {error}: {message!r}, but the rule expects "
            f"{rule.error} matching {rule.match!r} ({rule.reason})"
        )
    return True


def check_rules(
    cases: Sequence[T],
    rules: Sequence[Refusal],
    *,
    stratum: Callable[[T], Hashable],
    release: Callable[[T], str],
) -> None:
    """The rules are live and explain every release and stratum that never releases.

    Every rule applies to some case; a stratum, or a release, whose cases are all expected
    refused is refused by ``never_runs`` rules only; and a ``never_runs`` rule refuses every
    case of each stratum it touches.
    """
    rule_of = {id(case): expected(rules, case) for case in cases}
    for rule in rules:
        assert any(rule_of[id(case)] is rule for case in cases), f"no case for {rule.reason}"
    groups: dict[Hashable, list[T]] = defaultdict(list)
    for case in cases:
        groups["stratum", stratum(case)].append(case)
        groups["release", release(case)].append(case)
    for key, members in groups.items():
        found = [rule_of[id(case)] for case in members]
        touched = {id(rule) for rule in found if rule is not None and rule.never_runs}
        if all(rule is not None for rule in found):  # nothing in it releases
            assert all(rule is not None and rule.never_runs for rule in found), key
        if key[0] == "stratum" and touched:
            assert all(rule is not None and id(rule) in touched for rule in found), key
