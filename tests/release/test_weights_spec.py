"""Release specs with survey weights: ``weights = "w"`` and ``weight_bounds = [lower, upper]``.

Validated by the API's own rules before any data is read, planned (previewed on an empty
frame) with the weighted sensitivity, and released into a ledger that names the weights.
The noise is real: a discrete Laplace draw of scale ``b`` exceeds ``b ln(2/p)`` with
probability below ``p = 1e-9``.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pandas_dp.accounting.ledger_file import read_ledger
from pandas_dp.errors import SpecError
from pandas_dp.publish import load_spec, plan_release, run_release

SPEC = """\
[data]
path = "survey.csv"

[privacy]
epsilon = 2.0

[[query]]
name = "by_region"
epsilon = 1.0
{weights}
aggs = {{ people = "count", avg_income = ["income", "mean"] }}
bounds = {{ income = [0, 100000] }}
groupby = ["region"]
keys = ["north", "south"]
"""
WEIGHTS = 'weights = "w"\nweight_bounds = [0, 400]'


def _spec(folder: Path, weights: str = WEIGHTS) -> Path:
    gen = np.random.default_rng(5)  # test data only, never noise
    rows = 5_000
    frame = pd.DataFrame(
        {
            "region": gen.choice(["north", "south"], rows),
            "income": gen.uniform(0, 90_000, rows).round(2),
            "w": gen.uniform(50, 350, rows).round(1),
        }
    )
    frame.to_csv(folder / "survey.csv", index=False)
    path = folder / "release.toml"
    path.write_text(SPEC.format(weights=weights))
    return path


@pytest.mark.parametrize(
    ("weights", "problem"),
    [
        ('weights = "w"', "weights and weight_bounds go together: add weight_bounds"),
        ("weight_bounds = [0, 400]", 'add weights = "<column>"'),
        (
            'weights = "w"\nweight_bounds = [-1, 400]',
            "weight_bounds: weight_bounds must have lower",
        ),
        ("weights = 3\nweight_bounds = [0, 4]", "weights: must be a column name"),
    ],
)
def test_spec_weights_are_checked_before_reading(
    tmp_path: Path, weights: str, problem: str
) -> None:
    with pytest.raises(SpecError, match=problem):
        load_spec(_spec(tmp_path, weights))


def test_unknown_weight_column_is_named_before_anything_is_charged(tmp_path: Path) -> None:
    spec = load_spec(_spec(tmp_path, 'weights = "weight"\nweight_bounds = [0, 400]'))
    with pytest.raises(SpecError, match="column 'weight' is not in the data's header"):
        plan_release(spec)


def test_weighted_release_from_a_spec(tmp_path: Path) -> None:
    spec = load_spec(_spec(tmp_path))
    plan = plan_release(spec)
    table = plan.queries[0].preview.table
    assert table.loc["people", "scale"] == pytest.approx(
        400 / float(table.loc["people", "epsilon"])
    )
    outcome = run_release(spec, tmp_path / "out", charts=False)
    assert outcome.status["by_region"].startswith("released")
    released = pd.read_csv(tmp_path / "out" / "by_region.csv").set_index("region")
    data = pd.read_csv(tmp_path / "survey.csv")
    _, (entry,) = read_ledger(tmp_path / "out" / "ledger.jsonl")
    (count,) = [m for m in entry.release.measurements if m.label == "count(weights=w)"]
    bound = float(count.scale) * 2.0**count.exponent * math.log(2 / 1e-9)
    for region in ("north", "south"):
        truth = data.loc[data["region"] == region, "w"].sum()  # about 500,000 per region
        assert abs(released.loc[region, "people"] - truth) < bound
    assert "rows weighted by w, clipped to [0, 400]" in entry.release.note
    assert entry.release.columns == ("region", "income", "w")
