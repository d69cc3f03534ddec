"""Release files with ``bounds = "auto"`` (issue 41): checked before reading, one charge each.

A query's bounds released from the data (a fifth of its ε, as ``bounds="auto"`` in the API),
its statistics clipped to them; the plan shows the bounds' share, the ledger one row whose
note gives the bounds. A broken ``bounds`` is a problem found before any data is read.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pandas_dp.accounting.ledger_file import read_ledger
from pandas_dp.errors import SpecError
from pandas_dp.publish import load_spec, plan_release, run_release

SPEC = """\
[data]
path = "incomes.csv"

[privacy]
epsilon = 4.0
{accounting}

[[query]]
name = "by_region"
{price}
aggs = {{ people = "count", avg_income = ["income", "mean"], p50 = ["income", "median"] }}
bounds = {bounds}
groupby = ["region"]
keys = ["north", "south"]
"""


def _spec(
    folder: Path, bounds: str = '"auto"', price: str = "epsilon = 2.0", accounting: str = ""
) -> Path:
    gen = np.random.default_rng(41)  # test data only, never noise
    rows = 20_000
    frame = pd.DataFrame({
        "region": gen.choice(["north", "south"], rows),
        "income": gen.lognormal(10, 1, rows).round(2),
    })  # fmt: skip
    frame.to_csv(folder / "incomes.csv", index=False)
    path = folder / "release.toml"
    path.write_text(SPEC.format(bounds=bounds, price=price, accounting=accounting))
    return path


def test_a_file_releases_with_bounds_from_the_data(tmp_path: Path) -> None:
    spec = load_spec(_spec(tmp_path))
    (query,) = spec.queries
    assert query.auto_bounds
    assert query.bounds == {}
    plan = plan_release(spec)
    table = plan.queries[0].preview.table
    assert table.loc[table["how"] == "bounds", "epsilon"].sum() == pytest.approx(0.4)
    assert plan.queries[0].preview.epsilon == pytest.approx(2.0)
    outcome = run_release(spec, tmp_path / "out", charts=False)
    assert outcome.status["by_region"].startswith("released")
    released = pd.read_csv(tmp_path / "out" / "by_region.csv").set_index("region")
    data = pd.read_csv(tmp_path / "incomes.csv")
    _, (entry,) = read_ledger(tmp_path / "out" / "ledger.jsonl")
    assert entry.release.cost.epsilon == 2
    assert entry.release.asked.endswith("bounds='auto'")
    assert entry.release.note.startswith("bounds='auto': 0.2 of ε on bounds released")
    ((column, lower, upper),) = entry.release.bounds
    assert column == "income"
    # What holds for every noise draw (the noise here is real): a scan stops inside the 5%
    # or 95% quantile only past about 1,000 ranks of deficit (e**-50), and the counts'
    # noise (scale below 3) stays far inside 100; the mean's depends on the bounds drawn.
    assert lower <= data["income"].quantile(0.05) < data["income"].quantile(0.95) <= upper
    for region in ("north", "south"):
        rows = data.loc[data["region"] == region, "income"]
        assert abs(released.loc[region, "people"] - len(rows)) < 100
        assert np.isfinite(released.loc[region, "avg_income"])


@pytest.mark.parametrize(
    ("bounds", "price", "accounting", "problem"),
    [
        (
            '"automatic"',
            "epsilon = 2.0",
            "",
            'must be a table of \\[lower, upper\\] pairs or "auto"',
        ),
        ('"auto"', "rho = 0.1", 'accounting = "zcdp"\ndelta = 1e-6', "give epsilon, or the bounds"),
    ],
)
def test_a_broken_auto_is_found_before_reading(
    tmp_path: Path, bounds: str, price: str, accounting: str, problem: str
) -> None:
    with pytest.raises(SpecError, match=problem):
        load_spec(_spec(tmp_path, bounds, price, accounting))


def test_auto_on_counts_only_is_a_problem(tmp_path: Path) -> None:
    path = _spec(tmp_path)
    text = path.read_text().replace(
        ', avg_income = ["income", "mean"], p50 = ["income", "median"]', ""
    )
    path.write_text(text)
    with pytest.raises(SpecError, match="no statistic here reads values to clip"):
        load_spec(path)
