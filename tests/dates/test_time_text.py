"""Dates and durations as text (issue 44, item 4).

pandas takes text wherever it expects a Timestamp (a Timedelta); so do ``range=`` and
``bounds=``: ``("2024-01-01", "2025-01-01")`` means what ``pd.Timestamp`` reads it as. The
text is the caller's own, so public. Text ``pd.Timestamp`` cannot read is refused before any
charge, naming it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest

from pandas_dp import DPValueError

from .conftest import DAY, YEAR, make_frame

YEAR_TEXT = ("2020-01-01", "2021-01-01")


def test_resample_takes_its_range_as_text(
    protect_seeded: Callable[..., Any], noise: Callable[..., Any]
) -> None:
    data = make_frame("ns")
    released = []
    for span in (YEAR, YEAR_TEXT):
        priv = protect_seeded(data, epsilon=1.0)
        with noise(priv):
            released.append(priv.dp.resample("MS", on="t", range=span).size(epsilon=0.5))
        assert len(priv.dp.session.releases) == 1
    pd.testing.assert_series_equal(released[0], released[1])
    assert len(released[1]) == 12
    assert released[1].index[0] == pd.Timestamp("2020-01-01")


@pytest.mark.parametrize(
    ("column", "bounds", "as_scalars"),
    [
        ("t", YEAR_TEXT, YEAR),
        ("d", ("0 days", "1 day"), DAY),
        ("d", ("0s", "24h"), DAY),
    ],
    ids=["datetimes", "timedeltas", "timedeltas in units"],
)
def test_bounds_as_text_are_the_bounds_pandas_reads(
    protect_seeded: Callable[..., Any], column: str, bounds: tuple, as_scalars: tuple
) -> None:
    """The same seed and the same bounds, given as text or as scalars: the same release."""
    data = make_frame("ns")
    means = []
    for given in (bounds, as_scalars):
        priv = protect_seeded(data, seed=5, epsilon=1.0)
        means.append(priv.dp.mean(column, bounds=given, epsilon=0.5))
        assert len(priv.dp.session.releases) == 1
    assert means[0] == means[1]


def test_a_text_fill_for_a_datetime_column(protect_seeded: Callable[..., Any]) -> None:
    data = make_frame("ns")
    means = [
        protect_seeded(data, seed=3, epsilon=1.0).dp.mean(
            "t", bounds=YEAR, fillna=fill, epsilon=0.5
        )
        for fill in ("2020-07-01", pd.Timestamp("2020-07-01"))
    ]
    assert means[0] == means[1]


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (
            lambda p: p.dp.resample("MS", on="t", range=("2020-13-45", "2021-01-01")),
            "range '2020-13-45' cannot be read as a date by pd.Timestamp (column 't' holds "
            "datetimes (datetime64[ns])). Give range as ('2020-01-01', '2021-01-01'), or as "
            "pd.Timestamps",
        ),
        (
            lambda p: p.dp.mean("t", bounds=("2020-01-01", "next year"), epsilon=0.5),
            "bounds[1] (upper) 'next year' cannot be read as a date by pd.Timestamp (column "
            "'t' holds datetimes (datetime64[ns])). Give bounds as ('2020-01-01', "
            "'2021-01-01'), or as pd.Timestamps",
        ),
        (
            lambda p: p.dp.mean("d", bounds=("0 days", "a day"), epsilon=0.5),
            "bounds[1] (upper) 'a day' cannot be read as a duration by pd.Timedelta (column "
            "'d' holds timedeltas (timedelta64[ns])). Give bounds as ('0 days', '30 days'), "
            "or as pd.Timedeltas",
        ),
        (
            lambda p: p.dp.mean("t", bounds=("", "2021-01-01"), epsilon=0.5),
            "bounds[0] (lower) '' cannot be read as a date by pd.Timestamp (column 't' holds "
            "datetimes (datetime64[ns])). Give bounds as ('2020-01-01', '2021-01-01'), or as "
            "pd.Timestamps",
        ),
    ],
    ids=["range", "datetime bounds", "timedelta bounds", "empty text"],
)
def test_text_pandas_cannot_read_is_refused_naming_it(
    protect_seeded: Callable[..., Any], charges_nothing: Callable, call: Callable, expected: str
) -> None:
    priv = protect_seeded(make_frame("ns"), epsilon=1.0)
    with charges_nothing(priv), pytest.raises(DPValueError) as caught:
        call(priv)
    assert str(caught.value) == expected
    assert priv.dp.session.releases == ()
