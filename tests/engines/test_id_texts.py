"""Text unit ids that spell one number are one unit (``"1" = "1.0" = "+01" = "True"``).

Dask's default string conversion turns an object column of ``1``, ``1.0`` and ``True`` into
three texts; the canonical form reads them back as the number they spell, so one person is
capped once on every engine. Other texts are left as written; merging ids is conservative.
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
    # Dask writes tz-aware instants of an object column as texts; no digits-first text that
    # is not a whole number may be read as one (pandas 2.2's fullmatch only anchors the ends).
    texts = ["2024-01-01 00:00:00+01:00", "2024-01-01", "12abc", "1.2.3", "--1", "1e", None]
    ids = pd.Series(texts, dtype="string")
    got = canonical_unit_ids(ids)
    assert [None if pd.isna(v) else v for v in got] == texts
