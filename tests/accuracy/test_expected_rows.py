"""One name for the planning row count, and previews that state every statistic's error.

Issue 26, friction 4: previews of means said ``error NaN``; ``preview.mean(..., n=1400)`` was
a TypeError while ``epsilon_for`` took ``n=``, ``Preview`` had ``mean_error(n)`` and release
files said ``expected_rows``. Now ``expected_rows`` is the name everywhere (``n=`` still
works with a FutureWarning), and a preview given it states the error of means and spreads.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import pandas_dp
from pandas_dp.errors import DPTypeError, DPValueError
from pandas_dp.planning.statistics.base import Inputs
from pandas_dp.planning.statistics.planning import PlanningInputs
from pandas_dp.planning.statistics.postprocess import PostProcess
from pandas_dp.publish import load_spec, plan_release

BOUNDS = (0.0, 100.0)


@pytest.fixture
def priv() -> pd.DataFrame:
    frame = pd.DataFrame({"x": np.linspace(0, 90, 500), "g": np.arange(500) % 2})
    return frame.dp.protect(epsilon=1.0, delta=1e-6)


def test_a_preview_given_expected_rows_states_a_means_error(priv) -> None:
    plain = priv.dp.preview.mean("x", bounds=BOUNDS, epsilon=0.3)
    assert np.isnan(plain.table.loc["mean", "error"])
    planned = priv.dp.preview.mean("x", bounds=BOUNDS, epsilon=0.3, expected_rows=1400)
    error = planned.table.loc["mean", "error"]
    assert error == pytest.approx(plain.mean_error(1400)["mean"], rel=1e-12)
    assert error == pytest.approx(plain.errors(1400)["mean"], rel=1e-12)
    assert priv.dp.session.spent.epsilon == 0


def test_every_statistic_of_an_agg_gets_an_error(priv) -> None:
    table = priv.dp.preview.agg(
        n="count", m=("x", "mean"), v=("x", "var"), s=("x", "std"), e=("x", "sem"),
        md=("x", "median"), bounds={"x": BOUNDS}, epsilon=1.0, expected_rows=1400,
    ).table  # fmt: skip
    assert table["error"].notna().all(), table
    assert table.loc["s", "error"] ** 2 <= table.loc["v", "error"] * 1.0001  # sqrt shrinks
    assert table.loc["e", "error"] < table.loc["s", "error"]  # divided by sqrt(n)


def test_a_grouped_preview_takes_it_per_group(priv) -> None:
    grouped = priv.dp.preview.groupby("g", keys=[0, 1])
    few = grouped.mean("x", bounds=BOUNDS, epsilon=0.5, expected_rows=100).table
    many = grouped.mean("x", bounds=BOUNDS, epsilon=0.5, expected_rows=10_000).table
    assert few.loc["x", "error"] > 10 * many.loc["x", "error"]


@pytest.mark.parametrize("how", ["var", "std", "sem"])
def test_a_spreads_planned_error_bounds_its_interval_on_any_data(priv, how) -> None:
    # The planned error is the largest over a grid of data; data between grid points
    # (random means and spreads within the bounds) stay within a few percent of it.
    preview = priv.dp.preview.agg(v=("x", how), bounds={"x": BOUNDS}, epsilon=1.0)
    (out,) = preview.outputs
    n, alpha = 800.0, 1 - preview.confidence
    planned = out.stat.planned_error(out.inputs(), alpha, n)
    rng = np.random.default_rng(4)
    reach = 50.0
    p = rng.uniform(-reach, reach, 4000)
    v = rng.uniform(0, 1, 4000) * (reach**2 - p**2)
    inputs = out.inputs()
    data = PlanningInputs(inputs.parts, inputs.bounds, (n * (v + p**2), n * p, np.full(4000, n)))
    lower, upper = out.stat.interval(data, alpha)
    value = out.stat.value(data, PostProcess())
    worst = float(np.max(np.maximum(upper - value, value - lower)))
    assert worst <= planned * 1.05
    assert worst >= planned * 0.8  # the grid is not loose either
    assert isinstance(inputs, Inputs)


def test_epsilon_for_takes_expected_rows_and_n_with_a_warning(priv) -> None:
    new = priv.dp.epsilon_for("mean", error=1.0, bounds=BOUNDS, expected_rows=1000)
    with pytest.warns(FutureWarning, match=r"epsilon_for\(n=\.\.\.\) is now"):
        old = priv.dp.epsilon_for("mean", error=1.0, bounds=BOUNDS, n=1000)
    assert new == old
    with pytest.raises(DPValueError, match="needs expected_rows="):
        priv.dp.epsilon_for("mean", error=1.0, bounds=BOUNDS)


def test_mean_error_takes_the_new_name_and_the_old_one(priv) -> None:
    plan = priv.dp.preview.mean("x", bounds=BOUNDS, epsilon=0.3)
    new = plan.mean_error(expected_rows=1000.0)["mean"]
    with pytest.warns(FutureWarning):
        old = plan.mean_error(n=1000.0)["mean"]
    assert new == old == plan.mean_error(1000)["mean"]


@pytest.mark.parametrize("bad", [0, -3, float("nan"), float("inf"), "1000", True])
def test_bad_planning_counts_are_refused(priv, bad) -> None:
    with pytest.raises(DPValueError, match="expected_rows must be"):
        priv.dp.preview.mean("x", bounds=BOUNDS, epsilon=0.3, expected_rows=bad)


def test_a_release_refuses_a_planning_count_and_charges_nothing(priv, charges_nothing) -> None:
    with charges_nothing(priv), pytest.raises(DPTypeError, match="a planning value for previews"):
        priv.dp.mean("x", bounds=BOUNDS, epsilon=0.3, expected_rows=1000)
    with pytest.raises(DPTypeError, match="groupby\\(\\) takes no expected_rows"):
        priv.dp.preview.groupby("g", keys=[0, 1], expected_rows=10)


SPEC = """\
[data]
path = "people.csv"

