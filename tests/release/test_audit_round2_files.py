"""Audit round 2 of release files: one ``where`` semantics, and schema YAML parsed by us.

1. ``where`` used to compare vectorised and, when that raised anywhere, re-run every row with
   Python's rules (``None == None``, ``pd.NA != 2``): one row holding a list flipped a
   thousand others. Now each row is decided from its own values, one way per dtype.
2. A spec's ``schema`` may name any file in its folder: a data file's row came back inside
   the YAML error, and a YAML file whose text is a path made pandera open that path. Now the
   YAML is parsed here, must be a mapping of built-in checks, and pandera gets the mapping;
   no message quotes the file.
"""

from __future__ import annotations

import warnings
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import pandas_dp
import pandas_dp.publish.runner as spec_runner
from pandas_dp.cli import main
from pandas_dp.publish import load_spec, run_release
from pandas_dp.publish.where.evaluation import evaluate
from pandas_dp.publish.where.language import check_types, parse_where
from pandas_dp.schema import read_schema
from pandas_dp.testing import capture_noise


def kept(where: str, frame: pd.DataFrame) -> pd.Series:
    parsed = parse_where(where)
    check_types(parsed, dict(frame.dtypes.items()))
    return evaluate(parsed, frame)


# --- 1. where: the audit's reproducers ---------------------------------------------------------


def test_a_list_row_from_parquet_flips_no_other_row(tmp_path: Path) -> None:
    """The audit's case: 999 rows kept on D, 2,000 on D plus one row holding lists."""
    d = pd.DataFrame(
        {
            "tags": pd.Series([None] * 1999, dtype=object),  # an optional list column, unset
            "backup": pd.Series([None] * 1999, dtype=object),
            "flag": [0] * 1000 + [1] * 999,
        }
    )
    d_prime = pd.concat(
        [d, pd.DataFrame({"tags": [[1, 2]], "backup": [[1, 2]], "flag": [1]})],
        ignore_index=True,
    )
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    lists = pa.list_(pa.int64())
    arrow = pa.schema([("tags", lists), ("backup", lists), ("flag", pa.int64())])
    for name, frame in (("d", d), ("d_prime", d_prime)):
        pq.write_table(
            pa.Table.from_pandas(frame, schema=arrow, preserve_index=False),
            tmp_path / f"{name}.parquet",
        )
    on_d = kept("(tags == backup) | (flag == 1)", pd.read_parquet(tmp_path / "d.parquet"))
    on_d_prime = kept(
        "(tags == backup) | (flag == 1)", pd.read_parquet(tmp_path / "d_prime.parquet")
    )
    assert int(on_d.sum()) == 999
    assert on_d_prime.iloc[:1999].tolist() == on_d.tolist()  # no other row moved
    assert int(on_d_prime.sum()) == 1000  # the new row: flag == 1; its lists compare false


@pytest.mark.parametrize("added", [np.array([1, 2]), [1], {"a": 1}], ids=["array", "list", "dict"])
def test_missing_values_do_not_change_with_an_incomparable_row(added: Any) -> None:
    """``pd.NA != 2`` is true as in pandas, whatever another row holds."""
    d = pd.DataFrame({"k": pd.Series([pd.NA] * 1000 + [1] * 999, dtype=object)})
    d_prime = pd.DataFrame({"k": pd.Series([*d["k"], added], dtype=object)})
    on_d, on_d_prime = kept("k != 2", d), kept("k != 2", d_prime)
    assert int(on_d.sum()) == 1999
    assert on_d_prime.iloc[:1999].tolist() == on_d.tolist()
    assert not on_d_prime.iloc[1999]  # an incomparable value matches no comparison


def test_a_signalling_nan_is_missing_and_raises_nothing() -> None:
    """``isna`` on a column holding ``Decimal('sNaN')`` raised inside pandas: a 1-bit leak."""
    frame = pd.DataFrame({"k": pd.Series([Decimal("sNaN"), 1, None, "a"], dtype=object)})
    assert kept("k.isna()", frame).tolist() == [True, False, True, False]
    assert kept("k.notna() & (k == 1)", frame).tolist() == [False, True, False, False]
    assert kept("k + 1 > 1", frame).tolist() == [False, True, False, False]


SEMANTICS = [
    # where, values of k, rows kept
    ("k == 'a'", ["a", None, np.nan, pd.NA, [1], "b"], [1, 0, 0, 0, 0, 0]),
    ("k != 'a'", ["a", None, np.nan, pd.NA, [1], "b"], [0, 1, 1, 1, 0, 1]),
    ("~(k == 'a')", ["a", None, np.nan, pd.NA, [1], "b"], [0, 1, 1, 1, 1, 1]),
    ("k in ['a', None]", ["a", None, np.nan, pd.NA, [1], "b"], [1, 0, 0, 0, 0, 0]),
    ("k not in ['a']", ["a", None, np.nan, pd.NA, [1], "b"], [0, 1, 1, 1, 0, 1]),
    ("k == None", ["a", None, np.nan, pd.NA, [1], "b"], [0, 0, 0, 0, 0, 0]),
    ("k != None", ["a", None, np.nan, pd.NA, [1], "b"], [1, 1, 1, 1, 0, 1]),
    ("k > 1", [2, None, 0.5, Decimal("3"), [5], "z"], [1, 0, 0, 1, 0, 0]),
]


