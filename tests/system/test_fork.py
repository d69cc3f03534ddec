"""A forked child inherits a copy of the accountant; it must refuse to spend it.

The child reports through its exit code only (0: refused with NotProtectedError, 1: released
something, 2: some other exception), then leaves with ``os._exit`` so that no pytest
machinery runs twice. The parent's budget and ledger must be unchanged.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import pandas as pd
import pytest

from pandas_dp import NotProtectedError

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX-only")

CHILD_QUERIES = {
    "count": lambda p: p.dp.count(epsilon=0.1),
    "sum": lambda p: p.dp.sum("income", bounds=(0, 1000), epsilon=0.1),
    "series mean": lambda p: p["age"].dp.mean(bounds=(0, 100), epsilon=0.1),
    "derived count": lambda p: p[p["age"] > 40].dp.count(epsilon=0.1),
}


def _exit_code_of_child(query: Callable[[], Any]) -> int:
    with warnings.catch_warnings():
        # Python >= 3.12 warns about fork() in a process that has threads (e.g. pyarrow's).
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        code = 2
        try:
            query()
            code = 1
        except NotProtectedError:
            code = 0
        except BaseException:
            code = 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


@pytest.mark.parametrize("query", CHILD_QUERIES.values(), ids=CHILD_QUERIES.keys())
def test_forked_child_cannot_spend_the_parents_budget(
    census: pd.DataFrame, protect_seeded: Callable[..., Any], query: Callable
) -> None:
    priv = protect_seeded(census, epsilon=1.0)
    priv.dp.count(epsilon=0.25)  # some history before the fork
    assert _exit_code_of_child(lambda: query(priv)) == 0
    session = priv.dp.session
    assert session.spent.epsilon == Fraction(1, 4)
    assert len(session.ledger) == 1
    query(priv)  # the parent itself can still spend
    assert len(session.ledger) == 2
