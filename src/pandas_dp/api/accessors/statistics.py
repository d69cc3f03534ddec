"""``Series.dp`` spreads, quantiles, distinct counts, mode and top-k (a mixin).

The DataFrame forms, which name a column first, are in :mod:`.frame_statistics`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Unpack, overload

import pandas as pd

from pandas_dp.api.accessors.base import BaseDPAccessor
from pandas_dp.api.docstrings import shared_doc
from pandas_dp.api.local import randomized_response
from pandas_dp.api.queries.choice import plan_top_k
from pandas_dp.api.queries.ungrouped import plan_quantile
from pandas_dp.api.release import ReleaseOptions
from pandas_dp.api.release.arguments import (
    EstimateT,
    GridArgs,
    NoiseArgs,
    NumberT,
    RatioArgs,
    Real,
)
from pandas_dp.errors import DPValueError


class SeriesStatistics(BaseDPAccessor[NumberT, EstimateT]):
    """``Series.dp`` spreads, quantiles, mode and top-k."""

    @overload
    def var(self, *, ddof: int = 1, ci: None = None, **options: Unpack[RatioArgs]) -> NumberT: ...
    @overload
    def var(self, *, ddof: int = 1, ci: float, **options: Unpack[RatioArgs]) -> EstimateT: ...
    def var(
        self, *, ddof: int = 1, ci: float | None = None, **options: Unpack[RatioArgs]
    ) -> object:
        """Release the noisy variance of the values clipped to public bounds.

        Parameters
        ----------
        bounds : (float, float)
            Public ``(lower, upper)``; values are clipped to them.
        epsilon : float
            Privacy cost, split equally among a count, a centred sum and a sum of squares.
        ddof : int, default 1
            Delta degrees of freedom, as in ``Series.var``.
        fillna, delta, mechanism, ci
            As for ``Series.dp.mean``; the interval is conservative (each of the three
            measurements gets a third of ``1 - ci``, combined by interval arithmetic).

        Returns
        -------
        float or Estimate
            Always within ``[0, ((upper - lower) / 2)**2]``.

        Notes
        -----
        Values are clipped and centred at the public midpoint ``c`` of the bounds (never at
        a data-dependent mean). Three noisy measurements: the count (sensitivity 1), the
        centred sum ``Σ(x - c)`` (sensitivity ``(upper - lower)/2``) and the sum of squares
        ``Σ(x - c)²``, each row's square rounded and capped on a public lattice (sensitivity
        ``((upper - lower)/2)²``), so float rounding can never push a row beyond its share.
        ``var = (S2 - S1²/N) / max(N - ddof, 1)`` with ``N = max(noisy count, 1)``, clamped:
        free post-processing. Budget cost: ``epsilon``.

        Examples
        --------
        >>> import pandas as pd, pandas_dp
        >>> ages = pd.Series([20.0, 40.0] * 500, name="age").dp.protect(epsilon=3.0)
        >>> v = ages.dp.var(bounds=(0, 100), epsilon=3.0)
        >>> 0 <= v <= 2500 and abs(v - 100) < 60  # true variance 100
        True
        """
        return self._spread(None, "var", ddof, ReleaseOptions(ci=ci, **options))

    @overload
    def std(self, *, ddof: int = 1, ci: None = None, **options: Unpack[RatioArgs]) -> NumberT: ...
    @overload
    def std(self, *, ddof: int = 1, ci: float, **options: Unpack[RatioArgs]) -> EstimateT: ...
    def std(
        self, *, ddof: int = 1, ci: float | None = None, **options: Unpack[RatioArgs]
    ) -> object:
        """Release the noisy standard deviation: the square root of :meth:`var` (same cost)."""
        return self._spread(None, "std", ddof, ReleaseOptions(ci=ci, **options))

    @shared_doc
    def quantile(
        self,
        q: float | Sequence[float] = 0.5,
        *,
        ci: float | None = None,
        **options: Unpack[GridArgs],
    ) -> Any:
        """Release noisy quantiles by the exponential mechanism (Smith 2011).

        Parameters
        ----------
        q : float or list of float, default 0.5
            Quantile level(s) in ``[0, 1]``.
        bounds : (float, float)
            Public ``(lower, upper)``; the answer lies on a grid of ``cells`` equal steps.
        epsilon : float
            Privacy cost, split equally among the levels (and, with ``ci``, equally between
            each estimate and its interval's two ends).
        {cells}
        ci : float, optional
            Confidence level, e.g. 0.95: an :class:`~pandas_dp.Estimate` for one level; for
            several, a DataFrame indexed by ``q`` with ``<name>``, ``<name>_lower`` and
            ``<name>_upper`` columns. The interval covers the sample quantile of the clipped
            values (``Series.quantile``) with probability at least ``ci``.

        Returns
        -------
        float, or Series indexed by ``q`` (Estimate or DataFrame with ``ci``)

        Notes
        -----
        Candidates are the grid's edges (the integers, on an integer column with integer
        bounds at most ``cells`` apart); edge ``c`` scores the distance ``s`` from ``q n`` to
        its rank interval ``[#{x < c}, #{x <= c}]`` (0 inside it, so ties at ``c`` favour
        ``c``), whose sensitivity is ``Δ = max(q, 1 - q)`` (one row moves each count by at
        most 1 and ``q n`` by ``q``; 1/2 for the median), and is chosen with probability
        ``∝ exp(-ε s / (2Δ))``, sampled exactly. Missing values are skipped.
        With probability ``1 - α`` the rank error is below ``2Δ (ln(K) + ln(1/α)) / ε`` for
        ``K`` candidates (see ``priv.dp.preview``).
        With ``ci``, each end of the interval is found by the sparse vector technique: a
        scan over the grid's edges that stops where the noisy rank crosses a threshold set
        below (above) ``q n`` by the noise's own margin, so each end holds with probability
        ``1 - (1 - ci)/2`` whatever the data's shape (ties and empty cells included); see
        :mod:`pandas_dp.mechanisms.quantile_interval`.
        Quantiles 0 and 1 are *not* the minimum and maximum: they are the grid edges at
        which about no value lies below (above), which the noise makes imprecise (see
        ``Series.dp.min``). Datetime columns take Timestamp bounds; their grid is in nanoseconds
        and the result comes back as datetimes in the column's unit and zone.
        Budget cost: ``epsilon``.

        Examples
        --------
        >>> import pandas as pd, pandas_dp
        >>> s = pd.Series(range(1000), name="x").dp.protect(epsilon=2.0)
        >>> med = s.dp.quantile(0.5, bounds=(0, 1000), epsilon=2.0)
        >>> abs(med - 500) < 50
        True
        """
        return self._execute(plan_quantile(self._obj, None, q, ReleaseOptions(ci=ci, **options)))

    @overload
    def median(self, *, ci: None = None, **options: Unpack[GridArgs]) -> NumberT: ...
    @overload
    def median(self, *, ci: float, **options: Unpack[GridArgs]) -> EstimateT: ...
    def median(self, *, ci: float | None = None, **options: Unpack[GridArgs]) -> object:
        """Release the noisy median: ``quantile(0.5)`` (see :meth:`quantile`)."""
        return self._execute(plan_quantile(self._obj, None, 0.5, ReleaseOptions(ci=ci, **options)))

    def nunique(
        self, *, dropna: bool = True, ci: float | None = None, **options: Unpack[NoiseArgs]
    ) -> Any:
        """Release the noisy number of distinct non-missing values, like ``Series.nunique``.

        Notes
        -----
        Values are compared in canonical form (``1``, ``1.0`` and ``True`` are one value;
        unhashable values do not count). One row adds at most one distinct value:
        sensitivity 1, discrete Laplace noise of scale ``1/ε``. Budget cost: ``epsilon``.
        The noisy count is clamped at 0 (free post-processing): an integer, never negative;
        its interval's ends too. Not available on Dask (a partition cannot see the others'
        values).

        Examples
        --------
        >>> import pandas as pd, pandas_dp
        >>> s = pd.Series(["a", "b", "a"] * 300, name="code").dp.protect(epsilon=1.0)
        >>> abs(s.dp.nunique(epsilon=1.0) - 2) < 30  # scale 1: P(|noise| >= 30) < 2e-13
        True
        """
        if dropna is not True:
            raise DPValueError("nunique counts non-missing values only: leave dropna=True")
        return self._scalar("nunique", None, ReleaseOptions(ci=ci, **options))

    def mode(
        self,
        *,
        candidates: Sequence[object] | None = None,
        epsilon: Real | None = None,
        rho: Real | None = None,
    ) -> Any:
        """Release the most frequent of the public ``candidates`` (exponential mechanism).

        Notes
        -----
        Scores are the candidates' counts (monotone, sensitivity 1): candidate ``c`` is
        chosen with probability ``∝ exp(ε count_c)``, sampled exactly. Values outside the
        candidates are ignored silently. Budget cost: ``epsilon``. In a ρ session (``protect(
        rho=...)``) an ε-DP choice is charged ``ρ = ε²/8`` (bounded range), and ``rho=`` gives
        the choice ``ε = sqrt(8ρ)``.

        Examples
        --------
        >>> import pandas as pd, pandas_dp
        >>> s = pd.Series(["a"] * 900 + ["b"] * 100, name="code").dp.protect(epsilon=1.0)
        >>> s.dp.mode(candidates=["a", "b", "c"], epsilon=1.0)
        'a'
        """
        return self._execute(
            plan_top_k(
                self._obj, None, 1, candidates=candidates, epsilon=epsilon, rho=rho, mode=True
            )
        )

    def top_k(
        self,
        k: int,
        *,
        candidates: Sequence[object] | None = None,
        epsilon: Real | None = None,
        rho: Real | None = None,
    ) -> list[Any]:
        """Release the ``k`` most frequent public candidates, most frequent first.

        Notes
        -----
        Peeling: ``k`` rounds of the exponential mechanism with ``ε/k`` each, every round
        choosing among the candidates not chosen yet (sequential composition: cost
        ``epsilon`` in all). In a ρ session each round is charged ``(ε/k)²/8`` (bounded
        range), ``ε²/(8k)`` in all; ``rho=`` gives the rounds ``ε = sqrt(8ρk)`` together.
        """
        return self._execute(
            plan_top_k(self._obj, None, k, candidates=candidates, epsilon=epsilon, rho=rho)
        )

    def randomized_response(
        self,
        *,
        epsilon: Real | None = None,
        categories: Sequence[object] | None = None,
        rng: int | None = None,
        rho: Real | None = None,
    ) -> pd.Series:
        """Randomize every value (local DP); see :func:`pandas_dp.local.randomized_response`.

        ``rho=`` is refused: local DP charges no session budget, so there is no ρ to spend.
        """
        return randomized_response(
            self._obj, epsilon=epsilon, categories=categories, rng=rng, rho=rho
        )
