"""Private joins of two protected tables on a key (row-level privacy), as Tumult's
``join_private``: each side truncated to ``max_rows_per_key = m`` rows per key, stability
``2·m`` (two tables) or ``4·m`` (a table joined with itself), issue 40."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from pandas_dp import BudgetExceededError, DPValueError
from pandas_dp.api.session import Session

M = 2
BOUND = 5  # sums over x in [-5, 5]: a row's sensitivity is 5


def tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    left = pd.DataFrame({"k": [1, 1, 1, 2, 2, 3, 4], "x": [5, -5, 3, 2, -1, 4, 1]})
    right = pd.DataFrame({"k": [1, 1, 1, 2, 3, 3, 5], "y": ["a", "b", "a", "b", "a", "a", "b"]})
    return left, right


def protected(left, right, epsilon: float = 100.0, **kwargs):
    priv = left.dp.protect(epsilon=epsilon, name="left", **kwargs)
    other = right.dp.protect(session=priv.dp.session, name="right")
    return priv, other


@contextmanager
def fixed_priorities(monkeypatch, *words: np.ndarray) -> Iterator[None]:
    """Each call of ``session.priorities(n)`` reads the next array's first ``n`` words: a row
    keeps its priority whatever rows follow it (the coupling of the privacy argument)."""
    queue = iter(words)
    with monkeypatch.context() as patch:
        patch.setattr(Session, "priorities", lambda self, n: next(queue)[:n].copy())
        yield


def releases(left, right, noise, monkeypatch, words, self_join: bool = False):
    """The pre-noise count and sum of x after the private join (fixed priorities)."""
    priv, other = protected(left, right)
    with fixed_priorities(monkeypatch, *words):
        joined = priv.dp.merge(priv if self_join else other, on="k", max_rows_per_key=M)
    with noise(joined) as calls:
        count = joined.dp.count(epsilon=1.0)
        column = "x_x" if self_join else "x"
        total = joined.dp.sum(column, bounds=(-BOUND, BOUND), epsilon=1.0)
    return count, total, joined, calls


def test_equals_pandas_merge_where_no_key_exceeds_m(noise) -> None:
    left = pd.DataFrame({"k": [1, 2, 2, 3, 7], "x": [1, 2, 3, 4, 5]})
    right = pd.DataFrame({"k": [2, 2, 3, 4], "x": [9, 8, 7, 6], "z": [0.5, 1.5, 2.5, 3.5]})
    priv, other = protected(left, right)
    joined = priv.dp.merge(other, on="k", max_rows_per_key=M)
    expected = left.merge(right, on="k")
    pd.testing.assert_frame_equal(pd.DataFrame(joined), expected)
    with noise(joined):
        assert joined.dp.count(epsilon=1.0) == len(expected)
        assert joined.dp.sum("x_x", bounds=(0, 10), epsilon=1.0) == expected["x_x"].sum()
        by_k = joined.dp.groupby("k", keys=[2, 3]).count(epsilon=1.0)
    assert list(by_k) == [4, 1]
    assert joined.dp.session.stability == 2 * M


def test_truncation_keeps_at_most_m_rows_per_key_and_is_reproducible(protect_seeded) -> None:
    left = pd.DataFrame({"k": [1] * 5 + [2, 2.0], "x": range(7)})
    right = pd.DataFrame({"k": [1, 1.0, True, 2], "y": range(4)})  # 1, 1.0 and True: key 1
    results = []
    for _ in range(2):
        priv = protect_seeded(left, seed=11, epsilon=1.0)
        other = right.dp.protect(session=priv.dp.session)
        results.append(priv.dp.merge(other, on="k", max_rows_per_key=M))
    first, second = results
    pd.testing.assert_frame_equal(first, second)  # the seeded priorities decide the same rows
    assert first.groupby("k").size().to_dict() == {1: M * M, 2: 2}
    assert first["x"].isin(range(5)).sum() == M * M  # 2 of the 5 rows of key 1, each twice


def test_scale_is_the_stability_times_the_base_scale_and_the_note_says_why(
    noise, monkeypatch
) -> None:
    left, right = tables()
    words = [np.arange(10, dtype=np.uint64)] * 2
    _, _, joined, calls = releases(left, right, noise, monkeypatch, words)
    count_scale = calls[0].mechanism.scale
    assert count_scale == 2 * M  # 1/ε for one row, times the stability 2·m
    base = left.dp.protect(epsilon=100.0)  # the same sum on a protected table: stability 1
    # the sum's noise in its own units (scale on the lattice · the lattice step)
    assert sum_scale(joined, "x", noise) == 2 * M * sum_scale(base, "x", noise)
    assert sum_scale(base, "x", noise) == BOUND  # Δ/ε = 5
    note = joined.dp.session.ledger["note"].iloc[-2]
    assert "tables 'left', 'right'; privacy unit: one row" in note
    assert (
        f"stability {2 * M} (private join on 'k': ≤ {M} rows per key on each side): one row "
        f"moves ≤ {2 * M} rows"
    ) in note
    # a table joined with itself: one row is on both sides, stability 2·m·(1 + 1)
    _, _, itself, calls = releases(left, right, noise, monkeypatch, words, self_join=True)
    assert itself.dp.session.stability == 4 * M
    assert calls[0].mechanism.scale == 4 * M


def sum_scale(frame, column, noise) -> Fraction:
    """The Laplace scale of a sum of ``column`` at ε = 1, in the column's units."""
    frame = frame.assign(**{column: frame[column].astype("float64")})  # not rounded to int
    with noise(frame, value=0) as calls:
        exact = frame.dp.sum(column, bounds=(-BOUND, BOUND), epsilon=1.0)
    with noise(frame, value=1):
        step = frame.dp.sum(column, bounds=(-BOUND, BOUND), epsilon=1.0) - exact
    return calls[0].mechanism.scale * Fraction(step)


