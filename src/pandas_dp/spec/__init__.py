"""Reproducible releases: a spec file, a plan, a run into a folder, and a report.

>>> from pandas_dp.spec import load_spec, plan_release, run_release  # doctest: +SKIP
"""

from pandas_dp.spec.loader import load_spec
from pandas_dp.spec.model import QuerySpec, ReleaseSpec, parse_spec
from pandas_dp.spec.runner import (
    LEDGER_NAME,
    PlannedQuery,
    ReleaseOutcome,
    ReleasePlan,
    plan_release,
    run_release,
)

__all__ = [
    "LEDGER_NAME",
    "PlannedQuery",
    "QuerySpec",
    "ReleaseOutcome",
    "ReleasePlan",
    "ReleaseSpec",
    "load_spec",
    "parse_spec",
    "plan_release",
    "run_release",
]
