"""Release files give integer columns the integer quantile grid only from a schema.

A release file reads ranked columns as float64 (a CSV's inferred dtype depends on its
values, and the plan must not), so a median of ages lies on a grid of equal cells; a
schema that declares the integer dtype gives the integer grid, as the Python API does for
an integer column. Documented in the publishing how-to ("Medians of integer columns").
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd

from pandas_dp.publish import load_spec, plan_release, run_release

CENSUS = Path(__file__).resolve().parents[2] / "src" / "pandas_dp" / "data"
SCHEMA = """\
schema_type: dataframe
version: 0.20.0
columns:
  age:
    dtype: int64
    nullable: false
    checks:
      in_range:
        min_value: 0
        max_value: 100
"""
SPEC = """\
[data]
path = "people.csv"
{schema}

[privacy]
epsilon = 1.0

[[query]]
name = "overall"
aggs = {{ median_age = ["age", "median"] }}
{bounds}
epsilon = 0.5
ci = false
"""


def folder(tmp_path: Path, schema: bool) -> Path:
    shutil.copy(CENSUS / "pums_california_1000.csv", tmp_path / "people.csv")
    (tmp_path / "schema.yaml").write_text(SCHEMA)
    spec = tmp_path / "release.toml"
    spec.write_text(
        SPEC.format(
            schema='schema = "schema.yaml"' if schema else "",
            bounds="" if schema else "bounds = { age = [0, 100] }",
        )
    )
    return spec


def test_a_schema_declaring_the_integer_dtype_gives_the_integer_grid(tmp_path: Path) -> None:
    spec = folder(tmp_path, schema=True)
    run_release(load_spec(spec), tmp_path / "out", charts=False)
    median = pd.read_csv(tmp_path / "out" / "overall.csv")["median_age"].iloc[0]
    assert float(median).is_integer()


def test_without_a_schema_the_grid_has_more_candidates_and_a_larger_rank_error(
    tmp_path: Path,
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    plain = plan_release(load_spec(folder(tmp_path / "a", schema=False))).table()
    typed = plan_release(load_spec(folder(tmp_path / "b", schema=True))).table()
    assert plain["error"].iloc[0] > typed["error"].iloc[0]
