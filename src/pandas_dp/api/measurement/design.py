"""A linear model's design from a formula, built on public inputs and applied row by row.

The formula (``"y ~ x + C(g) + np.log(z)"``, read by `formulaic
<https://matthewwardrop.github.io/formulaic/>`_) is first evaluated on a *probe*: a small
public frame made of the variables' bounds and keys alone (every numeric variable at its
lower bound, midpoint and upper bound, crossed; every categorical at each of its public
keys). That fixes the design's columns, the levels of every categorical (the public keys,
never the data's) and each design column's public bounds (the range it takes on the probe).
:class:`FormulaDesign` then applies the same model spec to private rows inside the engine:
numeric inputs clipped to their bounds, categoricals matched to their keys (others missing),
and a row missing any input left out (listwise, as statsmodels' formulas drop it). It never
raises: whatever the rows hold, it returns a frame of the design's shape.
"""

from __future__ import annotations

import itertools
import re
import warnings
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from pandas_dp.engines.codes import level_codes
from pandas_dp.engines.columns import numeric_values
from pandas_dp.errors import DPValueError

#: Numeric variables crossed at three points up to this many probe rows, at two beyond.
_PROBE_ROWS = 200_000
#: formulaic's transforms that learn from the data (centres, scales, knots) or read other
#: rows (``lag``): a row's design would depend on other rows' private values.
_REFUSED = ("bs", "cc", "cr", "cs", "center", "poly", "scale", "standardize", "lag")
_CALL = re.compile(r"(?<![\w.])(" + "|".join(_REFUSED) + r")\s*\(")


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
        rhs = self.spec.rhs.get_model_matrix(inputs, na_action="ignore")
        lhs = self.spec.lhs.get_model_matrix(inputs, na_action="ignore")
        columns = [np.asarray(rhs[name], dtype=np.float64) for name in self.columns]
        columns.append(np.asarray(lhs.iloc[:, 0], dtype=np.float64))
        return np.column_stack(columns), missing

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


def design_of(
    formula: str,
    numeric: Mapping[Hashable, tuple[float, float]],
    categorical: Mapping[Hashable, pd.Index],
) -> FormulaDesign:
    """The design of ``formula`` over public bounds and keys (reads no data).

    Raises
    ------
    DPValueError
        If the formula has no response, no intercept, a transform that learns from the data
        (``center``, ``scale``, splines...), or ``C()`` of a numeric variable without keys.
    """
    from formulaic import model_matrix  # a few hundred ms: only when a model is asked for

    check_transforms(formula)
    probe = _probe(numeric, categorical)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            matrices = model_matrix(formula, probe, na_action="ignore")
        except Exception as error:  # the formula and the public probe only
            raise DPValueError(f"formula {formula!r} cannot be read: {error}") from None
    spec = matrices.model_spec
    if not hasattr(spec, "lhs"):
        raise DPValueError(f"formula {formula!r} has no response: write 'y ~ x + ...'")
    state = {**spec.lhs.transform_state, **spec.rhs.transform_state}
    if state:
        raise DPValueError(
            f"formula {formula!r} uses transforms that learn from the data ({', '.join(state)}): "
            "they would read private values; use public constants instead (for example "
            "I(x - 40) rather than center(x))"
        )
    names = list(matrices.rhs.columns)
    for variable in numeric:
        if any(f"C({variable})[" in name for name in names):
            raise DPValueError(
                f"C({variable}) treats numeric column {variable!r} as categories: give its "
                f"public levels with keys={{{variable!r}: [...]}}"
            )
    if "Intercept" not in names:
        raise DPValueError(
            f"formula {formula!r} has no intercept; pandas-dp fits models with one (drop the "
            "'- 1' or '0 +')"
        )
    if matrices.lhs.shape[1] != 1:
        raise DPValueError(f"formula {formula!r} must have one response column")
    columns = tuple(name for name in names if name != "Intercept")
    frames = [matrices.rhs[list(columns)], matrices.lhs.iloc[:, [0]]]
    ranges = pd.concat(frames, axis=1).to_numpy(dtype=np.float64)
    bounds = tuple(_span(ranges[:, j], formula) for j in range(ranges.shape[1]))
    response = str(matrices.lhs.columns[0])
    if response in columns:
        raise DPValueError(f"formula {formula!r} has its response among the regressors")
    return FormulaDesign(formula, spec, columns, response, dict(numeric), dict(categorical), bounds)


def check_transforms(formula: str) -> None:
    """Refuse transforms that learn from the data or read other rows (a public check)."""
    found = sorted(set(_CALL.findall(formula)))
    if found:
        raise DPValueError(
            f"formula {formula!r} uses transforms that learn from the data or read other rows "
            f"({', '.join(found)}): each would let one row move other rows' values; use "
            "public constants instead (for example I(x - 40) rather than center(x))"
        )


def _probe(
    numeric: Mapping[Hashable, tuple[float, float]], categorical: Mapping[Hashable, pd.Index]
) -> pd.DataFrame:
    """Every numeric variable at its bounds and midpoint (crossed), each with every key."""
    points = 3 if 3 ** len(numeric) <= _PROBE_ROWS else 2
    grids = [
        np.linspace(lower, upper, points) if points == 3 else np.array([lower, upper])
        for lower, upper in numeric.values()
    ]
    combos = np.array(list(itertools.product(*grids)), dtype=np.float64).reshape(-1, len(numeric))
    repeats = max([len(keys) for keys in categorical.values()] + [1])
    rows = np.tile(combos, (repeats, 1)) if len(numeric) else np.zeros((repeats, 0))
    data: dict[Hashable, Any] = {name: rows[:, i] for i, name in enumerate(numeric)}
    size = len(rows)
    block = len(combos) if len(numeric) else 1
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
