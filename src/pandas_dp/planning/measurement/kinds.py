"""The kinds of measurement: one frozen key class each, with its label and calibration.

Adding a kind of measurement is adding one class here: its ledger label, its description in
words and the calibration of its noise (:meth:`~.keys.MeasurementKey.calibrate`). Tables,
running totals and products are calibrated jointly by their query family, which hands the
planner their parts; their keys only name them.
"""

from __future__ import annotations

from typing import ClassVar

from pandas_dp.measures.aggregates import CellCounts
from pandas_dp.planning.measurement.choices import (
    AnyPart,
    bound_part,
    choice_part,
    endpoint_part,
    key_choice_part,
    quantile_part,
)
from pandas_dp.planning.measurement.keys import CalibrationInputs, MeasurementKey, names, table
from pandas_dp.planning.measurement.parts import Part, count_part, squares_part, sum_part
from pandas_dp.planning.measurement.weighted import weighted_part

_END = {-1: "lower", 1: "upper"}


def _weighted(
    key: MeasurementKey, inputs: CalibrationInputs, *, reads_values: bool, centred: bool = False
) -> Part:
    """A weighted count or sum: each row counts with its clipped weight."""
    assert inputs.weights is not None, "a weighted measurement needs the release's weights"
    return weighted_part(
        key.label, key.column, inputs.weights, inputs.bounds.get(key.column),
        inputs.fill.get(key.column), inputs.epsilon, inputs.contribution, inputs.noise,
        reads_values=reads_values, centred=centred,
    )  # fmt: skip


def _count(key: MeasurementKey, inputs: CalibrationInputs, *, distinct: bool = False) -> Part:
    """Rows (``key.column`` None), or non-missing (distinct) values of a column."""
    return count_part(
        inputs.epsilon, key.column, key.label, inputs.contribution, inputs.noise,
        distinct=distinct,
    )  # fmt: skip


def _sum(key: MeasurementKey, inputs: CalibrationInputs, *, centred: bool) -> Part:
    """A clipped sum of a column on a lattice (centred: at the lattice's offset)."""
    if key.weights is not None:
        return _weighted(key, inputs, reads_values=True, centred=centred)
    column = key.column
    return sum_part(
        column, inputs.bounds[column], inputs.epsilon, centered=centred,
        fill=inputs.fill[column], label=key.label, contribution=inputs.contribution,
        noise=inputs.noise,
    )  # fmt: skip


class RowCount(MeasurementKey):
    """The row count (``column`` None)."""

    kind: ClassVar[str] = "rows"
    word: ClassVar[str] = "count"

    @property
    def label(self) -> str:
        """``count``, or ``count(weights=w)``."""
        return self.word if self.weights is None else f"{self.word}(weights={self.weights})"

    def describe(self) -> str:
        """``the row count``."""
        return "the row count" if self.weights is None else super().describe()

    def calibrate(self, inputs: CalibrationInputs) -> AnyPart:
        """A count of the rows (of their clipped weights)."""
        if self.weights is not None:
            return _weighted(self, inputs, reads_values=False)
        return _count(self, inputs)


class NonNullCount(MeasurementKey):
    """The count of non-missing values of ``column``."""

    kind: ClassVar[str] = "nonnull"
    word: ClassVar[str] = "count"

    def describe(self) -> str:
        """``the count of non-missing income``."""
        if self.weights is not None:
            return super().describe()
        return f"the count of non-missing {self.column}"

    def calibrate(self, inputs: CalibrationInputs) -> AnyPart:
        """A count of the rows where ``column`` is present (of their clipped weights)."""
        if self.weights is not None:
            return _weighted(self, inputs, reads_values=False)
        return _count(self, inputs)


class DistinctCount(MeasurementKey):
    """The count of distinct non-missing values of ``column``."""

    kind: ClassVar[str] = "distinct"
    word: ClassVar[str] = "nunique"

    def describe(self) -> str:
        """``the count of distinct city``."""
        return f"the count of distinct {self.column}"

    def calibrate(self, inputs: CalibrationInputs) -> AnyPart:
        """A count of distinct values (one row changes it by at most 1)."""
        return _count(self, inputs, distinct=True)


