"""The duplication guard's limits, asserted as documented (issue 13).

The guard reads index labels. An analyst who computes labels from values can make its
refusal read one bit; the privacy model says so instead of claiming that only code which
duplicates rows is refused. These tests pin the documented behaviour down.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pandas_dp import DuplicatedRowsError

DOCS = Path(__file__).resolve().parents[2] / "docs" / "privacy-model.md"


@pytest.mark.parametrize("secret", [0, 1])
def test_labels_computed_from_values_make_the_refusal_read_a_bit(
    secret: int, charges_nothing: object
) -> None:
    hiv = np.array([secret, 0, 0, 0, 1, 0])  # row 4 always holds a 1: one label -1 at least
    priv = pd.DataFrame({"hiv": hiv}).dp.protect(epsilon=1.0)
    first = priv.iloc[:4]  # the analyst's construction reads row 0 only
    labels = np.where(first["hiv"] == 1, -1, np.arange(4))
    relabelled = first.set_axis(labels)
    if secret:
        with charges_nothing(priv), pytest.raises(DuplicatedRowsError):  # type: ignore[operator]
            relabelled.dp.count(epsilon=0.1)  # refused, for free: it read row 0's secret
    else:
        relabelled.dp.count(epsilon=0.1)  # accepted
        assert priv.dp.session.spent.epsilon == Fraction(1, 10)


def test_the_privacy_model_states_the_limit() -> None:
    text = DOCS.read_text(encoding="utf-8")
    assert "computes* index labels from" in text
    assert "honest mistakes" in text
    assert "only happens to code that duplicates rows" not in text
