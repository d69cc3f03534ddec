"""Racing threads can never overspend: check and charge happen under one lock.

32 threads released at once by a barrier each try to spend ε = 0.1 of a budget of 1.0.
Exactly ten must succeed, the other 22 must be refused, and the spent ε must be exactly 1,
every time, whichever query path and whichever derived frame each thread uses.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import pandas as pd
import pytest

from pandas_dp import BudgetExceededError

THREADS = 32

PATHS: list[Callable[[pd.DataFrame], Any]] = [
    lambda p: p.dp.count(epsilon=0.1),
    lambda p: p["income"].dp.sum(bounds=(0, 10_000), epsilon=0.1),
    lambda p: p[p["age"] > 30].dp.mean("age", bounds=(0, 100), epsilon=0.1),
    lambda p: p.copy()["age"].dp.count(epsilon=0.1),
]


def _race(priv: pd.DataFrame, paths: list[Callable]) -> tuple[list[Any], list[BaseException]]:
    barrier = threading.Barrier(THREADS)
    lock = threading.Lock()
    results: list[Any] = []
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        query = paths[i % len(paths)]
        barrier.wait()
        try:
            result = query(priv)
        except BaseException as exc:
            with lock:
                errors.append(exc)
        else:
            with lock:
                results.append(result)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results, errors


@pytest.mark.parametrize("paths", [PATHS[:1], PATHS], ids=["count only", "mixed paths"])
@pytest.mark.parametrize("attempt", range(4))
def test_racing_threads_spend_exactly_the_budget(
    census: pd.DataFrame,
    protect_seeded: Callable[..., Any],
    noise: Callable,
    paths: list[Callable],
    attempt: int,
) -> None:
    priv = protect_seeded(census, epsilon=1.0, seed=attempt)
    with noise(priv):
        results, errors = _race(priv, paths)
    assert len(results) == 10
    assert len(errors) == 22
    assert all(type(e) is BudgetExceededError for e in errors), errors
    session = priv.dp.session
    assert session.spent.epsilon == 1
    assert session.remaining.epsilon == 0
    assert len(session.ledger) == 10
    assert sorted(session.ledger["sequence"]) == list(range(1, 11))


def test_threads_on_separate_sessions_do_not_interfere(
    census: pd.DataFrame, protect_seeded: Callable[..., Any]
) -> None:
    first = protect_seeded(census, epsilon=1.0, seed=1)
    second = protect_seeded(census, epsilon=0.5, seed=2)
    barrier = threading.Barrier(THREADS)

    def worker(priv: pd.DataFrame) -> None:
        barrier.wait()
        with contextlib.suppress(BudgetExceededError):
            priv.dp.count(epsilon=0.1)

    threads = [
        threading.Thread(target=worker, args=(first if i % 2 else second,)) for i in range(THREADS)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert first.dp.session.spent.epsilon == 1
    assert second.dp.session.spent.epsilon == Fraction(1, 2)
