"""The neighbour grids' sampler and refusal rules (``grid.py``) do what they promise."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from .grid import FULL_GRID, Refusal, assert_refusal, check_rules, params, sample

#: A grid of 3 releases x 4 dtypes, strata of 1, 6 and 20 cases.
SIZES = {"small": 1, "medium": 6, "large": 20}
CASES = [
    (release, dtype, f"{release}-{dtype}-{i}")
    for release, size in SIZES.items()
    for dtype in ("a", "b", "c", "d")
    for i in range(size)
]


def _name(case: tuple[str, str, str]) -> str:
    return case[2]


def _stratum(case: tuple[str, str, str]) -> tuple[str, str]:
    return case[0], case[1]


def test_the_sample_keeps_a_share_of_every_stratum_and_never_drops_one() -> None:
    kept = sample(CASES, name=_name, stratum=_stratum)
    per_stratum = Counter(_stratum(c) for c in CASES if c[2] in kept)
    assert set(per_stratum) == {_stratum(c) for c in CASES}
    for (release, _), count in per_stratum.items():
        assert count == {"small": 1, "medium": 1, "large": 3}[release]  # round(15%), >= 1


def test_the_sample_is_fixed_by_the_seed_not_by_order_or_process() -> None:
    kept = sample(CASES, name=_name, stratum=_stratum)
    shuffled = CASES.copy()
    random.Random(1).shuffle(shuffled)
    assert sample(shuffled, name=_name, stratum=_stratum) == kept
    # sha256 of the names, not hash(): the same in every process (PYTHONHASHSEED, xdist)
    assert sorted(c for c in kept if c.startswith("large-a")) == [
        "large-a-11",
        "large-a-12",
        "large-a-7",
    ]


def test_a_stratum_of_refusals_still_samples_a_case_that_releases() -> None:
    grid = [("r", "a", f"r-a-{i}") for i in range(6)]
    kept = sample(grid, name=_name, stratum=_stratum)
    refused = sample(grid, name=_name, stratum=_stratum, refused=lambda c: c[2] in kept)
    assert kept < refused
    assert len(refused) == 2
    assert sample(grid, name=_name, stratum=_stratum, refused=lambda c: True) == kept


def test_cases_outside_the_sample_are_marked_full_grid() -> None:
    kept = sample(CASES, name=_name, stratum=_stratum)
    marked = params(CASES, name=_name, stratum=_stratum)
    assert [p.id for p in marked] == [c[2] for c in CASES]  # in order, one each
    assert [p.values for p in marked] == [(c,) for c in CASES]
    assert {p.id for p in marked if not p.marks} == kept
    assert all([m.name for m in p.marks] == [FULL_GRID.name] for p in marked if p.id not in kept)


RULE = Refusal(lambda c: c[1] == "b", "DPTypeError", r"dtype object", "b is refused")


def test_a_double_refusal_must_be_the_one_a_rule_states() -> None:
    refused = ("DPTypeError", "column 'x' has dtype object")
    assert assert_refusal("case", RULE, refused, refused)
    assert not assert_refusal("case", None, (None, ""), (None, ""))
    with pytest.raises(AssertionError, match="no rule states why"):
        assert_refusal("case", None, refused, refused)
    with pytest.raises(AssertionError, match="expected refused"):
        assert_refusal("case", RULE, (None, ""), (None, ""))
    with pytest.raises(AssertionError):
        assert_refusal("case", RULE, ("DPValueError", refused[1]), ("DPValueError", refused[1]))
    with pytest.raises(AssertionError):
        assert_refusal("case", RULE, refused, ("DPTypeError", "another refusal"))


def test_rules_must_be_live_and_explain_what_never_runs() -> None:
    grid = [("r", "a", "r-a"), ("r", "b", "r-b"), ("s", "a", "s-a")]
    b = Refusal(lambda c: c[1] == "b", "E", "", "b never runs", never_runs=True)

    def check(rules: list[Refusal], cases: list[tuple[str, str, str]] = grid) -> None:
        check_rules(cases, rules, stratum=_stratum, release=lambda c: c[0])

    check([b])
    with pytest.raises(AssertionError, match="no case"):
        check([b, Refusal(lambda c: c[1] == "z", "E", "", "no such dtype")])
    with pytest.raises(AssertionError):  # a whole stratum refused, but no rule says so
        check([Refusal(b.applies, "E", "", "b refused")])
    with pytest.raises(AssertionError):  # a release refused on every case, no rule says so
        check([b, Refusal(lambda c: c[0] == "s", "E", "", "s refused")])
    check([b, Refusal(lambda c: c[0] == "s", "E", "", "s never runs", never_runs=True)])
    more = [*grid, ("r", "a", "r-a2")]
    check([b, Refusal(lambda c: c[2] == "r-a", "E", "", "one case")], more)
    with pytest.raises(AssertionError):  # "never runs", yet its stratum has a case that runs
        check([b, Refusal(lambda c: c[2] == "r-a", "E", "", "one", never_runs=True)], more)
