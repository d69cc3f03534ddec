"""A schema YAML names only pandera's built-in checks (it may come with an untrusted spec).

pandera builds each check with ``getattr(Check, name)``, so a name such as
``register_builtin_check`` would call a classmethod of the author's choosing. pandas-dp reads
the YAML first and refuses any other name, flattened under a column or listed in ``checks``.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pandera.pandas as pa
import pytest

import pandas_dp
from pandas_dp.schema.reader import BUILTIN_CHECKS


def schema_yaml() -> str:
    schema = pa.DataFrameSchema(
        {
            "age": pa.Column(int, pa.Check.in_range(0, 120)),
            "sex": pa.Column(int, pa.Check.isin([0, 1])),
        }
    )
    return schema.to_yaml()


@pytest.mark.parametrize(
    "hostile",
    [
        "    register_builtin_check:\n      value: 1\n",  # flattened under a column
        "    checks:\n      register_backend:\n        value: 1\n",  # in a column's checks
        "    __init_subclass__: {}\n",
    ],
    ids=["flattened", "checks mapping", "dunder"],
)
def test_a_check_that_is_not_a_builtin_is_refused(hostile: str, tmp_path: Path) -> None:
    text = schema_yaml().replace("  age:\n", "  age:\n" + hostile, 1)
    path = tmp_path / "schema.yaml"
    path.write_text(text)
    df = pd.DataFrame({"age": [30, 40], "sex": [0, 1]})
    for source in (text, path):
        with pytest.raises(pandas_dp.DPValueError, match="not pandera built-ins"):
            df.dp.protect(epsilon=1, schema=source)


def test_builtin_checks_still_read(tmp_path: Path) -> None:
    path = tmp_path / "schema.yaml"
    path.write_text(schema_yaml())
    priv = pd.DataFrame({"age": [30, 40], "sex": [0, 1]}).dp.protect(epsilon=1, schema=path)
    assert priv.dp.session.schema.rules("age").bounds == (0, 120)
    assert {"in_range", "isin", "ge", "le"} <= BUILTIN_CHECKS
    assert all(hasattr(pa.Check, name) for name in BUILTIN_CHECKS)  # real pandera names
