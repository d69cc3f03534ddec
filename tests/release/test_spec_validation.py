"""Release specs are checked completely before any data is read.

Every problem is reported at once, each prefixed by where it is in the file
(``query[2].bounds.income``, queries counted from 1). The same spec written as TOML, YAML or
JSON means the same thing, and neither validation nor planning opens the data file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pandas_dp.cli import main
from pandas_dp.errors import SpecError
from pandas_dp.publish import QuerySpec, load_spec, plan_release, plan_spec_file

VALID = """\
[data]
path = "people.csv"

[privacy]
epsilon = 1.0
delta = 1e-6
privacy_unit = "person_id"
max_rows_per_unit = 5

[[query]]
name = "people_by_region"
groupby = ["region"]
keys = ["north", "south", "east", "west"]
aggs = { n = "count", avg_income = ["income", "mean"] }
bounds = { income = [0, 200000] }
epsilon = 0.5

[[query]]
name = "overall"
aggs = { n = "count", median_age = ["age", "median"] }
bounds = { age = [0, 100] }
epsilon = 0.25
"""

YAML = """\
data:
  path: people.csv
privacy:
  epsilon: 1.0
  delta: 1.0e-6
  privacy_unit: person_id
  max_rows_per_unit: 5
query:
  - name: people_by_region
    groupby: [region]
    keys: [north, south, east, west]
    aggs: {n: count, avg_income: [income, mean]}
    bounds: {income: [0, 200000]}
    epsilon: 0.5
  - name: overall
    aggs:
      n: count
      median_age: [age, median]
    bounds:
      age: [0, 100]
    epsilon: 0.25
