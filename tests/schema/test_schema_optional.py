"""pandera is an optional extra: without it everything but schemas works, and a schema gives
an error with the install line.

Its absence is simulated by blocking every ``pandera`` module in ``sys.modules`` (an import of
a module mapped to None raises ImportError), and once in a fresh interpreter.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pandas as pd
import pytest

from pandas_dp.errors import DPError, MissingExtraError, NotProtectedError

from .conftest import People

ROOT = Path(__file__).resolve().parents[2]
HINT = "pip install 'pandas-dp[pandera]'"


@pytest.fixture
def without_pandera(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == "pandera" or m.startswith("pandera.")]:
        monkeypatch.setitem(sys.modules, name, None)
    for name in ["pandera", "pandera.pandas", "pandera.errors"]:
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ImportError):
        import pandera.pandas  # noqa: F401


@pytest.fixture
def frame() -> pd.DataFrame:
    return pd.DataFrame({"age": [30, 40, 50], "income": [1.0, 2.0, 3.0], "region": ["north"] * 3})


@pytest.mark.usefixtures("without_pandera")
@pytest.mark.parametrize("validate", [True, False])
def test_schema_without_pandera_names_the_extra(
    frame: pd.DataFrame, tmp_path: Path, validate: bool
) -> None:
    path = tmp_path / "people.yaml"
    path.write_text("schema_type: dataframe\ncolumns: {}\n", encoding="utf-8")
    for schema in (path, str(path), People):
        with pytest.raises(MissingExtraError) as raised:
            frame.dp.protect(epsilon=1.0, schema=schema, validate=validate)
        assert HINT in str(raised.value)
        assert "'pandera'" in str(raised.value)
        assert isinstance(raised.value, ImportError)
        assert isinstance(raised.value, DPError)
    assert frame.attrs == {}
    with pytest.raises(NotProtectedError):
        _ = frame.dp.session


@pytest.mark.usefixtures("without_pandera")
def test_everything_else_works_without_pandera(frame: pd.DataFrame) -> None:
    priv = frame.dp.protect(epsilon=1.0)
    assert priv.dp.rules.empty
    priv["age"].dp.mean(bounds=(0, 120), epsilon=0.5)
    priv.dp.groupby("region", keys=["north", "south"]).count(epsilon=0.5)
    assert priv.dp.session.spent.epsilon == 1


def test_importing_pandas_dp_does_not_import_pandera(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import sys
        sys.modules["pandera"] = None  # as if it were not installed
        import pandas as pd
        import pandas_dp
        import pandas_dp.schema
        priv = pd.DataFrame({"age": [30, 40]}).dp.protect(epsilon=1.0)
        priv["age"].dp.mean(bounds=(0, 120), epsilon=0.5)
        try:
            pd.DataFrame({"age": [1]}).dp.protect(epsilon=1.0, schema="people.yaml")
        except pandas_dp.errors.MissingExtraError as error:
            print("MISSING:", error)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
        cwd=tmp_path, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"MISSING: this feature needs the optional dependency 'pandera': {HINT}" in done.stdout


def test_pandera_is_declared_as_an_extra() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    assert any(req.startswith("pandera") for req in extras["pandera"])
    assert not any(req.startswith("pandera") for req in project["dependencies"])
