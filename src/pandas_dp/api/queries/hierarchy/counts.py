"""Consistent hierarchical tables: ``priv.dp.hierarchy(by, keys=...).count(epsilon=...)``.

The rows are counted at every level of a public hierarchy (the total, then ``by[0]``, then
``by[0]`` × ``by[1]``, ...), with independent noise per level; the noisy counts are then
post-processed (no budget) into non-negative integers in which every parent equals the sum of
its children (:mod:`pandas_dp.mechanisms.consistency`). One call is one release: one charge,
one measurement per level.
"""

from __future__ import annotations

import copy
from collections.abc import Hashable, Iterable, Sequence
from fractions import Fraction
from typing import Self, cast

import numpy as np
import pandas as pd

from pandas_dp.api.caps import caps_for
from pandas_dp.api.keys import check_key_types, parse_by
from pandas_dp.api.queries.groupby import schema_domains, schema_keys
from pandas_dp.api.queries.hierarchy.keys import Hierarchy, parse_hierarchy
from pandas_dp.api.release import (
    PlannedRelease,
    Presentation,
    Pricing,
    Request,
    Target,
    plan,
)
from pandas_dp.api.release.arguments import Real
from pandas_dp.api.release.consumers import RUN, Consumer, checked_keywords
from pandas_dp.api.release.options import parse_confidence, price
from pandas_dp.api.release.types import Finish
from pandas_dp.budget import MIN_EPSILON, RhoBudget, number_text
from pandas_dp.errors import DPKeyError, DPTypeError, DPValueError
from pandas_dp.measures.aggregates import Aggregate, Grouping
from pandas_dp.mechanisms.consistency import consistent_counts
from pandas_dp.planning.measurement.choices import AnyPart
from pandas_dp.planning.measurement.keys import MeasurementKey
from pandas_dp.planning.measurement.parts import Part
from pandas_dp.planning.noise import NoiseSource
from pandas_dp.planning.request import Caps, PlannedOutput
from pandas_dp.planning.statistics import LevelCount

OUTPUTS = ("table", "leaves", "levels")


#: A hierarchy's counts: one Series (``"table"``, ``"leaves"``) or one per level (``"levels"``).
Counts = pd.Series | dict[Hashable, pd.Series]