"""

JSON = {
    "data": {"path": "people.csv"},
    "privacy": {
        "epsilon": 1.0,
        "delta": 1e-6,
        "privacy_unit": "person_id",
        "max_rows_per_unit": 5,
    },
    "query": [
        {
            "name": "people_by_region",
            "groupby": ["region"],
            "keys": ["north", "south", "east", "west"],
            "aggs": {"n": "count", "avg_income": ["income", "mean"]},
            "bounds": {"income": [0, 200000]},
            "epsilon": 0.5,
        },
        {
            "name": "overall",
            "aggs": {"n": "count", "median_age": ["age", "median"]},
            "bounds": {"age": [0, 100]},
            "epsilon": 0.25,
        },
    ],
}

HEAD = '[data]\npath = "people.csv"\n[privacy]\nepsilon = 1.0\n'
COUNT = '[[query]]\nname = "{name}"\naggs = {{ n = "count" }}\nepsilon = 0.1\n'


def _write(tmp_path: Path, text: str, name: str = "release.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _problems(tmp_path: Path, text: str, name: str = "release.toml") -> list[str]:
    """The problem lines of the SpecError that loading ``text`` must raise."""
    path = _write(tmp_path, text, name)
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    message = str(caught.value)
    first, *lines = message.splitlines()
    assert str(path) in first
    assert lines, message
    return [line.strip() for line in lines]


def test_valid_spec_loads(tmp_path: Path) -> None:
    spec = load_spec(_write(tmp_path, VALID))
    assert [q.name for q in spec.queries] == ["people_by_region", "overall"]
    first, second = spec.queries
    assert first.groupby == ("region",)
    assert first.aggs == {"n": (None, "count"), "avg_income": ("income", "mean")}
    assert first.bounds == {"income": (0.0, 200000.0)}
    assert (first.epsilon, second.epsilon) == (0.5, 0.25)
    assert spec.data_path == tmp_path / "people.csv"  # relative to the spec file
    assert spec.formats == ("csv",)
    assert first.tag == f"people_by_region@{first.digest}"
    assert first.digest != second.digest


def test_lower_bound_above_upper_names_query_and_column(tmp_path: Path) -> None:
    text = (
        HEAD
        + COUNT.format(name="first")
        + (
            '[[query]]\nname = "second"\naggs = { total = ["income", "sum"] }\n'
            "bounds = { income = [10, 5] }\nepsilon = 0.1\n"
        )
    )
    assert _problems(tmp_path, text) == [
        "query[2].bounds.income: bounds must satisfy lower < upper, got (10, 5); pandas would "
        "silently swap reversed bounds, pandas-dp refuses them"
    ]


def test_spec_error_is_a_value_error() -> None:
    assert issubclass(SpecError, ValueError)


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    text = (
        '[data]\npath = "people.csv"\n[privacy]\nepsilon = -1\n'
        '[[query]]\nname = "a"\naggs = { n = "count" }\n'
        '[[query]]\nname = "b"\naggs = { s = ["income", "total"] }\nepsilon = 0.1\n'
        '[[query]]\nname = "c"\naggs = { n = "count" }\nepsilon = 0.1\n'
        "bounds = { income = [3, 1] }\nci = 1.5\n"
    )
    problems = _problems(tmp_path, text)
    assert len(problems) == 5, problems
    assert problems[0].startswith("privacy.epsilon: epsilon must lie in [1e-9, 1e6], got -1")
    assert problems[1].startswith("query[1].epsilon: missing")
    assert problems[2].startswith("query[2].aggs.s: unknown statistic 'total'")
    assert any(p.startswith("query[3].ci: must be a level in (0, 1)") for p in problems)
    assert any(
        p.startswith("query[3].bounds.income: bounds must satisfy lower < upper") for p in problems
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "querys = 1\n" + HEAD + COUNT.format(name="a"),
            "querys: unknown key; did you mean 'query'?",
        ),
        (
            HEAD.replace("[privacy]\n", '[privacy]\naccountng = "basic"\n')
            + COUNT.format(name="a"),
            "privacy.accountng: unknown key; did you mean 'accounting'?",
        ),
        (
            HEAD.replace('path = "people.csv"', 'path = "people.csv"\nformt = "csv"')
            + COUNT.format(name="a"),
            "data.formt: unknown key; did you mean 'format'?",
        ),
        (
            HEAD + '[release]\nformat = ["csv"]\n' + COUNT.format(name="a"),
            "release.format: unknown key; did you mean 'formats'?",
        ),
        (
            HEAD + COUNT.format(name="a") + "bound = { age = [0, 100] }\n",
            "query[1].bound: unknown key; did you mean 'bounds'?",
        ),
    ],
    ids=["top", "privacy", "data", "release", "query"],
)
def test_unknown_keys_suggest_the_closest(tmp_path: Path, text: str, expected: str) -> None:
    assert _problems(tmp_path, text) == [expected]


def test_unknown_key_without_close_match_lists_allowed(tmp_path: Path) -> None:
    problems = _problems(tmp_path, HEAD + COUNT.format(name="a") + "zzz = 1\n")
    assert len(problems) == 1
    assert problems[0].startswith("query[1].zzz: unknown key; allowed: [")
    assert "'bounds'" in problems[0]
    assert "'epsilon'" in problems[0]


def test_missing_epsilon_in_query_and_in_privacy(tmp_path: Path) -> None:
    text = '[data]\npath = "people.csv"\n[privacy]\ndelta = 1e-6\n'
    text += '[[query]]\nname = "a"\naggs = { n = "count" }\n'
    problems = _problems(tmp_path, text)
    assert problems == [
        "privacy: give the total budget: epsilon (and delta), or rho",
        "query[1].epsilon: missing: every query states what it may spend",
    ]


def test_duplicate_query_names(tmp_path: Path) -> None:
    text = HEAD + COUNT.format(name="a") + COUNT.format(name="b") + COUNT.format(name="a")
    assert _problems(tmp_path, text) == ["query[3].name: 'a' is used twice"]


def test_duplicate_name_after_a_bad_query_keeps_file_numbering(tmp_path: Path) -> None:
    query = {"name": "a", "aggs": {"n": "count"}, "epsilon": 0.1}
    raw = {"data": {"path": "people.csv"}, "privacy": {"epsilon": 1}, "query": ["x", query, query]}
    problems = _problems(tmp_path, json.dumps(raw), "release.json")
    assert problems == ["query[1]: must be a table", "query[3].name: 'a' is used twice"]


@pytest.mark.parametrize(
    ("extra", "where", "fragment"),
    [
        ('mechanism = "gauss"', "query[1].mechanism", "must be one of ['laplace', 'gaussian']"),
        ("ci = 95", "query[1].ci", "must be a level in (0, 1)"),
        ('ci = "high"', "query[1].ci", "must be a level in (0, 1)"),
        ("epsilon = 0", "query[1].epsilon", "must lie in [1e-9, 1e6]"),
    ],
)
def test_bad_query_settings(tmp_path: Path, extra: str, where: str, fragment: str) -> None:
    query = COUNT.format(name="a")
    if extra.startswith("epsilon"):
        query = query.replace("epsilon = 0.1", extra)
    else:
        query += extra + "\n"
    problems = _problems(tmp_path, HEAD + query)
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"{where}: ")
    assert fragment in problems[0]


def test_ci_false_turns_intervals_off(tmp_path: Path) -> None:
    spec = load_spec(_write(tmp_path, HEAD + COUNT.format(name="a") + "ci = false\n"))
    assert spec.queries[0].ci is None


def test_bad_formats(tmp_path: Path) -> None:
    text = HEAD + '[release]\nformats = ["csv", "xlsx"]\n' + COUNT.format(name="a")
    assert _problems(tmp_path, text) == ["release.formats: 'xlsx' is not one of ['csv', 'parquet']"]
    good = HEAD + '[release]\nformats = ["csv", "parquet"]\n' + COUNT.format(name="a")
    assert load_spec(_write(tmp_path, good)).formats == ("csv", "parquet")


@pytest.mark.parametrize(
    "line", ['privacy_unit = "person_id"', "max_rows_per_unit = 3"], ids=["unit", "rows"]
)
def test_privacy_unit_and_max_rows_go_together(tmp_path: Path, line: str) -> None:
    text = HEAD.replace("[privacy]\n", f"[privacy]\n{line}\n") + COUNT.format(name="a")
    assert _problems(tmp_path, text) == ["privacy: privacy_unit and max_rows_per_unit go together"]


def test_same_spec_in_toml_yaml_and_json(tmp_path: Path) -> None:
    toml = load_spec(_write(tmp_path, VALID, "release.toml"))
    yaml = load_spec(_write(tmp_path, YAML, "release.yaml"))
    jsn = load_spec(_write(tmp_path, json.dumps(JSON), "release.json"))
    assert all(isinstance(q, QuerySpec) for q in toml.queries)
    assert toml.queries == yaml.queries == jsn.queries
    assert [q.tag for q in toml.queries] == [q.tag for q in jsn.queries]
    assert toml.privacy == yaml.privacy == jsn.privacy
    assert toml.data_path == yaml.data_path == jsn.data_path


def test_changing_a_query_changes_only_its_digest(tmp_path: Path) -> None:
    before = load_spec(_write(tmp_path, VALID))
    after = load_spec(_write(tmp_path, VALID.replace("epsilon = 0.25", "epsilon = 0.2")))
    assert before.queries[0].digest == after.queries[0].digest
    assert before.queries[1].digest != after.queries[1].digest


@pytest.mark.parametrize(
    ("name", "text", "kind"),
    [
        ("bad.toml", '[data]\npath = "people.csv"\n[[query]\nname = "a"\n', "TOML"),
        ("bad.json", '{"data": {"path": "people.csv"},', "JSON"),
        ("bad.yaml", "data: [unclosed\n", "YAML"),
    ],
)
def test_syntax_errors_are_spec_errors(tmp_path: Path, name: str, text: str, kind: str) -> None:
    path = _write(tmp_path, text, name)
    with pytest.raises(SpecError, match=re.escape(f"{path} is not valid {kind}")):
        load_spec(path)


def test_not_a_table_and_no_queries(tmp_path: Path) -> None:
    assert _problems(tmp_path, "[1, 2]", "list.json") == [
        "(top): a spec is a table with [data], [privacy] and [[query]] sections"
    ]
    problems = _problems(tmp_path, HEAD)
    assert problems == ["query: needs at least one [[query]] table"]


def test_unknown_suffix_and_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=re.escape("ends in .toml, .yaml, .yml or .json")):
        load_spec(_write(tmp_path, VALID, "release.ini"))
    with pytest.raises(SpecError, match="cannot read the spec"):
        load_spec(tmp_path / "missing.toml")


def test_validation_and_planning_read_no_data(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = VALID.replace('path = "people.csv"', 'path = "no/such/people.csv"')
    path = _write(tmp_path, text)
    spec = load_spec(path)
    assert not spec.data_path.exists()
    plan = plan_release(spec)
    assert plan.fits, plan.refusal
    table = plan.table()
    assert list(table.columns[:2]) == ["query", "status"]
    assert set(table["status"]) == {"pending"}
    assert list(table["statistic"]) == ["n", "avg_income", "n", "median_age"]
    assert table["epsilon"].sum() == pytest.approx(0.75)
    assert main(["plan", str(path)]) == 0
    out = capsys.readouterr().out
    assert "2 queries from" in out
    assert "fits the budget" in out
    assert not spec.data_path.exists()


# -- one run lists every problem (issue 44, item 1) ----------------------------------------
ROUND_TRIP = """\
[data]
path = "people.csv"

