"""Frames with datetime and timedelta columns for the date tests (issue 15).

``times(unit, tz)`` gives 1,000 instants spread over 2020 at whole seconds, every tenth one
missing (NaT), in the wanted unit and time zone; ``YEAR`` bounds them.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest

ROWS = 1000
YEAR = (pd.Timestamp("2020-01-01"), pd.Timestamp("2021-01-01"))
DAY = (pd.Timedelta(0), pd.Timedelta(days=1))


def make_times(unit: str = "ns", tz: str | None = None, rows: int = ROWS) -> pd.Series:
    """Instants over 2020 (whole seconds), every tenth missing."""
    seconds = np.random.default_rng(15).integers(0, 366 * 86_400, rows)
    offsets = pd.to_timedelta(seconds, unit="s")
    stamps = pd.Series((YEAR[0] + offsets).as_unit(unit), name="t")
    stamps[::10] = pd.NaT
    return stamps.dt.tz_localize("UTC").dt.tz_convert(tz) if tz else stamps


def make_frame(unit: str = "ns", tz: str | None = None) -> pd.DataFrame:
    """``t`` (datetimes), ``d`` (timedeltas within a day), ``g`` (two groups), ``x``."""
    t = make_times(unit, tz)
    d = pd.Series(pd.to_timedelta(np.arange(ROWS) * 86, unit="s").as_unit(unit), name="d")
    return pd.DataFrame({"t": t, "d": d, "g": ["a", "b"] * (ROWS // 2), "x": np.arange(ROWS)})


@pytest.fixture
def frame() -> Callable[..., pd.DataFrame]:
    """``frame(unit="ns", tz=None)``: an unprotected frame (see :func:`make_frame`)."""
    return make_frame
