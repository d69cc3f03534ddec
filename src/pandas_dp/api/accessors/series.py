"""``s.dp``: differentially private releases from a protected Series (pandas or Dask).

One class, :class:`SeriesDPAccessor`, whose methods forward to the query families in
:mod:`pandas_dp.api.queries` and hand each plan to the consumer the accessor holds (see
:mod:`pandas_dp.api.accessors.frame`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Self, Unpack, overload

import pandas as pd

from pandas_dp.api.accessors.base import RELEASE_ONLY, BaseDPAccessor, release_only
from pandas_dp.api.docstrings import shared_doc
from pandas_dp.api.local import randomized_response
from pandas_dp.api.protect import protect
from pandas_dp.api.queries.choice import plan_top_k
from pandas_dp.api.queries.counts import plan_histogram, plan_value_counts
from pandas_dp.api.queries.ungrouped import plan_bounds, plan_quantile
from pandas_dp.api.release import Preview, ReleaseOptions
from pandas_dp.api.release.arguments import (
    CountArgs,
    EstimateT,
    GridArgs,
    Keys,
    NoiseArgs,
    NumberT,
    ProtectArgs,
    RatioArgs,
    Real,
    ValueArgs,
    passes_on,
)
from pandas_dp.api.release.consumers import Consumer, Describe, checked_keywords
from pandas_dp.api.release.planning_rows import planning_rows
from pandas_dp.errors import DPValueError


class SeriesDPAccessor(BaseDPAccessor[NumberT, EstimateT]):
    """Differentially private releases from a protected Series (``s.dp``), pandas or Dask."""

    _obj: pd.Series

    @checked_keywords
    @passes_on("privacy_unit", "max_rows_per_unit", "schema", "validate")
    def protect(
        self, epsilon: Real | None = None, delta: Real = 0, **options: Unpack[ProtectArgs]
    ) -> pd.Series:
        """Return a protected copy of the Series; see ``DataFrame.dp.protect``."""
        return protect(self._obj, epsilon, delta, **options)

    @property
    def preview(self) -> SeriesPreview:
        """Preview releases without spending; see ``DataFrame.dp.preview``."""
        return SeriesPreview(self._obj)

    @checked_keywords
    @shared_doc
    def value_counts(
        self, keys: Keys = None, *, normalize: bool = False, sort: bool = True,
        ascending: bool = False, dropna: bool = True, ci: float | None = None,
        selection: Literal["threshold", "optimal"] | None = None,
        **options: Unpack[CountArgs],
    ) -> Any:  # fmt: skip
        """Release noisy counts of each public key, like ``Series.value_counts``.

        Parameters
        ----------
        keys : list-like or "categories", optional
            The public values to count. ``"categories"`` takes a categorical column's
            categories as the keys (they often come from the data: say so only when they
            are public). Without keys (or a schema's), the call is refused unless
            ``selection`` asks for values chosen from the data.
        {epsilon}
        {delta}
        normalize : bool, default False
            Return shares of all rows instead of counts, as pandas: of every non-missing
            value (every value with ``dropna=False``), the values outside ``keys`` included.
        sort : bool, default True
            Sort by noisy count (post-processing, free).
        ascending : bool, default False
            Sort order.
        dropna : bool, default True
            ``False`` also counts the missing values, under a NaN key (public keys only).
        selection : {"threshold", "optimal"}, optional
            Choose the values to count from the data by DP partition selection (needs a
            session with δ > 0; rare values are dropped): only when asked, as in
            :meth:`DataFrameDPAccessor.groupby`.
        {nonnegative}
        {total}
        {mechanism}
        {ci_table}

        Returns
        -------
        Series or DataFrame
            Named ``"count"`` (``"proportion"`` with ``normalize``), indexed by the keys.

        Notes
        -----
        Values outside ``keys`` and missing values are dropped silently. Sensitivity 1 for
        the vector of counts; discrete Laplace noise of scale ``1/ε`` per key; cost ``ε``.

        With ``normalize=True`` and public keys, one more cell is measured: the rows whose
        value is not missing and matches no key ("other"; unprocessable values too). Each
        row is in one cell, so the vector keeps sensitivity 1 and the cost stays ``ε``
        (parallel composition). The shares are the counts clamped at 0 over the sum of all
        cells, "other" (and with ``dropna=False`` the missing values' cell) included, as
        pandas divides by every row; "other" is not shown. With keys chosen from the data
        (``selection``), the shares are of the released keys' counts.

        Examples
        --------
        >>> import pandas as pd, pandas_dp
        >>> s = pd.Series(["a"] * 300 + ["b"] * 100, name="letter").dp.protect(epsilon=1.0)
        >>> counts = s.dp.value_counts(keys=["a", "b", "c"], epsilon=1.0)
        >>> counts.index[0], counts.name
        ('a', 'count')
        """
        return self._consume(plan_value_counts(
            self._obj, keys, normalize=normalize, sort=sort, ascending=ascending, ci=ci,
            dropna=dropna, selection=selection, **options,
        ))  # fmt: skip

    @checked_keywords
    @shared_doc
    def histogram(
        self, bins: object = None, *, range: object = None, freq: str | None = None,
        right: bool | None = None, include_lowest: bool = False, clip: bool = False,
        ci: float | None = None, **options: Unpack[CountArgs],
    ) -> Any:  # fmt: skip
        """Release noisy counts of the values falling in public bins.

        Parameters
        ----------
        bins : sequence of float, or int
            Public, strictly increasing bin edges; or a number of equal bins over ``range``.
            For a datetime (timedelta) column, edges are Timestamps (Timedeltas), e.g. a
            ``pd.DatetimeIndex``.
        range : (float, float) or "auto", optional
            With ``bins=int``: the public limits, as in :func:`numpy.histogram` (bins are
            then ``[a, b)``, the last one ``[a, b]``, and the index is left-closed); or
            ``"auto"``: a fifth of ``epsilon`` releases them from the data first (the 0.1%
            and 99.9% quantiles, as ``DataFrame.dp.bounds``), in the same charge. With
            ``freq``: ``(start, end)`` as Timestamps (Timedeltas), or text pandas reads as
            one (``("2020-01-01", "2021-01-01")``).
        freq : str, optional
            Datetime and timedelta columns: bins of a pandas frequency (``"D"``, ``"W"``,
            ``"MS"`` ...) over ``range``, cut and labelled like ``resample(freq)``: each bin
            is ``[a, b)``, the index holds resample's labels (a ``DatetimeIndex`` with its
            ``freq``), and ``range=(start, end)`` counts ``start <= t < end``: a value at
            exactly ``end`` begins the next period and is not counted, so
            ``range=(pd.Timestamp("2020-01-01"), pd.Timestamp("2021-01-01"))`` gives the
            twelve months of 2020.
        {epsilon}
        right : bool, optional
            With edges, bins are ``(a, b]`` like :func:`pandas.cut` (the default); ``False``
            makes them ``[a, b)``. Bins of a ``freq`` are always ``[a, b)``.
        include_lowest : bool, default False
            With ``right=True``, also count values equal to the first edge in the first bin.
        clip : bool, default False
            Count values outside the edges in the first or last bin instead of dropping them.
        {nonnegative}
        {total}
        {mechanism}
        {delta}
        {ci_table}

        Returns
        -------
        Series or DataFrame
            Indexed by an IntervalIndex of the bins (of Timestamps for a datetime column,
            like ``pd.cut``), or with ``freq`` by the bins' labels as
            ``df.set_index(col).resample(freq).size()`` gives them; named ``"count"``.

        Notes
        -----
        Missing values are dropped; out-of-range values are dropped unless ``clip``.
        Sensitivity 1 for the vector of counts; discrete Laplace noise of scale ``1/ε`` per
        bin; cost ``ε``. Datetimes are compared with the edges as nanoseconds since 1970
        in float64 (exact to 256 ns until 2043).

        Examples
        --------
        >>> import pandas as pd, pandas_dp
        >>> ages = pd.Series([10, 20, 40, 70] * 250, name="age").dp.protect(epsilon=1.0)
        >>> hist = ages.dp.histogram(bins=[0, 18, 65, 120], epsilon=1.0)
        >>> [str(i) for i in hist.index]
        ['(0.0, 18.0]', '(18.0, 65.0]', '(65.0, 120.0]']
        """
        return self._consume(plan_histogram(
            self._obj, bins, range=range, freq=freq, right=right,
            include_lowest=include_lowest, clip=clip, ci=ci, **options,
        ))  # fmt: skip

    @overload
    def sum(self, *, ci: None = None, **options: Unpack[ValueArgs]) -> NumberT: ...
    @overload
    def sum(self, *, ci: float, **options: Unpack[ValueArgs]) -> EstimateT: ...
    @checked_keywords
    def sum(self, *, ci: float | None = None, **options: Unpack[ValueArgs]) -> object:
        """Release the noisy sum of the values clipped to public bounds.

        Same as ``DataFrame.dp.sum`` on this column; see its Notes for clipping, lattice,
        sensitivity ``max(|lower|, |upper|)``, discrete Laplace noise and cost ``epsilon``.

        Examples
        --------
        >>> import pandas as pd, pandas_dp
        >>> priv = pd.DataFrame({"x": [2.0] * 500}).dp.protect(epsilon=1.0)
        >>> abs(priv["x"].dp.sum(bounds=(0, 2), epsilon=1.0) - 1000) < 100
        True
        """
        return self._scalar("sum", None, ReleaseOptions(ci=ci, **options))

    @overload
    def mean(self, *, ci: None = None, **options: Unpack[RatioArgs]) -> NumberT: ...
    @overload
    def mean(self, *, ci: float, **options: Unpack[RatioArgs]) -> EstimateT: ...
    @checked_keywords
    def mean(self, *, ci: float | None = None, **options: Unpack[RatioArgs]) -> object:
        """Release the noisy mean of the values clipped to public bounds.

        Same as ``DataFrame.dp.mean`` on this column: noisy centred sum over noisy count,
        ε split in half, result clipped to the bounds; cost ``epsilon``.

        Examples
        --------
        >>> import pandas as pd, pandas_dp
        >>> priv = pd.DataFrame({"x": [2.0] * 500}).dp.protect(epsilon=1.0)
        >>> 0 <= priv["x"].dp.mean(bounds=(0, 10), epsilon=1.0) <= 10
        True
        """
        return self._scalar("mean", None, ReleaseOptions(ci=ci, **options))

    @overload
    def var(self, *, ddof: int = 1, ci: None = None, **options: Unpack[RatioArgs]) -> NumberT: ...
    @overload
    def var(self, *, ddof: int = 1, ci: float, **options: Unpack[RatioArgs]) -> EstimateT: ...
    @checked_keywords
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
    @checked_keywords
    def std(
        self, *, ddof: int = 1, ci: float | None = None, **options: Unpack[RatioArgs]
    ) -> object:
        """Release the noisy standard deviation: the square root of :meth:`var` (same cost)."""
        return self._spread(None, "std", ddof, ReleaseOptions(ci=ci, **options))

    @checked_keywords
    def bounds(
        self, *, epsilon: Real | None = None, rho: Real | None = None,
        q: tuple[float, float] = (0.001, 0.999), lower: Real | None = None,
        upper: Real | None = None,
    ) -> tuple[float, float]:  # fmt: skip
        """Release bounds ``(lower, upper)`` that cover most of the values.

        See ``DataFrame.dp.bounds``: the same release for this Series' values (mechanism,
        sensitivity and cost in its Notes).

        Parameters
        ----------
        epsilon : float
            Cost of the release, split equally between the two ends.
        rho : float, optional
            Instead of ``epsilon`` in a zCDP session.
        q : (float, float), default (0.001, 0.999)
            The quantiles aimed at.
        lower, upper : float, optional
            A public end known from the domain (``lower=0`` for incomes): taken as it is,
            and all of ε goes to the other end.

        Returns
        -------
        (float, float)
            Public once released: pass it as ``bounds=`` to later releases. Timestamps for a
            datetime column (scanned outwards from its released median, a third of ε) and
            Timedeltas for a timedelta column.

        Examples
        --------
        >>> import numpy as np, pandas as pd, pandas_dp
        >>> s = pd.Series(np.linspace(0.0, 100.0, 10_001)).dp.protect(epsilon=2.0)
        >>> lower, upper = s.dp.bounds(epsilon=1.0)  # at or past the quantiles (noisy)
        >>> -1 < lower <= 0, 99.9 <= upper
        (True, True)
        """
        options = ReleaseOptions(epsilon=epsilon, rho=rho)
        planned = plan_bounds(self._obj, None, q, options, lower=lower, upper=upper)
        table: Any = self._consume(planned)
        if not isinstance(table, pd.DataFrame):  # a preview describes the release instead
            return table
        ends = table["lower"].iloc[0], table["upper"].iloc[0]
        if isinstance(ends[0], pd.Timestamp | pd.Timedelta):  # a date or duration column's
            return ends
        return float(ends[0]), float(ends[1])

    @checked_keywords
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
        return self._consume(plan_quantile(self._obj, None, q, ReleaseOptions(ci=ci, **options)))

    @overload
    def median(self, *, ci: None = None, **options: Unpack[GridArgs]) -> NumberT: ...
    @overload
    def median(self, *, ci: float, **options: Unpack[GridArgs]) -> EstimateT: ...
    @checked_keywords
    def median(self, *, ci: float | None = None, **options: Unpack[GridArgs]) -> object:
        """Release the noisy median: ``quantile(0.5)`` (see :meth:`quantile`)."""
        return self._consume(plan_quantile(self._obj, None, 0.5, ReleaseOptions(ci=ci, **options)))

    @checked_keywords
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

    @checked_keywords
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
        return self._consume(
            plan_top_k(
                self._obj, None, 1, candidates=candidates, epsilon=epsilon, rho=rho, mode=True
            )
        )

    @checked_keywords
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
        return self._consume(
            plan_top_k(self._obj, None, k, candidates=candidates, epsilon=epsilon, rho=rho)
        )

    @checked_keywords
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

    @checked_keywords
    def min(self, *, ci: float | None = None, **options: Unpack[GridArgs]) -> Any:
        """Release a DP minimum: the grid edge with about no value below it.

        Parameters
        ----------
        bounds : (number, number) or (Timestamp, Timestamp)
            Public ``(lower, upper)``; the answer lies on a grid of ``cells`` equal steps.
        epsilon : float
            Privacy cost (split equally between the estimate and its interval's two ends
            with ``ci``).
        cells : int, optional
            Grid resolution (4096 cells by default).
        ci : float, optional
            Confidence level: an :class:`~pandas_dp.Estimate` whose interval covers the
            sample minimum of the clipped values with probability at least ``ci``.

        Returns
        -------
        float, Timestamp (datetime columns), Timedelta (timedelta columns) or Estimate

        Notes
        -----
        This is *not* the smallest value, which no DP release can promise (one row could
        move it anywhere). It is ``quantile(0)`` by the exponential mechanism: grid edge
        ``k`` scores the number of values below it (sensitivity 1) and is chosen with
        probability ``∝ exp(-ε rank_k / 2)``, sampled exactly. Every edge between the lower
        bound and the smallest value scores 0, so they are equally likely: expect an answer
        between the bound and the true minimum, pulled towards the bound when the data is
        sparse (wide bounds, few rows). That is why ``describe()`` leaves min and max out.
        Missing values are skipped. Budget cost: ``epsilon``.

        Examples
        --------
        >>> import pandas as pd, pandas_dp
        >>> s = pd.Series(range(100, 1000), name="x").dp.protect(epsilon=1.0)
        >>> low = s.dp.min(bounds=(0, 1000), epsilon=1.0, cells=100)
        >>> 0 <= low <= 200  # edges 0..100 score 0; one above 200 has odds below 1e-40
        True
        """
        return self._scalar("min", None, ReleaseOptions(ci=ci, **options))

    @checked_keywords
    def max(self, *, ci: float | None = None, **options: Unpack[GridArgs]) -> Any:
        """Release a DP maximum: the grid edge with about no value above it.

        The mirror image of :meth:`min` (``quantile(1)``): expect an answer between the
        true maximum and the upper bound, pulled towards the bound when the data is sparse.
        Budget cost: ``epsilon``.
        """
        return self._scalar("max", None, ReleaseOptions(ci=ci, **options))


class SeriesPreview(SeriesDPAccessor[Preview, Preview]):
    """``s.dp.preview``: every release method of ``s.dp``, returning a preview instead."""

    _consumer: Consumer = Describe()

    def __getattribute__(self, name: str) -> Any:
        if name in RELEASE_ONLY:
            raise release_only(self, name)
        return super().__getattribute__(name)

    def __call__(self, *, expected_rows: float) -> Self:
        """Preview at a planning row count; see ``DataFrame.dp.preview``."""
        return self._consuming(Describe(planning_rows(expected_rows, None, "preview")))
