"""A release file from an untrusted author cannot run code or read beyond the data file.

Issue 13: ``where`` used to be pandas query code; now it is a small language, parsed and
checked before any data is read and evaluated by pandas-dp itself. Paths stay inside the
spec's folder unless the data owner names the data file, and every number goes through the
Python API's own validation.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from pandas_dp import SpecError
from pandas_dp.publish import load_spec, run_release
from pandas_dp.publish.where.evaluation import evaluate
from pandas_dp.publish.where.language import check_types, parse_where

HEAD = """\
[data]
path = "{data}"

[privacy]
epsilon = 5.0
delta = 1e-6
"""
QUERY = """
[[query]]
name = "q"
aggs = {{ n = "count" }}
epsilon = 0.5
{extra}
"""


def spec_file(folder: Path, extra: str = "", data: str = "people.csv", head: str = HEAD) -> Path:
    path = folder / "release.toml"
    path.write_text(head.format(data=data) + QUERY.format(extra=extra))
    return path


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    rng = np.random.default_rng(1)
    frame = pd.DataFrame(
        {
            "age": rng.integers(0, 90, 300),
            "income": rng.uniform(0, 1e5, 300),
            "region": rng.choice(["N", "S", "E"], 300),
        }
    )
    frame.loc[::17, "income"] = np.nan
    frame.to_csv(tmp_path / "people.csv", index=False)
    return tmp_path


HOSTILE_WHERE = [
    "__import__('os').system('touch {marker}')",
    "age.__class__",
    "@age > 3",
    "(lambda: 1)()",
    "open('/etc/passwd')",
    "age.to_csv('{marker}')",
    "age[0] > 1",
    "[a for a in age]",
    "f'{{age}}' == 'x'",
    "age.pipe(print)",
    "age.isin(open('/etc/passwd'))",
    "region == `x`.y",
]


@pytest.mark.parametrize("where", HOSTILE_WHERE)
def test_code_in_where_is_refused_before_anything_runs(folder: Path, where: str) -> None:
    marker = folder / "pwned"
    text = where.format(marker=marker)
    quoted = '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'  # a TOML string
    spec = spec_file(folder, extra=f"where = {quoted}")
    with pytest.raises(SpecError, match=r"query\[1\]\.where"):
        load_spec(spec)
    assert not marker.exists()


@pytest.mark.parametrize(
    "data",
    ["/etc/passwd", "../people.csv", "sub/../../people.csv"],
    ids=["absolute", "parent", "parent inside"],
)
def test_paths_outside_the_spec_folder_are_refused(folder: Path, data: str) -> None:
    with pytest.raises(SpecError, match=r"data\.path"):
        load_spec(spec_file(folder, data=data))


def test_a_link_leading_out_of_the_folder_is_refused(folder: Path, tmp_path_factory: Any) -> None:
    outside = tmp_path_factory.mktemp("elsewhere") / "secret.csv"
    outside.write_text("a\n1\n")
    os.symlink(outside, folder / "link.csv")
    with pytest.raises(SpecError, match="leads out"):
        load_spec(spec_file(folder, data="link.csv"))


def test_the_data_owner_may_name_any_data_file(folder: Path, tmp_path_factory: Any) -> None:
    elsewhere = tmp_path_factory.mktemp("data") / "people.csv"
    (folder / "people.csv").replace(elsewhere)
    spec = load_spec(spec_file(folder, data="/absolute/ignored.csv"), data=elsewhere)
    assert spec.data_path == elsewhere


@pytest.mark.parametrize(
    ("extra", "where"),
    [
        ("bounds = { income = [0, 1e300] }\naggs = { s = ['income', 'sum'] }", "bounds.income"),
        ("epsilon = 1e7", "epsilon"),
        ("delta = 1.5", "delta"),
        ("groupby = ['age', 'age']", "groupby"),
        ("groupby = ['age']\nkeys = [1, 1]", "keys"),
    ],
)
def test_numbers_and_keys_follow_the_api_rules(folder: Path, extra: str, where: str) -> None:
    path = folder / "release.toml"
    body = QUERY.format(extra=extra)
    if extra.startswith("epsilon"):  # the query's own epsilon line is replaced
        body = body.replace("epsilon = 0.5\n", "", 1)
    if "aggs" in extra:
        body = body.replace('aggs = { n = "count" }\n', "")
    path.write_text(HEAD.format(data="people.csv") + body)
    with pytest.raises(SpecError, match=rf"query\[1\]\.{where}"):
        load_spec(path)


def test_sixty_four_group_by_columns_release_without_a_crash(tmp_path: Path) -> None:
    frame = pd.DataFrame({f"c{i}": np.arange(200) % 2 for i in range(64)})
    frame.to_csv(tmp_path / "wide.csv", index=False)
    groupby = [f"c{i}" for i in range(64)]
    spec = spec_file(
        tmp_path,
        extra=f"groupby = {groupby!r}\nselection = 'threshold'".replace("'", '"'),
        data="wide.csv",
    )
    outcome = run_release(load_spec(spec), tmp_path / "out", charts=False)
    table = outcome.outputs["q"]
    assert set(table.columns) >= {"c0", "c63", "n"}


WHERES = [
    ("age >= 18", "age >= 18"),
    ("18 <= age < 65", "18 <= age < 65"),
    ("region in ['N', 'S']", "region in ['N', 'S']"),
    ("region not in ['N']", "region not in ['N']"),
    ("region.isin(['E']) & (income > 5e4)", "region.isin(['E']) & (income > 5e4)"),
    ("age.between(20, 30) | ~(region == 'N')", "age.between(20, 30) | ~(region == 'N')"),
    ("income.isna() or age % 7 == 0", "income.isna() or age % 7 == 0"),
    ("income / (age - 40) > 1000", "income / (age - 40) > 1000"),
    ("-age + 2 * age // 3 < -10", "-age + 2 * age // 3 < -10"),
    ("income != 3.5", "income != 3.5"),
]


@pytest.mark.parametrize(("ours", "pandas_query"), WHERES)
def test_the_language_selects_what_pandas_would(folder: Path, ours: str, pandas_query: str) -> None:
    frame = pd.read_csv(folder / "people.csv")
    where = parse_where(ours)
    check_types(where, dict(frame.dtypes.items()))
    with np.errstate(all="ignore"):
        expected = frame.eval(pandas_query, engine="python").fillna(False).astype(bool)
    assert evaluate(where, frame).tolist() == expected.tolist()


def test_incomparable_values_are_not_kept_and_raise_nothing() -> None:
    frame = pd.DataFrame({"k": pd.Series(["a", [1], {"x": 2}, None, 3], dtype=object)})
    where = parse_where("k == 'a' or k.isin(['b', 3])")
    check_types(where, dict(frame.dtypes.items()))
    assert evaluate(where, frame).tolist() == [True, False, False, False, True]


@pytest.mark.parametrize(
    ("where", "match"),
    [("region < 3", "compare numbers"), ("region + 1 > 2", "arithmetic"), ("nope > 1", "'nope'")],
)
def test_types_are_checked_from_dtypes_without_naming_values(where: str, match: str) -> None:
    frame = pd.DataFrame({"region": pd.Series(["SECRET-VALUE"], dtype="string")})
    with pytest.raises(SpecError, match=match) as caught:
        check_types(parse_where(where), dict(frame.dtypes.items()))
    assert "SECRET" not in str(caught.value)
