"""The keyword arguments that release methods share, typed once (PEP 692).

Every release method takes the same privacy arguments (``epsilon``, ``delta``,
``mechanism``) and, when it reads values, the same clipping arguments (``bounds``,
``fillna``). They are declared here as ``TypedDict`` classes and spelled
``**options: Unpack[ValueArgs]`` in the accessors, so a type checker and an IDE see every
keyword with its type, and adding an argument is one line here instead of one per method.
:mod:`~pandas_dp.api.release.options` checks their values at run time.
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Mapping, Sequence
from decimal import Decimal
from fractions import Fraction
from typing import Literal, Required, TypeAlias, TypedDict, TypeVar

import numpy as np

#: A real number as a user may type it (bools are refused at run time).
Real: TypeAlias = int | float | Fraction | Decimal | np.integer | np.floating
#: ``(lower, upper)``, public clipping bounds of one column.
Bound: TypeAlias = tuple[Real, Real]
#: One column's bounds, or ``{column: (lower, upper)}`` for several columns.
Bounds: TypeAlias = Bound | Mapping[Hashable, Bound] | None
#: A public fill value for missing entries, or ``{column: value}``.
Fill: TypeAlias = Real | Mapping[Hashable, Real] | None
#: The noise: discrete Laplace (pure ε-DP) or discrete Gaussian (needs δ > 0).
Mechanism: TypeAlias = Literal["laplace", "gaussian"]
#: Public keys: a list of values, ``{column: values}``, a list of tuples or a MultiIndex.
Keys: TypeAlias = Sequence[object] | Mapping[Hashable, Sequence[object]] | object

#: What a scalar release returns without ``ci`` (a number) ...
NumberT = TypeVar("NumberT")
#: ... and with ``ci`` (an :class:`~pandas_dp.Estimate`); a preview returns a Preview.
EstimateT = TypeVar("EstimateT")


class NoiseArgs(TypedDict, total=False):
    """The privacy arguments of every release, and its row weights (DataFrame forms).

    ``epsilon``, or ``rho`` in a zCDP session: one of them is required.
    """

    epsilon: Real
    rho: Real | None
    delta: Real | None
    mechanism: Mechanism
    weights: Hashable | None
    weight_bounds: Bound | None


class ValueArgs(NoiseArgs, total=False):
    """A release that reads a column's values: its clipping and missing-value rules."""

    bounds: Bounds
    fillna: Fill


class RatioArgs(ValueArgs, total=False):
    """A mean or spread: the noisy count below which a group's value is NaN."""

    min_count: Real | None


class CountArgs(NoiseArgs, total=False):
    """Counts over keys or bins: free post-processing of the noisy counts."""

    nonnegative: bool
    total: Real | None


class GridArgs(TypedDict, total=False):
    """Quantiles: bounds, the cost, and the grid the answer lies on."""

    epsilon: Required[Real]
    bounds: Bounds
    cells: int | None
    #: Spend a share of ε on the (each group's) count and give NaN below it.
    min_count: Real | None


class ProtectArgs(TypedDict, total=False):
    """``protect``'s options shared by DataFrames and Series."""

    rho: Real | None
    accounting: Literal["basic", "advanced", "zcdp", "pld"]
    rng: int | None
    replace: bool
    ledger: str | os.PathLike[str] | None


class FrameProtectArgs(ProtectArgs, total=False):
    """``DataFrame.dp.protect``'s further options (a Series cannot hold a unit column)."""

    privacy_unit: Hashable | None
    max_rows_per_unit: int | None
    schema: object
    validate: bool


class PlanningArgs(TypedDict, total=False):
    """``epsilon_for``: what the error bound depends on besides ε."""

    alpha: float
    bounds: Bounds
    n: float | None
    mean: float | None
    mechanism: Mechanism
    delta: Real | None