[privacy]
epsilon = 1.0

[[query]]
name = "by_region"
groupby = ["regoin"]
keys = ["north", "south"]
aggs = { n = "count", avg = ["income", "mean"] }
epsilon = 0.6

[[query]]
name = "ages"
aggs = { total = ["agee", "sum"] }
bounds = { agee = [0, 100] }
epsilon = 0.6
"""


def _people(tmp_path: Path) -> None:
    (tmp_path / "people.csv").write_text("region,age,income\nnorth,30,1000\nsouth,40,2000\n")


@pytest.mark.parametrize("command", ["plan", "release"])
def test_one_run_lists_the_columns_the_bound_and_the_budget(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """Two misspelt columns, a missing bound and too much ε: all four, in one run."""
    _people(tmp_path)
    path = _write(tmp_path, ROUND_TRIP)
    out = tmp_path / "out"
    argv = [command, str(path)] + (["--out", str(out), "--quiet"] if command == "release" else [])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err
    first, *problems, header = err.splitlines()
    assert first == f"pandas-dp: invalid spec: {path} is not a valid release spec:"
    assert [p.strip() for p in problems] == [
        "query[1].bounds: missing bounds for 'income' (avg = mean): add income = [lower, "
        "upper], or a schema with its range",
        "query[1].groupby: column 'regoin' is not in the data's header (did you mean 'region'?)",
        "query[2].aggs.total: column 'agee' is not in the data's header (did you mean 'age'?)",
        "privacy.epsilon: the planned releases do not fit: together they need ε=1.2, δ=0 "
        "against the budget of ε=1, δ=0; groupby.agg needs ε=0.6, δ=0 but only ε=0.4, δ=0 of "
        "the session's ε=1, δ=0 budget remains (1 release so far, basic composition). Nothing "
        "was charged. Use a smaller epsilon, or ask the data owner for a budget.",
    ]
    assert header == "The data's header has: region, age, income"
    assert not out.exists()  # nothing read, charged or written


def test_a_query_whose_spend_is_broken_is_not_priced(tmp_path: Path) -> None:
    """The budget check counts what it can price and names the queries it could not."""
    text = ROUND_TRIP.replace("epsilon = 0.6\n", "epsilon = 1.5\n", 1)
    text += '[[query]]\nname = "broken"\naggs = { n = "count" }\nepsilon = "lots"\n'
    path = _write(tmp_path, text)
    with pytest.raises(SpecError) as caught:
        plan_spec_file(path)
    *_, budget = str(caught.value).splitlines()  # no data file: no header to check
    assert budget.strip().startswith("privacy.epsilon: the planned releases do not fit: "
                                     "together they need ε=2.1, δ=0")  # fmt: skip
    assert budget.endswith("(not counted, as what they spend is unknown: query[3])")


def test_a_spec_that_fits_once_fixed_lists_no_budget_problem(tmp_path: Path) -> None:
    _people(tmp_path)
    text = ROUND_TRIP.replace("epsilon = 0.6", "epsilon = 0.5")
    with pytest.raises(SpecError) as caught:
        plan_spec_file(_write(tmp_path, text))
    assert "privacy.epsilon" not in str(caught.value)
    assert len(str(caught.value).splitlines()) == 5  # the three problems and the header


def test_a_data_path_outside_the_folder_is_not_opened_for_its_header(tmp_path: Path) -> None:
    inside = tmp_path / "spec"
    inside.mkdir()
    _people(tmp_path)  # beside the spec's folder, not in it
    text = ROUND_TRIP.replace('path = "people.csv"', 'path = "../people.csv"')
    with pytest.raises(SpecError) as caught:
        plan_spec_file(_write(inside, text))
    assert "data.path: must be a path inside the spec's folder" in str(caught.value)
    assert "header" not in str(caught.value)  # the file outside was never read
