"""Run every benchmark and print one markdown report: ``python benchmarks/run.py``.

``--quick`` shrinks the data tenfold (a smoke run); ``--out FILE`` also writes the report;
``--dask`` adds the Dask merge to the joins benchmark, and the Dask benchmark, which writes
5·10**7 rows of parquet to a temporary directory (about a gigabyte); both need
``pandas-dp[dask]``.
Every ratio compares pandas-dp with plain pandas (or numpy, or an installed peer) measured
in the same run on the same machine.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
import pandas as pd

import bench_accounting
import bench_accuracy
import bench_auto_cap
import bench_bounds
import bench_dask
import bench_fixed_costs
import bench_groupby
import bench_hierarchy
import bench_idioms
import bench_logit
import bench_mean
import bench_modelling
import bench_quantile_interval
import bench_queries
import bench_regression
import bench_sampler
import bench_statistics
import bench_tables
import bench_time_and_joins
import bench_units


def main() -> None:
    """Run the suite and print (and optionally save) the report."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="ten times less data")
    parser.add_argument("--out", type=Path, help="also write the report to this file")
    parser.add_argument("--dask", action="store_true", help="also run the (large) Dask benchmark")
    args = parser.parse_args()
    scale = 10 if args.quick else 1
    header = (
        f"# pandas-dp benchmarks\n\npython {platform.python_version()}, pandas {pd.__version__}, "
        f"numpy {np.__version__}, {os.cpu_count()} CPUs, {platform.machine()}"
    )
    sections = [
        header,
        bench_sampler.run(bench_sampler.DRAWS // scale),
        bench_queries.run(bench_queries.ROWS // scale),
        bench_fixed_costs.run(),
        bench_groupby.run(bench_groupby.ROWS // scale),
        bench_hierarchy.run(bench_hierarchy.ROWS // scale),
        bench_idioms.run(bench_idioms.ROWS // scale),
        bench_mean.run(bench_mean.TRIALS // scale)[0],
        bench_accounting.run(),
        bench_statistics.run([n // scale for n in bench_statistics.SIZES]),
        bench_accuracy.run(max(2, bench_accuracy.REPEATS // scale)),
        bench_quantile_interval.run(max(40, bench_quantile_interval.RUNS // scale)),
        bench_bounds.run(max(10, bench_bounds.RUNS // scale)),
        bench_auto_cap.run(max(5, bench_auto_cap.RUNS // scale)),
        bench_tables.run(bench_tables.ROWS // scale, trials=1 if args.quick else 3),
        bench_units.run(bench_units.SIZES[:2] if args.quick else bench_units.SIZES),
        bench_modelling.run(
            bench_modelling.ROWS // scale, runs=max(2, bench_modelling.RUNS // scale)
        ),
        bench_regression.run(
            max(5, bench_regression.RUNS // scale), max(50, bench_regression.COVERAGE_RUNS // scale)
        ),
        bench_logit.run(max(5, bench_logit.RUNS // scale)),
    ]
    joins = ("resample", "merge", "merge-1m", "unit-join")
    joins += ("dask-merge",) if args.dask else ()
    sections.append(
        bench_time_and_joins.run(
            bench_time_and_joins.ROWS // scale, joins, bench_time_and_joins.DASK_ROWS // scale
        )
    )
    if args.dask:
        sections.append(bench_dask.run(bench_dask.ROWS // scale))
    report = "\n\n".join(sections) + "\n"
    print(report)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(report)


if __name__ == "__main__":
    main()
