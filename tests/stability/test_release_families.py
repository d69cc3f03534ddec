"""Every release family reads a derived frame's stability, and multiplies its noise by it.

A frame joined to a public table in which each key repeats ``k`` times holds each protected
row ``k`` times: under row-level privacy its stability is ``k``
(:mod:`pandas_dp.transformations.stability`). Every release from it must calibrate to ``k``
rows per protected row, against the same release on the frame joined to a table with unique
keys (stability 1, the same rows once): the ledger's measurements record ``k`` times the
sensitivity at the same ε (at least ``k`` times the L2 sensitivity for Gaussian noise), and
the note names the join. The catalogue is the differential suite's
(``tests/invariant/test_differential.py``), so a new release family is checked here too.
"""

from __future__ import annotations

import warnings
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

import pandas_dp
from pandas_dp.testing import capture_noise

from ..invariant.test_differential import KEY_RELEASES, KEY_SET, VALUE_RELEASES

K = 3
ROWS = 48
SCORE_ROUNDING = Fraction(1, 16)


def frame() -> pd.DataFrame:
    """Rows with every column the catalogue's releases read, and a unique row id."""
    i = np.arange(ROWS)
    return pd.DataFrame(
        {
            "rid": i,
            "x": (i * 7 % 90).astype(float),
            "x2": (i * 5 % 90).astype(float),
            "g": np.where(i % 2 == 0, "a", "b"),
            "k": pd.array([KEY_SET[j % len(KEY_SET)] for j in i], dtype=object),
        }
    )


ONCE = pd.DataFrame({"rid": np.arange(ROWS), "tag": "t"})
THRICE = pd.DataFrame({"rid": np.repeat(np.arange(ROWS), K), "tag": "t"})  # each key k times

RELEASES = {**VALUE_RELEASES, **{f"key {name}": r for name, r in KEY_RELEASES.items()}}


def _sensitivities(public: pd.DataFrame, release: Any) -> tuple[list[Any], str]:
    """The ledger's measurements of ``release`` on the frame joined to ``public``, and note."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        priv = frame().dp.protect(epsilon=1000.0, delta=1e-6)
        joined = priv.dp.merge(public, on="rid")
        with capture_noise(joined, 0):
            release(joined)
    (last,) = priv.dp.session.releases
    return list(last.measurements), last.note


def _l2(measurement: Any) -> float:
    """A Gaussian measurement's L2 sensitivity in the column's units."""
    step = 2.0**measurement.exponent
    return float(np.sqrt(measurement.coordinates) * measurement.sensitivity * step)


@pytest.mark.parametrize("name", sorted(RELEASES))
def test_every_release_calibrates_to_the_stability(name: str) -> None:
    _, release = RELEASES[name]
    once, note_once = _sensitivities(ONCE, release)
    thrice, note_thrice = _sensitivities(THRICE, release)
    assert once, "the release recorded no measurement"
    assert [m.label for m in thrice] == [m.label for m in once]
    for single, triple in zip(once, thrice, strict=True):
        assert type(triple) is type(single)
        assert triple.epsilon == single.epsilon  # the same cost, k times the noise
        if single.is_gaussian:  # σ for L2 ≤ √l0·l∞ = √k·k rows: at least k times as wide
            assert _l2(triple) >= K * _l2(single) * (1 - 1e-12), name
            continue
        exact = Fraction(triple.sensitivity) * Fraction(2) ** triple.exponent
        base = Fraction(single.sensitivity) * Fraction(2) ** single.exponent
        if name.startswith("key synthesize") and single.mechanism == "exponential":
            # a marginal's score: k rows plus 1/16 of rounding (DataFrameDPAccessor.synthesize)
            exact, base = exact - SCORE_ROUNDING, base - SCORE_ROUNDING
        assert exact == K * base, (name, single, triple)
    assert "stability" not in note_once
    assert f"stability {K} (merge on 'rid': a key matches ≤ {K} public rows)" in note_thrice


def test_the_catalogue_covers_every_family() -> None:
    assert len(RELEASES) >= 40
    assert pandas_dp  # the accessor is registered
