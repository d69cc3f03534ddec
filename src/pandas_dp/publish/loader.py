"""Read a release spec from TOML (stdlib ``tomllib``), YAML (``pandas-dp[yaml]``) or JSON."""

from __future__ import annotations

import json
import os
import re
import tomllib
from pathlib import Path
from typing import Any

from pandas_dp.errors import SpecError
from pandas_dp.optional import require
from pandas_dp.publish.model import ReleaseSpec, parse_spec


def _yaml_loader(yaml: Any) -> type:  # Any: the base class of its Loader
    """PyYAML's safe loader, reading ``1e-6`` as a number as YAML 1.2 (and TOML) do."""

    class Loader(yaml.SafeLoader):  # type: ignore[misc]
        pass

    number = re.compile(r"^[-+]?(?:\d[\d_]*)?\.?\d*(?:[eE][-+]?\d+)$")
    Loader.add_implicit_resolver("tag:yaml.org,2002:float", number, list("-+0123456789."))
    return Loader


def _parse(path: Path, text: str) -> object:
    suffix = path.suffix.lower()
    if suffix == ".toml":
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise SpecError(f"{path} is not valid TOML: {error}") from None
    if suffix in (".yaml", ".yml"):
        yaml = require("yaml", "yaml")
        try:
            return yaml.load(text, Loader=_yaml_loader(yaml))
        except yaml.YAMLError as error:
            raise SpecError(f"{path} is not valid YAML: {error}") from None
    if suffix == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as error:
            raise SpecError(f"{path} is not valid JSON: {error}") from None
    raise SpecError(f"{path}: a spec file ends in .toml, .yaml, .yml or .json")


def read_spec_file(path: str | os.PathLike[str]) -> object:
    """A spec file's content as plain values (tables, lists, strings, numbers), unchecked.

    Raises
    ------
    SpecError
        If the file cannot be read or is not valid TOML, YAML or JSON.
    """
    spec_path = Path(path)
    try:
        text = spec_path.read_text(encoding="utf-8")
    except OSError as error:
        raise SpecError(f"cannot read the spec {spec_path}: {error.strerror}") from None
    return _parse(spec_path, text)


def load_spec(
    path: str | os.PathLike[str], *, data: str | os.PathLike[str] | None = None
) -> ReleaseSpec:
    """Read and validate a release spec; relative paths in it are relative to the file.

    Raises
    ------
    SpecError
        Listing every problem, each prefixed by where it is (``query[2].bounds.income``).
        :func:`~pandas_dp.publish.plan_spec_file` also checks the columns against the data's
        header, previews the queries and checks the budget, listing all in one error.
    """
    return parse_spec(read_spec_file(path), Path(path), None if data is None else Path(data))
