"""Checks of release-file values: every problem collected with its path, none raised early.

The numbers, bounds, group-bys and keys of a spec go through the Python API's own
validation (:func:`with_api`), so a spec follows the same rules as a call; paths stay inside
the spec's folder (:func:`confined`).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn, TypeVar

from pandas_dp.api.validation import parse_bounds
from pandas_dp.errors import DPError, SpecError
from pandas_dp.planning.statistics import STATISTICS
from pandas_dp.planning.statistics.parsing import closest_statistic

Parsed = TypeVar("Parsed")


class Problems:
    """Collects path-qualified problems; raises them all at the end.

    One collector goes through every phase of checking a spec (its structure and values,
    its columns against the data's header, each query's preview, the budget), so that one
    run lists every problem; a phase skips only what depends on a part already found broken.
    """

    def __init__(self, source: str) -> None:
        self.source = source
        self.wheres: list[str] = []
        self.items: list[str] = []
        self.notes: list[str] = []

    def add(self, where: str, message: str) -> None:
        """Record one problem at ``where``."""
        self.wheres.append(where)
        self.items.append(f"{where}: {message}")

    def note(self, text: str) -> None:
        """A line shown after the problems, if there are any (what would help fix them)."""
        self.notes.append(text)

    def under(self, prefix: str, since: int = 0) -> set[str]:
        """The parts below ``prefix`` with a problem recorded after the first ``since``.

        ``under("query[2]")`` gives ``{"bounds", "aggs"}`` for problems at
        ``query[2].bounds.income`` and ``query[2].aggs.avg``; a problem at ``query[2]``
        itself gives ``""``.
        """
        parts = set()
        for where in self.wheres[since:]:
            if where == prefix or where.startswith(f"{prefix}."):
                parts.add(where.removeprefix(prefix).lstrip(".").split(".")[0])
        return parts

    def unknown(self, where: str, table: dict[str, object], allowed: set[str]) -> None:
        """Record every key of ``table`` outside ``allowed``, with the closest allowed one."""
        for key in table:
            if key not in allowed:
                close = difflib.get_close_matches(str(key), sorted(allowed), n=1)
                hint = f"; did you mean {close[0]!r}?" if close else f"; allowed: {sorted(allowed)}"
                self.add(f"{where}.{key}" if where else str(key), f"unknown key{hint}")

    def number(self, where: str, value: object, *, low: float = 0.0, strict: bool = True) -> float:
        """A finite number above ``low`` (or at least ``low``), else record the problem."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.add(where, f"must be a number, got {value!r}")
            return math.nan
        if not math.isfinite(value) or (value <= low if strict else value < low):
            self.add(where, f"must be {'>' if strict else '>='} {low:g}, got {value!r}")
        return float(value)

    def fail(self, where: str, message: str) -> NoReturn:
        """Record one problem and raise every problem so far: nothing more can be checked."""
        self.add(where, message)
        raise self.error()

    def raise_if_any(self) -> None:
        """Raise one :class:`SpecError` listing every problem, if there are any."""
        if self.items:
            raise self.error()

    def error(self) -> SpecError:
        """One :class:`SpecError` listing every problem so far."""
        listed = "\n  ".join(self.items)
        notes = "".join(f"\n{note}" for note in self.notes)
        return SpecError(f"{self.source} is not a valid release spec:\n  {listed}{notes}")


def table(problems: Problems, where: str, value: object) -> dict[str, object]:
    """A table of settings (empty when absent), else record the problem."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        problems.add(where, f"must be a table of settings, got {type(value).__name__}")
        return {}
    return value


def strings(problems: Problems, where: str, value: object) -> tuple[str, ...]:
    """One column name or a list of them, as a tuple."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) and v for v in items):
        problems.add(where, f"must be a column name or a list of them, got {value!r}")
        return ()
    return tuple(items)


def aggs_of(problems: Problems, where: str, value: object) -> dict[str, tuple[str | None, str]]:
    """Named statistics: ``n = "count"`` or ``name = ["column", "statistic"]``."""
    if not isinstance(value, dict) or not value:
        problems.add(where, 'needs at least one statistic, e.g. { n = "count" }')
        return {}
    aggs: dict[str, tuple[str | None, str]] = {}
    for name, stat in value.items():
        at = f"{where}.{name}"
        column, how = (None, stat) if isinstance(stat, str) else (None, None)
        if isinstance(stat, list) and len(stat) == 2 and all(isinstance(s, str) for s in stat):
            column, how = stat
        if how is None:
            problems.add(at, f'give "count" or ["column", "sum"], got {stat!r}')
        elif how not in STATISTICS:
            close = closest_statistic(how)
            hint = f"did you mean {close!r}? " if close else ""
            problems.add(at, f"unknown statistic {how!r}; {hint}choose from {list(STATISTICS)}")
        elif column is None and how != "count":
            rows = ' (or "count" alone, which counts rows)' if how == "size" else ""
            problems.add(at, f'{how!r} needs a column of the data: ["<column>", "{how}"]{rows}')
        else:
            aggs[str(name)] = (column, how)
    return aggs


def spec_keys(keys: object) -> object:
    """TOML/YAML keys: lists of lists become tuples (one per combination)."""
    if isinstance(keys, list) and keys and all(isinstance(k, list) for k in keys):
        return [tuple(k) for k in keys]
    return keys


def with_api(
    problems: Problems, where: str, parse: Callable[..., Parsed], *args: object
) -> Parsed | None:
    """Validate with the Python API's own function: the same rules, the error at ``where``."""
    try:
        return parse(*args)
    except DPError as error:
        problems.add(where, str(error))
        return None


def bounds_of(problems: Problems, where: str, value: object) -> dict[str, tuple[float, float]]:
    """``{column: [lower, upper]}``, each pair validated as the API validates bounds."""
    bounds: dict[str, tuple[float, float]] = {}
    for column, pair in table(problems, where, value).items():
        parsed = with_api(problems, f"{where}.{column}", parse_bounds, pair)
        if parsed is not None:
            bounds[str(column)] = parsed
    return bounds


def confined(problems: Problems, where: str, base: Path, text: str) -> Path:
    """``text`` as a path inside the spec's folder: a spec names no other file.

    A release file may come from someone other than the data owner; it may only point at
    files beside it or below it (no absolute path, no ``..``, no link leading out).
    """
    path = Path(text)
    if path.is_absolute() or ".." in path.parts:
        problems.add(
            where, f"must be a path inside the spec's folder, got {text!r} (the data owner "
            "can name any data file with --data)",
        )  # fmt: skip
        return base / path.name
    inside = (base / path).resolve()
    if not inside.is_relative_to(base.resolve()):
        problems.add(where, f"{text!r} leads out of the spec's folder (through a link)")
    return base / path