class DPHierarchy:
    """A public hierarchy of keys over columns of a protected frame.

    Created by :meth:`DataFrameDPAccessor.hierarchy`; it holds only public parameters (the
    columns, the tree of keys, the label of totals and the contribution caps).
    """

    def __init__(
        self,
        target: Target,
        by: Hashable | list[Hashable],
        keys: object = None,
        *,
        margins_name: Hashable = "All",
        max_groups_per_unit: int | None = None,
        max_rows_per_group: int | None = None,
        consumer: Consumer = RUN,
    ) -> None:
        self._target = target
        self._consumer = consumer
        self.by = parse_by(by)
        engine, data = target.engine, target.data
        columns = engine.columns(data)
        for label in self.by:
            if label not in columns:
                raise DPKeyError(f"hierarchy column {label!r} not found in this frame")
        self.keys_from = ""
        if keys is None:
            keys, self.keys_from = schema_keys(target, self.by, ", every combination")
        self.hierarchy: Hierarchy = parse_hierarchy(self.by, keys, margins_name)
        dtypes = dict(engine.dtypes(data).items())
        check_key_types(
            self.hierarchy.leaves, [dtypes[label] for label in self.by],
            schema_domains(target, self.by),
        )  # fmt: skip
        self._caps = caps_for(target, True, max_groups_per_unit, max_rows_per_group)

    def _consuming(self, consumer: Consumer) -> Self:
        """The same hierarchy, handing its planned releases to ``consumer``."""
        hierarchy = copy.copy(self)
        hierarchy._consumer = consumer
        return hierarchy

    def __repr__(self) -> str:
        widths = " → ".join(str(w) for w in self.hierarchy.tree.widths)
        return f"<DPHierarchy by={list(self.by)}, nodes per level {widths}>"

    @checked_keywords
    def count(
        self,
        *,
        epsilon: Real | None = None,
        rho: Real | None = None,
        split: Sequence[Real] | None = None,
        output: str = "table",
        ci: float | None = None,
    ) -> Counts:
        """Release a consistent table of counts at every level of the hierarchy.

        Parameters
        ----------
        epsilon : float
            Privacy cost of the whole table, charged once.
        rho : float, optional
            In a ρ-zCDP session, instead of ``epsilon``: the ρ of the whole table, shared by
            the levels' discrete Gaussian noise (``σ² = Δ²/(2ρ_level)``).
        split : sequence of positive numbers, optional
            Relative shares of ε per level, the total first, then one per column of ``by``
            (e.g. ``[1, 1, 2]``). By default every level gets the same share.
        output : {"table", "leaves", "levels"}, default "table"
            ``"table"``: one Series over every node (see Returns). ``"leaves"``: only the
            finest level, indexed by the leaf paths. ``"levels"``: a dict of Series, one per
            level: the total under ``margins_name``, then one per column of ``by``, indexed
            by the paths down to that column.
        ci : None
            Not supported (see Notes); any other value raises.

        Returns
        -------
        Series or dict of Series
            Named ``"count"``, of non-negative ``int64``. The table is indexed by a
            MultiIndex with one level per column of ``by`` (a flat Index for one column).
            Its rows come in pre-order: the total first (``margins_name`` in every level),
            then each node followed by its children, in the order of the keys; a row of
            totals carries ``margins_name`` in the levels below it. Each parent equals the
            sum of its children exactly.

        Raises
        ------
        DPValueError, DPTypeError
            For a bad ε, split or output, or any ``ci``.
        BudgetExceededError
            If the session cannot afford ε. Nothing is charged when anything fails.

        Notes
        -----
        A row counts only if its whole path is among the keys (other rows, and rows with a
        missing value in a ``by`` column, are dropped silently); nodes without rows get
        counts too. Nothing else is clipped.

        *Measurements.* Level ``l`` (the total, then each column) is counted with ε
        share ``ε_l``; one row is in exactly one node of each level, so each level's vector
        of counts has L1 sensitivity 1 (``L1 = min(k, g·r)`` under a privacy unit capped at
        ``k`` rows, ``g`` leaves and ``r`` rows per leaf; see
        :meth:`DataFrameDPAccessor.hierarchy`). Mechanism: discrete Laplace with scale
        ``L1/ε_l`` on every node of level ``l``. Budget cost: ``ε = Σ ε_l`` (sequential
        composition across levels, parallel within a level), one ledger entry with one
        measurement per level.

        *Post-processing* (free): the noisy counts of all levels are combined by generalized
        least squares on the tree, each level weighted by the inverse of its noise variance
        (two passes; Hay, Rastogi, Miklau & Suciu, "Boosting the accuracy of differentially
        private histograms through consistency", PVLDB 2010); the total is rounded to a
        non-negative integer, and then, level by level, each parent's children are projected
        onto the non-negative values summing to the parent's integer and rounded to integers
        with that sum by the largest-remainder rule: the TopDown algorithm of the 2020 US
        Census with least squares and this rounding (Abowd et al., "The 2020 Census
        Disclosure Avoidance System TopDown Algorithm", HDSR 2022).

        *No confidence intervals.* The post-processing changes the error's distribution
        (each count is pulled towards its parent's and its children's, clamped at 0 and
        rounded), so the noise's quantiles no longer bound it and ``ci`` is refused. The
        error per level is measured in the benchmark and the guide; ``priv.dp.preview
        .hierarchy(...)`` gives the error bound of each level's raw noisy counts.

        Examples
        --------
        >>> import pandas as pd, pandas_dp
        >>> df = pd.DataFrame({"region": ["n"] * 60 + ["s"] * 40,
        ...                    "district": ["n1"] * 35 + ["n2"] * 25 + ["s1"] * 40})
        >>> priv = df.dp.protect(epsilon=1.0)
        >>> keys = {"region": ["n", "s"], "district": {"n": ["n1", "n2"], "s": ["s1"]}}
        >>> table = priv.dp.hierarchy(["region", "district"], keys=keys).count(epsilon=1.0)
        >>> table.index.tolist()
        [('All', 'All'), ('n', 'All'), ('n', 'n1'), ('n', 'n2'), ('s', 'All'), ('s', 's1')]
        >>> bool(table["n", "All"] == table["n", "n1"] + table["n", "n2"])
        True
        """
        if output not in OUTPUTS:
            raise DPValueError(f"output must be one of {OUTPUTS}, got {output!r}")
        if output == "levels" and self.hierarchy.margins_name in self.by:
            raise DPValueError(
                f"output='levels' keys the total by margins_name={self.hierarchy.margins_name!r}"
                ", which is also a column of by; pass another margins_name"
            )
        eps, parsed_rho, asked = price(self._target, "hierarchy.count", epsilon, rho)
        planned = self._plan(eps, split, output, parse_confidence(ci), parsed_rho, asked)
        if ci is not None:
            planned = planned.only_preview(
                "ci is not available for hierarchies: the consistent counts are post-"
                "processed (least squares, clamped at 0, rounded), so the noise's interval "
                "no longer describes their error. Leave ci out; priv.dp.preview.hierarchy("
                "...).count(...) shows the error of each level's raw noisy counts"
            )
        return self._consumer(planned)

    def _plan(
        self, epsilon: Fraction, split: object, output: str, confidence: float | None,
        rho: Fraction | None = None, asked: str = "",
    ) -> PlannedRelease[Counts]:  # fmt: skip
        """One count per level (root first), rolled up from the leaves, made consistent."""
        hierarchy, caps = self.hierarchy, self._caps
        shares = parse_split(split, hierarchy.tree.levels)
        names = _level_names(hierarchy)
        for share, name in zip(shares, names, strict=True):
            if epsilon * share < MIN_EPSILON:
                raise DPValueError(
                    f"split leaves level {name!r} with ε = {float(epsilon * share):.3g}, below "
                    "the smallest ε a measurement may use (1e-9); give it a larger share"
                )
        stats = tuple(
            LevelCount(f"count(level {depth}: {name})", level=depth, title=name)
            for depth, name in enumerate(names)
        )
        request = Request(
            stats=stats, query="hierarchy.count",
            pricing=Pricing(
                epsilon=epsilon, shares=shares, rho=rho, asked=asked,
                # rho= in a ρ session: each level's discrete Gaussian noise is calibrated to ρ.
                gaussian=rho is not None and isinstance(self._target.session.total, RhoBudget),
            ),
            presentation=Presentation(confidence=confidence),
            grouping=Grouping(self.by, hierarchy.leaves), caps=caps,
            notes=_notes(hierarchy, epsilon, shares, caps, self.keys_from, rho),
        )  # fmt: skip

        def derive(exact: list[Aggregate]) -> list[Aggregate]:
            # Every level measures the leaf counts; exact integer sums keep their dtype.
            return cast(list[Aggregate], hierarchy.tree.rollup(exact[0]))

        def finisher(outputs: tuple[PlannedOutput, ...], _: Presentation) -> Finish:
            keys = [out.keys[0] for out in outputs]
            variances = [_variance(out.parts[0]) for out in outputs]

            def finish(
                _: pd.Index | None, noisy: dict[MeasurementKey, Aggregate], source: NoiseSource
            ) -> Counts:
                raw = [noisy[key] for key in keys]
                return _shape(hierarchy, consistent_counts(hierarchy.tree, raw, variances), output)

            return finish

        return plan(self._target, request, finisher, derive=derive)


