"""A linear model's design from a formula, built on public inputs and applied row by row.

The formula (``"y ~ x + C(g) + np.log(z)"``, read by `formulaic
<https://matthewwardrop.github.io/formulaic/>`_) must first pass the grammar of row-local
terms (:mod:`pandas_dp.transformations.formula_grammar`). It is then evaluated on a *probe*: a
small public frame made of the variables' bounds and keys alone (every regressor on a grid of
its bounds: both bounds, an even grid and round values, crossed, see :func:`_probe`; every
categorical at each of its public keys). That fixes the design's columns, the levels of
every categorical (the public keys, never the data's) and each design column's public
bounds (the range it takes on the probe).
A second public probe backs the grammar: the design of a few public rows computed together
must equal the design of each row alone, and of the rows shuffled and halved
(:func:`check_rows_alone`).
:class:`FormulaDesign` then applies the same model spec to private rows inside the engine:
numeric inputs clipped to their bounds, categoricals matched to their keys (others missing),
and a row missing any input left out (listwise, as statsmodels' formulas drop it). It never
raises: whatever the rows hold, it returns a frame of the design's shape.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.engines.codes import level_codes
from pandas_dp.engines.columns import numeric_values
from pandas_dp.errors import DPValueError
from pandas_dp.measures.grids import round_values
from pandas_dp.transformations.formula_grammar import check_formula, unreadable

#: Numeric variables crossed at three points up to this many probe rows, at two beyond.
_PROBE_ROWS = 200_000
#: Rows of the bounds probe when its grids can be finer than three points.
_SPAN_ROWS = 1 << 15
#: The names a formula's expressions see besides its variables (and formulaic's own
#: transforms), the same on the probes, on private rows and for predictions.
FORMULA_CONTEXT: Mapping[str, Any] = {"np": np, "numpy": np}
#: Where in [0, 1] of each numeric variable's bounds the rows of the row-alone probe lie
#: (bounds, midpoint, irregular points; -0.25 and 1.25 lie outside, to be clipped). Column
#: ``k`` reads the list from position ``3 k``, so variables do not move together.
_ROW_POINTS = (0.0, 1.0, 0.5, 0.3125, 0.8125, 0.0625, 0.6875, 0.9375, -0.25, 1.25, 0.4375, 0.1875)
#: Relative tolerance between a row's design computed with others and alone (the elementwise
#: functions may round differently in numpy's vector loops than one value at a time).
_ROW_TOLERANCE = 1e-9


@dataclass(frozen=True, eq=False)
class FormulaDesign:
    """The design matrix of a model spec, computed from a frame's rows (public throughout).

    Calling it on a frame gives a float frame with one column per entry of ``columns`` (the
    design's columns, the intercept left out) and then the ``response`` (labelled as
    formulaic labels them); a row missing any input is all NaN. Identity-hashed: one per
    release.
    """

    formula: str
    spec: Any  # formulaic ModelSpecs (lhs, rhs)
    #: The design's columns but the intercept, in statsmodels' order (:func:`statsmodels_order`).
    columns: tuple[str, ...]
    response: str
    numeric: Mapping[Hashable, tuple[float, float]]
    categorical: Mapping[Hashable, pd.Index]
    bounds: tuple[tuple[float, float], ...] = field(default=())

    @property
    def reads(self) -> tuple[Hashable, ...]:
        """The frame's columns the design needs."""
        return (*self.numeric, *self.categorical)

    def __call__(self, frame: pd.DataFrame) -> pd.DataFrame:
        """The design of ``frame``'s rows (total: a failure gives rows that count nowhere)."""
        width = len(self.columns) + 1
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")  # nothing data-dependent may surface as a warning
            try:
                values, missing = self._values(frame)
            except Exception:
                values, missing = np.full((len(frame), width), np.nan), None
        if missing is not None:
            values[missing] = np.nan
        return pd.DataFrame(values, index=frame.index, columns=self.labels)

    @property
    def labels(self) -> tuple[str, ...]:
        """The design's columns, then the response."""
        return (*self.columns, self.response)

    def _values(self, frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        inputs = self.inputs(frame)
        missing = np.asarray(inputs.isna().to_numpy().any(axis=1), dtype=bool)
        rhs = self.matrix(inputs)
        lhs = self.matrix(inputs, response=True)
        columns = [np.asarray(rhs[name], dtype=np.float64) for name in self.columns]
        columns.append(np.asarray(lhs.iloc[:, 0], dtype=np.float64))
        return np.column_stack(columns), missing

    def matrix(self, inputs: pd.DataFrame, *, response: bool = False) -> pd.DataFrame:
        """The regressors' (or the response's) model matrix of ``inputs`` (may raise)."""
        spec = self.spec.lhs if response else self.spec.rhs
        return spec.get_model_matrix(inputs, na_action="ignore", context=FORMULA_CONTEXT)

    def inputs(self, frame: pd.DataFrame, *, clip: bool = True) -> pd.DataFrame:
        """The variables as the spec reads them: numbers clipped, categoricals on their keys.

        Without ``clip`` (a public frame to predict for), numbers are taken as they are and
        variables the frame lacks (the response) are left out.
        """
        data: dict[Hashable, Any] = {}
        for name, (lower, upper) in self.numeric.items():
            if not clip and name not in frame.columns:
                continue
            values = numeric_values(frame[name])
            data[name] = np.clip(values, lower, upper) if clip else values
        for name, keys in self.categorical.items():
            if not clip and name not in frame.columns:
                continue
            codes = level_codes(frame[name], keys)
            data[name] = pd.Categorical.from_codes(codes, categories=keys)
        return pd.DataFrame(data, index=frame.index)


@dataclass(frozen=True, eq=False)
class ScoreResiduals:
    """A logistic design's columns and each row's residual ``σ(x̃ᵀθ) - y`` at public ``θ``.

    ``θ`` is in the design's scaled units (``z = (x - c) / r`` over each column's public
    bounds, the intercept first), released by a first fit. The residual reads the row's own
    design and response (clipped into ``[0, 1]``) and ``θ``: a row-local function of public
    inputs (stability 1), within ``[-1, 1]``; a row missing any input gives NaN (left out, as
    by the design). Sums of it times each scaled column are the likelihood's gradient at
    ``θ``. It never raises.
    """

    design: FormulaDesign
    theta: tuple[float, ...]
    label: str = "score residual"

    @property
    def reads(self) -> tuple[Hashable, ...]:
        """The frame's columns the design needs."""
        return self.design.reads

    @property
    def labels(self) -> tuple[str, ...]:
        """The design's columns, then the residual."""
        return (*self.design.columns, self.label)

    @property
    def bounds(self) -> tuple[tuple[float, float], ...]:
        """The design columns' public bounds, then the residual's, ``[-1, 1]``."""
        return (*self.design.bounds[:-1], (-1.0, 1.0))

    def __call__(self, frame: pd.DataFrame) -> pd.DataFrame:
        """The design's columns and the residual of ``frame``'s rows."""
        designed = self.design(frame)  # total
        values = designed.to_numpy(dtype=np.float64, copy=True)
        with np.errstate(all="ignore"):
            lower = np.array([lo for lo, _ in self.design.bounds[:-1]], dtype=np.float64)
            upper = np.array([hi for _, hi in self.design.bounds[:-1]], dtype=np.float64)
            centre, reach = (lower + upper) / 2, (upper - lower) / 2
            scaled = np.clip((values[:, :-1] - centre) / np.where(reach > 0, reach, 1.0), -1, 1)
            theta = np.asarray(self.theta, dtype=np.float64)
            score = theta[0] + scaled @ theta[1:]
            fitted = 0.5 * (1.0 + np.tanh(score / 2))  # σ, without overflow
            values[:, -1] = fitted - np.clip(values[:, -1], 0.0, 1.0)
        return pd.DataFrame(values, index=designed.index, columns=self.labels)


def design_of(
    formula: str,
    numeric: Mapping[Hashable, tuple[float, float]],
    categorical: Mapping[Hashable, pd.Index],
) -> FormulaDesign:
    """The design of ``formula`` over public bounds and keys (reads no data).

    Raises
    ------
    DPValueError
        If the formula has no response, no intercept, a term outside the grammar of row-local
        terms (:func:`~pandas_dp.transformations.formula_grammar.check_formula`: a transform
        that learns from the data such as ``center``, a method such as ``x.mean()``, a
        function outside the elementwise list such as ``np.cumsum``), ``C()`` of a numeric
        variable without keys, or a design whose rows are not computed alone on the public
        probe (:func:`check_rows_alone`).
    """
    from formulaic import Formula, model_matrix  # a few hundred ms: only for a model

    grammar = check_formula(formula)
    for variable in grammar.categories:
        if variable not in categorical:
            raise DPValueError(
                f"C({variable}) treats numeric column {variable!r} as categories: give its "
                f"public levels with keys={{{variable!r}: [...]}}"
            )
    sides = Formula(formula)  # the grammar above has read it
    if hasattr(sides, "lhs"):  # a formula without a response is refused below
        left, right = sides.lhs.required_variables, sides.rhs.required_variables
        response_only = frozenset(name for name in numeric if name in left and name not in right)
    else:
        response_only = frozenset()
    probe = _probe(numeric, categorical, response_only)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            matrices = model_matrix(
                formula, probe, na_action="ignore", context=dict(FORMULA_CONTEXT)
            )
        except Exception as error:  # the formula and the public probe only
            raise unreadable(formula, error) from None
    spec = matrices.model_spec
    if not hasattr(spec, "lhs"):
        raise DPValueError(f"formula {formula!r} has no response: write 'y ~ x + ...'")
    state = {**spec.lhs.transform_state, **spec.rhs.transform_state}
    learned = sorted(name for name, kept in state.items() if kept)  # Q() keeps nothing
    if learned:  # the grammar admits no such transform: a second line of defence
        raise DPValueError(
            f"formula {formula!r} uses transforms that learn from the data ({', '.join(learned)})"
            ": they would read private values; use public constants instead (for example "
            "I(x - 40) rather than center(x))"
        )
    names = list(matrices.rhs.columns)
    if "Intercept" not in names:
        raise DPValueError(
            f"formula {formula!r} has no intercept; pandas-dp fits models with one (drop the "
            "'- 1' or '0 +')"
        )
    if matrices.lhs.shape[1] != 1:
        raise DPValueError(f"formula {formula!r} must have one response column")
    columns = tuple(name for name in names if name != "Intercept")
    columns = tuple(columns[i] for i in statsmodels_order(formula, spec.rhs, columns))
    frames = [matrices.rhs[list(columns)], matrices.lhs.iloc[:, [0]]]
    ranges = pd.concat(frames, axis=1).to_numpy(dtype=np.float64)
    bounds = tuple(_span(ranges[:, j], formula) for j in range(ranges.shape[1]))
    response = str(matrices.lhs.columns[0])
    if response in columns:
        raise DPValueError(f"formula {formula!r} has its response among the regressors")
    design = FormulaDesign(
        formula, spec, columns, response, dict(numeric), dict(categorical), bounds
    )
    check_rows_alone(design)
    return design


def statsmodels_order(formula: str, spec: Any, columns: tuple[str, ...]) -> list[int]:
    """The positions of ``columns`` (formulaic's, the intercept left out) in statsmodels' order.

    patsy, statsmodels' formula parser, puts the terms into buckets by the set of numeric
    factors they hold: the bucket without numeric factors (the intercept, then categorical
    terms) first, the others in the order in which the formula first names them; within a
    bucket, terms by degree (their number of factors), in the formula's order. So
    ``y ~ x + C(g) + x:z + z`` gives ``Intercept, C(g)[T.b], x, x:z, z``; formulaic sorts
    by degree alone (``x, C(g)[T.b], z, x:z``). A factor is categorical where its columns'
    names carry a level (``C(g)[T.b]``, ``g[T.b]``). Each term's columns keep formulaic's
    order (levels in the keys' order, as patsy's).
    """
    from formulaic import Formula

    written = [str(term) for term in Formula(formula, _ordering="none").rhs]
    where = {name: i for i, name in enumerate(columns)}
    buckets: dict[frozenset[str], list[tuple[int, int, list[int]]]] = {}
    for term in spec.structure:
        positions = [where[name] for name in term.columns if name in where]
        if not positions:  # the intercept
            continue
        factors = [str(factor) for factor in term.term.factors]
        parts = columns[positions[0]].split(":")
        numeric = frozenset(
            factor
            for i, factor in enumerate(factors)
            if len(parts) != len(factors) or parts[i] == factor
        )
        at = written.index(str(term.term)) if str(term.term) in written else len(written)
        buckets.setdefault(numeric, []).append((at, len(factors), positions))
    ordered = sorted(buckets.items(), key=lambda item: (bool(item[0]), min(t[0] for t in item[1])))
    return [
        position
        for _, terms in ordered
        for _, _, positions in sorted(terms, key=lambda t: (t[1], t[0]))
        for position in positions
    ]


def check_rows_alone(design: FormulaDesign) -> None:
    """Refuse a design that gives a row a value depending on other rows (public probe).

    The design of a small public frame (:func:`row_probe`) computed as a whole must equal,
    row for row (NaN where NaN, within a relative ``1e-9``), the design of each row alone,
    of the rows in reverse order, and of every other row. The grammar should make this
    impossible; the probe checks what formulaic and pandas actually do with an accepted
    formula.

    The verdict depends on public inputs alone (the formula, the bounds, the keys), so a
    design that passed is remembered by them (:data:`_PASSED`): the probe evaluates the
    design 15 times, about ten times the cost of a fit.

    Raises
    ------
    DPValueError
        Naming the first design column (or the response) whose values differ.
    """
    key = _probe_key(design)
    if key is not None and key in _PASSED:
        return
    frame = row_probe(design.numeric, design.categorical)
    whole = design(frame).to_numpy(dtype=np.float64)
    parts = [frame.iloc[[i]] for i in range(len(frame))]
    parts += [frame.iloc[::-1], frame.iloc[1::2].iloc[::-1]]
    for part in parts:
        rows = frame.index.get_indexer(part.index)
        got = design(part).to_numpy(dtype=np.float64)
        same = np.isclose(got, whole[rows], rtol=_ROW_TOLERANCE, atol=0.0, equal_nan=True)
        if not same.all():
            label = design.labels[int(np.flatnonzero(~same.all(axis=0))[0])]
            raise DPValueError(
                f"formula {design.formula!r}: the term {label!r} gives a row a value that "
                "depends on the other rows (on a public probe made of the bounds and keys, "
                f"{len(frame)} rows computed together differ from the same rows computed "
                f"{'one at a time' if len(part) == 1 else 'in another order or subset'}), so "
                "one row's presence could move the others' values; compute it from public "
                "inputs instead (I(x - 5) rather than centring on the data, say)"
            )
    if key is not None:
        _PASSED[key] = None
        if len(_PASSED) > _PASSED_MAX:
            _PASSED.pop(next(iter(_PASSED)), None)  # the oldest


#: The public inputs of designs that passed :func:`check_rows_alone` (oldest first).
_PASSED: dict[tuple[object, ...], None] = {}
_PASSED_MAX = 256


def _probe_key(design: FormulaDesign) -> tuple[object, ...] | None:
    """The public inputs the probe reads, typed (``1`` and ``True`` apart); None if unhashable."""
    try:
        key = (
            design.formula,
            tuple((name, float(low), float(high)) for name, (low, high) in design.numeric.items()),
            tuple(
                (name, tuple((type(level).__name__, level) for level in keys))
                for name, keys in design.categorical.items()
            ),
        )
        hash(key)
    except (TypeError, ValueError):
        return None
    return key


def row_probe(
    numeric: Mapping[Hashable, tuple[float, float]], categorical: Mapping[Hashable, pd.Index]
) -> pd.DataFrame:
    """The public rows :func:`check_rows_alone` computes together and alone.

    Each numeric variable at points of its bounds (:data:`_ROW_POINTS`, two of them outside
    the bounds), each categorical cycling through its keys; the last row holds a missing
    value in every variable and the one before a level outside the keys. Deterministic and
    made of the public bounds and keys alone.
    """
    size = len(_ROW_POINTS)
    data: dict[Hashable, Any] = {}
    for k, (name, (lower, upper)) in enumerate(numeric.items()):
        points = np.roll(np.array(_ROW_POINTS), -3 * k)
        values = lower + points * (upper - lower)
        values[-1] = np.nan
        data[name] = values
    for k, (name, keys) in enumerate(categorical.items()):
        levels: list[object] = [keys[(i + k) % len(keys)] for i in range(size)]
        levels[-2] = _OUTSIDE
        levels[-1] = None
        data[name] = pd.Series(levels, dtype=object)
    return pd.DataFrame(data, index=pd.RangeIndex(size))


class _Outside:
    """A value equal to no key (the probe's row at a level outside the keys)."""

    def __repr__(self) -> str:
        return "<outside the keys>"


_OUTSIDE = _Outside()


def probe_points(variables: int, keys: int) -> int:
    """Values of each crossed numeric variable's grid on the bounds probe (public sizes only).

    The largest number whose crossing over ``variables`` variables, times ``keys`` (the most
    keys of a categorical), stays within :data:`_SPAN_ROWS`: 32,768 for one variable and no
    keys, 181 each for two, 32 for three; at least 3 (2 past :data:`_PROBE_ROWS` crossed
    rows).
    """
    if variables == 0:
        return 1
    budget = max(_SPAN_ROWS // max(keys, 1), 1)
    points = int(round(budget ** (1 / variables), 9))
    while points > 3 and points**variables > budget:
        points -= 1
    return max(points, 3 if 3**variables <= _PROBE_ROWS else 2)


def _grid(lower: float, upper: float, points: int) -> np.ndarray:
    """About ``points`` values on ``[lower, upper]``: both bounds, round values, an even grid.

    Round values (multiples of a power of ten and of a power of two,
    :func:`~pandas_dp.measures.grids.round_values`, about half of the points) are where the
    constants people write in formulas put a term's kinks and turns (``np.abs(x - 2.5)``,
    ``I((x - 3)**2)``); the rest is an even grid with the midpoint on it.
    """
    if points < 3:
        return np.array([lower, upper], dtype=np.float64)
    rounds = round_values(lower, upper, max(points // 4, 1), "number")
    even = max(points - rounds.size, 3)
    even -= 1 - even % 2  # odd: the midpoint is on it
    return np.unique(np.concatenate([np.linspace(lower, upper, even), rounds]))


def _probe(
    numeric: Mapping[Hashable, tuple[float, float]],
    categorical: Mapping[Hashable, pd.Index],
    response: frozenset[Hashable] = frozenset(),
) -> pd.DataFrame:
    """Every regressor on a grid of its bounds (crossed), each with every key.

    The design's column bounds are their ranges on this probe: the finer the grid, the
    closer they come to the range a term takes on the bounds (``I((x - 3)**2)`` on (0, 16)
    reaches 0 at x = 3, between the bounds). See :func:`probe_points` and :func:`_grid`.
    Variables read by the response alone (``response``) are not crossed: each runs through
    its own grid of the probe's length.
    """
    crossed = {name: span for name, span in numeric.items() if name not in response}
    repeats = max([len(keys) for keys in categorical.values()] + [1])
    points = probe_points(len(crossed), repeats)
    grids = [_grid(lower, upper, points) for lower, upper in crossed.values()]
    combos = (
        np.array(list(itertools.product(*grids)), dtype=np.float64).reshape(-1, len(crossed))
        if crossed
        else np.zeros((1, 0))
    )
    rows = np.tile(combos, (repeats, 1)) if len(crossed) else np.zeros((repeats, 0))
    data: dict[Hashable, Any] = {name: rows[:, i] for i, name in enumerate(crossed)}
    size = len(rows)
    for name in numeric:
        if name in response:
            values = _grid(*numeric[name], max(size, 3))
            data[name] = np.resize(values, max(size, values.size))
    size = max([len(column) for column in data.values()] + [size])
    data = {name: np.resize(column, size) for name, column in data.items()}
    block = len(combos) if len(crossed) else 1
    for name, keys in categorical.items():
        codes = (np.arange(size) // block) % len(keys)
        data[name] = pd.Categorical.from_codes(codes, categories=keys)
    return pd.DataFrame(data, index=pd.RangeIndex(size))


def _span(values: np.ndarray, formula: str) -> tuple[float, float]:
    """A design column's public bounds: its range on the probe (an indicator's at least 0..1)."""
    finite = values[np.isfinite(values)]
    if not finite.size:
        raise DPValueError(
            f"formula {formula!r} gives a column with no finite value at the variables' "
            "bounds (a log of 0, say): narrow the bounds"
        )
    lower, upper = float(finite.min()), float(finite.max())
    if lower == upper:  # an indicator the probe never sets, or a constant
        lower, upper = min(lower, 0.0), max(upper, 1.0)
    return lower, upper
