"""Local differential privacy: randomized response, and estimates from randomized data.

In the local model each person randomizes their own answer before it is collected, so the
collector never sees a true value. :func:`randomized_response` does that to a Series (one
independent randomization per row) and records its ε and categories in ``attrs``;
:func:`estimate_proportion` turns randomized answers into unbiased proportions with
confidence intervals.

Randomizing *unprotected* data is the respondents' side of a survey and charges nothing.
A Series that carries a pandas-dp session is refused: randomized response releases one
record per row, so the number of rows and which rows exist would leave unprotected, and
pandas-dp's guarantee is about adding or removing a row. Release shares from protected data
with ``value_counts(normalize=True)`` instead (central DP, far more accurate).

Examples
--------
>>> import pandas as pd, pandas_dp
>>> from pandas_dp.local import estimate_proportion
>>> smokers = pd.Series([True] * 300 + [False] * 700, name="smoker")
>>> noisy = smokers.dp.randomized_response(epsilon=2.0)
>>> estimate = estimate_proportion(noisy)
>>> bool(estimate.lower <= estimate.value <= estimate.upper)
True
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import numpy as np
import pandas as pd

from pandas_dp.api.attach import has_session_mark
from pandas_dp.api.keys import parse_keys
from pandas_dp.api.outputs import Estimate
from pandas_dp.api.release.arguments import Real
from pandas_dp.api.session import random_source
from pandas_dp.budget import parse_epsilon
from pandas_dp.engines import engine_for
from pandas_dp.errors import DPTypeError, DPValueError
from pandas_dp.mechanisms.randomized_response import frequency_intervals, randomize

#: Where a randomized Series records how it was randomized.
LOCAL_KEY = "pandas_dp_local"

__all__ = ["LOCAL_KEY", "estimate_proportion", "randomized_response"]


def _categories(series: pd.Series, categories: object) -> pd.Index:
    if categories is None:
        if not pd.api.types.is_bool_dtype(series.dtype):
            raise DPValueError(
                "randomized response needs the public list of categories (categories=[...]); "
                "only bool Series default to [False, True]"
            )
        categories = [False, True]
    index = parse_keys((series.name,), categories)
    assert index is not None
    if len(index) < 2:
        raise DPValueError("randomized response needs at least two categories")
    return index


def _is_boolean(keys: pd.Index) -> bool:
    """Whether the categories are exactly ``[False, True]`` (not the integer codes 0 and 1)."""
    return pd.api.types.is_bool_dtype(keys.dtype) and list(keys) == [False, True]


def randomized_response(
    series: pd.Series,
    *,
    epsilon: Real | None = None,
    categories: Sequence[object] | None = None,
    rng: int | None = None,
    rho: Real | None = None,
) -> pd.Series:
    """Randomize every value independently: ε-local differential privacy per row.

    Parameters
    ----------
    series : Series
        The true answers (bools, or values among ``categories``).
    epsilon : float
        Each row's privacy guarantee.
    categories : list-like, optional
        The public answer categories (required unless the Series is bool). A value outside
        them, or missing, is reported as a uniformly random category.
    rng : int, optional
        Seed for tests only (emits :class:`~pandas_dp.PrivacyLeakWarning`).
    rho : None
        Refused: randomized response is local DP on an unprotected Series, each row's report
        ε-DP on its own, and no session budget is charged, so there is no ρ to spend (a
        per-row ρ would only be ``ε²/2`` in disguise, and the ε-local guarantee is the
        stronger statement). Give ``epsilon``.

    Returns
    -------
    Series
        Same index and name; a Categorical over ``categories`` (bool for bool input), with
        ``attrs["pandas_dp_local"]`` recording the mechanism, ε and categories.

    Notes
    -----
    Keeps each value with probability ``e^ε / (e^ε + k - 1)`` and otherwise reports one of
    the other ``k - 1`` categories uniformly (Warner 1965 for ``k = 2``; generalized randomized
    response for ``k > 2``), sampled exactly from the OS CSPRNG. Cost: nothing for
    unprotected data. A protected Series is refused (see the module docstring).

    Raises
    ------
    DPValueError
        For a Series that carries a pandas-dp session.
    """
    engine = engine_for(series)
    if not engine.in_memory:
        raise DPTypeError(
            f"randomized_response is not supported on {engine.name}: it releases one value per "
            "row, which would bring every row to the client. Randomize an in-memory pandas "
            "Series, or release aggregates (counts, histograms) from the frame instead."
        )
    if not isinstance(series, pd.Series):
        raise DPTypeError(f"randomized_response needs a Series, got {type(series).__name__}")
    if has_session_mark(series):
        raise DPValueError(
            "randomized response releases one record per row, so how many rows there are, and "
            "which, would leave the protected data without noise: pandas-dp's guarantee covers "
            "adding or removing a row. Release shares with .dp.value_counts(keys, "
            "normalize=True, epsilon=...) instead (central DP, far more accurate), or randomize "
            "answers before they are collected (an unprotected Series)."
        )
    if rho is not None:
        raise DPValueError(
            "randomized_response takes epsilon, not rho: it is local DP on an unprotected "
            "Series (each row's report is ε-DP on its own) and charges no session budget, so "
            "there is no ρ-zCDP budget to spend. Pass epsilon=... (each row's ε); in a ρ "
            "session, release shares centrally with .dp.value_counts(keys=..., normalize=True, "
            "rho=...) instead"
        )
    if epsilon is None:
        raise DPTypeError("randomized_response needs epsilon=... (each row's ε)")
    eps = parse_epsilon(epsilon)
    keys = _categories(series, categories)
    source = random_source(rng)
    codes = np.asarray(keys.get_indexer(pd.Index(series.astype(object))), dtype=np.int64)
    unknown = codes < 0
    if unknown.any():
        from pandas_dp.mechanisms.random import uniform_below

        codes[unknown] = uniform_below(source, len(keys), int(unknown.sum()))
    reported = randomize(source, codes, len(keys), eps)
    values = np.asarray(keys)[reported]
    if pd.api.types.is_bool_dtype(series.dtype) and categories is None:
        out = pd.Series(values.astype(bool), index=series.index, name=series.name)
    else:
        out = pd.Series(
            pd.Categorical(values, categories=keys), index=series.index, name=series.name
        )
    out.attrs = {
        LOCAL_KEY: {
            "mechanism": "randomized_response",
            "epsilon": str(eps),
            "categories": list(keys),
        }
    }
    return out


def estimate_proportion(
    noisy: pd.Series,
    epsilon: Real | None = None,
    *,
    categories: Sequence[object] | None = None,
    beta: float = 0.05,
) -> Estimate | pd.DataFrame:
    """Unbiased proportions from randomized answers, with ``1 - beta`` confidence intervals.

    Parameters
    ----------
    noisy : Series
        Output of :func:`randomized_response`.
    epsilon, categories : optional
        Read from ``noisy.attrs`` when not given.
    beta : float, default 0.05
        Each interval misses with probability at most ``beta``.

    Returns
    -------
    Estimate or DataFrame
        For bool answers, the estimated share of ``True``; otherwise one row per category
        with ``estimate``, ``lower`` and ``upper``.

    Notes
    -----
    ``π̂ = (f - q) / (p - q)`` with ``p = e^ε / (e^ε + k - 1)`` and ``q = (1 - p)/(k - 1)``.
    The interval is exact: with ``m`` of the ``n`` rows truly in a category, the count of
    answers in it is ``Bin(m, p) + Bin(n - m, q)``, and the interval holds every ``m / n``
    under which the observed count is not in a tail of probability ``β/2`` (the
    Clopper–Pearson construction for this law; coverage at least ``1 - β`` for every data
    set, per category). It lies in ``[0, 1]`` and is about 30% narrower than Hoeffding's
    ``π̂ ± sqrt(ln(2/β) / (2n)) / (p - q)`` at the same ``β``. Estimates are unbiased and
    may fall outside ``[0, 1]``. This uses only randomized data, so it costs nothing.
    """
    recorded = noisy.attrs.get(LOCAL_KEY, {})
    if epsilon is None:
        if "epsilon" not in recorded:
            raise DPValueError("pass epsilon=..., or a Series made by randomized_response")
        epsilon = Fraction(str(recorded["epsilon"]))  # recorded exactly, as "1/2"
    eps = float(parse_epsilon(epsilon))
    if isinstance(beta, bool) or not isinstance(beta, int | float):
        raise DPTypeError(f"beta must be a number in (0, 1), got {type(beta).__name__}")
    if not 0.0 < beta < 1.0:
        raise DPValueError(f"beta must lie in (0, 1), got {beta}")
    if categories is None:
        categories = recorded.get(
            "categories", [False, True] if pd.api.types.is_bool_dtype(noisy.dtype) else None
        )
    keys = _categories(noisy, categories)
    counts = pd.Series(noisy.astype(object)).value_counts().reindex(list(keys), fill_value=0)
    estimates, lower, upper = frequency_intervals(counts.to_numpy(), eps, beta)
    if _is_boolean(keys):
        return Estimate(float(estimates[1]), float(lower[1]), float(upper[1]), 1.0 - beta)
    return pd.DataFrame(
        {"estimate": estimates, "lower": lower, "upper": upper}, index=pd.Index(keys)
    )
