"""Text unit ids that spell one number (``"1" = "1.0" = "+01" = "True"``) or one instant
with a UTC offset (``"2024-01-01 00:00+00:00" = "2024-01-01 01:00+01:00"``) are one unit.

Dask's default string conversion turns an object column of ``1``, ``1.0`` and ``True`` into
three texts, and tz-aware Timestamps into texts in their own zones; the canonical form reads
them back as the number or the UTC instant they spell, so one person is capped once on every
engine. Other texts are left as written; merging ids is conservative.
"""

from __future__ import annotations

import pandas as pd
import pytest

from pandas_dp.engines.canonical import canonical_id_texts, canonical_unit_ids


@pytest.mark.parametrize("dtype", ["string", "string[pyarrow]"])
def test_texts_of_one_number_share_a_form(dtype: str) -> None:
    texts = ["1", "1.0", "True", "+01", "u7", "007", "1e3", "1000", "-0", "0.5", "0.50", None,
             "100000000000000000000", "False", "nan", "1.5e-3"]  # fmt: skip
    ids = pd.Series(texts, dtype=dtype)
    got = canonical_unit_ids(ids)
    assert got.dtype == ids.dtype
    expected = ["1", "1", "1", "1", "u7", "7", "1000", "1000", "0", "0.5", "0.5", None,
                "100000000000000000000", "0", "nan", "0.0015"]  # fmt: skip
    assert [None if pd.isna(v) else v for v in got] == expected


def test_texts_already_canonical_are_untouched() -> None:
    ids = pd.Series(["12", "u1", "0", "-3"], dtype="string")
    assert canonical_id_texts(ids) is ids


def test_dates_and_other_texts_are_left_as_written() -> None:
    # No digits-first text that is not a whole number may be read as one (pandas 2.2's
    # fullmatch only anchors the ends); naive dates and times are not instants.
    texts = ["2024-01-01", "2024-01-01 00:00:00", "12abc", "1.2.3", "--1", "1e", None]
    ids = pd.Series(texts, dtype="string")
    got = canonical_unit_ids(ids)
    assert [None if pd.isna(v) else v for v in got] == texts


#: One instant, 2024-01-01 00:00 UTC, as str(), isoformat() and hand-written texts spell it.
ONE_INSTANT = [
    "2024-01-01 00:00:00+00:00", "2024-01-01 01:00:00+01:00", "2023-12-31 19:00:00-05:00",
    "2024-01-01T00:00Z", "2024-01-01t00:00:00.000z", "2024-01-01 05:30:00.000000000+0530",
    "2024-01-01T00:00:00.000000000Z", "2024-01-01 00:19:32+00:19:32",
]  # fmt: skip
#: Instants that differ from it (and from each other), however little.
OTHER_INSTANTS = [
    "2024-01-01 00:00:00.000000001+00:00", "2024-01-01 00:00:00.0000000001+00:00",
    "2024-01-01 00:00:00.5+00:00", "2024-01-01 00:00:00+01:00", "2024-01-01 00:00:01Z",
    "2023-12-31 23:59:59.999999999Z",
]  # fmt: skip


@pytest.mark.parametrize("dtype", ["string", "string[pyarrow]", "str", "object"])
def test_one_instant_in_any_zone_is_one_text(dtype: str) -> None:
    """Issue 37: Dask writes tz-aware Timestamps of an object column as texts in their own
    zones; one instant is one unit, as the pandas engine's UTC Timestamps are."""
    got = canonical_unit_ids(pd.Series(ONE_INSTANT + OTHER_INSTANTS, dtype=dtype)).tolist()
    assert set(got[: len(ONE_INSTANT)]) == {"2024-01-01T00:00:00.000000000Z"}
    assert len(set(got)) == 1 + len(OTHER_INSTANTS)
    assert canonical_unit_ids(pd.Series(got, dtype=dtype)).tolist() == got  # idempotent


def test_texts_of_instants_match_the_timestamps_they_were_written_from() -> None:
    stamps = pd.Series(pd.date_range("2024-03-30", periods=200, freq="37min", tz="UTC"))
    zones = ["Europe/Berlin", "America/New_York", "Asia/Kolkata", "UTC", "Pacific/Chatham"]
    texts = [str(s.tz_convert(zones[i % len(zones)])) for i, s in enumerate(stamps)]
    got = canonical_unit_ids(pd.Series(texts, dtype="string"))
    expected = [s.strftime("%Y-%m-%dT%H:%M:%S.000000000Z") for s in stamps]
    assert got.tolist() == expected


def test_texts_that_name_no_instant_are_left_as_written() -> None:
    texts = [
        "2024-02-30 00:00+01:00", "2024-13-01 00:00Z", "2024-01-01 24:00+00:00",
        "2024-01-01 00:60Z", "2024-01-01 00:00+24:00", "0001-01-01 00:30+01:00",
        "9999-12-31 23:30-01:00", "2024-01-01 00:00+01:60", "2024-01-01 00:00:00+01:00x",
        "x2024-01-01 00:00:00+01:00", "2024-01-01 00:00 +01:00",
    ]  # fmt: skip
    for dtype in ("string", "object"):
        got = canonical_unit_ids(pd.Series(texts, dtype=dtype))
        assert got.tolist() == texts