class LevelCounts(MeasurementKey):
    """The row counts at one ``level`` of a hierarchy (``column``: the level's name)."""

    kind: ClassVar[str] = "level"
    word: ClassVar[str] = "count"

    @property
    def label(self) -> str:
        """``count(level 1: region)``."""
        return f"{self.word}(level {self.level}: {self.column})"

    def describe(self) -> str:
        """``the counts of level 1 (region)``."""
        return f"the counts of level {self.level} ({self.column})"

    def calibrate(self, inputs: CalibrationInputs) -> AnyPart:
        """A count of the rows (per node of the level)."""
        return count_part(inputs.epsilon, None, self.label, inputs.contribution, inputs.noise)


class PlainSum(MeasurementKey):
    """The clipped sum of ``column`` (not centred)."""

    kind: ClassVar[str] = "sum"
    word: ClassVar[str] = "sum"

    def calibrate(self, inputs: CalibrationInputs) -> AnyPart:
        """A clipped sum on a public lattice."""
        return _sum(self, inputs, centred=False)


class CentredSum(MeasurementKey):
    """The clipped sum of ``column`` centred at its lattice's offset."""

    kind: ClassVar[str] = "centred_sum"
    word: ClassVar[str] = "centred_sum"

    def calibrate(self, inputs: CalibrationInputs) -> AnyPart:
        """A centred clipped sum on a public lattice (half the sensitivity of a sum)."""
        return _sum(self, inputs, centred=True)


class Squares(MeasurementKey):
    """The clipped squares of ``column``, centred at its centred sum's centre."""

    kind: ClassVar[str] = "squares"
    word: ClassVar[str] = "squares"
    calibrated_last: ClassVar[bool] = True

    def calibrate(self, inputs: CalibrationInputs) -> AnyPart:
        """Centred squares; the centre is read from the column's calibrated centred sum."""
        column = self.column
        centred = inputs.parts[CentredSum(column)]
        assert centred.lattice is not None
        centre = centred.lattice.to_real(centred.lattice.offset)
        return squares_part(
            column, inputs.bounds[column], centre, inputs.epsilon, fill=inputs.fill[column],
            label=self.label, contribution=inputs.contribution, noise=inputs.noise,
        )  # fmt: skip


class QuantileChoice(MeasurementKey):
    """The ``q`` quantile of ``column`` (``side`` 0), or an end of its interval (-1, 1)."""

    kind: ClassVar[str] = "quantile"
    word: ClassVar[str] = "quantile"

    @property
    def label(self) -> str:
        """``quantile(income, 0.5)``, ``quantile(income, 0.5, lower)``."""
        # The shortest exact text: close levels keep distinct labels.
        end = {0: "", -1: ", lower", 1: ", upper"}[self.side]
        return f"{self.word}({self.column}, {float(self.q or 0)!r}{end})"

    def describe(self) -> str:
        """``the 0.5 quantile of income``, or an end of its interval."""
        what = f"the {float(self.q or 0)!r} quantile of {self.column}"
        return what if self.side == 0 else f"the {_END[self.side]} end of {what}'s interval"

    def calibrate(self, inputs: CalibrationInputs) -> AnyPart:
        """A choice among the candidates, or an end of the interval for ``1 - α/2``."""
        assert self.q is not None
        column = self.column
        bounds, cells = inputs.bounds[column], inputs.grid_cells(column)
        if self.side == 0:
            return quantile_part(
                column, bounds, self.q, inputs.epsilon, label=self.label,
                contribution=inputs.contribution, cells=cells,
                rounding=inputs.grid_rounding(column),
            )  # fmt: skip
        assert inputs.confidence is not None
        beta = (1.0 - inputs.confidence) / 2  # each end holds with probability 1 - α/2
        grid = CellCounts(column, bounds[0], bounds[1], cells)
        return endpoint_part(
            grid, self.q, inputs.epsilon, self.side, beta, self.label, inputs.contribution
        )


class BoundEnd(MeasurementKey):
    """One end of a bounds release: the lower (``side`` -1) or upper (1) bound of ``column``."""

    kind: ClassVar[str] = "bound"
    word: ClassVar[str] = "bound"

    @property
    def label(self) -> str:
        """``bound(income, 0.999, upper)``."""
        return f"{self.word}({self.column}, {float(self.q or 0)!r}, {_END[self.side]})"

    def describe(self) -> str:
        """``the upper bound of income (at its 0.999 quantile)``."""
        level = float(self.q or 0)
        return f"the {_END[self.side]} bound of {self.column} (at its {level!r} quantile)"

    def calibrate(self, inputs: CalibrationInputs) -> AnyPart:
        """A sparse-vector scan over the magnitude lattice (no bounds needed)."""
        assert self.q is not None
        assert self.side != 0
        return bound_part(
            self.column, self.q, inputs.epsilon, self.side, self.label, inputs.contribution
        )


