"""The accountant on its own: exact composition, δ handling, atomic charges, no way back.

These tests build releases by hand and call the accountant directly, so they cover cases
the current queries never produce (δ > 0, many measurements) and races without pandas.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import pandas as pd
import pytest

from pandas_dp import Budget, BudgetExceededError, DPError, DPValueError
from pandas_dp.accounting import Accountant, BasicComposition, Measurement, Release


def _release(epsilon: Any, delta: Any = 0, *, parts: int = 1) -> Release:
    eps, dlt = Fraction(str(epsilon)), Fraction(str(delta))
    measurement = Measurement("x", "test", eps / parts, 1, Fraction(1), delta=dlt / parts)
    return Release("custom", ("x",), (measurement,) * parts)


def _snapshot(accountant: Accountant) -> tuple:
    return accountant.spent, accountant.entries


@pytest.mark.parametrize("delta", ["1e-6", "0.5", "1e-300"])
def test_pure_session_refuses_a_release_that_needs_delta(delta: str) -> None:
    accountant = Accountant(Budget.of(1.0))
    release = _release(0.1, delta)
    for attempt in (accountant.check, accountant.charge):
        with pytest.raises(DPError, match="δ"):
            attempt(release)
    assert accountant.spent == Budget(Fraction(0))
    assert accountant.entries == ()


def test_pure_session_through_a_protected_frame_refuses_delta(
    census: pd.DataFrame, protect_seeded: Callable[..., Any]
) -> None:
    priv = protect_seeded(census, epsilon=1.0)
    accountant = priv.dp.session.accountant
    with pytest.raises(DPValueError, match="delta"):
        accountant.charge(_release(0.1, 1e-9))
    assert len(priv.dp.session.ledger) == 0
    assert priv.dp.session.spent.epsilon == 0


def test_approximate_session_accumulates_delta_exactly() -> None:
    accountant = Accountant(Budget.of(1.0, 3e-6))
    for _ in range(3):
        accountant.charge(_release(0.1, 1e-6))
    assert accountant.spent == Budget(Fraction(3, 10), Fraction(3, 10**6))
    before = _snapshot(accountant)
    with pytest.raises(BudgetExceededError):
        accountant.charge(_release(0.1, 1e-12))
    assert _snapshot(accountant) == before
    accountant.charge(_release(0.7))  # pure-ε releases still fit
    assert accountant.remaining == Budget(Fraction(0), Fraction(0))


@pytest.mark.parametrize(
    ("total", "spends", "fits"),
    [
        ("1.0", ["0.1"] * 10, True),
        ("1.0", ["0.1"] * 11, False),
        ("0.3", ["0.1", "0.2"], True),  # 0.1 + 0.2 > 0.3 in floating point
        ("1", ["0.7", "0.2", "0.1"], True),
        ("1", ["1e-9"] * 3 + ["0.999999997"], True),
        ("1", ["1e-9"] * 4 + ["0.999999997"], False),
    ],
)
def test_composition_is_exact(total: str, spends: list[str], fits: bool) -> None:
    accountant = Accountant(Budget.of(Fraction(total)))
    *head, last = [_release(s) for s in spends]
    for release in head:
        accountant.charge(release)
    if fits:
        accountant.charge(last)
        assert accountant.spent.epsilon == sum(Fraction(s) for s in spends)
    else:
        with pytest.raises(BudgetExceededError):
            accountant.charge(last)
        assert len(accountant.entries) == len(head)


def test_release_cost_adds_its_measurements() -> None:
    release = _release(0.3, 1e-6, parts=3)
    assert release.cost == Budget(Fraction(3, 10), Fraction(1, 10**6))
    accountant = Accountant(Budget.of(0.3, 1e-6))
    accountant.charge(release)
    assert accountant.remaining == Budget(Fraction(0))


class _SlowComposition(BasicComposition):
    """Basic composition that yields the GIL mid-update, to widen any unlocked window."""

    def add(self, state: object, release: Release) -> Budget:
        time.sleep(0)
        return super().add(state, release)


def test_concurrent_charges_never_overspend() -> None:
    accountant = Accountant(Budget.of(1.0), _SlowComposition())
    threads_n = 64
    barrier = threading.Barrier(threads_n)
    outcomes: list[str] = []
    lock = threading.Lock()

    def worker() -> None:
        barrier.wait()
        try:
            accountant.charge(_release(0.03))
            outcome = "charged"
        except BudgetExceededError:
            outcome = "refused"
        with lock:
            outcomes.append(outcome)

    threads = [threading.Thread(target=worker) for _ in range(threads_n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert outcomes.count("charged") == 33  # 33 * 0.03 = 0.99 <= 1 < 1.02
    assert outcomes.count("refused") == 31
    assert accountant.spent.epsilon == Fraction(99, 100)
    assert [e.sequence for e in accountant.entries] == list(range(1, 34))


FORBIDDEN = ("reset", "refund", "clear", "undo", "rollback", "restore", "remove", "pop")


@pytest.mark.parametrize("kind", ["session", "accountant"])
def test_no_public_reset_or_refund(
    census: pd.DataFrame, protect_seeded: Callable[..., Any], kind: str
) -> None:
    session = protect_seeded(census, epsilon=1.0).dp.session
    target = session if kind == "session" else session.accountant
    public = [name for name in dir(target) if not name.startswith("_")]
    assert not [n for n in public if any(word in n.lower() for word in FORBIDDEN)]


def test_spent_remaining_and_total_are_read_only(
    census: pd.DataFrame, protect_seeded: Callable[..., Any]
) -> None:
    priv = protect_seeded(census, epsilon=1.0)
    session = priv.dp.session
    priv.dp.count(epsilon=0.5)
    for name in ("spent", "remaining", "total", "releases", "ledger"):
        with pytest.raises(AttributeError):
            setattr(session, name, None)
    for name in ("spent", "remaining"):
        with pytest.raises(AttributeError):
            setattr(session.accountant, name, Budget.of(0.1))


def test_records_are_immutable_and_the_ledger_is_a_copy(
    census: pd.DataFrame, protect_seeded: Callable[..., Any]
) -> None:
    priv = protect_seeded(census, epsilon=1.0)
    priv.dp.count(epsilon=0.5)
    session = priv.dp.session
    release = session.releases[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        release.measurements[0].epsilon = Fraction(0)  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        release.query = "nothing"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        session.spent.epsilon = Fraction(0)  # type: ignore[misc]
    assert isinstance(session.releases, tuple)
    assert isinstance(session.accountant.entries, tuple)
    ledger = session.ledger
    ledger.loc[0, "epsilon"] = -1.0
    ledger.loc[1] = ledger.loc[0]
    assert len(session.ledger) == 1
    assert session.ledger["epsilon"].tolist() == [0.5]
    assert session.spent.epsilon == Fraction(1, 2)


@pytest.mark.parametrize(
    "build",
    [
        lambda: Measurement("x", "t", Fraction(-1), 1, Fraction(1)),
        lambda: Measurement("x", "t", Fraction(1), 1, Fraction(0)),
        lambda: Measurement("x", "t", Fraction(1), -1, Fraction(1)),
        lambda: Measurement("x", "t", Fraction(1), 1, Fraction(1), delta=Fraction(1)),
        lambda: Release("q", (), ()),
        lambda: Release("q", (), (Measurement("x", "t", Fraction(1), 1, Fraction(1)),), groups=-1),
    ],
    ids=["negative ε", "zero scale", "negative sensitivity", "δ = 1", "empty", "negative groups"],
)
def test_invalid_records_are_rejected(build: Callable[[], Any]) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - the record type names the problem
        build()
