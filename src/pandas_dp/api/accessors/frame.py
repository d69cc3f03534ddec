"""``df.dp``: differentially private releases from a protected DataFrame (pandas or Dask).

One class, :class:`DataFrameDPAccessor`, whose methods forward to the query families in
:mod:`pandas_dp.api.queries`: each plans its release and hands the plan to the consumer the
accessor holds (:class:`~pandas_dp.api.release.consumers.Run` on ``df.dp``,
:class:`~pandas_dp.api.release.consumers.Describe` on ``df.dp.preview``). pandas 3 builds a
new accessor on every ``df.dp`` access, so nothing is stored but the frame and the consumer.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Self, Unpack, overload

import pandas as pd

from pandas_dp.api.accessors.base import RELEASE_ONLY, BaseDPAccessor, release_only
from pandas_dp.api.attach import has_session_mark
from pandas_dp.api.docstrings import shared_doc
from pandas_dp.api.protect import protect
from pandas_dp.api.queries.choice import plan_top_k
from pandas_dp.api.queries.counts import plan_histogram
from pandas_dp.api.queries.covariance import plan_matrix
from pandas_dp.api.queries.crosstab import plan_crosstab, plan_pivot_table, plan_pred_table
from pandas_dp.api.queries.groupby import DPGroupBy
from pandas_dp.api.queries.grouped.counts import count_options
from pandas_dp.api.queries.grouper import grouper_groupby, has_grouper
from pandas_dp.api.queries.hierarchy.counts import DPHierarchy
from pandas_dp.api.queries.joins import merge_protected
from pandas_dp.api.queries.merge import merge
from pandas_dp.api.queries.regression import plan_logit, plan_ols
from pandas_dp.api.queries.resample import DPResampler, resample
from pandas_dp.api.queries.reshape import explode, melt
from pandas_dp.api.queries.ungrouped import (
    DESCRIBE_PERCENTILES,
    plan_bounds,
    plan_columns,
    plan_describe,
    plan_many,
    plan_quantile,
)
from pandas_dp.api.release import Preview, ReleaseOptions, resolve
from pandas_dp.api.release.arguments import (
    Bounds,
    CountArgs,
    EstimateT,
    Fill,
    FrameProtectArgs,
    GridArgs,
    Keys,
    MatrixArgs,
    Mechanism,
    NoiseArgs,
    NumberT,
    OLSArgs,
    RatioArgs,
    Real,
    ValueArgs,
)
from pandas_dp.api.release.consumers import Consumer, Describe, checked_keywords
from pandas_dp.api.release.planning_rows import planning_rows
from pandas_dp.errors import DPTypeError, DPValueError
from pandas_dp.planning.statistics import parse_named
from pandas_dp.planning.statistics.logistic import LogitResults
from pandas_dp.planning.statistics.postprocess import PostProcess
from pandas_dp.planning.statistics.regression import OLSResults
from pandas_dp.schema import rules_table

if TYPE_CHECKING:  # loaded with the tables code, on first use
    from pandas_dp.api.queries.tables import Tables


class DataFrameDPAccessor(BaseDPAccessor[NumberT, EstimateT]):
    """Differentially private releases from a protected DataFrame (``df.dp``).

    The same accessor serves Dask DataFrames (``ddf.dp``); results are pandas objects.
    ``df.dp.preview`` is the same accessor holding a consumer that describes each release
    instead of running it, so a preview accepts exactly what a release accepts.
    """

    _obj: pd.DataFrame

    @checked_keywords
    def protect(
        self, epsilon: Real | None = None, delta: Real = 0, **options: Unpack[FrameProtectArgs]
    ) -> pd.DataFrame:
        """Return a protected copy of the frame with a privacy budget of ``(epsilon, delta)``.

        The caller's frame is not modified. The copy, and every frame derived from it by
        filtering, selecting, copying and similar operations, share one session: every
        release from any of them is charged to the same budget.

        Parameters
        ----------
        epsilon : float
            Total ε of the budget (at least 1e-9).
        delta : float, default 0
            Total δ, ``0 <= delta < 1``; 0 means pure ε-DP.
        rho : float, optional
            Instead of ε and δ: a ρ-zCDP budget (Bun & Steinke 2016).
        accounting : {"basic", "advanced", "zcdp", "pld"}, default "basic"
            How releases compose against an (ε, δ) budget: sums of ε and δ; advanced
            composition of the pure-ε releases; zCDP; or privacy-loss distributions (needs
            ``pandas-dp[pld]``). The tight accountants need ``delta > 0``.
        rng : int, optional
            Seed for reproducible *tests*. Voids the privacy guarantee and emits
            :class:`~pandas_dp.PrivacyLeakWarning`. By default noise comes from the OS CSPRNG.
        replace : bool, default False
            Allow protecting a frame that already carries a session, starting a new,
            independent budget. Only the data owner should do this.
        privacy_unit : label, optional
            A column identifying the person behind each row (user-level privacy). Every
            release then caps each person's rows at ``max_rows_per_unit`` (dropping extra
            rows at random) and scales its sensitivity accordingly.
        max_rows_per_unit : int or "auto", optional
            Required with ``privacy_unit``: the most rows one person may contribute.
            ``"auto"`` releases it from the data at protect: about the 99.9% quantile of
            the rows per unit (a sparse-vector scan upwards, as :meth:`bounds`; 1 to
            1024), charged a tenth of the budget as the ledger's first row (pandas frames;
            see :mod:`pandas_dp.api.queries.unit_caps`).
        schema : pandera DataFrameModel, DataFrameSchema or YAML path, optional
            Public knowledge about the columns: bounds from ``in_range``/``ge``/``le``/``gt``/
            ``lt`` checks, keys from ``isin``, null rules from ``nullable``. Releases use them
            when no explicit argument is given (needs ``pandas-dp[pandera]``).
        validate : bool, default True
            With a schema: validate the data first, raising an error that names only the
            failing columns and checks (never a value). ``False`` skips validation; values
            are then clipped to the schema's bounds at release time.
        ledger : str or path, optional
            A ledger file that keeps the budget across processes and restarts. A new file
            is created with this budget; an existing one is resumed with what it says was
            spent (omit ``epsilon`` to adopt its budget; a different budget is refused). Every
            charge is on disk before its release is returned; processes sharing the file
            are serialised by a lock. Inspect it with ``pandas-dp ledger FILE``.
        session : Session, optional
            Another table about the same people, in an existing budget
            (``visits.dp.protect(session=people.dp.session, privacy_unit="pid",
            max_rows_per_unit=k)``): no budget of its own (``epsilon``, ``delta``, ``rho``,
            ``accounting``, ``rng`` and ``ledger`` are refused), every release from it is
            charged to that session. The privacy unit is the session's: give
            ``privacy_unit`` (the column of this table that holds the same ids) exactly when
            the session has one; neighbours then differ in every row of one unit in every
            table, or (row-level) in one row of one table. Join the tables with
            :meth:`merge`.
        name : str, optional
            The table's name in the ledger's notes, which name the tables each release read
            once a budget has several; by default ``"table 1"``, ``"table 2"``, ...

        Returns
        -------
        DataFrame

        Raises
        ------
        DPValueError
            For an out-of-range budget, a frame that is already protected, or an index with
            repeated labels.
        DPTypeError
            For a budget that is not a real number (bools and strings included).

        Notes
        -----
        By default one row is one privacy unit (add/remove-one-row neighbours) and the
        protect-time index is recorded so that frames whose rows were later duplicated are
        refused. With ``privacy_unit``, neighbours differ in all rows of one unit; since the
        library caps each unit's rows itself, duplicated rows are harmless and accepted.

        Only ``.dp`` is private. The copy is still a DataFrame: plain pandas on it
        (``priv["age"].mean()``, ``priv.head()``) returns exact values and charges nothing,
        as the threat model allows (whoever holds the frame holds the data). When analysts
        must see nothing but private releases, do not hand them the frame: have them write a
        release file (``pandas-dp plan`` / ``pandas-dp release``, the "Publishing a release"
        guide), which the data owner runs and whose author learns only its noisy tables.

        Examples
        --------
        >>> import pandas as pd, pandas_dp
        >>> priv = pd.DataFrame({"age": [30, 40, 50]}).dp.protect(epsilon=1.0)
        >>> priv.dp.session.total.epsilon
        Fraction(1, 1)
        """
        return protect(self._obj, epsilon, delta, **options)

    @property
    def rules(self) -> pd.DataFrame:
        """What the session's schema supplies per column: bounds, keys, null rule, source.

        Empty without a schema. Explicit arguments to a release always take precedence; the
        ledger note of each release says where its bounds and keys came from.
        """
        return rules_table(self.session.schema)

    @checked_keywords
    def bounds(
        self, columns: Hashable | list[Hashable] | None = None, *,
        epsilon: Real | None = None, rho: Real | None = None,
        q: tuple[float, float] = (0.001, 0.999),
        lower: Real | Mapping[Hashable, Real] | None = None,
        upper: Real | Mapping[Hashable, Real] | None = None,
    ) -> pd.DataFrame:  # fmt: skip
        """Release bounds ``(lower, upper)`` per column that cover most of its values.

        The answer to "which ``bounds=`` should I pass?" without reading the data outside
        the budget: a charged release, recorded in the ledger like any other. Its result is
        public once released, so it can be passed as ``bounds=`` to later releases.

        Parameters
        ----------
        columns : label or list of labels, optional
            The numeric columns to bound. By default every numeric column (not booleans,
            not the privacy unit's).
        epsilon : float
            Cost of the release, split equally among the columns' lower and upper ends.
        rho : float, optional
            Instead of ``epsilon`` in a zCDP session.
        q : (float, float), default (0.001, 0.999)
            The quantiles aimed at: the lower bound is a lattice point at or below the
            ``q[0]`` quantile, the upper bound one at or above the ``q[1]`` quantile (with
            enough data for the budget; ``0 < q[0] < 0.5 < q[1] < 1``).
        lower, upper : float or dict, optional
            A public end known from the domain (``lower=0`` for incomes or durations), for
            every column or as ``{column: value}``: taken as it is, and that end is not
            released, so the column's share of ε goes to its other end alone. The released
            end is then at least one lattice point beyond the given one.

        Returns
        -------
        DataFrame
            Indexed by column, with columns ``lower`` and ``upper`` (floats; Timestamps and
            Timedeltas for datetime and timedelta columns). Pass it as ``bounds=`` (a
            DataFrame with ``lower`` and ``upper`` columns is read as ``{column: (lower,
            upper)}``), or take one pair with ``tuple(b.loc["income"])``.

        Raises
        ------
        DPTypeError
            For a non-numeric column, a ``q`` that is not a pair, or a missing budget;
            nothing is charged.
        DPValueError
            For levels outside ``0 < q[0] < 0.5 < q[1] < 1``, unknown or repeated columns,
            or a budget the session cannot pay; nothing is charged.

        Notes
        -----
        Nothing is clipped to user bounds: values are compared with a public lattice, fixed
        before any data is read: 0 and ``±m·2**e`` for ``m`` in {1, 1.25, 1.5, 1.75} and
        ``e`` from -32 to 63, ends ``±2**64`` (values beyond, ``±inf`` included, count as
        the ends; missing values are not counted). Each bound is an AboveThreshold scan
        (sparse vector technique) from 0 outwards: the upper bound asks at each point ``c``
        whether ``#{x <= c} >= q[1]·n`` by a margin, with discrete Laplace noise of scale
        ``2Δ/ε`` on the threshold and ``4Δ/ε`` on each answer, and releases the first point
        whose noisy answer says yes; the lower bound mirrors it with ``q[0]``. Sensitivity
        of every answer: ``Δ = max(q, 1 - q)`` per row (times ``max_rows_per_unit`` under
        a privacy unit). The threshold's margin is one noise scale (``4Δ/ε``, rounded), which
        offsets the scan's tendency to stop early. The scan is ε-DP whatever the number of
        points and the (public) threshold. Cost: ``epsilon``, split equally among the scans
        (two per column, one when ``lower`` or ``upper`` is given).

        Without noise and at large ε (where the margin vanishes) the result is the lattice
        point nearest each aimed quantile on its outer side (0 when almost all of a column
        lies on the other side of 0). With noise a scan's rank error is a few times
        ``4/ε`` values (ε of one scan), rarely more than ``4 ln(points)/ε`` (about ``25/ε``). With
        too little data for the budget the bounds come out too narrow (a scan stopped by
        noise between 0 and the data) or a few lattice steps (factors of 1.25) beyond the
        data (each point past the data stops the scan with probability about 0.2), not
        wild. Why this design rather than Google's ApproxBounds (a thresholded histogram of
        magnitudes, Wilson et al. 2020) or an exponential-mechanism quantile over the
        lattice: both pay for the hundreds of empty points beyond the data, which a scan
        from 0 never visits unless the noise says so. Data far from 0 with a narrow spread
        (years, dates as numbers) get wide bounds reaching 0: use domain bounds there, or
        give the known end (see the "Choosing bounds" guide).

        Timedeltas are scanned as nanoseconds; the ends are rounded outwards to whole units
        of the column. Datetimes have no public point to scan from (0 is 1970, where the
        lattice's neighbours are decades apart): a third of the column's ε releases its
        median over the whole range of ``datetime64[ns]`` (exponential mechanism), the
        *origin*, and the scans run over each date's duration from it (dates more than 146
        years away count as that far). The origin is public once released, so the shift
        reads one row and public inputs. ``lower``/``upper`` are then refused (give both
        ends of a date column yourself, or neither).

        Examples
        --------
        >>> import numpy as np, pandas as pd, pandas_dp
        >>> incomes = np.exp(np.linspace(8.0, 13.0, 20_000)).round()  # 2,981 to 442,413
        >>> priv = pd.DataFrame({"income": incomes}).dp.protect(epsilon=2.0)
        >>> b = priv.dp.bounds(["income"], epsilon=1.0)
        >>> lower, upper = b.loc["income"]  # lattice points at or past each quantile (noisy)
        >>> list(b.columns), -1 < lower <= 0, 442_413 <= upper
        (['lower', 'upper'], True, True)
        >>> mean = priv.dp.mean("income", bounds=b, epsilon=1.0)
        """
        options = ReleaseOptions(epsilon=epsilon, rho=rho)
        planned = plan_bounds(self._obj, columns, q, options, lower=lower, upper=upper)
        return self._consume(planned)

    @checked_keywords
    def groupby(
        self,
        by: Hashable | list[Hashable],
        keys: Keys = None,
        *,
        max_groups_per_unit: int | None = None,
        max_rows_per_group: int | None = None,
        selection: Literal["threshold", "optimal"] | None = None,
        dropna: bool = True,
        range: tuple[object, object] | None = None,
    ) -> DPGroupBy:
        """Group the protected frame by public keys, for grouped releases.

        Parameters
        ----------
        by : label, Series, pd.Grouper or list of them
            The column(s) to group by, or a Series derived from this protected frame (such
            as ``priv["t"].dt.to_period("M")``), aligned on the index as in pandas. One
            ``pd.Grouper(key="t", freq="MS")`` groups a datetime (timedelta) column by the
            periods of ``freq`` over the public ``range``, alone (as :meth:`resample`) or
            beside other columns (a MultiIndex: every bin with every key of the others).
        keys : list-like, dict, list of tuples or MultiIndex, optional
            The public keys: for one column a list of values; for several, a dict
            ``{column: values}`` (their cross product), a list of tuples or a MultiIndex.
            Results are indexed by exactly these keys, in this order. Without keys (and
            without a schema's keys) the call is refused unless ``selection`` asks for keys
            chosen from the data. Beside a ``pd.Grouper``: the keys of the other columns
            only (the bins come from ``range``).
        max_groups_per_unit : int, optional
            Under a privacy unit: the most groups one unit may contribute to (extra groups
            are dropped at random). Defaults to ``max_rows_per_unit``.
        max_rows_per_group : int, optional
            Under a privacy unit: the most rows one unit may add to one group.
        selection : {"threshold", "optimal"}, optional
            Choose the keys from the data by DP partition selection, for columns whose
            values are not public (needs a session with δ > 0; rare keys are dropped). Only
            when asked: without public keys and without ``selection``, the call is refused.
            How keys are chosen: a key is kept when its noisy row count
            clears a threshold (the count is released with that same noise), or by the
            optimal rule of Desfontaines, Voss, Gipson & Mandayam (2022), which keeps small
            keys more often but spends a share of ε on the choice alone. See the group-by
            guide's comparison of the two.
        dropna : bool, default True
            As pandas: ``False`` makes the rows whose key is missing one more group (its key
            NaN, after the public keys); one group-by column only.
        range : (start, end), optional
            With a ``pd.Grouper``, and only then: the public span of its bins, Timestamps
            (Timedeltas, or text pandas reads as one) from ``start`` up to ``end``
            (excluded), cut and labelled as ``resample`` cuts them (pandas spans the data's
            first to last value instead, which is private).

        Returns
        -------
        DPGroupBy
            With ``count``, ``sum``, ``mean`` and ``agg`` releases.

        Examples
        --------
        >>> import pandas as pd, pandas_dp
        >>> df = pd.DataFrame({"sex": [0, 1] * 500, "age": [30.0, 50.0] * 500})
        >>> priv = df.dp.protect(epsilon=1.0)
        >>> table = priv.dp.groupby("sex", keys=[0, 1]).agg(
        ...     n="count", avg=("age", "mean"), bounds={"age": (0, 100)}, epsilon=1.0
        ... )
        >>> list(table.columns), list(table.index)
        (['n', 'avg'], [0, 1])
        """
        if has_grouper(by):
            return grouper_groupby(
                resolve(self._obj), by, keys, range, self._consumer,
                max_groups_per_unit=max_groups_per_unit, max_rows_per_group=max_rows_per_group,
                selection=selection, dropna=dropna,
            )  # fmt: skip
        if range is not None:
            raise DPValueError(
                "range= gives the public span of a pd.Grouper's time bins, e.g. "
                "groupby(pd.Grouper(key='t', freq='MS'), range=(start, end)); without a "
                "pd.Grouper, leave it out"
            )
        return DPGroupBy.of(
            resolve(self._obj), by, keys,
            max_groups_per_unit=max_groups_per_unit, max_rows_per_group=max_rows_per_group,
            selection=selection, consumer=self._consumer, dropna=dropna,
        )  # fmt: skip

    @checked_keywords
    def histogram(
        self, column: Hashable, bins: object = None, *, range: object = None,
        freq: str | None = None, right: bool | None = None, include_lowest: bool = False,
        clip: bool = False, ci: float | None = None, **options: Unpack[CountArgs],
    ) -> Any:  # fmt: skip
        """Release noisy counts of ``column`` in public bins; see ``Series.dp.histogram``.

        The DataFrame form works under a privacy unit, whose column a Series cannot carry,
        and with ``weights="w", weight_bounds=(lower, upper)``: each bin's noisy sum of
        clipped weights, a float (pandas: ``np.histogram(x, bins, weights=w)``), with
        sensitivity ``W = upper`` for the whole vector (one row is in one bin).
        """
        return self._consume(
            plan_histogram(
                self._obj, bins, column=column, range=range, freq=freq, right=right,
                include_lowest=include_lowest, clip=clip, ci=ci, **options,
            )
        )  # fmt: skip

    @overload
    def sum(
        self, column: list[Hashable], *, ci: float | None = None, **options: Unpack[ValueArgs]
    ) -> Any: ...
    @overload
    def sum(
        self, column: Hashable, *, ci: None = None, **options: Unpack[ValueArgs]
    ) -> NumberT: ...
    @overload
    def sum(self, column: Hashable, *, ci: float, **options: Unpack[ValueArgs]) -> EstimateT: ...
    @checked_keywords
    @shared_doc
    def sum(
        self,
        column: Hashable | list[Hashable],
        *,
        ci: float | None = None,
        **options: Unpack[ValueArgs],
    ) -> object:
        """Release the noisy sum of a column clipped to public bounds.

        Parameters
        ----------
        column : label or list of labels
            A numeric or bool column; for a list, one sum per column in one release (ε
            split among them), returned as a Series indexed by the columns like
            ``df[columns].sum()`` (a DataFrame with ``sum``, ``sum_lower``, ``sum_upper``
            with ``ci``); ``bounds`` is then a ``{column: (lower, upper)}`` dict.
        {bounds}
        {epsilon}
        {fillna}
        {delta}
        {mechanism}
        {ci}
        {weights}

        Returns
        -------
        float, int or Estimate
            A multiple of the lattice step ``g`` (a power of two chosen from the bounds and
            ε only); an ``int`` for an integer or boolean column with integer bounds, as
            pandas sums it (the noisy sum rounded: free post-processing).

        Notes
        -----
        Each value is clipped to ``[lower, upper]`` (±inf to the bounds) and rounded to a
        multiple of ``g = 2**k``, the smallest power of two with
        ``g >= max(Δ, Δ/ε) / 2**36`` where ``Δ = max(|lower|, |upper|)``. The rounded values are
        summed exactly as integers, so neither row order nor float rounding changes the
        result, and no sum can overflow. Each row's rounding error is at most ``g/2``.
        Sensitivity: ``max(|lower|, |upper|)`` rounded to the lattice. Mechanism: discrete
        Laplace on the lattice with scale ``Δ/ε``. Budget cost: ``epsilon``. Missing
        values contribute nothing (or ``fillna``), which does not change the sensitivity.
        With ``weights`` (weight bounds ``(wl, W)``): ``Σ clip(w)·clip(x)`` (pandas:
        ``(x.clip(lower, upper) * w.clip(wl, W)).sum()``), each row's product rounded to a
        lattice; sensitivity ``W·max(|lower|, |upper|)``.

        Examples
        --------
        >>> import pandas as pd, pandas_dp
        >>> priv = pd.DataFrame({"x": [1.0] * 1000}).dp.protect(epsilon=1.0)
        >>> s = priv.dp.sum("x", bounds=(0, 1), epsilon=0.5)
        >>> abs(s - 1000) < 100  # noise scale 2
        True
        """
        return self._scalar("sum", column, ReleaseOptions(ci=ci, **options))

    @overload
    def mean(
        self, column: list[Hashable], *, ci: float | None = None, **options: Unpack[RatioArgs]
    ) -> Any: ...
    @overload
    def mean(
        self, column: Hashable, *, ci: None = None, **options: Unpack[RatioArgs]
    ) -> NumberT: ...
    @overload
    def mean(self, column: Hashable, *, ci: float, **options: Unpack[RatioArgs]) -> EstimateT: ...
    @checked_keywords
    @shared_doc
    def mean(
        self,
        column: Hashable | list[Hashable],
        *,
        ci: float | None = None,
        **options: Unpack[RatioArgs],
    ) -> object:
        """Release the noisy mean of a column clipped to public bounds.

        Parameters
        ----------
        column : label or list of labels
            A numeric, bool, datetime or timedelta column (with Timestamp or Timedelta
            bounds, or text pandas reads as one: ``("2020-01-01", "2021-01-01")``); a list
            gives a Series indexed by the columns, as ``df[columns].mean()`` (see
            :meth:`sum`).
        {bounds}
        {epsilon}
        {fillna}
        {delta}
        {mechanism}
        {ci}
            The mean's interval is conservative: each of its two measurements gets half of
            ``1 - ci``, and the ratio is bounded over both ranges.
        {min_count}
        {weights}

        Returns
        -------
        float or Estimate
            Always inside ``[lower, upper]``. A ``Timestamp`` (``Timedelta``) in the
            column's unit and time zone for a datetime (timedelta) column.

        Notes
        -----
        Never ``noisy sum / true count``. Values are clipped, centred at the midpoint ``c``
        of the bounds and rounded to a lattice as in :meth:`sum`. Half of ε buys a noisy
        centred sum (sensitivity ``(upper - lower) / 2``), half a noisy count of non-missing
        values (sensitivity 1), both with discrete Laplace noise. The release is
        ``c + noisy centred sum / max(noisy count, 1)``, clipped to the bounds (free
        post-processing). Budget cost: ``epsilon``. With ``weights`` (weight bounds
        ``(wl, W)``): ``c + noisy Σ w·(x - c) / max(noisy Σ w, 1)`` over rows where ``x`` is
        present, ``c`` the midpoint of the bounds (pandas: ``np.average(x, weights=w)``);
        sensitivities ``W·(upper - lower)/2`` and ``W``.

        Datetimes are read as nanoseconds since 1970-01-01 UTC (timedeltas as nanoseconds),
        bounds too, so sensitivities, the lattice and the ledger are in nanoseconds; float64
        holds those exactly to 256 ns until 2043, far finer than the lattice step (about
        ``2**-36`` of the bounds' width: a quarter of a millisecond for a year).

        Examples
        --------
        >>> import pandas as pd, pandas_dp
        >>> priv = pd.DataFrame({"age": [40.0] * 1000}).dp.protect(epsilon=1.0)
        >>> m = priv.dp.mean("age", bounds=(0, 100), epsilon=1.0)
        >>> 0 <= m <= 100 and abs(m - 40) < 5
        True
        """
        return self._scalar("mean", column, ReleaseOptions(ci=ci, **options))

    @checked_keywords
    def agg(
        self, *, epsilon: Real | None = None, bounds: Bounds = None, delta: Real | None = None,
        mechanism: Mechanism = "laplace", ci: float | None = None, fillna: Fill = None,
        rho: Real | None = None,
        nonnegative: bool = False, accuracy: Mapping[str, float] | None = None,
        min_count: Real | None = None, relative_error: bool = False, weights: Hashable = None,
        weight_bounds: tuple[Real, Real] | None = None, **named: object,
    ) -> pd.DataFrame:  # fmt: skip
        """Release several statistics of the whole frame in one call (one row).

        The ungrouped form of ``priv.dp.groupby(...).agg``: ``n="count"``,
        ``avg=("income", "mean")``, ``med=("age", "median")`` ...; same parameters.

        Notes
        -----
        The fewest noisy measurements behind all statistics (a mean reuses the row count; a
        sum next to a mean of its column is derived from the mean's measurements); ε is
        split among them for the least relative error, weighted by ``accuracy``
        (``{"avg": 2}`` counts the error of ``avg`` twice), and δ for Gaussian noise
        equally (sequential composition). Values are clipped to ``bounds``. Budget cost:
        ``epsilon``.

        Examples
        --------
        >>> import pandas as pd, pandas_dp
        >>> df = pd.DataFrame({"age": [20, 40, 60] * 300}).dp.protect(epsilon=1.0)
        >>> row = df.dp.agg(n="count", avg=("age", "mean"), bounds={"age": (0, 100)}, epsilon=1.0)
        >>> list(row.columns), bool(abs(row.loc[0, "avg"] - 40) < 5)
        (['n', 'avg'], True)
        """
        stats = parse_named(named)
        options = ReleaseOptions(
            epsilon=epsilon, bounds=bounds, delta=delta, mechanism=mechanism, ci=ci,
            fillna=fillna, rho=rho, post=PostProcess.of(nonnegative), accuracy=accuracy,
            min_count=min_count, relative_error=relative_error, weights=weights,
            weight_bounds=weight_bounds,
        )  # fmt: skip
        return self._consume(plan_many(self._obj, stats, options, query="agg"))

    @overload
    def var(
        self, column: Hashable, *, ddof: int = 1, ci: None = None, **options: Unpack[RatioArgs]
    ) -> NumberT: ...
    @overload
    def var(
        self, column: Hashable, *, ddof: int = 1, ci: float, **options: Unpack[RatioArgs]
    ) -> EstimateT: ...
    @overload
    def var(
        self, column: list[Hashable], *, ddof: int = 1, ci: float | None = None,
        **options: Unpack[RatioArgs],
    ) -> Any: ...  # fmt: skip
    @checked_keywords
    def var(
        self, column: Hashable | list[Hashable], *, ddof: int = 1, ci: float | None = None,
        **options: Unpack[RatioArgs],
    ) -> object:  # fmt: skip
        """Release the noisy variance of ``column``; see ``Series.dp.var``."""
        return self._spread(column, "var", ddof, ReleaseOptions(ci=ci, **options))

    @overload
    def std(
        self, column: Hashable, *, ddof: int = 1, ci: None = None, **options: Unpack[RatioArgs]
    ) -> NumberT: ...
    @overload
    def std(
        self, column: Hashable, *, ddof: int = 1, ci: float, **options: Unpack[RatioArgs]
    ) -> EstimateT: ...
    @overload
    def std(
        self, column: list[Hashable], *, ddof: int = 1, ci: float | None = None,
        **options: Unpack[RatioArgs],
    ) -> Any: ...  # fmt: skip
    @checked_keywords
    def std(
        self, column: Hashable | list[Hashable], *, ddof: int = 1, ci: float | None = None,
        **options: Unpack[RatioArgs],
    ) -> object:  # fmt: skip
        """Release the noisy standard deviation of ``column``; see ``Series.dp.std``."""
        return self._spread(column, "std", ddof, ReleaseOptions(ci=ci, **options))

    @checked_keywords
    def quantile(
        self, column: Hashable | list[Hashable], q: float | Sequence[float] = 0.5, *,
        ci: float | None = None,
        **options: Unpack[GridArgs],
    ) -> Any:  # fmt: skip
        """Release noisy quantiles of ``column``; see ``Series.dp.quantile``.

        For a list of columns, pandas' shapes: a Series indexed by the columns (named ``q``)
        for one level, a DataFrame indexed by the levels for several.
        """
        return self._consume(plan_quantile(self._obj, column, q, ReleaseOptions(ci=ci, **options)))

    @checked_keywords
    def nunique(
        self, *, dropna: bool = True, ci: float | None = None, **options: Unpack[NoiseArgs]
    ) -> Any:
        """Release the noisy number of distinct values of every column, like ``df.nunique()``.

        A Series indexed by the columns (with ``ci``, a DataFrame with ``nunique``,
        ``nunique_lower`` and ``nunique_upper``).

        Notes
        -----
        Values are compared in canonical form, as in ``Series.dp.nunique``. One row adds at
        most one distinct value to each column: each column's count has sensitivity 1 and
        discrete Laplace noise; ε is split among the columns (sequential composition; the
        ledger lists the split). Counts are clamped at 0 (free post-processing): int64, as
        pandas, never negative. Budget cost: ``epsilon``. Not available on Dask.

        Examples
        --------
        >>> import pandas as pd, pandas_dp
        >>> df = pd.DataFrame({"a": ["x", "y"] * 300, "b": [1, 2, 3] * 200}).dp.protect(epsilon=1.0)
        >>> counts = df.dp.nunique(epsilon=1.0)
        >>> list(counts.index), bool((abs(counts - [2, 3]) < 60).all())  # scale 2 each
        (['a', 'b'], True)
        """
        if dropna is not True:
            raise DPValueError("nunique counts non-missing values only: leave dropna=True")
        columns: list[Hashable] = list(self._obj.columns)
        planned = plan_columns(self._obj, "nunique", columns, ReleaseOptions(ci=ci, **options))
        return self._consume(planned)

    @overload
    def median(
        self, column: Hashable, *, ci: None = None, **options: Unpack[GridArgs]
    ) -> NumberT: ...
    @overload
    def median(self, column: Hashable, *, ci: float, **options: Unpack[GridArgs]) -> EstimateT: ...
    @overload
    def median(
        self, column: list[Hashable], *, ci: float | None = None, **options: Unpack[GridArgs]
    ) -> Any: ...
    @checked_keywords
    def median(
        self,
        column: Hashable | list[Hashable],
        *,
        ci: float | None = None,
        **options: Unpack[GridArgs],
    ) -> object:
        """Release the noisy median of ``column`` (a Series for a list, as ``df[cols].median()``).

        See ``Series.dp.quantile`` for the mechanism and the cost.
        """
        release = ReleaseOptions(ci=ci, **options)
        if isinstance(column, list):
            return self._consume(plan_columns(self._obj, "median", column, release))
        return self._consume(plan_quantile(self._obj, column, 0.5, release))

    @checked_keywords
    def mode(
        self,
        column: Hashable,
        *,
        candidates: Sequence[object] | None = None,
        epsilon: Real | None = None,
        rho: Real | None = None,
    ) -> Any:
        """Release the most frequent public candidate of ``column``; see ``Series.dp.mode``."""
        return self._consume(
            plan_top_k(
                self._obj, column, 1, candidates=candidates, epsilon=epsilon, rho=rho, mode=True
            )
        )

    @checked_keywords
    def top_k(
        self,
        column: Hashable,
        k: int,
        *,
        candidates: Sequence[object] | None = None,
        epsilon: Real | None = None,
        rho: Real | None = None,
    ) -> list[Any]:
        """Release the ``k`` most frequent candidates of ``column``; see ``Series.dp.top_k``."""
        return self._consume(
            plan_top_k(self._obj, column, k, candidates=candidates, epsilon=epsilon, rho=rho)
        )

    @checked_keywords
    def describe(
        self, *, epsilon: Real | None = None, bounds: Bounds = None,
        percentiles: Sequence[float] = DESCRIBE_PERCENTILES, cells: int | None = None,
        rho: Real | None = None,
    ) -> pd.DataFrame:  # fmt: skip
        """Release a table like ``DataFrame.describe`` for the columns with public bounds.

        Parameters
        ----------
        bounds : dict, optional
            ``{column: (lower, upper)}`` for every column to describe (in that order). By
            default, every column with bounds in the session's schema.
        epsilon : float
            Total privacy cost of the table.
        percentiles : list of float, default (0.25, 0.5, 0.75)
            Quantile levels to include.
        cells : int, optional
            Quantile grid resolution.

        Returns
        -------
        DataFrame
            Rows ``count``, ``mean``, ``std`` and the percentiles; one column per column.
            The count is clamped at 0 (free post-processing): a whole number, never negative.

        Notes
        -----
        ε is split among every measurement behind the table (per column: a count of
        non-missing values, a centred sum, a sum of squares, and one quantile per percentile;
        the mean and std share the count and the sum) for the least relative error of the
        table's statistics, each weighing alike. The ledger row lists the split.
        ``min`` and ``max`` are omitted on purpose: a DP minimum or maximum would be a
        quantile at 0 or 1, which reflects the public bounds more than the data.

        Examples
        --------
        >>> import pandas as pd, pandas_dp
        >>> df = pd.DataFrame({"age": [20.0, 40.0, 60.0] * 400}).dp.protect(epsilon=2.0)
        >>> table = df.dp.describe(bounds={"age": (0, 100)}, epsilon=2.0)
        >>> list(table.index)
        ['count', 'mean', 'std', '25%', '50%', '75%']
        """
        return self._consume(
            plan_describe(
                self._obj,
                bounds=bounds,
                epsilon=epsilon,
                percentiles=percentiles,
                cells=cells,
                rho=rho,
            )
        )

    @checked_keywords
    def min(self, column: Hashable, *, ci: float | None = None, **options: Unpack[GridArgs]) -> Any:
        """Release a DP minimum of ``column``; see ``Series.dp.min`` for what it is."""
        return self._scalar("min", column, ReleaseOptions(ci=ci, **options))

    @checked_keywords
    def max(self, column: Hashable, *, ci: float | None = None, **options: Unpack[GridArgs]) -> Any:
        """Release a DP maximum of ``column``; see ``Series.dp.min`` for what it is."""
        return self._scalar("max", column, ReleaseOptions(ci=ci, **options))

    @checked_keywords
    @shared_doc
    def crosstab(
        self, index: Hashable | list[Hashable], columns: Hashable | list[Hashable], *,
        keys: Keys = None, values: Hashable | None = None, aggfunc: str | None = None,
        margins: bool = False, margins_name: Hashable = "All",
        normalize: bool | Literal["all", "index", "columns"] = False,
        nonnegative: bool = False, ci: float | None = None, **options: Unpack[RatioArgs],
    ) -> pd.DataFrame:  # fmt: skip
        """Release a noisy cross tabulation, shaped like :func:`pandas.crosstab`.

        Parameters
        ----------
        index, columns : label or list of labels
            The row and column variables (columns of this frame, not arrays).
        keys : dict
            ``{column: public values}`` for every row and column variable (or from the
            session's schema); the table has exactly these rows and columns, in this order.
        values, aggfunc : label and str, optional
            Release ``aggfunc`` (``"sum"``, ``"mean"``, ``"median"``, ...) of ``values``
            per cell instead of counts; ``bounds`` then clips ``values``.
        margins : bool, default False
            Add ``margins_name`` row and column totals, consistent with the cells.
        normalize : bool or {"all", "index", "columns"}, default False
            Shares, as pandas: of all rows, of the row's total or of the column's total,
            the totals taken over all rows (those outside the listed keys included), of the
            noisy counts clamped at 0.
        {nonnegative}
        {epsilon}
        {ci_table}
            Each column key then holds ``count``, ``count_lower``, ``count_upper`` under a
            top level (not with ``margins`` or ``normalize``).

        Returns
        -------
        DataFrame
            Indexed by the row keys, columns the column keys, named as pandas names them.

        Notes
        -----
        The cells are disjoint groups of the product of the keys: one release, sensitivity 1
        for counts (``max(|lower|, |upper|)`` for sums), discrete Laplace noise, charged
        ``epsilon`` once (parallel composition). Rows whose keys are not listed are dropped
        silently. Margins are free post-processing: a count's margin is the sum of the
        released cells, so every total agrees with its cells exactly; a mean's margin comes
        from the pooled noisy sums and counts of its cells. Medians and distinct counts have
        no margin of that kind: ``margins=True`` refuses them.

        With ``normalize``, the totals are pandas' totals on all the rows (as if the table
        were computed on the full data and the listed keys selected): one more cell per row
        key counts its rows whose column value is not listed (not missing), one per column
        key its rows whose row value is not listed, one the rest. Each row is in one cell,
        so the counts keep sensitivity 1 and the cost stays ``epsilon``; those cells enter
        the totals and are not shown.

        In a table with counts (``pivot_table``), a mean, spread or quantile is NaN where
        its own noisy count, or the count of its column in the same cell, is below
        ``min_count`` (1 by default); its interval too.

        Examples
        --------
        >>> import pandas as pd, pandas_dp
        >>> df = pd.DataFrame({"sex": [0, 1] * 500, "region": ["n", "s", "s", "n"] * 250})
        >>> priv = df.dp.protect(epsilon=1.0)
        >>> table = priv.dp.crosstab(
        ...     "sex", "region", keys={"sex": [0, 1], "region": ["n", "s"]}, margins=True,
        ...     epsilon=1.0,
        ... )
        >>> list(table.index), list(table.columns)
        ([0, 1, 'All'], ['n', 's', 'All'])
        >>> bool((table.loc["All", ["n", "s"]] == table.loc[[0, 1], ["n", "s"]].sum()).all())
        True
        """
        release = ReleaseOptions(ci=ci, post=PostProcess.of(nonnegative), **options)
        return self._consume(plan_crosstab(
            self._obj, index, columns, release, keys=keys, values=values, aggfunc=aggfunc,
            margins=margins, margins_name=margins_name, normalize=normalize,
        ))  # fmt: skip

    @checked_keywords
    @shared_doc
    def pivot_table(
        self, values: object = None, index: object = None, columns: object = None,
        aggfunc: object = "mean",
        *, keys: Keys = None, margins: bool = False, margins_name: Hashable = "All",
        ci: float | None = None, **options: Unpack[RatioArgs],
    ) -> pd.DataFrame:  # fmt: skip
        """Release a noisy pivot table, shaped like :func:`pandas.pivot_table`.

        Parameters
        ----------
        values : label or list of labels, optional
            The column(s) to aggregate (by default every column but the keys).
        index, columns : label or list of labels
            Row and column variables; ``columns`` may be left out.
        aggfunc : str, list of str or dict, default "mean"
            Statistic name(s) (``"count"``, ``"sum"``, ``"mean"``, ``"median"``, ``"std"``,
            ...), or ``{value: name or list}``; the columns are laid out as pandas lays them.
        keys : dict
            ``{column: public values}`` for every row and column variable (or a schema).
        bounds : dict
            ``{value: (lower, upper)}`` for every aggregated column (a pair for one).
        margins, margins_name
            Totals consistent with the cells; see :meth:`crosstab`.
        {epsilon}
        {ci_table}

        Returns
        -------
        DataFrame
            As pandas: rows the index keys, columns the column keys under the statistics'
            labels when there are several.

        Notes
        -----
        One release over the cells (parallel composition), ε split among the statistics
        by the planner's rule (stated in the ledger); a mean whose cell looks empty is NaN
        (``min_count``), as pandas shows NaN for an empty cell. See :meth:`crosstab` for
        margins.
        """
        return self._consume(plan_pivot_table(
            self._obj, ReleaseOptions(ci=ci, **options), values, index, columns, aggfunc,
            keys=keys, margins=margins, margins_name=margins_name,
        ))  # fmt: skip

    @checked_keywords
    @shared_doc
    def cov(
        self,
        columns: Sequence[Hashable] | None = None,
        *,
        ddof: int = 1,
        **options: Unpack[MatrixArgs],
    ) -> pd.DataFrame:
        """Release the covariance matrix of columns clipped to public bounds, as ``df.cov()``.

        Parameters
        ----------
        {matrix_inputs}
            Gaussian noise suits matrices: its scale grows with the square root of the
            number of sums, Laplace noise's with the number itself.
        ci : float, optional
            Confidence level, e.g. 0.95: return one row per pair of columns (indexed as
            ``df.cov().stack()``) with ``cov``, ``cov_lower`` and ``cov_upper``: bounds
            that hold for all of a pair's inputs at once (conservative).
        min_periods : int, optional
            As pandas: NaN where the noisy count of rows holding both values is below it
            (and always where it is below 1, or not above ``ddof``).
        ddof : int, default 1
            Delta degrees of freedom, as pandas (which ignores it when values are missing
            and uses 1; pandas-dp always uses it).
        use : {"pairwise", "complete"}, default "pairwise"
            ``"pairwise"``: each pair over the rows that hold both values, as pandas.
            ``"complete"``: only the rows holding every column (R's ``use="complete.obs"``):
            the same result when no value is missing, with fewer sums to measure, so less
            noise, when columns may hold missing values (a float or object dtype, unless a
            schema says ``nullable=False``): whether a value *is* missing is private, so the
            dtype decides. The ledger's note gives both choices' number of sums.

        Returns
        -------
        DataFrame
            Square, indexed and labelled by the columns, symmetric and positive
            semidefinite. With missing values pandas' pairwise matrix need not be positive
            semidefinite (each pair is over its own rows); pandas-dp returns the nearest one
            that is, so the two then differ even without noise.

        Notes
        -----
        Each value ``x`` is clipped to its bounds ``[l, u]``, centred and scaled to ``z =
        (x - c) / r`` in ``[-1, 1]`` (``c`` the midpoint, ``r`` the half-width) and rounded
        to ``2**-16``. Every pair ``(j, k)`` needs the rows holding both, ``Σz_j``, ``Σz_k``
        and ``Σz_j z_k`` over them; columns that cannot hold missing values (integer or
        bool dtypes, or a schema's ``nullable=False``) share the row count and sums. Each
        of these ``p`` sums moves by at most 1 when a row is added or removed: sensitivity
        ``p`` in L1 norm (discrete Laplace noise of scale ``p/ε`` on each) or ``√p`` in L2
        norm (discrete Gaussian), times the rows a privacy unit may add. The covariance is
        ``r_j r_k (Σz_j z_k - Σz_j Σz_k / n) / (n - ddof)``, and the matrix is projected to
        the nearest positive semidefinite one (free post-processing). Budget cost:
        ``epsilon`` for the whole matrix.

        Examples
        --------
        {matrix_example}
        >>> c = priv.dp.cov(bounds={"x": (0, 10), "y": (-5, 25)}, epsilon=1.0)
        >>> c.shape, list(c.columns), bool(abs(c.loc["x", "y"] - df.cov().loc["x", "y"]) < 2)
        ((2, 2), ['x', 'y'], True)
        """
        planned = plan_matrix(resolve(self._obj), "cov", columns, ddof=ddof, **options)
        return self._consume(planned)

    @checked_keywords
    @shared_doc
    def corr(
        self,
        columns: Sequence[Hashable] | None = None,
        *,
        method: Literal["pearson"] = "pearson",
        **options: Unpack[MatrixArgs],
    ) -> pd.DataFrame:
        """Release the Pearson correlation matrix of bounded columns, as ``df.corr()``.

        Parameters
        ----------
        {matrix_inputs}
        ci : float, optional
            Confidence level: one row per pair (as ``df.corr().stack()``) with ``corr``,
            ``corr_lower`` and ``corr_upper`` (conservative bounds within ``[-1, 1]``).
        min_periods : int, default 1
            As pandas: NaN where the noisy count of rows holding both is below it.
        method : {"pearson"}
            Only Pearson's: Spearman's and Kendall's rank correlations need ranks, which a
            sum of products cannot give.
        use : {"pairwise", "complete"}, default "pairwise"
            As in :meth:`cov`. Pairwise correlations also measure each column's sum of
            squares over every other column's rows (pandas' rule), so ``"complete"``
            saves more here.

        Returns
        -------
        DataFrame
            Square, symmetric, positive semidefinite, unit diagonal, every entry in
            ``[-1, 1]``; NaN for a column whose noisy variance is not positive.

        Notes
        -----
        As :meth:`cov`, with each pair's sums of squares over the rows holding both; the
        correlation is ``(Σz_j z_k - Σz_j Σz_k / n) / sqrt((Σz_j² - (Σz_j)²/n)(Σz_k² -
        (Σz_k)²/n))``, the bounds' scales cancelling. The matrix is projected to the
        nearest positive semidefinite one and rescaled to a unit diagonal (free
        post-processing). Budget cost: ``epsilon``.

        Examples
        --------
        {matrix_example}
        >>> r = priv.dp.corr(bounds={"x": (0, 10), "y": (-5, 25)}, epsilon=1.0)
        >>> bool(abs(r.loc["x", "y"] - df.corr().loc["x", "y"]) < 0.05)
        True
        """
        if method != "pearson":
            raise DPValueError(
                f"method={method!r}: only 'pearson' correlations can be released from sums "
                "of products; rank correlations (spearman, kendall) need ranks"
            )
        planned = plan_matrix(resolve(self._obj), "corr", columns, **options)
        return self._consume(planned)

    @checked_keywords
    def ols(
        self,
        formula: str | None = None,
        data: object = None,
        *,
        y: Hashable | None = None,
        x: Sequence[Hashable] | None = None,
        **options: Unpack[OLSArgs],
    ) -> OLSResults:
        """Release a linear model fitted by least squares, as statsmodels' ``ols(...).fit()``.

        Parameters
        ----------
        formula : str, optional
            A model formula (``"y ~ x + C(g) + x:z + np.log(w)"``, read by formulaic, with
            statsmodels' column names), whose every term reads one row (see Notes). The
            levels of a categorical come from ``keys`` (or the session's schema), its first
            level the reference. Or:
        data : None
            Not taken: the data is the protected frame itself, the one ``.dp`` is called
            on. statsmodels' ``ols("y ~ x", data=df).fit()`` is ``priv.dp.ols("y ~ x",
            bounds=..., epsilon=...)`` here; a frame given as ``data`` is refused.
        y, x : label and list of labels, optional
            The response and the regressors, for ``y ~ x1 + x2 + ...``.
        bounds : dict
            ``{column: (lower, upper)}`` for every numeric variable, the response included
            (or from the session's schema). Each design column's range is what the formula
            gives on a public grid of the bounds (the bounds, an even grid and round
            values between them); values are clipped to it.
        keys : dict, optional
            ``{column: [levels]}``: the public levels of each categorical variable; rows at
            other levels are left out, as rows missing a value are.
        epsilon : float
            Privacy cost of the whole model, charged once.
        rho : float, optional
            Instead of ``epsilon``, in a zCDP session.
        delta : float, optional
            With ``mechanism="gaussian"``: the δ spent.
        mechanism : {"laplace", "gaussian"}, default "laplace"
            The noise on the sums; Gaussian noise suits many regressors (its scale grows
            with the square root of the number of sums, Laplace's with the number).
        alpha : float, default 0.05
            The level of the intervals :meth:`summary` shows.
        weights : label, optional
            A numeric column of non-negative survey weights: the model is then statsmodels'
            WLS, ``smf.wls(formula, df, weights=df.w).fit()``. Each row's products count
            with its weight clipped to ``weight_bounds``; a row missing its weight counts
            nowhere (as a row missing a variable).
        weight_bounds : (float, float), optional
            Public ``(lower, upper)`` limits of one row's weight, ``0 <= lower < upper``;
            required with ``weights`` unless the session's schema bounds the weight column.

        Returns
        -------
        OLSResults
            ``params``, ``bse``, ``conf_int()``, ``cov_params()``, ``tvalues``,
            ``pvalues``, ``summary()``, ``predict(frame)``, ``nobs``, ``rsquared``,
            ``scale`` as statsmodels names them, and ``ridge``.

        Notes
        -----
        Sufficient-statistics perturbation (Wang 2018). Over the rows holding every
        variable, each design column and the response are scaled to ``[-1, 1]`` over
        their public ranges and rounded to ``2**-16``; the ``p = (m + 2)(m + 3) / 2`` sums
        of products of ``(1, z_1, ..., z_m, z_y)`` each move by at most 1 when a row is
        added or removed (L1 sensitivity ``p``, L2 ``√p``; times the rows a privacy unit
        may add) and get discrete Laplace (scale ``p/ε``) or Gaussian noise. Coefficients
        solve the noisy normal equations with AdaSSP's ridge, read off the noisy matrix
        (zero unless the noise makes it ill-conditioned); standard errors add the noise's
        variance (delta method) to the sampling variance, so intervals cover the model's
        coefficients, not only the exact fit. Budget cost: ``epsilon``.

        With ``weights``, each row's products are multiplied by its weight clipped to
        ``[lower, upper]`` (rounded to ``2**-16`` of the power of two at or above
        ``upper``), so one row moves each sum by at most ``upper``: the sensitivity and the
        noise's scale are ``upper`` times the unweighted ones, for ``p + 1`` sums (the
        rows holding a weight are counted too, for the residual degrees of freedom of
        WLS: ``scale = Σ w r² / (nobs - k)``). Coefficients and standard errors are then
        statsmodels' WLS on the clipped rows, up to the noise and the rounding.

        Each term of the formula must give a row a value computed from that row alone and
        public constants; a term that reads other rows (``I(x - x.mean())``,
        ``np.cumsum(x)``) would let one row's presence move every other row's design. The
        grammar, checked on the formula's text before anything is charged:

        - columns (``x``, ```x value```, ``Q('x value')``) and numeric literals;
        - ``+ - * / // % **``, unary ``-``, one comparison (``< <= > >= == !=``) and
          ``& | ^ ~`` between allowed expressions;
        - the elementwise functions ``np.log``, ``np.log1p``, ``np.log2``, ``np.log10``,
          ``np.exp``, ``np.expm1``, ``np.exp2``, ``np.sqrt``, ``np.abs``, ``np.absolute``,
          ``np.square``, ``np.sign`` (or ``numpy.``), ``np.clip(expr, lower, upper)`` with
          numbers as bounds, ``abs()``, formulaic's ``log``, ``log2``, ``log10``, ``exp``,
          ``exp2``;
        - ``I(expr)`` of an allowed expression, and ``C(column)`` of a column with keys;
        - formula operators (``+``, ``:``, ``*``, ``/``, ``**`` on terms, ``- 1``).

        Anything else is refused with a :class:`~pandas_dp.errors.DPValueError` naming the
        part: methods and attributes (``x.mean()``, ``x.shift(1)``, ``x.rank()``), other
        functions (``np.cumsum``, ``sum``, ``center``, ``scale``, ``standardize``,
        ``lag``, ``poly``, splines), subscripts, lambdas, comprehensions, ``and``/``or``/
        ``not``, conditional expressions and chained comparisons. Use public constants
        instead: ``I(x - 5)`` to centre, ``I(x / 10)`` to scale, ``I(x > 5)`` for a
        threshold. The design is also computed on a few public rows (the bounds and keys)
        both together and one at a time, and refused if they differ.

        Examples
        --------
        >>> import numpy as np, pandas as pd, pandas_dp
        >>> rng = np.random.default_rng(0)  # test-only: example data, never noise
        >>> x = rng.uniform(0, 10, 50_000)
        >>> df = pd.DataFrame({"x": x, "y": 1 + 2 * x + rng.normal(0, 1, 50_000)})
        >>> priv = df.dp.protect(epsilon=1.0)
        >>> model = priv.dp.ols("y ~ x", bounds={"x": (0, 10), "y": (-5, 25)}, epsilon=1.0)
        >>> list(model.params.index), bool(abs(model.params["x"] - 2) < 0.1)
        (['Intercept', 'x'], True)
        """
        if data is not None:
            raise DPTypeError(
                f"ols() takes no data (got a {type(data).__name__}): the data is the protected "
                "frame itself, the one .dp is called on. statsmodels' ols('y ~ x', data=df) "
                "is priv.dp.ols('y ~ x', bounds=..., epsilon=...) here"
            )
        return self._consume(plan_ols(resolve(self._obj), formula, y=y, x=x, **options))

    @checked_keywords
    def logit(
        self,
        formula: str | None = None,
        data: object = None,
        *,
        y: Hashable | None = None,
        x: Sequence[Hashable] | None = None,
        **options: Unpack[OLSArgs],
    ) -> LogitResults:
        """Release a logistic regression, as statsmodels' ``logit(...).fit()``.

        Parameters
        ----------
        formula : str, optional
            A model formula whose response is binary (``"y ~ x + C(g)"``, or an event such
            as ``"I(income > 50000) ~ age + C(sex)"``), with :meth:`ols`'s rules: every
            term reads one row, levels come from ``keys``. Or:
        data : None
            Not taken: the data is the protected frame itself (statsmodels'
            ``logit("y ~ x", data=df).fit()`` is ``priv.dp.logit("y ~ x", bounds=...,
            epsilon=...)`` here).
        y, x : label and list of labels, optional
            The response and the regressors, for ``y ~ x1 + x2 + ...``.
        bounds : dict
            ``{column: (lower, upper)}`` for every numeric regressor (or from the session's
            schema). A response column needs none: its range is ``(0, 1)``.
        keys : dict, optional
            ``{column: [levels]}``: the public levels of each categorical variable.
        epsilon : float
            Privacy cost of the whole model, charged once.
        rho, delta, mechanism : optional
            As :meth:`ols`.
        alpha : float, default 0.05
            The level of the intervals :meth:`~LogitResults.summary` shows.
        weights, weight_bounds : optional
            Survey weights, as :meth:`ols`'s: each row counts its clipped weight times, as
            statsmodels' ``smf.glm(formula, df, family=sm.families.Binomial(),
            freq_weights=df.w).fit()`` (``nobs`` is then the noisy sum of the weights).

        Returns
        -------
        LogitResults
            ``params`` (log-odds), ``bse``, ``conf_int()``, ``cov_params()``, ``tvalues``,
            ``pvalues``, ``summary()`` (statsmodels' text table with its header),
            ``predict(frame)`` (probabilities), ``get_prediction(frame).summary_frame()``
            (with standard errors and intervals), ``nobs``, ``llf``, ``prsquared`` as
            statsmodels names them. ``resid`` and ``fittedvalues`` have one value per private
            row: they raise, saying so.

        Raises
        ------
        DPTypeError
            If the response column is not bool or numeric (a string or category column:
            write the event, ``I(y == "yes")``).
        DPValueError
            If the response's public range is not within ``[0, 1]`` (bounds such as
            ``(0, 5)``, or a term such as ``I(2 * y)``), or for any of :meth:`ols`'s
            refusals. Nothing is charged.

        Notes
        -----
        One fit measures the sums :meth:`ols` does, nothing else: over the rows holding
        every variable, each design column is scaled to ``[-1, 1]`` over its public range
        and the response, clipped into ``[0, 1]`` (the response's values are never checked:
        a value outside is clipped, a fractional one counts as a fractional outcome, as
        statsmodels accepts), to ``2y - 1``; the ``p = (m + 2)(m + 3) / 2`` sums of products
        of ``(1, z_1, ..., z_m, z_y)``, rounded to ``2**-16``, each move by at most 1 when a
        row is added or removed (times the rows a privacy unit may add). They get one
        discrete ℓ∞ K-norm noise vector of scale ``1/ε``, ``P(b) ∝ exp(-ε ‖b‖∞)`` (ε-DP by
        the triangle inequality; each sum's standard deviation ``√((p+1)(p+2)/3)/ε``, 0.43
        times the ``√2 p/ε`` of the per-sum Laplace noise :meth:`ols` adds, at ``p = 28``);
        with ``rho`` or ``mechanism="gaussian"``, discrete Gaussian noise of L2 sensitivity
        ``√p``, as :meth:`ols`. Budget cost: ``epsilon``. Everything after is
        post-processing. With ``weights``, the sums are weighted as :meth:`ols`'s (the
        sensitivity times the upper weight bound, no count of rows): the weighted sufficient
        statistics of a log-likelihood in which a row counts ``w`` times, which is
        statsmodels' ``freq_weights`` (``var_weights`` gives the same coefficients and
        standard errors for a Binomial family, but counts rows, not weights, in ``nobs``).

        Two steps, where they are more accurate (pure ``epsilon``, one model): a twentieth
        of ``epsilon`` releases the row count (sensitivity 1, times a unit's rows). When the
        noisy count times ``epsilon`` is at least 150 times ``p``, 3/10 of the rest measures
        the sums above and fits them (the *first fit* ``θ₁``, below), and the remainder
        measures the log-likelihood's gradient at ``θ₁``, ``Σ (σ(x̃ᵀθ₁) - y) x̃``: each
        row's residual ``σ(x̃ᵀθ₁) - y`` (in ``[-1, 1]``, a function of the row and the
        released ``θ₁``) times each of its scaled design columns, rounded to ``2**-16``:
        ``k = m + 1`` sums, each moved by at most 1 by a row (ℓ∞ sensitivity 1), with one K-norm
        noise vector as above. The coefficients are one step from ``θ₁``: the first fit's
        likelihood corrected so that its gradient at ``θ₁`` is the measured one, then
        maximised. At zero noise this lands on the maximum likelihood fit (within 1e-4 in L2
        in our tests, where one fit is 0.008 to 0.02 away; on the bundled census extract,
        whose design is two 0/1 columns and two discrete ones, 0.22 away where one fit is
        0.52), and at equal ε its median error is 0.46 to 0.61 times one fit's on 10^4 to
        10^5 rows (five regressors, ε = 0.5 to 2). When the first fit's design sums are too
        close to their noise for a step to be trusted (their smallest eigenvalue under 1.5
        times the noise's, AdaSSP's ``τ``), the remainder measures the same sums again
        instead, and the fit reads their average weighted by the noise's variance. Below the
        count's threshold (few rows, small ε) the rest of ε goes to one fit. Budget cost:
        ``epsilon`` in all, one ledger row whose note says which route ran (it depends on
        released values only). With ``rho``, ``delta`` or ``groupby(...).logit``, one fit on
        the whole ``epsilon``.

        Why this mechanism: the logistic log-likelihood reads the data through ``Σ y x``
        and through the law of the design, whose mean and covariance those sums give.
        PASS-GLM (Huggins, Adams & Broderick 2017) approximates ``log(1 + e^s)`` by a
        degree-2 Chebyshev polynomial on a public interval, which turns the log-likelihood
        into a function of exactly these sums; its optimum is the least-squares slope
        times a constant, and the chosen interval sets the bias (0.07 to 1.8 in L2 from
        the exact fit in our simulations, no interval right for all designs). We keep
        PASS-GLM's sufficient statistics and replace the polynomial by the expectation of
        ``log(1 + e^s)`` under the maximum-entropy law of the design given its public
        ranges and measured moments (each column's law ``∝ exp(a z + b z²)`` on its range:
        uniform, two-point for a 0/1 column or near normal as its variance says; a Gaussian
        copula with the measured correlations; a fixed Sobol point set recoloured to the
        measured mean and covariance). The objective stays a convex logistic likelihood,
        solved by Newton's method, within 0.005 to 0.03 in L2 of the exact fit on uniform,
        normal, binary and correlated designs (no noise, 20,000 rows). Objective
        perturbation (Chaudhuri, Monteleoni & Sarwate 2011; Kifer, Smith & Thakurta 2012)
        is consistent but is a new mechanism, needs an exact minimiser for its guarantee
        and gives no ready intervals, and its noise is continuous: the library's noise
        is discrete, on a lattice fixed before the data is read, which the perturbed
        optimum of a data-dependent objective is not. The sums here are audited
        measurements and every interval is post-processing. One fit remains an
        approximation of the maximum likelihood fit: what the design's law holds beyond its
        pairwise moments (the exclusivity of one categorical's levels, a skewed column) is
        not measured, and the intervals, which carry the rows' sampling variance and the
        noise's (delta method through the optimum, Laplace noise with its own quantile), do
        not include that approximation's bias; the second step removes most of it. A ridge
        (AdaSSP's rule, zero unless the noise made the design ill-conditioned) keeps the fit
        finite whatever the noise did.

        Examples
        --------
        >>> import numpy as np, pandas as pd, pandas_dp
        >>> rng = np.random.default_rng(0)  # test-only: example data, never noise
        >>> x = rng.normal(5, 1.5, 50_000)
        >>> y = rng.uniform(size=50_000) < 1 / (1 + np.exp(-(x - 5)))
        >>> priv = pd.DataFrame({"x": x, "y": y}).dp.protect(epsilon=1.0)
        >>> model = priv.dp.logit("y ~ x", bounds={"x": (0, 10)}, epsilon=1.0)
        >>> list(model.params.index), bool(abs(model.params["x"] - 1) < 0.15)
        (['Intercept', 'x'], True)
        """
        if data is not None:
            raise DPTypeError(
                f"logit() takes no data (got a {type(data).__name__}): the data is the "
                "protected frame itself, the one .dp is called on. statsmodels' logit('y ~ x', "
                "data=df) is priv.dp.logit('y ~ x', bounds=..., epsilon=...) here"
            )
        return self._consume(plan_logit(resolve(self._obj), formula, y=y, x=x, **options))

    @checked_keywords
    def pred_table(
        self, model: object, threshold: float = 0.5, **options: Unpack[CountArgs]
    ) -> pd.DataFrame:
        """Release a logit model's table of observed against predicted outcomes.

        statsmodels' ``LogitResults.pred_table(threshold)`` counts the rows it was fitted on;
        here the rows are private, so the table is a release of its own on the protected
        frame, the one ``.dp`` is called on (often the model's own).

        Parameters
        ----------
        model : LogitResults
            A released logit model (``priv.dp.logit(...)``): its coefficients are public.
        threshold : float, default 0.5
            A row is predicted 1 when its predicted probability exceeds it.
        epsilon : float
            The table's cost (or ``rho=`` in a zCDP session), charged once.
        nonnegative : bool, default False
            Clamp the noisy counts at 0 (free post-processing).

        Returns
        -------
        DataFrame
            2 × 2 noisy counts: rows ``observed`` 0 and 1, columns ``predicted`` 0 and 1
            (statsmodels returns the same layout as an array).

        Notes
        -----
        Each row is read through the model's design (variables clipped to the model's
        bounds, categories on its levels; the response as the model read it, observed 1
        when at least 1/2) and falls in one cell; a row missing a variable counts nowhere.
        One row changes one cell by one (a privacy unit's rows: by its cap): discrete
        Laplace noise of scale ``l1/ε`` on each of the four counts. Budget cost: ``epsilon``
        once (parallel composition over the cells).

        Examples
        --------
        >>> import numpy as np, pandas as pd, pandas_dp
        >>> rng = np.random.default_rng(0)  # test-only: example data, never noise
        >>> x = rng.uniform(-3, 3, 20_000)
        >>> df = pd.DataFrame({"x": x, "y": rng.uniform(size=20_000) < 1 / (1 + np.exp(-2 * x))})
        >>> priv = df.dp.protect(epsilon=2.0)
        >>> model = priv.dp.logit("y ~ x", bounds={"x": (-3, 3)}, epsilon=1.0)
        >>> table = priv.dp.pred_table(model, epsilon=1.0)
        >>> table.index.name, table.columns.name, table.shape
        ('observed', 'predicted', (2, 2))
        """
        return self._consume(
            plan_pred_table(self._obj, model, threshold, count_options(options, None))
        )

    @checked_keywords
    def merge(
        self,
        right: pd.DataFrame,
        on: Hashable | list[Hashable],
        *,
        how: Literal["inner", "left"] = "inner",
        validate: str | None = None,
        suffixes: tuple[str, str] = ("_x", "_y"),
        max_rows_per_key: int | None = None,
    ) -> pd.DataFrame:
        """Join a public lookup table or another protected table, like ``df.merge(right, on=...)``.

        Parameters
        ----------
        right : DataFrame
            A public table (not protected): region names, a price list, a calendar. Its
            keys may repeat (a one-to-many join): see Notes for what that costs. Or a
            protected frame of the same budget (protected with
            ``protect(session=df.dp.session, ...)``, or derived from one): see the Notes.
        on : label or list of labels
            The key column(s), in both frames.
        how : {"inner", "left"}, default "inner"
            As pandas. ``"right"`` and ``"outer"`` are refused: they would add a row for
            each public key without a match, and whether a key has one is private. With a
            protected right side only ``"inner"``: whether a row has a match is private to
            the other table.
        validate : {"many_to_one", "m:1", "many_to_many", "m:m"}, optional
            As pandas, on the public side only; checks on a protected side would read
            the data and are refused.
        suffixes : (str, str), default ("_x", "_y")
            For columns both frames hold, as pandas.
        max_rows_per_key : int, optional
            Required to join two protected tables under row-level privacy (a private
            join): each side keeps at most this many rows per key, chosen at random.

        Returns
        -------
        DataFrame or dask.dataframe.DataFrame
            Protected by the same budget (a view of it with the join's stability where one
            protected row may become several), shaped as pandas' merge (the left columns,
            then the right ones, the left rows' order). With a public table each row keeps
            its index label where pandas numbers the result afresh: the labels are how
            pandas-dp tells that no row was repeated. With ``how="left"`` the public
            columns always have the dtypes pandas gives them when some row has no match
            (``int64`` becomes ``float64``, ``bool`` ``object``): whether one has is
            private, so the dtypes come from the public table alone. A join of two
            protected frames has a fresh ``RangeIndex``, as pandas gives it.

        Raises
        ------
        DPValueError
            Before anything is read or charged: two protected frames of different
            sessions, a join of protected frames that is not ``how="inner"``, a row-level
            private join without ``max_rows_per_key``, a join under a privacy unit that is
            not on the unit's column.

        Notes
        -----
        With a public table: stable when its keys are unique (each protected row becomes
        at most one row, exactly one with ``"left"``), so every later release keeps its
        sensitivity and cost; the join itself reads nothing to release and costs nothing.
        A public key repeated ``k`` times (at most) makes a row up to ``k`` rows: under a
        privacy unit every release caps each unit's rows by its id, so the sensitivities
        stay those of the caps (extra rows are dropped at random); under row-level privacy
        the result's *stability* is ``k`` (``joined.dp.session.stability``) and every later
        release is calibrated to ``k`` rows (the ledger's note says so). A public table
        joins pandas frames and Dask collections alike (the same calls and results); on
        Dask each partition is joined by the same canonical matching, never by Dask's own
        hash join, its lineage is checked like any derived collection's, and a one-to-many
        join needs a privacy unit.

        With a protected right side (both frames of one budget, pandas only):

        - under a privacy unit, ``on`` must hold the unit's column (and may hold other
          keys). Each joined row holds one unit's id, so the result stays under the unit,
          with ``max_rows_per_unit = k_left · k_right``: the cap every later release
          applies to a unit's joined rows (a unit within its caps on both sides loses none);
        - under row-level privacy, the join is *private* (Tumult's ``join_private``): each
          side is first truncated to ``max_rows_per_key`` = ``m`` rows per key, keeping the
          first ``m`` in a random order, and the result's stability is ``2·m`` (two
          tables: adding or removing a row of one side changes at most two of its kept rows,
          each meeting at most ``m`` rows of the other side), or ``2·m·(s_left + s_right)``
          when both sides read the same table (``4·m`` for a table joined with itself).
          Every later release is calibrated to it.

        Keys match by the canonical forms of group keys (``1``, ``1.0`` and ``True`` are one
        key; the privacy unit's ids as every release reads them); unlike pandas, a missing
        key matches nothing. The ledger names the tables a release read (once a budget has
        several) and the joins that set its stability.

        Examples
        --------
        >>> import pandas as pd, pandas_dp
        >>> priv = pd.DataFrame({"code": [1, 2, 2, 3]}).dp.protect(epsilon=1.0)
        >>> regions = pd.DataFrame({"code": [1, 2, 3], "region": ["N", "S", "S"]})
        >>> joined = priv.dp.merge(regions, on="code")
        >>> list(joined.columns), joined.dp.session is priv.dp.session
        (['code', 'region'], True)

        Two tables about the same people, joined on the privacy unit:

        >>> people = pd.DataFrame({"pid": [1, 2], "age": [30, 40]}).dp.protect(
        ...     epsilon=1.0, privacy_unit="pid", max_rows_per_unit=1, name="people")
        >>> visits = pd.DataFrame({"pid": [1, 1, 2], "cost": [5.0, 7.0, 9.0]}).dp.protect(
        ...     session=people.dp.session, privacy_unit="pid", max_rows_per_unit=3,
        ...     name="visits")
        >>> both = people.dp.merge(visits, on="pid")
        >>> list(both.columns), both.dp.session.unit.max_rows
        (['pid', 'age', 'cost'], 3)
        """
        if has_session_mark(right):
            return merge_protected(self._obj, right, on, how, validate, suffixes, max_rows_per_key)
        if max_rows_per_key is not None:
            raise DPValueError(
                "max_rows_per_key truncates a join of two protected tables; this right side "
                "is a public table (its key multiplicities are read off it)"
            )
        return merge(self._obj, right, on, how, validate, suffixes)

    @checked_keywords
    def explode(
        self,
        column: Hashable | list[Hashable],
        max_items: int | None = None,
        *,
        ignore_index: bool = False,
    ) -> pd.DataFrame:
        """Transform each element of a list-like to a row, like ``df.explode(column)``.

        Parameters
        ----------
        column : label or list of labels
            The column(s) to explode, as pandas. With several, pandas requires each row's
            lists to have one length; here a row whose lists differ is padded with missing
            values instead (a refusal would depend on that row's values).
        max_items : int
            Required: a public bound ``c`` on the items kept per row. A row with more keeps
            its *first* ``c`` items (in its list's own order: a rule that reads that row
            only). An empty list or a missing value is one row with a missing value, as
            pandas makes it. Pick ``c`` from what you know of the data's source, not from
            the data.
        ignore_index : bool, default False
            As pandas: number the result's rows afresh instead of repeating their labels.

        Returns
        -------
        DataFrame
            Protected by the same budget, shaped as pandas' explode (each row's labels
            repeated). An exploded object column is always of dtype ``object``, where pandas
            infers ``str`` or ``datetime64`` when every item is one, and the index is
            materialised as integers where pandas keeps a ``RangeIndex`` when no row
            repeated: a schema read off the rows would tell about them.

        Notes
        -----
        Stability ``c``: one protected row becomes at most ``c`` rows, so under row-level
        privacy every later release multiplies its sensitivities (and caps) by ``c`` and
        the ledger note names this step; the row guard accepts each protected label up to
        ``c`` times. Under a privacy unit nothing is multiplied: each exploded row keeps
        the unit's id, and every release caps each unit's rows by it (the unit column itself
        cannot be exploded). The explode reads nothing to release and costs nothing.
        Pandas frames only.

        Examples
        --------
        >>> import pandas as pd, pandas_dp
        >>> df = pd.DataFrame({"tags": [["a", "b", "c"], [], ["b"]], "n": [1, 2, 3]})
        >>> priv = df.dp.protect(epsilon=1.0)
        >>> tags = priv.dp.explode("tags", max_items=2)
        >>> tags["tags"].tolist(), tags.index.tolist(), tags.dp.session.stability
        (['a', 'b', nan, 'b'], [0, 0, 1, 2], 2)
        """
        return explode(self._obj, column, max_items, ignore_index)

    @checked_keywords
    def melt(
        self,
        id_vars: Hashable | list[Hashable] | None = None,
        value_vars: Hashable | list[Hashable] | None = None,
        var_name: Hashable | None = None,
        value_name: Hashable = "value",
        *,
        ignore_index: bool = True,
    ) -> pd.DataFrame:
        """Unpivot columns into rows, like ``df.melt(id_vars, value_vars)``.

        Parameters
        ----------
        id_vars : label or list of labels, optional
            Columns kept on every row, as pandas. Under a privacy unit the unit column must
            be among them (the melted rows must keep who they belong to).
        value_vars : label or list of labels
            Required (pandas' default, every other column, is not taken): the ``v`` columns
            to melt. Each protected row becomes exactly ``v`` rows.
        var_name, value_name : label, optional
            As pandas: the names of the column of melted column names and of values.
        ignore_index : bool, default True
            As pandas: a fresh ``RangeIndex``; ``False`` repeats each row's label ``v`` times.

        Returns
        -------
        DataFrame
            Protected by the same budget, shaped as pandas' melt.

        Notes
        -----
        Stability ``v``: under row-level privacy every later release multiplies its
        sensitivities (and caps) by ``v``, and the ledger note names this step. With the
        fresh index the row guard records the melted frame's own index, so a later
        duplication of the melted rows is still refused. Under a privacy unit nothing is
        multiplied: every release caps each unit's rows by its id. The melt reads nothing
        to release and costs nothing. Pandas frames only.

        Examples
        --------
        >>> import pandas as pd, pandas_dp
        >>> df = pd.DataFrame({"id": [1, 2], "q1": [3, 4], "q2": [5, 6]})
        >>> long = df.dp.protect(epsilon=1.0).dp.melt(id_vars=["id"], value_vars=["q1", "q2"])
        >>> long["value"].tolist(), long.dp.session.stability
        ([3, 4, 5, 6], 2)
        """
        return melt(self._obj, id_vars, value_vars, var_name, value_name, ignore_index)

    @checked_keywords
    def resample(
        self,
        freq: str,
        *,
        on: Hashable | None = None,
        range: tuple[object, object] | None = None,
        max_groups_per_unit: int | None = None,
        max_rows_per_group: int | None = None,
    ) -> DPResampler:
        """Group by the periods of a frequency over a public range, like ``df.resample``.

        Parameters
        ----------
        freq : str
            A pandas frequency (``"D"``, ``"W"``, ``"MS"``, ``"QS"``, ``"h"`` ...).
        on : label
            The datetime (or timedelta) column to bin. Unlike pandas there is no default:
            a frame's index is not read by a release (``reset_index()`` makes it a column).
        range : (start, end)
            The public span, as Timestamps (Timedeltas) or text pandas reads as one
            (``("2024-01-01", "2025-01-01")``): bins of ``freq`` from ``start``
            up to ``end`` (excluded), cut and labelled as ``resample`` cuts them. pandas
            spans the data's first to last value instead, which is private.
        max_groups_per_unit, max_rows_per_group : int, optional
            Under a privacy unit, as for :meth:`groupby`.

        Returns
        -------
        DPResampler
            A group-by over the bins: ``size``, ``count``, ``sum``, ``mean``, ``agg``,
            column selection and ``ci=`` as for :meth:`groupby`; results are indexed by the
            bins' labels (a ``DatetimeIndex`` with its ``freq``, named ``on``), every bin
            present, empty ones included.

        Notes
        -----
        Each row falls in at most one bin (rows outside the range in none): one release
        charges its ε once whatever the number of bins (parallel composition), with the
        sensitivities of a group-by over public keys.

        Examples
        --------
        >>> import numpy as np, pandas as pd, pandas_dp
        >>> t = pd.Timestamp("2024-01-01") + pd.to_timedelta(np.arange(366), unit="D")
        >>> priv = pd.DataFrame({"t": t, "x": 1.0}).dp.protect(epsilon=1.0)
        >>> months = priv.dp.resample(
        ...     "MS", on="t", range=(pd.Timestamp("2024-01-01"), pd.Timestamp("2025-01-01"))
        ... ).size(epsilon=0.5)
        >>> len(months), months.index.freqstr, months.index.name
        (12, 'MS', 't')
        """
        return resample(
            resolve(self._obj), freq, on, range, self._consumer,
            max_groups_per_unit=max_groups_per_unit, max_rows_per_group=max_rows_per_group,
        )  # fmt: skip

    @checked_keywords
    def tables(
        self,
        workload: Sequence[Hashable | Sequence[Hashable]],
        keys: Mapping[Hashable, Sequence[object]] | None = None,
        *,
        bins: Mapping[Hashable, Sequence[float]] | None = None,
        epsilon: Real | None = None,
        delta: Real | None = None,
        rho: Real | None = None,
    ) -> Tables:
        """Release many tables of counts at once: consistent, non-negative, charged once.

        Parameters
        ----------
        workload : list of lists of labels
            The tables, each a list of columns (a single label is a one-column table), e.g.
            ``[["age_band", "sex"], ["sex", "region"], ["age_band", "region", "tenure"]]``.
        keys : dict, optional
            ``{column: values}``: the public keys of each column. Columns without keys take
            them from the session's schema (``isin``), or from ``bins``.
        bins : dict, optional
            ``{column: edges}`` for numeric columns: public bin edges, cut like
            :func:`pandas.cut` (right-closed, a value equal to the first edge is outside).
        epsilon : float
            Privacy cost of the whole release, charged once.
        delta : float, optional
            δ the release may spend on Gaussian noise; by default the session's δ in
            proportion to ``epsilon``. With δ = 0 the noise is Laplace. Not allowed in a
            ρ-zCDP session.
        rho : float, optional
            In a ρ-zCDP session, instead of ``epsilon``: the ρ the release spends (its
            discrete Gaussian noise is calibrated to ``ε = sqrt(2ρ)``, i.e. to ρ itself).

        Returns
        -------
        dict
            Keyed by the tuple of each table's columns. A one-column table is a Series
            indexed by the column's keys (like ``df.groupby(col).size()``); a table of
            ``k >= 2`` columns a DataFrame shaped like ``pd.crosstab([df[c] for c in
            cols[:-1]], df[cols[-1]])``: indexed by the first ``k - 1`` columns' keys (a
            MultiIndex for several), one column per key of the last (``columns.name`` set).
            Values are float, non-negative, and consistent: summing any table over a column
            gives exactly (to float precision) the same counts as any other table over the
            remaining columns.

        Raises
        ------
        DPKeyError, DPTypeError, DPValueError
            For a missing column, a column without public keys or bins, a bad workload, ε
            or δ. Nothing is charged.
        BudgetExceededError
            If the session cannot afford the release.

        Notes
        -----
        A row counts only where every column of the workload holds one of its keys (or
        falls in one of its bins); other rows are dropped silently, like the group-by.
        Nothing else is clipped.

        *Measurements.* The tables and all their sub-tables (the workload's downward
        closure) are candidate marginals; each gets a share ``s_B`` of the release's ρ
        chosen to minimise the workload's total variance after least squares, which reads
        the workload and the keys' sizes only (McKenna et al., "Optimizing error of
        high-dimensional statistical queries under differential privacy", PVLDB 2018, with
        the closed-form error of Xiao et al., "An optimal and scalable matrix mechanism for
        noisy marginals under convex loss functions", NeurIPS 2023). One row is in one cell of
        each marginal (a privacy unit with ``k`` rows: sensitivity ``k`` per marginal, in
        L1 and L2). Mechanism: discrete Gaussian noise with ``σ_B² = k²/(2 ρ s_B)`` on every
        cell of marginal ``B``, where ρ converts to ``(epsilon, delta)`` (``ρ = epsilon²/2``
        in a ρ-zCDP session); or discrete Laplace noise of scale ``k/(epsilon s_B)``,
        whichever gives the workload the smaller total variance (Laplace for a few tables or
        without δ, Gaussian for many). With Gaussian noise the subsets' *residuals* are
        measured instead of whole marginals when that takes at most 2·10⁶ noise values
        (ResidualPlanner, Xiao et al. 2023, at its optimal variance): residual ``A`` (the
        marginal centred along each column) as ``F_A m_A``, ``F_A`` an integer orthogonal
        basis of its ``d_A = Π(n_i - 1)`` dimensions, plus independent discrete Gaussian
        noise of ``σ² = v_A N / Π n_i`` on the value of a row of squared norm ``N``, with
        ``v_A = k² d_A/(2 ρ s_A)`` (:mod:`pandas_dp.mechanisms.residuals.planner`).
        Budget cost: ``epsilon`` (and δ with Gaussian noise), one ledger entry listing
        every measured marginal or residual with its noise.

        *Post-processing* (free): generalized least squares through the marginals'
        residuals makes every table a marginal of one estimate (consistent); the nearest
        consistent non-negative tables are then found by accelerated projected gradient,
        and any negativity left is mixed away exactly. Values are floats: rounding each
        table to integers would break their agreement. ``priv.dp.preview.tables(...)``
        gives each table's 95% error of the least-squares estimate per cell (clamping at
        zero only reduces it).

        Examples
        --------
        >>> import numpy as np, pandas as pd, pandas_dp
        >>> rng = np.random.default_rng(0)  # test-only: example data, never noise
        >>> df = pd.DataFrame({"sex": rng.integers(0, 2, 5000),
        ...                    "region": rng.choice(["n", "s", "e"], 5000)})
        >>> priv = df.dp.protect(epsilon=1.0, delta=1e-6)
        >>> tables = priv.dp.tables([["sex"], ["sex", "region"]],
        ...                         keys={"sex": [0, 1], "region": ["n", "s", "e"]},
        ...                         epsilon=1.0)
        >>> tables[("sex", "region")].columns.name, list(tables[("sex",)].index)
        ('region', [0, 1])
        >>> bool(np.allclose(tables[("sex", "region")].sum(axis=1), tables[("sex",)]))
        True
        """
        # Lazy: the marginal-workload optimiser and estimator load on first use only.
        from pandas_dp.api.queries.tables import plan_tables

        return self._consume(
            plan_tables(self._obj, workload, keys, bins=bins, epsilon=epsilon, delta=delta, rho=rho)
        )

    @checked_keywords
    def synthesize(
        self,
        columns: Sequence[Hashable],
        keys: Mapping[Hashable, Sequence[object]] | None = None,
        *,
        bins: Mapping[Hashable, Sequence[float]] | None = None,
        epsilon: Real | None = None,
        delta: Real | None = None,
        rho: Real | None = None,
        method: str = "mst",
        rows: int | None = None,
        workload: Sequence[Sequence[Hashable]] | None = None,
    ) -> Any:
        """Release synthetic rows whose one-way and chosen marginals match the data.

        Parameters
        ----------
        columns : list of labels
            The columns of the synthetic frame.
        keys, bins : dict, optional
            The public domain of each column, as for :meth:`tables`.
        epsilon : float
            Privacy cost of the whole release, charged once; the rows cost nothing more.
        delta : float, optional
            δ for Gaussian noise; by default the session's δ in proportion to ``epsilon``.
            With δ = 0 the noise is Laplace.
        rho : float, optional
            In a ρ-zCDP session, instead of ``epsilon``: the ρ the release spends (the
            marginals' Gaussian noise and the choices' exponential mechanism, priced by
            bounded range, share it).
        method : {"mst", "aim"}
            MST (McKenna, Miklau & Sheldon 2021): a tree of pairs. AIM (McKenna, Mullins,
            Sheldon & Miklau 2022): rounds that measure the marginals of ``workload`` the
            model explains worst; it needs Gaussian noise (δ > 0 or a ρ session).
        rows : int, optional
            How many rows to generate; by default the model's noisy total.
        workload : list of lists of labels, optional
            AIM only: the tables the rows should reproduce best (default: every pair of
            ``columns``). Its tables and their sub-tables of two or more columns are AIM's
            candidates.

        Returns
        -------
        DataFrame
            A plain DataFrame (no session: it is already private) with ``columns``: keyed
            columns hold their keys in the column's dtype when the keys fit it (categories:
            the keys as categories); binned columns hold floats drawn uniformly within each
            bin. ``attrs["synthesis"]`` reports the method, ε, the number of rows, the model's
            total, the tree's pairs and each measured marginal's RMSE per cell.

        Raises
        ------
        DPKeyError, DPTypeError, DPValueError
            For a missing column, a column without keys or bins, a bad ε, δ, ``rows`` or
            ``method``. Nothing is charged.
        BudgetExceededError
            If the session cannot afford the release.

        Notes
        -----
        A row counts only where every column holds one of its keys (or falls in a bin).

        *Measurements* (a unit with ``k`` rows changes each by at most ``k``): every one-way
        marginal; a spanning tree over the columns chosen by ``d - 1`` rounds of the
        exponential mechanism, each picking a pair that joins two parts of the tree so far,
        scored by the L1 distance of the pair's table from the product of the noisy one-way
        marginals (sensitivity ``k`` plus ``1/16`` of rounding); then the chosen pairs'
        marginals. Mechanism: discrete Gaussian noise on the marginals (Laplace in a pure
        session). Budget cost: ``epsilon`` (and δ): with δ, the marginals together
        ``(2ε/3, δ)`` through zCDP and the tree ``ε/3``; without, a third each to the one-way
        marginals, the tree and the pairs. One ledger entry lists them all.

        *AIM* measures every one-way marginal, then in each of ``len(columns)`` rounds
        fits a graphical model to the measurements so far and chooses, by the exponential
        mechanism, the candidate whose table the model misses most in L1, less the noise its
        measurement would add, weighted by its overlap with the workload (sensitivity ``k``
        times the largest weight, plus ``1/16``), then measures it. Budget: nine tenths to
        the ``d + rounds`` Gaussian measurements in equal shares, a tenth to the choices.
        The rounds' budgets are fixed in advance (the paper adapts them as it goes), so the
        ledger lists every measurement.

        *Post-processing* (free): MST: the graphical model over the tree's pairs fitted to
        its measurements (Private-PGM, as the paper), then rows drawn from the tree model its
        marginals define (each column given its parent in the tree, counts by randomized
        rounding). AIM: rows drawn from the
        graphical model fitted to all its measurements (Private-PGM), clique by clique.
        Randomness from the session's generator.

        Examples
        --------
        >>> import numpy as np, pandas as pd, pandas_dp
        >>> rng = np.random.default_rng(0)  # test-only: example data, never noise
        >>> df = pd.DataFrame({"sex": rng.integers(0, 2, 2000),
        ...                    "region": rng.choice(["n", "s"], 2000)})
        >>> priv = df.dp.protect(epsilon=1.0, delta=1e-6)
        >>> synth = priv.dp.synthesize(["sex", "region"], keys={"sex": [0, 1],
        ...                            "region": ["n", "s"]}, epsilon=1.0, rows=500)
        >>> synth.shape, synth.dtypes.tolist()[0], sorted(synth["region"].unique())
        ((500, 2), dtype('int64'), ['n', 's'])
        """
        # Lazy: the synthetic-data models (AIM, MST, graphical model) load on first use only.
        from pandas_dp.api.queries.synthesize import plan_synthesize

        return self._consume(
            plan_synthesize(
                self._obj, columns, keys, bins=bins, epsilon=epsilon, delta=delta, rho=rho,
                method=method, rows=rows, workload=workload,
            )
        )  # fmt: skip

    @checked_keywords
    def hierarchy(
        self,
        by: list[Hashable],
        keys: Keys = None,
        *,
        margins_name: Hashable = "All",
        max_groups_per_unit: int | None = None,
        max_rows_per_group: int | None = None,
    ) -> DPHierarchy:
        """A public hierarchy over columns, for tables that add up at every level.

        Parameters
        ----------
        by : list of labels
            The columns, outermost first (e.g. ``["region", "district"]``).
        keys : dict or MultiIndex, optional
            The public hierarchy: a nested dict (``{region: [districts]}``, or dicts of
            dicts for more levels), a per-level dict (``{"region": [...], "district":
            {region: [districts]}}``; a plain list at a level gives every parent the same
            children), or the leaf paths as a MultiIndex or list of tuples. Without keys, the
            session's schema must list every column's values (``isin``); the hierarchy is
            then every combination.
        margins_name : label, default "All"
            The label of totals, as in :func:`pandas.pivot_table`; it may not be a key.
        max_groups_per_unit : int, optional
            Under a privacy unit: the most leaves one unit may contribute to (extra ones are
            dropped at random). Defaults to ``max_rows_per_unit``.
        max_rows_per_group : int, optional
            Under a privacy unit: the most rows one unit may add to one leaf.

        Returns
        -------
        DPHierarchy
            Whose :meth:`~pandas_dp.api.hierarchy.DPHierarchy.count` releases the table.

        Notes
        -----
        Keys are checked before any data is read; a mistake costs nothing. Under a privacy
        unit with ``k`` rows, ``g`` leaves and ``r`` rows per leaf, a unit changes each
        level's counts by at most ``L1 = min(k, g·r)`` in all, which scales every level's
        noise.

        Examples
        --------
        >>> import pandas as pd, pandas_dp
        >>> df = pd.DataFrame({"region": ["n", "s"] * 50, "district": ["n1", "s1"] * 50})
        >>> priv = df.dp.protect(epsilon=1.0)
        >>> h = priv.dp.hierarchy(["region", "district"], keys={"n": ["n1", "n2"], "s": ["s1"]})
        >>> h
        <DPHierarchy by=['region', 'district'], nodes per level 1 → 2 → 3>
        """
        return DPHierarchy(
            resolve(self._obj), by, keys, margins_name=margins_name,
            max_groups_per_unit=max_groups_per_unit, max_rows_per_group=max_rows_per_group,
            consumer=self._consumer,
        )  # fmt: skip

    @property
    def preview(self) -> DataFramePreview:
        """Preview releases without spending: ``priv.dp.preview.count(epsilon=0.1)``.

        The same release methods, returning a :class:`~pandas_dp.api.release.Preview` with
        the mechanism, noise scale, cost and the error bound at the release's confidence
        level (``ci``, 95% by default). It reads no data and charges nothing. Called with a
        planning row count, ``priv.dp.preview(expected_rows=1400).mean(...)``, it states
        means' and spreads' errors at that count (as ``expected_rows=`` on one call does).
        """
        return DataFramePreview(self._obj)


class DataFramePreview(DataFrameDPAccessor[Preview, Preview]):
    """``df.dp.preview``: every release method of ``df.dp``, returning a preview instead.

    The ``df.dp`` accessor holding a :class:`~pandas_dp.api.release.consumers.Describe`:
    each method plans its release as ``df.dp`` does and describes the plan.
    """

    _consumer: Consumer = Describe()

    def __getattribute__(self, name: str) -> Any:
        if name in RELEASE_ONLY:
            raise release_only(self, name)
        return super().__getattribute__(name)

    def __call__(self, *, expected_rows: float) -> Self:
        """Preview at a planning row count: ``priv.dp.preview(expected_rows=1400).mean(...)``.

        Means' and spreads' errors depend on their count, which only the data know; every
        preview from the returned accessor states them at ``expected_rows``.
        """
        return self._consuming(Describe(planning_rows(expected_rows, None, "preview")))
