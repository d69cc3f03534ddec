"""A misspelt key is refused when the column has a public domain (issue 44, item 7).

``keys=["biolgy", "math"]`` used to release a noisy zero for "biolgy" silently. When the
session's schema has an ``isin`` check for the column, a key outside it is refused before
anything is charged, naming the unknown keys, the closest known ones and the known values.
No value is read from the data: a frame with the same schema and other values gets the same
message, and a column without a schema check still takes any key. A categorical dtype's
categories are *not* a public domain (``astype("category")`` takes them from the rows:
PRIVACY.md §7, and the neighbour grid, whose D and D' differ in them): a key outside them
releases its noisy zero, and no text names them.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pandera.pandas as pa
import pytest

from pandas_dp import DPValueError
from pandas_dp.cli import main

SUBJECTS = ["biology", "chemistry", "math"]
REFUSAL = (
    "keys of 'subject': 'biolgy' is not one of {source} (did you mean 'biology'?), which are "
    "'biology', 'chemistry', 'math'. A key no row can hold would release only noise: correct "
    "it or leave it out"
)
SCHEMA = "the values of its schema's isin check"


def frame(rows: list[str], categorical: bool) -> pd.DataFrame:
    subject = pd.Categorical(rows, categories=SUBJECTS) if categorical else rows
    return pd.DataFrame({"subject": subject, "x": range(len(rows)), "n": [0, 1] * (len(rows) // 2)})


def schema() -> pa.DataFrameSchema:
    return pa.DataFrameSchema({"subject": pa.Column(str, pa.Check.isin(SUBJECTS))})


CALLS: dict[str, Callable[[pd.DataFrame], Any]] = {
    "groupby": lambda p: p.dp.groupby("subject", keys=["biolgy", "math"]).size(epsilon=0.5),
    "groupby with a dict": lambda p: p.dp.groupby(
        ["subject", "n"], keys={"subject": ["math", "biolgy"], "n": [0, 1]}
    ).size(epsilon=0.5),
    "crosstab": lambda p: p.dp.crosstab(
        "subject", "n", keys={"subject": ["biolgy"], "n": [0, 1]}, epsilon=0.5
    ),
    "value_counts": lambda p: p["subject"].dp.value_counts(keys=["biolgy"], epsilon=0.5),
    "mode": lambda p: p["subject"].dp.mode(candidates=["biolgy", "math"], epsilon=0.5),
}


@pytest.mark.parametrize("call", CALLS.values(), ids=CALLS.keys())
def test_a_misspelt_key_is_refused_before_any_charge(call: Callable) -> None:
    messages = []
    for rows in (SUBJECTS * 20, ["math"] * 60):  # other values, the same schema: one message
        priv = frame(rows, categorical=False).dp.protect(epsilon=1.0, schema=schema())
        with pytest.raises(DPValueError) as caught:
            call(priv)
        assert priv.dp.session.releases == ()  # nothing charged
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
    assert messages[0] == REFUSAL.format(source=SCHEMA)


def test_several_unknown_keys_are_named_with_their_closest() -> None:
    priv = frame(SUBJECTS * 20, categorical=False).dp.protect(epsilon=1.0, schema=schema())
    with pytest.raises(DPValueError) as caught:
        priv.dp.groupby("subject", keys=["biolgy", "mth", "physics"]).size(epsilon=0.5)
    assert str(caught.value).startswith(
        "keys of 'subject': 'biolgy', 'mth', 'physics' are not among the values of its "
        "schema's isin check (did you mean 'biology', 'math'?), which are 'biology', "
        "'chemistry', 'math'."
    )
    assert priv.dp.session.releases == ()


@pytest.mark.parametrize("call", CALLS.values(), ids=CALLS.keys())
def test_a_categorical_column_takes_any_key_and_names_no_category(call: Callable) -> None:
    """Categories from the rows (a category no row holds among them) stay unread."""
    rows = pd.Categorical(SUBJECTS * 20, categories=[*SUBJECTS, "SECRET-SUBJECT"])
    priv = pd.DataFrame({"subject": rows, "n": [0, 1] * 30}).dp.protect(epsilon=10.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        released = call(priv)
    assert len(priv.dp.session.releases) == 1  # released, not refused
    texts = [repr(released), *(str(w.message) for w in caught)]
    assert not any("SECRET" in text for text in texts)


def test_known_keys_and_columns_without_a_public_domain_are_released() -> None:
    checked = frame(SUBJECTS * 20, categorical=False).dp.protect(epsilon=1.0, schema=schema())
    released = checked.dp.groupby("subject", keys=["biology", "math"]).size(epsilon=0.5)
    assert list(released.index) == ["biology", "math"]
    plain = frame(SUBJECTS * 20, categorical=False).dp.protect(epsilon=1.0)
    released = plain.dp.groupby("subject", keys=["biolgy", "math"]).size(epsilon=0.5)
    assert list(released.index) == ["biolgy", "math"]  # nothing public says it is misspelt


def test_a_release_file_lists_a_key_outside_its_schema(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schema().to_yaml(tmp_path / "schema.yaml")
    (tmp_path / "release.toml").write_text(
        '[data]\npath = "people.csv"\nschema = "schema.yaml"\n[privacy]\nepsilon = 1.0\n'
        '[[query]]\nname = "by_subject"\ngroupby = ["subject"]\nkeys = ["biolgy", "math"]\n'
        'aggs = { n = "count" }\nepsilon = 0.5\n'
    )
    assert main(["plan", str(tmp_path / "release.toml")]) == 2
    err = capsys.readouterr().err
    assert f"query[1] (by_subject): {REFUSAL.format(source=SCHEMA)}" in err


def test_a_release_file_never_names_a_parquet_files_categories(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Parquet categorical's categories may come from the data, and a spec's author may be
    untrusted: the runner reads such a column as its values, so no refusal names them."""
    rows = SUBJECTS * 20
    subject = pd.Categorical(rows, categories=[*SUBJECTS, "SECRET-SUBJECT"])
    pd.DataFrame({"subject": subject, "n": range(len(rows))}).to_parquet(
        tmp_path / "people.parquet"
    )
    (tmp_path / "release.toml").write_text(
        '[data]\npath = "people.parquet"\n[privacy]\nepsilon = 1.0\n'
        '[[query]]\nname = "by_subject"\ngroupby = ["subject"]\nkeys = ["biolgy", "math"]\n'
        'aggs = { n = "count" }\nepsilon = 0.5\n'
    )
    out = tmp_path / "out"
    argv = ["release", str(tmp_path / "release.toml"), "--out", str(out), "--no-charts"]
    assert main([*argv, "--quiet"]) == 0
    printed = capsys.readouterr()
    written = "".join(p.read_text(encoding="utf-8") for p in out.iterdir() if p.is_file())
    for text in (printed.out, printed.err, written):
        assert "SECRET-SUBJECT" not in text
        assert "categories" not in text
    assert list(pd.read_csv(out / "by_subject.csv")["subject"]) == ["biolgy", "math"]
