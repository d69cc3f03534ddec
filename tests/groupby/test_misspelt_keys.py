"""A misspelt key is refused when the column has a public domain (issue 44, item 7).

``keys=["biolgy", "math"]`` used to release a noisy zero for "biolgy" silently. When the
column is categorical (its dtype's categories are public, as every dtype validation reads)
or the session's schema has an ``isin`` check for it, a key outside them is refused before
anything is charged, naming the unknown keys, the closest known ones and the known values.
No value is read from the data: a frame with the same dtype and other values gets the same
message, and a plain string column (no public domain) still takes any key.
"""

from __future__ import annotations

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
CATEGORIES = "the categories of its dtype"
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
@pytest.mark.parametrize("domain", ["categorical", "schema"])
def test_a_misspelt_key_is_refused_before_any_charge(call: Callable, domain: str) -> None:
    messages = []
    for rows in (SUBJECTS * 20, ["math"] * 60):  # other values, the same dtype: one message
        data = frame(rows, categorical=domain == "categorical")
        options = {"schema": schema()} if domain == "schema" else {}
        priv = data.dp.protect(epsilon=1.0, **options)
        with pytest.raises(DPValueError) as caught:
            call(priv)
        assert priv.dp.session.releases == ()  # nothing charged
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
    assert messages[0] == REFUSAL.format(source=CATEGORIES if domain == "categorical" else SCHEMA)


def test_several_unknown_keys_are_named_with_their_closest() -> None:
    priv = frame(SUBJECTS * 20, categorical=True).dp.protect(epsilon=1.0)
    with pytest.raises(DPValueError) as caught:
        priv.dp.groupby("subject", keys=["biolgy", "mth", "physics"]).size(epsilon=0.5)
    assert str(caught.value).startswith(
        "keys of 'subject': 'biolgy', 'mth', 'physics' are not among the categories of its "
        "dtype (did you mean 'biology', 'math'?), which are 'biology', 'chemistry', 'math'."
    )
    assert priv.dp.session.releases == ()


def test_known_keys_and_columns_without_a_public_domain_are_released() -> None:
    categorical = frame(SUBJECTS * 20, categorical=True).dp.protect(epsilon=1.0)
    released = categorical.dp.groupby("subject", keys=["biology", "math"]).size(epsilon=0.5)
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
