"""Brute force: a one-to-many public join moves later releases by at most its stability.

Row-level privacy, a public table in which a key matches up to ``k = 3`` rows. For every row
of a small frame (removed) and a catalogue of adversarial rows (added: an unmatched key, a
missing key, ``True``/``1.0``/``"1"`` for key 1, a key matching ``k`` rows), the pre-noise
answers of a count, a clipped sum and a grouped count on the joined frame move by at most the
stability times the release's sensitivity (1 row; ``max(|L|, |U|)``; L1 over the groups),
the charged sensitivity is that product, and the joined frame's schema (columns, dtypes,
index type, stability) is the same for both neighbours: it comes from the public table only.
"""

from __future__ import annotations

import warnings
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

from pandas_dp.testing import capture_noise

K = 3
BOUNDS = (0.0, 10.0)
PUBLIC = pd.DataFrame({"code": [1, 2, 2, 3, 3, 3], "day": ["Mo", "Tu", "We", "Mo", "We", "Fr"]})
DAYS = ["Mo", "Tu", "We", "Fr"]


def frame() -> pd.DataFrame:
    i = np.arange(12)
    return pd.DataFrame(
        {"code": pd.array([[1, 2, 3, 4][j % 4] for j in i], dtype=object), "x": i * 1.5}
    )


ADDED: dict[str, Any] = {
    "unmatched": 9,
    "missing": None,
    "True": True,
    "1.0": 1.0,
    "'1'": "1",
    "three matches": 3,
}


def answers(data: pd.DataFrame) -> tuple[dict[str, Any], list[Any], Any]:
    """Pre-noise count, sum and grouped count on the joined frame; measurements; schema."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        priv = data.dp.protect(epsilon=100.0)
        joined = priv.dp.merge(PUBLIC, on="code", how="left")
        with capture_noise(joined, 0):
            out = {
                "count": joined.dp.count(epsilon=1.0),
                "sum": joined.dp.sum("x", bounds=BOUNDS, epsilon=1.0),
                "groups": joined.dp.groupby("day", keys=DAYS).count(epsilon=1.0),
            }
    measured = [r.measurements[0] for r in priv.dp.session.releases]
    schema = (
        list(joined.columns),
        [str(t) for t in joined.dtypes],
        type(joined.index).__name__,
        joined.dp.session.stability,
    )
    return out, measured, schema


def neighbours() -> list[tuple[str, pd.DataFrame]]:
    base = frame()
    cases = [(f"without row {r}", base.drop(index=r)) for r in base.index]
    for name, key in ADDED.items():
        row = pd.DataFrame({"code": pd.array([key], dtype=object), "x": [10.0]})
        cases.append((f"plus {name}", pd.concat([base, row], ignore_index=True)))
    return cases


@pytest.mark.parametrize(("name", "other"), neighbours(), ids=[n for n, _ in neighbours()])
def test_a_neighbour_moves_each_release_by_at_most_stability_times_sensitivity(
    name: str, other: pd.DataFrame
) -> None:
    before, measured, schema = answers(frame())
    after, measured_after, schema_after = answers(other)
    assert schema == schema_after  # from the public table alone
    assert measured == measured_after  # the noise does not depend on the data
    count, total, groups = measured
    assert Fraction(count.sensitivity) * 2**count.exponent == K  # k rows of one
    assert Fraction(total.sensitivity) * 2**total.exponent == K * max(map(abs, BOUNDS))
    assert Fraction(groups.sensitivity) * 2**groups.exponent == K
    assert abs(before["count"] - after["count"]) <= K
    assert abs(before["sum"] - after["sum"]) <= K * max(map(abs, BOUNDS)) + 1e-9
    assert float((before["groups"] - after["groups"]).abs().sum()) <= K
    if name == "plus three matches":  # the bound is reached: the stability is not loose
        assert after["count"] - before["count"] == K
