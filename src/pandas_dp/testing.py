"""Helpers for testing code that uses pandas-dp (and for pandas-dp's own tests).

:func:`capture_noise` replaces a session's noise with a recorder, so a test can assert the
exact aggregate a release computed, the mechanism and scale it would have used, and the
charge it recorded, without any randomness. It voids the privacy guarantee of that session
while active, so it emits :class:`~pandas_dp.PrivacyLeakWarning`, and every release charged
meanwhile is marked ``randomness="captured"`` in the ledger.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pandas as pd

from pandas_dp.api.attach import session_of
from pandas_dp.api.session import Session
from pandas_dp.errors import PrivacyLeakWarning, warn
from pandas_dp.mechanisms.exponential import ExponentialMechanism
from pandas_dp.mechanisms.random import I64
from pandas_dp.planning.noise import Additive, NoiseSource


@dataclass(frozen=True)
class NoiseCall:
    """One request for noise: the mechanism (with its scale) and how many variates."""

    mechanism: Additive | ExponentialMechanism
    size: int


@contextmanager
def capture_noise(
    target: pd.DataFrame | pd.Series | Session,
    value: int = 0,
    *,
    script: Sequence[Sequence[int]] | None = None,
) -> Iterator[list[NoiseCall]]:
    """Replace the session's noise by the constant ``value`` and record every request.

    Exponential-mechanism choices (quantiles, modes) pick the best-scoring candidate.

    Parameters
    ----------
    target : DataFrame, Series or Session
        A protected object, or its session.
    value : int, default 0
        The "noise" returned for every variate, in lattice units.
    script : sequence of sequences of int, optional
        The noise of each request in turn instead (``script[i]`` for the ``i``-th, one value
        per variate, in lattice units): to test what a release does with given noise.

    Yields
    ------
    list of NoiseCall
        Filled in as releases draw noise.

    Examples
    --------
    >>> import warnings, pandas as pd, pandas_dp
    >>> from pandas_dp.testing import capture_noise
    >>> priv = pd.DataFrame({"x": [1, 2, 3]}).dp.protect(epsilon=1.0)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
    ...     with capture_noise(priv) as calls:
    ...         n = priv.dp.count(epsilon=0.5)
    >>> n, calls[0].mechanism.scale
    (3, Fraction(2, 1))
    """
    session = target if isinstance(target, Session) else session_of(target)
    warn(
        "capture_noise replaces a session's noise; releases made meanwhile are not private",
        PrivacyLeakWarning,
    )
    calls: list[NoiseCall] = []

    scripted = iter(script) if script is not None else None

    def fake(mechanism: Additive, n: int) -> I64:
        calls.append(NoiseCall(mechanism, n))
        if scripted is None:
            return np.full(n, value, dtype=np.int64)
        chosen = np.asarray(next(scripted), dtype=np.int64)
        if chosen.size != n:
            raise ValueError(
                f"noise request {len(calls)} draws {n} values, the script {chosen.size}"
            )
        return chosen

    def best(mechanism: ExponentialMechanism, scores: I64, denominator: int) -> I64:
        calls.append(NoiseCall(mechanism, len(scores)))
        return np.asarray(np.argmin(scores, axis=1), dtype=np.int64)

    # Words (key selection, synthetic rows' seed) still come from the session's own source.
    words = session.noise_source.words_from
    with session.using_noise(NoiseSource("captured", fake, best, words)):
        yield calls
