"""Fixtures for the pandera bridge: the issue's ``People`` schema in every style it may take,
and census-based data that satisfies it.

The same schema is written four ways and every style must give the same releases:

- ``model``: the ``People`` DataFrameModel class, exactly as in the issue;
- ``schema``: an equivalent DataFrameSchema built by hand (not from the model);
- ``yaml path``: the model's YAML written to a file, passed as a path;
- ``yaml loaded``: a DataFrameSchema loaded from the model's YAML text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pandera.pandas as pa
import pytest

REGIONS = ["north", "south", "east", "west"]
AGE = (0.0, 120.0)
INCOME = (0.0, 200_000.0)
STYLES = ["model", "schema", "yaml path", "yaml loaded"]
#: The ledger notes each style must produce (a hand-built schema uses the same check names).
AGE_SOURCE = "bounds of age from the schema (in_range)"
INCOME_SOURCE = "bounds of income from the schema (greater_than_or_equal_to, less_than_or_equal_to)"
REGION_SOURCE = "keys of region from the schema (isin)"


class People(pa.DataFrameModel):
    """The schema of the issue."""

    age: int = pa.Field(in_range={"min_value": 0, "max_value": 120})
    income: float = pa.Field(ge=0, le=200_000, nullable=True)
    region: str = pa.Field(isin=REGIONS)


PEOPLE_SCHEMA = pa.DataFrameSchema(
    {
        "age": pa.Column(int, pa.Check.in_range(0, 120)),
        "income": pa.Column(float, [pa.Check.ge(0), pa.Check.le(200_000)], nullable=True),
        "region": pa.Column(str, pa.Check.isin(REGIONS)),
    },
    name="People",
)


def schema_in_style(style: str, tmp_path: Path) -> Any:
    """The ``People`` schema as ``protect(schema=...)`` receives it in ``style``."""
    if style == "model":
        return People
    if style == "schema":
        return PEOPLE_SCHEMA
    if style == "yaml path":
        path = tmp_path / "people.yaml"
        path.write_text(People.to_yaml(), encoding="utf-8")
        return path
    if style == "yaml loaded":
        return pa.DataFrameSchema.from_yaml(People.to_yaml())
    raise AssertionError(style)


@pytest.fixture(params=STYLES)
def people_schema(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """The ``People`` schema in each of the four styles."""
    return schema_in_style(request.param, tmp_path)


@pytest.fixture
def people(census: pd.DataFrame) -> pd.DataFrame:
    """Census rows that satisfy ``People``: incomes capped at 200,000, every 11th missing.

    Regions follow age (north < 35 <= south < 55 <= east); ``west`` has no rows. Every
    value lies on the lattices used below (whole numbers), so zero-noise releases are exact.
    """
    data = census[["age", "income"]].copy()
    data["income"] = data["income"].clip(upper=INCOME[1]).astype("float64")
    data.loc[data.index[::11], "income"] = np.nan
    data["region"] = np.where(
        data["age"] < 35, "north", np.where(data["age"] < 55, "south", "east")
    )
    assert (data["income"].dropna() % 1 == 0).all()
    return data