class TopKChoice(MeasurementKey):
    """The ``rounds`` most frequent groups, chosen by peeling."""

    kind: ClassVar[str] = "top_k"
    word: ClassVar[str] = "top_k"

    @property
    def label(self) -> str:
        """``top_k(city, 3)``."""
        return f"{self.word}({self.column}, {self.rounds})"

    def describe(self) -> str:
        """``the top_k of city``."""
        return f"the {self.kind} of {self.column}"

    def calibrate(self, inputs: CalibrationInputs) -> AnyPart:
        """A choice among the groups (the exponential mechanism, ``rounds`` times)."""
        return choice_part(
            self.column, self.rounds, inputs.epsilon, inputs.contribution.linf, self.label
        )


class ModeChoice(TopKChoice):
    """The most frequent group (released as a value, not a list)."""

    kind: ClassVar[str] = "mode"
    word: ClassVar[str] = "mode"

    @property
    def label(self) -> str:
        """``mode(city)``."""
        return f"{self.word}({self.column})"


class KeyChoice(MeasurementKey):
    """The private choice of the groups' keys (optimal partition selection)."""

    kind: ClassVar[str] = "keys"
    word: ClassVar[str] = "keys"

    @property
    def label(self) -> str:
        """``keys``."""
        return self.word

    def describe(self) -> str:
        """``the choice of keys``."""
        return "the choice of keys"

    def calibrate(self, inputs: CalibrationInputs) -> AnyPart:
        """The table of keep probabilities for the release's share of δ."""
        return key_choice_part(inputs.epsilon, inputs.key_delta(), inputs.contribution)


class _Joint(MeasurementKey):
    """A measurement its query family calibrates jointly with others (``calibrated=``)."""

    def calibrate(self, inputs: CalibrationInputs) -> AnyPart:
        """Refused: the query family passes its calibrated part to the planner."""
        raise NotImplementedError(
            f"{self.label} is calibrated by its query family (plan(..., calibrated=...)), "
            "not by the planner"
        )


class _Table(_Joint):
    """A joint measurement over the cells of a contingency table of the ``column`` tuple."""

    noun: ClassVar[str]

    @property
    def label(self) -> str:
        """``marginal(age × sex)``, ``residual(age × sex)``."""
        return f"{self.word}({table(self.column)})"

    def describe(self) -> str:
        """``the counts of age × sex``, ``the residual of age × sex``."""
        return f"the {self.noun} of {table(self.column)}"


class Marginal(_Table):
    """The row counts in each cell of a contingency table of the ``column`` tuple."""

    kind: ClassVar[str] = "marginal"
    word: ClassVar[str] = "marginal"
    noun: ClassVar[str] = "counts"


class Residual(_Table):
    """A contingency table centred along each of its columns (ResidualPlanner's residual)."""

    kind: ClassVar[str] = "residual"
    word: ClassVar[str] = "residual"
    noun: ClassVar[str] = "residual"


class RunningTotals(_Joint):
    """The running totals along the ``column`` ordering (a tree of counts)."""

    kind: ClassVar[str] = "running"
    word: ClassVar[str] = "running_total"


class Products(_Joint):
    """The sums of the pairwise products of the ``column`` tuple."""

    kind: ClassVar[str] = "products"
    word: ClassVar[str] = "products"

    @property
    def label(self) -> str:
        """``products(x, y, z)``; ``products(x, y, z, weights=w)`` with survey weights."""
        weights = "" if self.weights is None else f", weights={self.weights}"
        return f"{self.word}({names(self.column)}{weights})"

    def describe(self) -> str:
        """``the sums of products of x, y, z`` (``the weighted sums ... (weights w)``)."""
        if self.weights is not None:
            return f"the weighted sums of products of {names(self.column)} (weights {self.weights})"
        return f"the sums of products of {names(self.column)}"