#: Keys an adversary may add: missing, and the one key 1 spelt four ways.
ADDED_KEYS = [np.nan, 1, 1.0, True, 2, 9]


def worst_moves(left, right, noise, monkeypatch, self_join: bool = False):
    """The largest pre-noise moves of count and sum over every neighbour, by brute force."""
    moves = []
    for seed in range(4):
        rng = np.random.default_rng(seed)
        words = [rng.integers(1, 2**63, size=20, dtype=np.uint64) for _ in range(2)]
        sides = ("left",) if self_join else ("left", "right")
        for side in sides:
            frame = left if side == "left" else right
            for i in range(len(frame)):  # remove row i: move it last, then drop it
                moved = pd.concat([frame.drop(index=i), frame.loc[[i]]], ignore_index=True)
                pairs = [(moved, moved.iloc[:-1])]
                moves.append(neighbour_moves(pairs, side, left, right, noise, monkeypatch, words,
                                             self_join))  # fmt: skip
            for key, word in itertools.product(ADDED_KEYS, (0, 2**64 - 1)):
                row = pd.DataFrame({"k": [key], **_values(side)})
                added = pd.concat([frame, row], ignore_index=True)
                fitted = [w.copy() for w in words]
                for w in fitted:
                    w[len(frame)] = word  # the added row's priority: first or last in line
                moves.append(neighbour_moves([(frame, added)], side, left, right, noise,
                                             monkeypatch, fitted, self_join))  # fmt: skip
    return np.max(np.array(moves), axis=0)


def _values(side: str) -> dict[str, list[object]]:
    return {"x": [BOUND]} if side == "left" else {"y": ["a"]}


def neighbour_moves(pairs, side, left, right, noise, monkeypatch, words, self_join):
    ((d, d2),) = pairs
    tables_d = (d, right) if side == "left" else (left, d)
    tables_d2 = (d2, right) if side == "left" else (left, d2)
    count, total, joined, _ = releases(*tables_d, noise, monkeypatch, words, self_join)
    count2, total2, _, _ = releases(*tables_d2, noise, monkeypatch, words, self_join)
    stability = joined.dp.session.stability
    assert abs(count - count2) <= stability * 1
    assert abs(total - total2) <= stability * BOUND
    return abs(count - count2), abs(total - total2)


@pytest.mark.filterwarnings("ignore::pandas_dp.PrivacyLeakWarning")
def test_brute_force_stability_of_the_private_join(noise, monkeypatch) -> None:
    left, right = tables()
    count_move, sum_move = worst_moves(left, right, noise, monkeypatch)
    # without the stability (one row, one joined row) the release would be miscalibrated
    assert count_move > 1
    assert sum_move > BOUND


@pytest.mark.filterwarnings("ignore::pandas_dp.PrivacyLeakWarning")
def test_brute_force_stability_of_a_self_join(noise, monkeypatch) -> None:
    left, _ = tables()
    count_move, sum_move = worst_moves(left, left, noise, monkeypatch, self_join=True)
    assert count_move > 1
    assert sum_move > BOUND


def test_one_budget_and_refusal_by_the_budget(noise, charges_nothing) -> None:
    left, right = tables()
    priv, other = protected(left, right, epsilon=2.0)
    joined = priv.dp.merge(other, on="k", max_rows_per_key=M)
    with noise(priv):
        priv.dp.count(epsilon=0.5)
        other.dp.count(epsilon=0.5)
        joined.dp.count(epsilon=0.5)
    assert priv.dp.session.remaining.epsilon == Fraction(1, 2)
    with charges_nothing(priv), pytest.raises(BudgetExceededError):
        joined.dp.count(epsilon=1.0)


def test_refusals_before_any_charge(charges_nothing) -> None:
    left, right = tables()
    priv, other = protected(left, right)
    stranger = right.dp.protect(epsilon=1.0)
    with charges_nothing(priv):
        with pytest.raises(DPValueError, match="needs max_rows_per_key=m"):
            priv.dp.merge(other, on="k")
        with pytest.raises(DPValueError, match="different sessions"):
            priv.dp.merge(stranger, on="k", max_rows_per_key=M)
        for how in ("left", "right", "outer"):
            with pytest.raises(DPValueError, match="refused for two protected frames"):
                priv.dp.merge(other, on="k", how=how, max_rows_per_key=M)
        with pytest.raises(DPValueError, match="max_rows_per_key"):
            priv.dp.merge(other, on="k", max_rows_per_key=0)
        with pytest.raises(DPValueError, match="right side is a public table"):
            priv.dp.merge(right, on="k", max_rows_per_key=M)
    # under a unit a join on another key would make rows of two people
    people = pd.DataFrame({"pid": [1, 2], "k": [1, 1]}).dp.protect(
        epsilon=1.0, privacy_unit="pid", max_rows_per_unit=1
    )
    visits = pd.DataFrame({"pid": [1, 2], "k": [1, 1]}).dp.protect(
        session=people.dp.session, privacy_unit="pid", max_rows_per_unit=1
    )
    with charges_nothing(people), pytest.raises(DPValueError, match="must be on it"):
        people.dp.merge(visits, on="k", max_rows_per_key=M)
