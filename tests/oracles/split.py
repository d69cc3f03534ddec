"""The documented ε split of a release, written from the docs (``agg`` Notes, the how-to
"How agg splits ε") and never imported from pandas_dp.

Statistic ``t`` weighs measurement ``i`` by ``c_ti`` (coefficient × sensitivity, in its own
units): a count ``{N: 1}``; a plain sum ``{S: max(|L|, |U|)}``; a sum derived from a mean's
measurements ``{C: h, N: |m|}``; a mean ``{C: h, N: h}``; a spread, quantile or other
statistic equal weights. ``h = (U - L)/2``, ``m = (U + L)/2``. With
``A_i = Σ_t w_t c_ti² / (Σ_j |c_tj|^(2/3))³`` the share of ``i`` is ``A_i^(1/3) / Σ A^(1/3)``.
The library rounds shares to multiples of 1/10,000, so compare within that.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence


def shares(
    needs: Sequence[Hashable], models: Sequence[tuple[float, Mapping[Hashable, float]]]
) -> list[float]:
    """Each measurement's share of ε, as floats, in ``needs`` order."""
    demand = dict.fromkeys(needs, 0.0)
    for weight, model in models:
        best = sum(abs(c) ** (2 / 3) for c in model.values()) ** 3
        for key, c in model.items():
            demand[key] += weight * c * c / best
    roots = [demand[k] ** (1 / 3) for k in needs]
    return [r / sum(roots) for r in roots]


def mean_model(bounds: tuple[float, float], centred: Hashable, count: Hashable) -> dict:
    h = (bounds[1] - bounds[0]) / 2
    return {centred: h, count: h}


def derived_sum_model(bounds: tuple[float, float], centred: Hashable, count: Hashable) -> dict:
    return {centred: (bounds[1] - bounds[0]) / 2, count: abs(bounds[1] + bounds[0]) / 2}


def close(recorded: Sequence[object], expected: Sequence[float]) -> bool:
    """Recorded exact shares (Fractions) within one rounding step of the documented ones."""
    return len(recorded) == len(expected) and all(
        abs(float(r) - e) <= 1.5e-4
        for r, e in zip(recorded, expected, strict=True)  # type: ignore[arg-type]
    )
