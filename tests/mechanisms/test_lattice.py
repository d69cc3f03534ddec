"""Power-of-two lattices for sums (``pandas_dp.mechanisms.lattice``).

The rules of :func:`sum_lattice` are checked in exact rational arithmetic: every float bound
is converted to the :class:`~fractions.Fraction` it denotes, so no tolerance is needed.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pandas_dp.mechanisms.lattice import MAX_ROW_UNITS, Lattice, sum_lattice

from ..oracles.lattice import ceil_log2, floor_log2

EPSILONS = [Fraction(1, 10**9), Fraction(1, 100), Fraction(1), Fraction(10**6)]
EPSILON_IDS = ["1e-9", "0.01", "1", "1e6"]
BOUNDS = [
    (0.0, 1.0),
    (-1.0, 1.0),
    (-3.0, 0.5),
    (0.0, 200_000.0),
    (5.0, 7.0),
    (-100.0, -1.0),
    (-2.5e-7, 1e-9),
    (1e-150, 2e-150),
    (-1e150, 1e150),
    (1e10, 1e10 + 1),
    (0.1, 0.30000000000000004),
]
HYPOTHESIS = settings(max_examples=300, derandomize=True, database=None, deadline=None)


def check_rules(lower: float, upper: float, epsilon: Fraction, centered: bool) -> Lattice:
    """Assert every documented property of ``sum_lattice(lower, upper, epsilon, centered)``."""
    lattice = sum_lattice(lower, upper, epsilon, centered=centered)
    low, high = Fraction(lower), Fraction(upper)
    reach = (high - low) / 2 if centered else max(abs(low), abs(high))  # Δ
    noise_scale = reach / epsilon  # b = Δ/ε
    magnitude = max(abs(low), abs(high))
    g = Fraction(2) ** lattice.exponent

    assert isinstance(lattice.exponent, int)
    assert lattice.granularity == math.ldexp(1.0, lattice.exponent) == float(g)
    # The documented rule, in exact arithmetic: the smallest power of two >= max(Δ, b)/2^36,
    # capped at the largest power of two <= (U - L)/4, but never below max(|L|, |U|)/2^61.
    wanted = ceil_log2(max(reach, noise_scale) / 2**36)
    cap = floor_log2((high - low) / 4)
    floor = ceil_log2(magnitude / 2**61)
    assert lattice.exponent == max(min(wanted, cap), floor)
    if lattice.exponent == wanted:
        # So a row's rounding error, at most g/2, is below 2^-36 of max(Δ, b) ...
        assert g / 2 < max(reach, noise_scale) / 2**36
        # ... and 2^32 rows together stay below max(Δ, b)/16.
        assert lattice.rounding_allowance() == float(2**32 * g / 2)
        assert 2**32 * g / 2 < max(reach, noise_scale) / 16

    # The bounds in lattice units are the nearest lattice points to L and U, and distinct.
    assert abs(lattice.lower * g - low) <= g / 2
    assert abs(lattice.upper * g - high) <= g / 2
    assert lattice.lower < lattice.upper

    # Offset: none for plain sums, the middle lattice point for centred ones.
    if centered:
        assert lattice.lower <= lattice.offset <= lattice.upper
        assert abs(lattice.lower + lattice.upper - 2 * lattice.offset) <= 1
    else:
        assert lattice.offset == 0

    # Sensitivity: the largest |q - offset| a clipped, rounded row can take, at most 2^37
    # units, and within one lattice step of Δ.
    sensitivity = max(abs(lattice.lower - lattice.offset), abs(lattice.upper - lattice.offset))
    assert lattice.sensitivity == sensitivity
    assert 1 <= sensitivity <= MAX_ROW_UNITS == 2**37
    assert abs(sensitivity * g - reach) <= g

    # Uncentred lattice values (before subtracting the offset) are at most 2^61.
    largest = max(abs(lattice.lower), abs(lattice.upper))
    assert largest <= 2**61, f"uncentred value {largest} = 2**61 + {largest - 2**61}"

    # Public parameters only: the same call gives the same lattice.
    assert sum_lattice(lower, upper, epsilon, centered=centered) == lattice
    return lattice


@pytest.mark.parametrize("centered", [False, True], ids=["plain", "centred"])
@pytest.mark.parametrize("epsilon", EPSILONS, ids=EPSILON_IDS)
@pytest.mark.parametrize("bounds", BOUNDS, ids=str)
def test_sum_lattice_rules(bounds, epsilon, centered):
    check_rules(*bounds, epsilon, centered)


def test_centred_narrow_bounds_at_a_power_of_two():
    # Centred sums whose span is tiny next to the bounds: the magnitude term max(|L|, |U|)/2^61
    # decides g. When the larger bound is an exact power of two, that bound lands exactly on
    # 2^61 lattice units, the documented maximum.
    failures = []
    for bounds in [(2.0**40 - 1, 2.0**40), (-(2.0**40), -(2.0**40) + 1), (0.5 - 2**-40, 0.5)]:
        for epsilon in EPSILONS:
            try:
                check_rules(*bounds, epsilon, True)
            except AssertionError as error:
                failures.append(f"{bounds}, ε={float(epsilon):g}: {str(error).splitlines()[0]}")
    assert not failures, "\n".join(failures)


def test_typical_lattices():
    # Worked examples. Bounds (0, 1), ε = 1: Δ = b = 1, g = 2^-36, one row = 2^36 units.
    unit = sum_lattice(0.0, 1.0, Fraction(1), centered=False)
    assert (unit.exponent, unit.lower, unit.upper, unit.offset) == (-36, 0, 2**36, 0)
    assert unit.sensitivity == 2**36
    # ε = 1/100: b = 100, g = 2^-29 (2^-30 < 100/2^36 <= 2^-29), so 2^29 units per row.
    small = sum_lattice(0.0, 1.0, Fraction(1, 100), centered=False)
    assert (small.exponent, small.sensitivity) == (-29, 2**29)
    # Centred (0, 100): Δ = 50 <= 2^6, g = 2^-30, centre 50 = 50·2^30 units.
    ages = sum_lattice(0.0, 100.0, Fraction(1), centered=True)
    assert ages.exponent == -30
    assert ages.offset == 50 * 2**30
    assert ages.sensitivity == 50 * 2**30
    # ε = 1e-12 (below the API's floor): b/2^36 would give g = 16 > U, so g is capped at
    # 2^-2 <= (U - L)/4 and the bounds stay 4 units apart.
    tiny = sum_lattice(0.0, 1.0, Fraction(1, 10**12), centered=False)
    assert (tiny.exponent, tiny.lower, tiny.upper) == (-2, 0, 4)


def test_lattice_is_a_value():
    a = sum_lattice(-3.0, 0.5, Fraction(1, 100), centered=True)
    b = sum_lattice(-3.0, 0.5, Fraction("0.01"), centered=True)
    assert a == b
    assert hash(a) == hash(b)
    with pytest.raises(AttributeError):
        a.exponent = 0  # type: ignore[misc]
    assert sum_lattice(-3.0, 0.5, Fraction(1, 100), centered=False) != a


def test_to_real_is_exact_scaling():
    lattice = sum_lattice(0.0, 1.0, Fraction(1), centered=False)
    assert lattice.to_real(1) == lattice.granularity == 2.0**-36
    assert lattice.to_real(2**36) == 1.0
    assert lattice.to_real(-(3 * 2**35)) == -1.5
    assert lattice.to_real(0) == 0.0
    huge = sum_lattice(-1e150, 1e150, Fraction(1, 10**9), centered=False)
    assert 1e148 < huge.granularity <= 2e150 / 4  # capped at a quarter of the span
    assert abs(huge.to_real(huge.upper) - 1e150) <= huge.granularity / 2
    assert huge.to_real(-3) == -3 * huge.granularity


def test_lattice_validates_itself():
    with pytest.raises(ValueError, match="lower < upper"):
        Lattice(0, 2, 1)
    with pytest.raises(ValueError, match="lower < upper"):
        Lattice(0, 1, 1)
    with pytest.raises(ValueError, match="out of range"):
        Lattice(0, 0, MAX_ROW_UNITS + 1)
    assert Lattice(0, -MAX_ROW_UNITS, 0).sensitivity == MAX_ROW_UNITS


finite = st.floats(min_value=-1e150, max_value=1e150, allow_nan=False, allow_infinity=False)


@HYPOTHESIS
@given(
    a=finite,
    b=finite,
    epsilon=st.sampled_from([*EPSILONS, Fraction(1, 3), Fraction(7, 10**6)]),
    centered=st.booleans(),
)
def test_sum_lattice_rules_property(a, b, epsilon, centered):
    lower, upper = min(a, b), max(a, b)
    # the bounds the API accepts (parse_bounds)
    assume(upper - lower >= max(1e-150, math.ldexp(max(abs(lower), abs(upper)), -50)))
    check_rules(lower, upper, epsilon, centered)


@HYPOTHESIS
@given(
    magnitude=st.integers(-150, 150),
    mantissas=st.tuples(st.floats(-10, 10), st.floats(-10, 10)),
    epsilon=st.sampled_from(EPSILONS),
    centered=st.booleans(),
)
def test_sum_lattice_rules_across_magnitudes(magnitude, mantissas, epsilon, centered):
    # Bounds of one order of magnitude, from 1e-150 to 1e150, of either sign.
    lower, upper = sorted(m * 10.0**magnitude for m in mantissas)
    big = max(abs(lower), abs(upper))
    assume(upper - lower >= max(1e-150, math.ldexp(big, -50)) and big <= 1e150)
    check_rules(lower, upper, epsilon, centered)
