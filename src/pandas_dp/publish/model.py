"""A release spec: what to release, from which data, under which budget.

:func:`parse_spec` checks a spec (parsed from TOML or YAML into plain dicts) completely
before any data is read, and reports *every* problem at once, each prefixed by where it is
(``query[2].bounds.income: lower 10 > upper 5``). Query numbers count from 1, in file order.
:func:`draft_spec` keeps what parsed beside the problems found, for the checks that follow
(columns against the data's header, each query's preview, the budget) to add theirs, so
that one run lists them all.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pandas_dp.accounting.composition import ACCOUNTANTS, Accounting
from pandas_dp.api.keys import parse_by, parse_keys
from pandas_dp.api.release.option_values import MECHANISMS
from pandas_dp.api.release.options import parse_weight_bounds
from pandas_dp.budget import parse_delta, parse_epsilon
from pandas_dp.errors import SpecError
from pandas_dp.planning.statistics import STATISTICS
from pandas_dp.publish.checks import (
    Problems,
    aggs_of,
    bounds_of,
    confined,
    spec_keys,
    strings,
    table,
    with_api,
)
from pandas_dp.publish.where.language import parse_where

FORMATS = ("csv", "parquet")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_SECTIONS = {"data", "privacy", "release", "query"}
_DATA = {"path", "format", "schema"}
_PRIVACY = {"epsilon", "delta", "rho", "accounting", "privacy_unit", "max_rows_per_unit"}
_RELEASE = {"name", "title", "confidence", "formats"}
_QUERY = {
    "name", "description", "groupby", "keys", "aggs", "bounds", "epsilon", "delta", "rho",
    "mechanism", "ci", "where", "fillna", "nonnegative", "max_groups_per_unit",
    "max_rows_per_group", "expected_rows", "weights", "weight_bounds", "selection",
}  # fmt: skip
#: The parts of a query its price (what it would spend) does not depend on: with problems
#: there only, the budget check still prices the query (see :class:`Draft`).
_PRICE_FREE = {"name", "description", "bounds", "where", "fillna", "nonnegative", "ci",
               "expected_rows"}  # fmt: skip
#: Bounds standing in for a value column's missing or invalid ones when pricing a query.
_STAND_IN_BOUNDS = (0.0, 1.0)


@dataclass(frozen=True)
class QuerySpec:
    """One table of a release (see the "Publishing a release" guide for each field)."""

    name: str
    aggs: dict[str, tuple[str | None, str]]
    epsilon: float | None  # None when the query states rho
    groupby: tuple[str, ...] = ()
    keys: object = None  # as written in the spec; validated by the API's parse_keys
    bounds: dict[str, tuple[float, float]] = field(default_factory=dict)
    #: ``bounds = "auto"``: the bounds released from the data first, in the same charge.
    auto_bounds: bool = False
    delta: float | None = None
    #: The ρ the query may spend instead of an ε (a session accounting in zCDP).
    rho: float | None = None
    mechanism: str = "laplace"
    ci: float | None = 0.95
    where: str | None = None
    fillna: dict[str, object] = field(default_factory=dict)  # validated by the API
    nonnegative: bool = False
    max_groups_per_unit: int | None = None
    max_rows_per_group: int | None = None
    #: Keys chosen from the data by DP partition selection ("threshold" or "optimal"):
    #: only when the statement asks for it, never because its keys were left out.
    selection: str | None = None
    expected_rows: float | None = None
    weights: str | None = None
    weight_bounds: tuple[float, float] | None = None
    description: str = ""
    digest: str = ""

    @property
    def tag(self) -> str:
        """The id this query's release carries in the ledger: ``name@<hash of its spec>``."""
        return f"{self.name}@{self.digest}"

    @property
    def columns(self) -> tuple[str, ...]:
        """Every column the query reads."""
        used = list(self.groupby) + [c for c, _ in self.aggs.values() if c is not None]
        return tuple(dict.fromkeys(used + ([self.weights] if self.weights else [])))


@dataclass(frozen=True)
class ReleaseSpec:
    """A whole release: data, budget and queries, validated."""

    path: Path
    data_path: Path
    data_format: str
    schema: Path | None
    privacy: dict[str, Any]
    queries: tuple[QuerySpec, ...]
    name: str
    title: str
    confidence: float = 0.95
    formats: tuple[str, ...] = ("csv",)


def _selection(problems: Problems, at: str, raw: dict[str, Any], grouped: bool) -> object:
    """A statement's ``selection``: keys chosen from the data, only when asked for."""
    selection = raw["selection"]
    if selection not in ("threshold", "optimal"):
        problems.add(f"{at}.selection", f"must be 'threshold' or 'optimal', got {selection!r}")
    elif not grouped:
        problems.add(f"{at}.selection", "selection chooses a groupby's keys: it needs a groupby")
    elif "keys" in raw:
        problems.add(f"{at}.selection", "keys are given: leave selection out (or the keys)")
    return selection