def _variance(part: AnyPart) -> float:
    assert isinstance(part, Part)  # level counts carry Laplace noise
    return part.mechanism.variance()


def parse_split(split: object, levels: int) -> tuple[Fraction, ...]:
    """Relative ε shares per level as exact fractions summing to 1 (equal by default)."""
    if split is None:
        return (Fraction(1, levels),) * levels
    if isinstance(split, str | bytes | dict) or not isinstance(split, Iterable):
        raise DPTypeError(
            f"split must be a list of {levels} positive numbers (the total first, then one "
            f"per column), got {type(split).__name__}"
        )
    shares = []
    for share in split:
        if isinstance(share, bool) or not isinstance(
            share, int | float | Fraction | np.integer | np.floating
        ):
            raise DPTypeError(f"split must hold numbers, got a {type(share).__name__}")
        if not np.isfinite(float(share)) or share <= 0:
            raise DPValueError(f"split shares must be positive and finite, got {share!r}")
        exact = Fraction(str(float(share))) if isinstance(share, float | np.floating) else share
        shares.append(Fraction(int(exact)) if isinstance(exact, np.integer) else Fraction(exact))
    if len(shares) != levels:
        raise DPValueError(
            f"split has {len(shares)} shares but the hierarchy has {levels} levels (the "
            "total first, then one per column)"
        )
    whole = sum(shares, Fraction(0))
    return tuple(share / whole for share in shares)


def _level_names(hierarchy: Hierarchy) -> list[str]:
    return [str(hierarchy.margins_name), *(str(column) for column in hierarchy.by)]


def _notes(
    hierarchy: Hierarchy, epsilon: Fraction, shares: tuple[Fraction, ...], caps: Caps,
    keys_from: str, rho: Fraction | None = None,
) -> tuple[str, ...]:  # fmt: skip
    names = _level_names(hierarchy)
    names[0] = f"the total {names[0]}"
    symbol, amount = ("ε", epsilon) if rho is None else ("ρ", rho)
    levels = ", ".join(
        f"{number_text(share)} ({symbol} {number_text(amount * share)}) to {name} "
        f"({width} node{'' if width == 1 else 's'})"
        for share, name, width in zip(shares, names, hierarchy.tree.widths, strict=True)
    )
    notes = [
        f"{symbol} {number_text(amount)} split across {len(shares)} levels (sequential "
        f"composition): {levels}",
        "parallel composition within each level (a row is in one node per level)",
        "rows outside the leaf paths of the keys are not counted",
        "post-processing (no budget): least squares over the tree weighted by each level's "
        "noise variance (Hay et al. 2010), then top-down non-negative projection and "
        "largest-remainder rounding (TopDown, Abowd et al. 2022): non-negative integers, each "
        "parent equal to the sum of its children",
    ]
    if caps.noteworthy:
        notes.append(caps.describe())
    if keys_from:
        notes.append(keys_from)
    return tuple(notes)


def _shape(hierarchy: Hierarchy, counts: list[np.ndarray], output: str) -> Counts:
    """The consistent counts (per level, root first) as the requested pandas object."""
    if output == "leaves":
        return pd.Series(counts[-1], index=hierarchy.leaves, name="count")
    if output == "levels":
        total = pd.Index([hierarchy.margins_name], dtype=object)
        views = {hierarchy.margins_name: pd.Series(counts[0], index=total, name="count")}
        for depth, column in enumerate(hierarchy.by, start=1):
            index = hierarchy.prefixes(depth)
            views[column] = pd.Series(counts[depth], index=index, name="count")
        return views
    index, order = hierarchy.table_index
    return pd.Series(np.concatenate(counts)[order], index=index, name="count")