@pytest.mark.parametrize(("where", "values", "expected"), SEMANTICS)
def test_the_documented_semantics(where: str, values: list[Any], expected: list[int]) -> None:
    frame = pd.DataFrame({"k": pd.Series(values, dtype=object)})
    assert kept(where, frame).astype(int).tolist() == expected
    for i, value in enumerate(values):  # each row alone gives the same answer
        alone = pd.DataFrame({"k": pd.Series([value], dtype=object)})
        assert int(kept(where, alone).iloc[0]) == expected[i]


# --- 1. where: differential test on D and D' = D plus one adversarial row ----------------------


class Hostile:
    """A value whose comparisons raise."""

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("no comparison")

    __lt__ = __gt__ = __le__ = __ge__ = __ne__ = __eq__  # type: ignore[assignment]

    def __hash__(self) -> int:
        return 7


ADVERSARIAL = {
    "list": [1, 2],
    "array": np.array([1.0, 2.0]),
    "None": None,
    "pd.NA": pd.NA,
    "NaN": np.nan,
    "Decimal": Decimal("2.5"),
    "Decimal sNaN": Decimal("sNaN"),
    "text in numbers": "3",
    "dict": {"a": 1},
    "raising object": Hostile(),
    "complex": complex(1, 2),
}
WHERE_FORMS = [
    "k == 'a'",
    "k != 'a'",
    "k != 1",
    "k in ['a', 1]",
    "k not in ['b']",
    "~(k == 1) & k.notna()",
    "k.isin(['a', 2.5]) | k.isna()",
    "x > 3",
    "x != 2.5",
    "x.between(1, 5) or x + 1 > 4",
    "k == x",
]


def base_frame() -> pd.DataFrame:
    rng = np.random.default_rng(3)  # test data only, never noise
    n = 400
    k = pd.Series(
        rng.choice(np.array(["a", "b", 1, 2.5, None, pd.NA, np.nan], dtype=object), n), dtype=object
    )
    x = rng.uniform(0, 6, n)
    x[::9] = np.nan
    x[::13] = 2.5
    return pd.DataFrame({"k": k, "x": x, "g": rng.choice(["N", "S"], n)})


SPEC = """\
[data]
path = "people.csv"

[privacy]
epsilon = 4.0

[[query]]
name = "total"
aggs = {{ n = "count" }}
where = "{where}"
epsilon = 1.0

[[query]]
name = "by_g"
groupby = ["g"]
keys = ["N", "S"]
aggs = {{ n = "count" }}
where = "{where}"
epsilon = 1.0
"""


def release(
    folder: Path, where: str, frame: pd.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> tuple[str | None, list[tuple[str, str]], dict[str, list[int]]]:
    """Run the spec on ``frame`` with zero noise: (exception type, warnings, counts)."""
    frame.head(0).to_csv(folder / "people.csv", index=False)  # the header: public
    (folder / "release.toml").write_text(SPEC.format(where=where.replace('"', '\\"')))
    original = spec_runner._call

    def without_noise(target: pd.DataFrame, query: Any, previewing: bool) -> Any:
        if previewing:
            return original(target, query, previewing)
        with capture_noise(target):
            return original(target, query, previewing)

    out = folder / "out"
    error: str | None = None
    counts: dict[str, list[int]] = {}
    with monkeypatch.context() as patched, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        patched.setattr(spec_runner, "read_data", lambda spec: frame.copy())
        patched.setattr(spec_runner, "_call", without_noise)
        try:
            outcome = run_release(load_spec(folder / "release.toml"), out, charts=False)
        except Exception as exc:
            error = type(exc).__name__
        else:
            counts = {
                name: table["n"].astype(int).tolist() for name, table in outcome.outputs.items()
            }
    seen = sorted({(w.category.__name__, str(w.message)) for w in caught})
    return error, seen, counts


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "d").mkdir()
    (tmp_path / "d_prime").mkdir()
    return tmp_path / "d", tmp_path / "d_prime"


