"""How readable the house is, in numbers (issue 39): run it on two revisions and compare.

    python benchmarks/house_metrics.py [SRC]     # SRC defaults to this checkout's src/

Prints lines and modules in ``api/``, the largest modules, the MRO length of the accessors
and of ``DPGroupBy``, ContextVars and ``__init_subclass__`` hooks, the widest option objects
(dataclass fields), string comparisons on the library's kinds (value kinds, mechanisms,
statistics, the accounting rule) and the number of ``Any`` annotations. Static counts read
the source text; the MRO lengths import the package from SRC in a subprocess.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

_COMPARED = r"\s*(?:==|!=|(?:not\s+)?in)\s*[\(\[\{]?\s*['\"]"
#: String comparisons on the library's own kinds, by kind (numpy's ``dtype.kind`` and the
#: names of Dask's expression classes are other libraries' vocabularies, not counted).
KIND_COMPARISONS = {
    "value kinds": re.compile(r"\bkind" + _COMPARED + r"(?:number|datetime|timedelta)\b"),
    "mechanisms": re.compile(
        r"\bmechanism" + _COMPARED + r"(?:laplace|gaussian|discrete_\w+|exponential|permute)"
    ),
    "accounting rule": re.compile(r"\baccounting" + _COMPARED + r"(?:basic|advanced|zcdp|pld)\b"),
    "statistics": re.compile(
        r"\b(?:how|error_in)"
        + _COMPARED
        + r"(?:mean|sum|count|var|std|sem|median|quantile|min|max|size|nunique|ranks)\b"
    ),
}

MRO_PROBE = """
import pandas as pd, pandas_dp
df = pd.DataFrame({"a": [1, 2], "g": ["x", "y"]})
priv = df.dp.protect(epsilon=1.0)
print("df.dp", len(type(priv.dp).__mro__))
print("df.dp.preview", len(type(priv.dp.preview).__mro__))
print("s.dp", len(type(priv["a"].dp).__mro__))
print("DPGroupBy", len(type(priv.dp.groupby("g", keys=["x", "y"])).__mro__))
"""


def python_files(root: Path) -> list[Path]:
    """Every module under ``root``."""
    return sorted(root.rglob("*.py"))


def lines(path: Path) -> int:
    """Physical lines of a module."""
    return len(path.read_text().splitlines())


def dataclass_fields(path: Path) -> list[tuple[str, int]]:
    """``(class name, annotated fields)`` of each dataclass a module defines."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ClassDef) and any(
            "dataclass" in ast.unparse(d) for d in node.decorator_list
        ):
            fields = [
                s
                for s in node.body
                if isinstance(s, ast.AnnAssign)
                and isinstance(s.target, ast.Name)
                and "ClassVar" not in ast.unparse(s.annotation)
            ]
            found.append((node.name, len(fields)))
    return found


def report(src: Path) -> None:
    """Print the house's numbers for the package under ``src``."""
    package = src / "pandas_dp"
    api = package / "api"
    files = python_files(package)
    api_files = python_files(api)
    print(f"src: {src}")
    print(f"package: {sum(map(lines, files)):,} lines in {len(files)} modules")
    print(f"api/: {sum(map(lines, api_files)):,} lines in {len(api_files)} modules")
    for path in sorted(files, key=lines, reverse=True)[:3]:
        print(f"  largest: {path.relative_to(package)} {lines(path)}")
    text = {path: path.read_text() for path in files}
    print("ContextVar declarations:", sum(t.count("ContextVar(") for t in text.values()))
    print("__init_subclass__ hooks:", sum(t.count("def __init_subclass__") for t in text.values()))
    for kind, pattern in KIND_COMPARISONS.items():
        found = sum(len(pattern.findall(t)) for t in text.values())
        print(f"string comparisons on {kind}: {found}")
    print("Any (api/):", sum(len(re.findall(r"\bAny\b", text[p])) for p in api_files))
    print("Any (package):", sum(len(re.findall(r"\bAny\b", t)) for t in text.values()))
    widest = sorted(
        (
            (count, f"{path.relative_to(package)}::{name}")
            for path in files
            for name, count in dataclass_fields(path)
        ),
        reverse=True,
    )[:5]
    for count, where in widest:
        print(f"  dataclass fields: {count:3d} {where}")
    probe = subprocess.run(
        [sys.executable, "-c", MRO_PROBE],
        env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )
    for line in (probe.stdout or probe.stderr).splitlines()[-4:]:
        print("MRO length:", line)


if __name__ == "__main__":
    report(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parents[1] / "src")
