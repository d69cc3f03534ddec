"""Where the caps' priorities come from: the OS CSPRNG drawn as read, or a seeded stream.

A session on the OS CSPRNG hands the caps a stateless source (they draw only the bits they
read); a seeded session (tests only) hands its own stream, every word drawn where it was, so
a seeded release under a unit is reproducible and the same as before the caps drew lazily.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from pandas_dp.engines.bounding import SystemPriorities


def _frame(rows: int = 20_000) -> pd.DataFrame:
    gen = np.random.default_rng(5)  # test data only
    return pd.DataFrame(
        {
            "key": gen.integers(0, 3, rows),
            "unit": gen.integers(0, rows // 10, rows),  # about 10 rows per unit, cap 2
            "x": gen.uniform(0, 1, rows),
        }
    )


def test_a_session_on_the_os_csprng_hands_the_caps_a_stateless_source() -> None:
    priv = _frame().dp.protect(epsilon=1.0, privacy_unit="unit", max_rows_per_unit=2)
    source = priv.dp.session.cap_priorities
    assert isinstance(source, SystemPriorities)
    assert source.stateless


def test_a_seeded_session_hands_its_stream_and_stays_reproducible(protect_seeded) -> None:
    def release(seed: int) -> pd.DataFrame:
        frame = _frame()
        priv = protect_seeded(frame, seed, epsilon=10.0, privacy_unit="unit", max_rows_per_unit=2)
        assert not getattr(priv.dp.session.cap_priorities, "stateless", False)
        return priv.dp.groupby("key", keys=[0, 1, 2]).count(epsilon=1.0)

    pd.testing.assert_series_equal(release(3), release(3))