[privacy]
epsilon = 1.0

[[query]]
name = "spread"
aggs = {{ s = ["x", "std"], m = ["x", "mean"] }}
bounds = {{ x = [0, 100] }}
epsilon = 0.5
{extra}
"""


def test_release_files_state_spreads_errors_at_expected_rows(tmp_path: Path) -> None:
    pd.DataFrame({"x": np.linspace(0, 90, 300)}).to_csv(tmp_path / "people.csv", index=False)
    spec = tmp_path / "release.toml"
    spec.write_text(SPEC.format(extra="expected_rows = 300"))
    table = plan_release(load_spec(spec)).table().set_index("statistic")
    assert table["error"].notna().all(), table
    spec.write_text(SPEC.format(extra=""))
    table = plan_release(load_spec(spec)).table().set_index("statistic")
    assert table["error"].isna().all()


# -- issue 44, item 5: a NaN error says why, wherever it is shown --------------------------
COUNTED = (
    "error NaN for {names}: a mean's or a spread's error depends on its row count, which is "
    "private; pass expected_rows=<a planning row count> (per group in a group-by) to see it"
)


@pytest.mark.parametrize(
    ("call", "names"),
    [
        (lambda p: p.dp.preview.mean("x", bounds=BOUNDS, epsilon=0.3), "mean"),
        (
            lambda p: p.dp.preview.agg(
                n="count", m=("x", "mean"), s=("x", "std"), bounds={"x": BOUNDS}, epsilon=0.3
            ),
            "m, s",
        ),
        (
            lambda p: p.dp.preview.groupby("g", keys=[0, 1]).mean("x", bounds=BOUNDS, epsilon=0.3),
            "x",
        ),
        (lambda p: p["x"].dp.preview.std(bounds=BOUNDS, epsilon=0.3), "std"),
    ],
    ids=["mean", "agg", "groupby", "series std"],
)
def test_a_nan_error_says_to_pass_expected_rows_in_text_and_in_a_notebook(
    priv, call, names: str
) -> None:
    preview = call(priv)
    note = COUNTED.format(names=names)
    assert repr(preview).endswith("\n" + note)
    assert preview._repr_html_().endswith(
        "<p>" + note.replace("'", "&#x27;").replace("<", "&lt;").replace(">", "&gt;") + "</p>"
    )
    assert "\x1b" not in repr(preview)
    assert priv.dp.session.spent.epsilon == 0


def test_no_note_when_every_error_is_known(priv) -> None:
    counted = priv.dp.preview.mean("x", bounds=BOUNDS, epsilon=0.3, expected_rows=1400)
    counts = priv.dp.preview.count(epsilon=0.3)
    for preview in (counted, counts):
        assert "NaN" not in repr(preview)
        assert "error NaN" not in preview._repr_html_()
        assert preview.unknown_errors() == []


def test_an_error_no_row_count_gives_says_so_instead(priv) -> None:
    preview = priv.dp.preview.ols("x ~ g", bounds={"x": BOUNDS, "g": (0, 1)}, epsilon=0.3)
    assert preview.unknown_errors() == [
        "error NaN for ols: no error bound before the release (it depends on more of the data "
        "than a row count)"
    ]
    assert "expected_rows" not in repr(preview)


# -- issue 39, item 2: the consumer is a value -------------------------------------------
def test_a_preview_called_with_expected_rows_states_every_later_previews_error(priv) -> None:
    at_1400 = priv.dp.preview(expected_rows=1400)
    per_call = priv.dp.preview.mean("x", bounds=BOUNDS, epsilon=0.3, expected_rows=1400)
    assert at_1400.mean("x", bounds=BOUNDS, epsilon=0.3).table.equals(per_call.table)
    grouped = at_1400.groupby("g", keys=[0, 1]).mean("x", bounds=BOUNDS, epsilon=0.5)
    assert grouped.table.equals(
        priv.dp.preview.groupby("g", keys=[0, 1])
        .mean("x", bounds=BOUNDS, epsilon=0.5, expected_rows=1400)
        .table
    )
    series = priv["x"].dp.preview(expected_rows=1400).std(bounds=BOUNDS, epsilon=0.3)
    assert not np.isnan(series.table.loc["std", "error"])
    few = at_1400.mean("x", bounds=BOUNDS, epsilon=0.3, expected_rows=100)  # the call's own
    assert few.table.loc["mean", "error"] > per_call.table.loc["mean", "error"]
    assert priv.dp.session.spent.epsilon == 0


def test_a_preview_called_checks_its_planning_count(priv) -> None:
    with pytest.raises(DPValueError, match="expected_rows must be a number >= 1"):
        priv.dp.preview(expected_rows=0)
    with pytest.raises(TypeError, match="expected_row"):
        priv.dp.preview(expected_row=10)


def test_a_preview_has_no_protect_and_no_preview_of_its_own(priv) -> None:
    for preview in (priv.dp.preview, priv["x"].dp.preview, priv.dp.preview(expected_rows=10)):
        for name in ("protect", "preview"):
            assert not hasattr(preview, name)
            with pytest.raises(AttributeError, match=f"call {name} on .dp itself"):
                getattr(preview, name)
    assert priv.dp.preview.count(epsilon=0.1).epsilon == 0.1  # the rest is there
    assert priv.dp.session.spent.epsilon == 0


def test_accessors_and_group_bys_hold_their_consumer_as_a_value(priv) -> None:
    from pandas_dp.api.release.consumers import RUN, Describe, Run

    assert priv.dp._consumer == RUN == Run()
    assert priv.dp.preview._consumer == Describe()
    assert priv.dp.preview(expected_rows=10)._consumer == Describe(expected_rows=10.0)
    assert priv.dp.groupby("g", keys=[0, 1])._consumer == RUN
    assert priv.dp.preview.groupby("g", keys=[0, 1])._consumer == Describe()
    tagged = priv.dp._consuming(Run(tag="q1"))
    tagged.count(epsilon=0.1)
    assert priv.dp.session.ledger["tag"].iloc[-1] == "q1"
    priv.dp.count(epsilon=0.1)
    assert priv.dp.session.ledger["tag"].iloc[-1] != "q1"


def test_no_ambient_state_on_the_release_path() -> None:
    source = Path(pandas_dp.__file__).parent
    for path in source.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "ContextVar" not in text, path
        assert "__init_subclass__" not in text, path
    from pandas_dp.api.queries.groupby import DPGroupBy

    for accessor in (pd.DataFrame.dp, pd.Series.dp):  # the class, the shared base, Generic
        assert len(accessor.__mro__) <= 4, accessor.__mro__
    assert DPGroupBy.__mro__ == (DPGroupBy, object)  # one class, no mixins
