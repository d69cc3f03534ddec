"""Reproducible releases: a spec file, a plan, a run into a folder, and a report.

``load_spec(path)`` reads and validates a spec, ``plan_release(spec)`` previews it without
reading data (``plan_spec_file(path)`` does both, listing every problem at once), and
``run_release(spec, out_dir)`` releases it with a ledger and a report; see the "Publishing
a release" guide.
"""

from pandas_dp.publish.loader import load_spec
from pandas_dp.publish.model import QuerySpec, ReleaseSpec, parse_spec
from pandas_dp.publish.outcome import PlannedQuery, ReleaseOutcome, ReleasePlan
from pandas_dp.publish.runner import LEDGER_NAME, plan_release, plan_spec_file, run_release

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
    "plan_spec_file",
    "run_release",
]
