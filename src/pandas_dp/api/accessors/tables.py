"""``DataFrame.dp.tables`` and ``.hierarchy``: many tables at once, and tables that add up."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from pandas_dp.api.accessors.base import BaseDPAccessor
from pandas_dp.api.queries.hierarchy.counts import DPHierarchy
from pandas_dp.api.release import resolve
from pandas_dp.api.release.arguments import EstimateT, Keys, NumberT, Real

if TYPE_CHECKING:  # loaded with the tables code, on first use
    from pandas_dp.api.queries.tables import Tables


class FrameTables(BaseDPAccessor[NumberT, EstimateT]):
    """Workloads of contingency tables."""

    _obj: pd.DataFrame

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

        return self._execute(
            plan_tables(self._obj, workload, keys, bins=bins, epsilon=epsilon, delta=delta, rho=rho)
        )

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

        return self._execute(
            plan_synthesize(
                self._obj, columns, keys, bins=bins, epsilon=epsilon, delta=delta, rho=rho,
                method=method, rows=rows, workload=workload,
            )
        )  # fmt: skip

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
            execute=self._execute,
        )  # fmt: skip
