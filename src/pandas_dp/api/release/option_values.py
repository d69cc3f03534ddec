"""The options of a release that say how it is computed rather than what it reads.

``selection`` (how keys are chosen from the data), ``accuracy`` (how ε is split) and
``relative_error``: checked by :func:`~pandas_dp.api.release.options.validate` with the
rest, public arguments only.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Hashable, Mapping, Sequence
from enum import StrEnum
from typing import Literal

from pandas_dp.api.temporal import ValueKind
from pandas_dp.errors import DPTypeError, DPValueError
from pandas_dp.planning.statistics import Statistic


class Noise(StrEnum):
    """The additive noise a release uses, as users name it (``mechanism="gaussian"``)."""

    LAPLACE = "laplace"
    GAUSSIAN = "gaussian"

    @property
    def gaussian(self) -> bool:
        """Whether the noise is discrete Gaussian (else discrete Laplace)."""
        return self is Noise.GAUSSIAN


#: The names ``mechanism=`` takes.
MECHANISMS = tuple(noise.value for noise in Noise)


def parse_selection(selection: object) -> Literal["threshold", "optimal"]:
    """How keys are chosen from the data: ``"threshold"`` or ``"optimal"``."""
    if selection == "threshold":
        return "threshold"
    if selection == "optimal":
        return "optimal"
    raise DPValueError(f"selection must be 'threshold' or 'optimal', got {selection!r}")


def parse_accuracy(
    accuracy: object, stats: Sequence[Statistic]
) -> tuple[tuple[Hashable, float], ...]:
    """``{statistic name: weight}``: how much each statistic's error counts in the ε split."""
    if accuracy is None:
        return ()
    if not isinstance(accuracy, Mapping) or not accuracy:
        raise DPTypeError(
            'accuracy must be a dict of statistic names to weights, e.g. {"m": 2, "s": 1}'
        )
    names = [stat.name for stat in stats]
    parsed = []
    for name, weight in accuracy.items():
        if name not in names:
            raise DPValueError(f"accuracy names {name!r}, which is not one of {names}")
        if isinstance(weight, bool) or not isinstance(weight, numbers.Real):
            raise DPTypeError(f"accuracy[{name!r}] must be a number, got {type(weight).__name__}")
        if not (math.isfinite(float(weight)) and float(weight) > 0):
            raise DPValueError(f"accuracy[{name!r}] must be a positive number, got {weight!r}")
        parsed.append((name, float(weight)))
    return tuple(parsed)


def parse_relative_error(
    relative_error: object, confidence: float | None, stats: Sequence[Statistic],
    kinds: Mapping[Hashable, ValueKind],
) -> bool:  # fmt: skip
    """``relative_error=``: a bool, with intervals, of no datetime point statistic."""
    if not isinstance(relative_error, bool):
        given = type(relative_error).__name__
        raise DPTypeError(f"relative_error must be True or False, got {given}")
    if relative_error and confidence is None:
        raise DPValueError("relative_error=True needs intervals: pass ci=0.95 (or another level)")
    for stat in [s for s in stats if s.reads_values] if relative_error else ():
        kind = kinds.get(stat.column)
        if kind is not None and kind.dated(stat.on_time):
            raise DPValueError(
                f"relative_error has no meaning for {stat.how} of datetime column "
                f"{stat.column!r}: a datetime's size depends on its origin (1970). Read the "
                "interval's width instead (upper - lower)"
            )
    return relative_error
