"""Survey-like data for the weights tests: dyadic values and weights with adversarial rows.

Values are integers and weights multiples of 1/4, so every product ``w·(x - c)`` of the tests
(with ``c`` a midpoint of integer or half-integer bounds) is exact in binary floating point
and the documented oracle (``oracles.weighted``) computes the very numbers the engine sums.
Weights include missing, negative, ±inf and huge values; values include missing, ±inf and
huge ones; some rows sit in a group no key names.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

KEYS = ["a", "b", "c", "d"]  # "d" has no rows


@pytest.fixture(scope="session")
def survey_data() -> pd.DataFrame:
    gen = np.random.default_rng(20251125)  # test data only, never noise
    rows = 400
    frame = pd.DataFrame(
        {
            "x": gen.integers(-20, 131, rows).astype("float64"),
            "w": gen.integers(-4, 37, rows) / 4.0,
            "g": gen.choice(["a", "b", "c", "zz"], rows, p=[0.4, 0.3, 0.25, 0.05]),
            "id": np.arange(rows) // 3,
        }
    )
    frame.loc[frame.index[::9], "x"] = np.nan
    frame.loc[frame.index[::7], "w"] = np.nan
    frame.loc[[1, 2, 3, 4], "x"] = [np.inf, -np.inf, 1e308, -1e308]
    frame.loc[[5, 6, 8, 10, 11], "w"] = [np.inf, -np.inf, 1e308, -1e308, -2.5]
    return frame


@pytest.fixture
def survey(survey_data: pd.DataFrame) -> pd.DataFrame:
    """A fresh copy of the survey data, unprotected."""
    return survey_data.copy()
