"""Keys are chosen from the data only when a call asks for it (issue 26, friction 2).

Before, leaving out ``keys`` in a session with a δ switched to DP partition selection
without a word: ``priv["subject"].dp.value_counts(epsilon=0.1)`` dropped a subject held by
156 rows, while a session without δ refused the same call. Now every such call is refused,
before anything is charged, in both kinds of session, and ``selection=`` asks for it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import pandas_dp  # noqa: F401  (registers the accessors)
from pandas_dp.errors import DPValueError, SpecError
from pandas_dp.publish import load_spec, run_release

SUBJECTS = ["maths"] * 600 + ["physics"] * 156 + ["latin"] * 3


def survey() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    return pd.DataFrame(
        {
            "subject": SUBJECTS,
            "school": rng.choice(["A", "B"], len(SUBJECTS)),
            "hours": rng.uniform(0, 40, len(SUBJECTS)),
        }
    )


UNASKED = {
    "value_counts": lambda p: p["subject"].dp.value_counts(epsilon=0.1),
    "groupby": lambda p: p.dp.groupby("subject"),
    "groupby two columns": lambda p: p.dp.groupby(["school", "subject"]),
    "grouped value_counts": lambda p: p.dp.groupby("school", keys=["A", "B"])[
        "subject"
    ].value_counts(epsilon=0.1),
}
SAYS = {
    "value_counts": "value_counts() got no keys for 'subject'",
    "groupby": "groupby() got no keys for 'subject'",
    "groupby two columns": "groupby() got no keys for 'school', 'subject'",
    "grouped value_counts": "value_counts() got no keys for 'subject'",
}


@pytest.mark.parametrize("delta", [0, 1e-6], ids=["pure", "with delta"])
@pytest.mark.parametrize("call", list(UNASKED))
def test_no_keys_and_no_selection_is_refused_in_every_session(
    call: str, delta: float, charges_nothing: Callable[[Any], Any]
) -> None:
    priv = survey().dp.protect(epsilon=1.0, delta=delta)
    with charges_nothing(priv), pytest.raises(DPValueError) as refusal:
        UNASKED[call](priv)
    text = str(refusal.value)
    assert SAYS[call] in text
    assert "selection='threshold'" in text
    assert "keys=" in text
    assert "Nothing was charged" in text
    assert "physics" not in text  # nothing read off the data
    assert "156" not in text


def test_asking_for_selection_releases_chosen_keys() -> None:
    priv = survey().dp.protect(epsilon=1.0, delta=1e-6)
    counts = priv["subject"].dp.value_counts(epsilon=0.5, selection="threshold")
    assert "maths" in counts.index
    assert "latin" not in counts.index
    assert priv.dp.session.spent.delta > 0
    assert "chosen privately" in priv.dp.session.ledger["note"].iloc[-1]


def test_grouped_value_counts_asks_on_the_call_or_inherits_the_groupby_choice() -> None:
    priv = survey().dp.protect(epsilon=2.0, delta=1e-6)
    asked = priv.dp.groupby("school", keys=["A", "B"])["subject"].value_counts(
        epsilon=0.5, selection="threshold"
    )
    assert set(asked.index.get_level_values(0)) <= {"A", "B"}
    chosen = priv.dp.groupby("school", selection="threshold")
    pairs = chosen["subject"].value_counts(epsilon=0.5)
    assert pairs.index.nlevels == 2
    with pytest.raises(DPValueError, match="leave selection out of value_counts"):
        chosen["subject"].value_counts(epsilon=0.5, selection="optimal")


def test_selection_with_public_keys_is_refused(charges_nothing: Callable[[Any], Any]) -> None:
    priv = survey().dp.protect(epsilon=1.0, delta=1e-6)
    with charges_nothing(priv), pytest.raises(DPValueError, match="leave selection out"):
        priv["subject"].dp.value_counts(["maths"], epsilon=0.1, selection="threshold")


def test_crosstab_still_needs_its_keys() -> None:
    priv = survey().dp.protect(epsilon=1.0, delta=1e-6)
    with pytest.raises(DPValueError, match="crosstab needs public keys for every row"):
        priv.dp.crosstab("school", "subject", epsilon=0.1)


HEAD = """\
[data]
path = "survey.csv"

[privacy]
epsilon = 2.0
delta = 1e-6

[[query]]
name = "by_subject"
groupby = ["subject"]
aggs = { n = "count" }
epsilon = 0.5
"""


def test_release_files_ask_for_selection_too(tmp_path: Path) -> None:
    survey().to_csv(tmp_path / "survey.csv", index=False)
    spec = tmp_path / "release.toml"
    spec.write_text(HEAD)
    with pytest.raises(DPValueError, match=r"by_subject.*got no keys for 'subject'"):
        run_release(load_spec(spec), tmp_path / "out", charts=False)
    assert not (tmp_path / "out" / "ledger.csv").exists()  # refused before any release
    spec.write_text(HEAD + 'selection = "threshold"\n')
    outcome = run_release(load_spec(spec), tmp_path / "out", charts=False)
    assert "latin" not in set(outcome.outputs["by_subject"]["subject"])


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ('selection = "sometimes"\n', "must be 'threshold' or 'optimal'"),
        ('selection = "threshold"\nkeys = ["maths"]\n', "keys are given"),
    ],
)
def test_release_file_selection_is_checked_with_the_spec(
    tmp_path: Path, extra: str, says: str
) -> None:
    spec = tmp_path / "release.toml"
    spec.write_text(HEAD + extra)
    with pytest.raises(SpecError, match=rf"query\[1\]\.selection.*{says}"):
        load_spec(spec)