@pytest.mark.parametrize("where", WHERE_FORMS)
@pytest.mark.parametrize("added", list(ADVERSARIAL.values()), ids=list(ADVERSARIAL))
def test_one_adversarial_row_moves_counts_by_at_most_one(
    where: str, added: Any, folders: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    d = base_frame()
    # D plus the row, column by column (pandas 2.2's concat warns about an all-missing row):
    # the same object columns concat gives.
    d_prime = pd.DataFrame(
        {
            "k": pd.Series([*d["k"], added], dtype=object),
            "x": pd.Series([*d["x"], added], dtype=object),
            "g": [*d["g"], "N"],
        }
    )
    on_d = release(folders[0], where, d, monkeypatch)
    on_d_prime = release(folders[1], where, d_prime, monkeypatch)
    assert on_d[0] is None
    assert on_d_prime[0] == on_d[0]  # same exception type (none)
    assert on_d_prime[1] == on_d[1]  # same warnings
    for name, counts in on_d[2].items():
        for before, after in zip(counts, on_d_prime[2][name], strict=True):
            assert abs(after - before) <= 1
    # and row by row: the old rows are decided exactly as before
    assert kept(where, d_prime).iloc[: len(d)].tolist() == kept(where, d).tolist()


# --- 2. schema YAML ----------------------------------------------------------------------------

SECRET_CSV = 'name,comment\nalice,fine\nSECRET-bob,"likes: cats"\n- SECRET-carol: [x\n'
SCHEMA_SPEC = """\
[data]
path = "people.csv"
schema = "{schema}"

[privacy]
epsilon = 1.0

[[query]]
name = "q"
aggs = {{ n = "count" }}
epsilon = 0.5
"""


def test_plan_with_a_data_file_as_schema_prints_no_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "people.csv").write_text(SECRET_CSV)
    spec = tmp_path / "release.toml"
    spec.write_text(SCHEMA_SPEC.format(schema="people.csv"))
    assert main(["plan", str(spec)]) != 0
    shown = capsys.readouterr()
    assert "SECRET" not in shown.out + shown.err
    assert "cats" not in shown.out + shown.err
    assert "people.csv" in shown.err  # the message names the file


@pytest.mark.parametrize(
    "content",
    [SECRET_CSV, "SECRET: [unclosed\n", "\tSECRET\n: :\n", "key: SECRET-2020-13-45\n"],
    ids=["csv", "flow", "tab", "not a schema"],
)
def test_yaml_errors_quote_nothing_from_the_file(tmp_path: Path, content: str) -> None:
    path = tmp_path / "schema.yaml"
    path.write_text(content)
    with pytest.raises(pandas_dp.DPValueError) as caught:
        read_schema(path)
    assert "SECRET" not in str(caught.value)
    assert str(path) in str(caught.value)
    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__


def test_a_binary_file_as_schema_quotes_no_byte(tmp_path: Path) -> None:
    path = tmp_path / "data.parquet"
    path.write_bytes(b"PAR1\xff\xfeSECRET\x00\x81")
    with pytest.raises(pandas_dp.DPValueError, match="UTF-8") as caught:
        read_schema(path)
    assert "SECRET" not in str(caught.value)
    assert "0xff" not in str(caught.value)


def outside_schema(folder: Path) -> Path:
    import pandera.pandas as pa

    path = folder / "outside.yaml"
    # An upper bound no path holds: what must not leak is that file's content.
    pa.DataFrameSchema({"age": pa.Column(int, pa.Check.in_range(0, 7654321))}).to_yaml(path)
    return path


def test_a_yaml_file_whose_text_is_a_path_opens_nothing(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = outside_schema(tmp_path_factory.mktemp("elsewhere"))
    inside = tmp_path / "schema.yaml"
    inside.write_text(f"{outside}\n")
    with pytest.raises(pandas_dp.DPValueError, match="does not hold a pandera schema"):
        read_schema(inside)
    pd.DataFrame({"age": [30]}).to_csv(tmp_path / "people.csv", index=False)
    spec = tmp_path / "release.toml"
    spec.write_text(SCHEMA_SPEC.format(schema="schema.yaml"))
    assert main(["plan", str(spec)]) != 0
    err = capsys.readouterr().err
    assert str(outside) not in err
    assert "7654321" not in err  # (not "77": pytest's temporary folders may be numbered 277)


def test_yaml_text_that_is_a_path_opens_nothing(tmp_path: Path) -> None:
    outside = outside_schema(tmp_path)
    with pytest.raises(pandas_dp.DPValueError, match="does not hold a pandera schema"):
        read_schema(f"{outside}\n")


@pytest.mark.parametrize(
    "entry",
    [
        "    SECRET_check:\n      value: 1\n",
        "    checks:\n    - value: 1\n      options:\n        check_name: SECRET_check\n",
        "    checks:\n    - value: 1\n      options:\n        check_name: ge\n        _SECRET: 1\n",
    ],
    ids=["flattened", "list", "option"],
)
def test_unknown_check_names_are_refused_without_being_echoed(tmp_path: Path, entry: str) -> None:
    import pandera.pandas as pa

    text = pa.DataFrameSchema({"age": pa.Column(int, pa.Check.ge(0))}).to_yaml()
    assert isinstance(text, str)
    text = text.replace("  age:\n", "  age:\n" + entry, 1)
    path = tmp_path / "schema.yaml"
    path.write_text(text)
    with pytest.raises(pandas_dp.DPValueError) as caught:
        read_schema(path)
    assert "SECRET" not in str(caught.value)


def test_a_valid_schema_file_is_still_read(tmp_path: Path) -> None:
    path = outside_schema(tmp_path)
    assert read_schema(path).rules("age").bounds == (0, 7654321)
    assert read_schema(path.read_text()).rules("age").bounds == (0, 7654321)