def _digest(*parts: object) -> str:
    text = json.dumps(parts, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _query(
    problems: Problems, at: str, raw: dict[str, Any], shared: dict[str, object], has_schema: bool
) -> QuerySpec:
    problems.unknown(at, raw, _QUERY)
    name = raw.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        problems.add(f"{at}.name", f"needs a name of letters, digits, _ . - (got {name!r})")
        name = "?"
    optional: dict[str, Any] = _spend(problems, at, raw, shared["privacy"])
    mechanism = raw.get("mechanism", "laplace")
    if mechanism not in MECHANISMS:
        problems.add(f"{at}.mechanism", f"must be one of {list(MECHANISMS)}, got {mechanism!r}")
    ci = raw.get("ci", shared["confidence"])
    if ci is not False and not (isinstance(ci, float) and 0 < ci < 1):
        problems.add(f"{at}.ci", f"must be a level in (0, 1) such as 0.95, or false; got {ci!r}")
        ci = shared["confidence"]
    groupby = strings(problems, f"{at}.groupby", raw["groupby"]) if "groupby" in raw else ()
    if "keys" in raw and not groupby:
        problems.add(f"{at}.keys", "keys need a groupby")
    valid_by = bool(groupby) and bool(with_api(problems, f"{at}.groupby", parse_by, list(groupby)))
    keys = raw.get("keys") if valid_by else None
    if keys is not None:
        with_api(problems, f"{at}.keys", parse_keys, tuple(groupby), spec_keys(keys))
        keys = None if "keys" in problems.under(at) else keys  # unusable: none in the draft
    if "selection" in raw:
        optional["selection"] = _selection(problems, at, raw, bool(groupby))
    for key in ("max_groups_per_unit", "max_rows_per_group"):
        if key in raw:
            value = raw[key]
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                problems.add(f"{at}.{key}", f"must be a positive integer, got {value!r}")
            optional[key] = value
    if "delta" in raw:
        with_api(problems, f"{at}.delta", parse_delta, raw["delta"])
        optional["delta"] = raw["delta"]
    optional.update(_weights(problems, at, raw, has_schema))
    if "expected_rows" in raw:
        optional["expected_rows"] = problems.number(f"{at}.expected_rows", raw["expected_rows"])
    where = raw.get("where")
    if where is not None:
        try:
            parse_where(where)  # the restricted language: nothing here ever runs as code
        except SpecError as error:
            problems.add(f"{at}.where", str(error))
    fillna = {str(k): v for k, v in table(problems, f"{at}.fillna", raw.get("fillna")).items()}
    nonnegative = raw.get("nonnegative", False)
    if not isinstance(nonnegative, bool):
        problems.add(f"{at}.nonnegative", f"must be true or false, got {nonnegative!r}")
    aggs = aggs_of(problems, f"{at}.aggs", raw.get("aggs"))
    auto = raw.get("bounds") == "auto"
    if isinstance(raw.get("bounds"), str) and not auto:
        problems.add(
            f"{at}.bounds", f'must be a table of [lower, upper] pairs or "auto", got '
            f"{raw.get('bounds')!r}",
        )  # fmt: skip
    bounds = {} if auto else bounds_of(problems, f"{at}.bounds", raw.get("bounds"))
    if auto and "rho" in raw:
        problems.add(
            f"{at}.bounds", 'bounds = "auto" splits the query\'s epsilon between releasing the '
            "bounds and the statistics: give epsilon, or the bounds",
        )  # fmt: skip
    if auto and not any(STATISTICS[how].reads_values for _, how in aggs.values()):
        problems.add(f"{at}.bounds", 'bounds = "auto": no statistic here reads values to clip')
    for stat, (column, how) in aggs.items():  # counts and distinct counts read no values
        written = raw.get("bounds")
        listed: dict[str, object] = written if isinstance(written, dict) else {}
        given = auto or column in bounds or column in listed
        reads = STATISTICS[how].reads_values
        if column is not None and reads and not given and not has_schema:
            problems.add(
                f"{at}.bounds", f"missing bounds for {column!r} ({stat} = {how}): "
                f"add {column} = [lower, upper], or a schema with its range",
            )  # fmt: skip
    return QuerySpec(
        name=name,
        aggs=aggs,
        groupby=groupby,
        keys=keys,
        bounds=bounds,
        auto_bounds=auto,
        mechanism=str(mechanism),
        ci=None if ci is False else float(ci),
        where=where,
        fillna=fillna,
        nonnegative=bool(nonnegative),
        description=str(raw.get("description", "")),
        digest=_digest(raw, shared),
        **optional,
    )


def _spend(problems: Problems, at: str, raw: dict[str, Any], privacy: object) -> dict[str, Any]:
    """What a query may spend: ``epsilon`` (and ``delta``), or ``rho`` in a zCDP session."""
    settings = privacy if isinstance(privacy, dict) else {}
    accounting = settings.get("accounting", "basic")
    zcdp = "rho" in settings or accounting == Accounting.ZCDP
    if "epsilon" in raw and "rho" in raw:
        problems.add(at, "give what this query may spend: epsilon (and delta), or rho, not both")
    elif "epsilon" not in raw and "rho" not in raw:
        hint = ": epsilon = ..., or rho = ... in this zCDP session" if zcdp else ""
        problems.add(f"{at}.epsilon", f"missing: every query states what it may spend{hint}")
    if "rho" not in raw:
        epsilon = raw.get("epsilon", 1.0)
        valid = with_api(problems, f"{at}.epsilon", parse_epsilon, epsilon) is not None
        return {"epsilon": epsilon if valid else 1.0}
    with_api(problems, f"{at}.rho", parse_epsilon, raw["rho"], "rho")
    if not zcdp:
        problems.add(
            f"{at}.rho", "rho prices a query in zero-concentrated DP, but [privacy] gives "
            f"an epsilon budget under {accounting} accounting: state epsilon = ... in this "
            'query instead, or give [privacy] rho = ... (or accounting = "zcdp")',
        )  # fmt: skip
    if "epsilon" in raw:
        with_api(problems, f"{at}.epsilon", parse_epsilon, raw["epsilon"])
    elif "delta" in raw:
        problems.add(f"{at}.delta", "a query priced in rho needs no delta: leave it out")
    return {"epsilon": None, "rho": raw["rho"]}


def _weights(problems: Problems, at: str, raw: dict[str, Any], has_schema: bool) -> dict:
    """``weights = "w"`` and ``weight_bounds = [lower, upper]``, as the API validates them."""
    weights, bounds = raw.get("weights"), raw.get("weight_bounds")
    if weights is not None and not (isinstance(weights, str) and weights):
        problems.add(f"{at}.weights", f"must be a column name, got {weights!r}")
    if (weights is None) != (bounds is None) and (bounds is not None or not has_schema):
        missing = "weight_bounds = [0, W]" if bounds is None else 'weights = "<column>"'
        problems.add(at, f"weights and weight_bounds go together: add {missing}")
    parsed = None if bounds is None else with_api(
        problems, f"{at}.weight_bounds", parse_weight_bounds, bounds
    )  # fmt: skip
    return {"weights": weights, "weight_bounds": parsed} if weights is not None else {}


def _privacy(problems: Problems, raw: dict[str, Any]) -> dict[str, Any]:
    problems.unknown("privacy", raw, _PRIVACY)
    if ("epsilon" in raw) == ("rho" in raw):
        problems.add("privacy", "give the total budget: epsilon (and delta), or rho")
    for key in ("epsilon", "rho"):
        if key in raw:
            with_api(problems, f"privacy.{key}", parse_epsilon, raw[key], key)
    if "delta" in raw:
        with_api(problems, "privacy.delta", parse_delta, raw["delta"])
    if ("privacy_unit" in raw) != ("max_rows_per_unit" in raw):
        problems.add("privacy", "privacy_unit and max_rows_per_unit go together")
    limit = raw.get("max_rows_per_unit", 1)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        problems.add("privacy.max_rows_per_unit", f"must be a positive integer, got {limit!r}")
    if raw.get("accounting", "basic") not in ACCOUNTANTS:
        problems.add(
            "privacy.accounting", f"must be one of {list(ACCOUNTANTS)}, got {raw['accounting']!r}"
        )
    return dict(raw)


@dataclass(frozen=True)
class Draft:
    """A spec as far as it parsed, and the problems found so far.

    The checks that come after parsing (columns against the data's header, each query's
    preview, the budget) build on it and add their problems to the same list, skipping only
    what depends on a broken part.

    Attributes
    ----------
    spec : ReleaseSpec
        Built from every part that parsed; a broken part is left at its default.
    problems : Problems
        Every problem found so far.
    numbers : tuple of int
        Each query's number in the file (from 1), for messages.
    pricing : tuple of QuerySpec or None
        For each query, the query whose preview gives its price: the query itself when it
        has no problem; a stand-in when its problems are only in parts its price does not
        depend on (its bounds, where, fillna, ...: placeholder bounds, no filter); None when
        its price cannot be known (its epsilon, rho, delta, mechanism, statistics, groupby,
        keys, caps or weights are broken).
    """

    spec: ReleaseSpec
    problems: Problems
    numbers: tuple[int, ...]
    pricing: tuple[QuerySpec | None, ...]

    @property
    def budget_known(self) -> bool:
        """Whether the budget and the schema parsed: what every preview needs."""
        return not self.problems.under("privacy") and not self.problems.under("data.schema")


def _price_free(part: str) -> bool:
    """Whether a problem at this part of a query leaves the query's price known.

    An unknown key counts as the key it is closest to (``bound`` as ``bounds``): a misspelt
    ``mechanism`` may have meant another price.
    """
    if part in _QUERY or not part:
        return part in _PRICE_FREE
    close = difflib.get_close_matches(part, sorted(_QUERY), n=1)
    return not close or close[0] in _PRICE_FREE


def _pricing(query: QuerySpec, broken: set[str]) -> QuerySpec | None:
    """The query to preview for ``query``'s price (see :attr:`Draft.pricing`)."""
    if not broken:
        return query
    if not all(_price_free(part) for part in broken):
        return None
    missing = {
        column: _STAND_IN_BOUNDS
        for column, how in query.aggs.values()
        if column is not None and STATISTICS[how].reads_values and column not in query.bounds
    }
    return replace(query, bounds={**query.bounds, **missing}, where=None, fillna={})


def parse_spec(raw: object, path: Path, data: Path | None = None) -> ReleaseSpec:
    """Validate a parsed spec; raise :class:`SpecError` listing every problem.

    ``data``: the data file, named by the data owner; it takes the place of the spec's
    ``data.path`` (which may then be left out). Paths in the spec stay inside its folder.
    """
    draft = draft_spec(raw, path, data)
    draft.problems.raise_if_any()
    return draft.spec


def draft_spec(raw: object, path: Path, data: Path | None = None) -> Draft:
    """Check a parsed spec's structure and values; keep what parsed and every problem.

    Raises :class:`SpecError` only when the spec is not a table at all (nothing more can be
    checked); see :func:`parse_spec` for ``data``.
    """
    override = data
    problems = Problems(str(path))
    if not isinstance(raw, dict):
        problems.fail("(top)", "a spec is a table with [data], [privacy] and [[query]] sections")
    problems.unknown("", raw, _SECTIONS)
    section = table(problems, "data", raw.get("data"))
    problems.unknown("data", section, _DATA)
    data_path = section.get("path") if override is None else str(override)
    if not isinstance(data_path, str) or not data_path:
        problems.add("data.path", "missing: the CSV or Parquet file to release from")
        data_path = "?"
    suffix = Path(data_path).suffix.lower().lstrip(".")
    data_format = section.get("format", "parquet" if suffix in ("parquet", "pq") else "csv")
    if data_format not in FORMATS:
        problems.add("data.format", f"must be one of {list(FORMATS)}, got {data_format!r}")
    if override is None and isinstance(data_path, str) and data_path != "?":
        confined(problems, "data.path", path.parent, data_path)
    schema = section.get("schema")
    confined_schema = None
    if schema is not None and not isinstance(schema, str):
        problems.add("data.schema", f"must be a path to a pandera YAML schema, got {schema!r}")
    elif schema is not None:
        confined_schema = confined(problems, "data.schema", path.parent, schema)
    privacy = _privacy(problems, table(problems, "privacy", raw.get("privacy")))
    release = table(problems, "release", raw.get("release"))
    problems.unknown("release", release, _RELEASE)
    confidence = release.get("confidence", 0.95)
    if not (isinstance(confidence, float) and 0 < confidence < 1):
        problems.add("release.confidence", f"must be a level in (0, 1), got {confidence!r}")
        confidence = 0.95
    formats = strings(problems, "release.formats", release.get("formats", ["csv"]))
    for fmt in formats:
        if fmt not in FORMATS:
            problems.add("release.formats", f"{fmt!r} is not one of {list(FORMATS)}")
    shared = {"confidence": confidence, "data": section, "privacy": privacy}
    queries = raw.get("query")
    if not isinstance(queries, list) or not queries:
        problems.add("query", "needs at least one [[query]] table")
        queries = []
    parsed, numbers, pricing = [], [], []
    seen: set[str] = set()
    for number, item in enumerate(queries, start=1):
        at = f"query[{number}]"
        if not isinstance(item, dict):
            problems.add(at, "must be a table")
            continue
        query = _query(problems, at, item, shared, schema is not None)
        if query.name in seen:
            problems.add(f"{at}.name", f"{query.name!r} is used twice")
        seen.add(query.name)
        parsed.append(query)
        numbers.append(number)
        pricing.append(_pricing(query, problems.under(at)))
    base = path.parent
    spec = ReleaseSpec(
        path=path,
        data_path=override if override is not None else base / data_path,
        data_format=str(data_format),
        schema=None if schema is None else confined_schema,
        privacy=privacy,
        queries=tuple(parsed),
        name=str(release.get("name", path.stem)),
        title=str(release.get("title", release.get("name", path.stem))),
        confidence=float(confidence),
        formats=formats or ("csv",),
    )
    return Draft(spec, problems, tuple(numbers), tuple(pricing))
