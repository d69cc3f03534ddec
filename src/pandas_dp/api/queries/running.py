"""Running totals over time bins: ``resample(...).size(cumulative=True)``.

``df.resample("D", on="t").size().cumsum()`` adds up daily counts. Adding up *noisy* daily
counts adds up their noise too: the error of the total after ``t`` days grows like ``√t``.
Continual-counting mechanisms measure the bins so that every prefix sum has a small error
(:mod:`pandas_dp.mechanisms.continual`): the square-root factorization with Gaussian noise
(error growing like ``log t``), the binary tree with Laplace noise. Of the plans the noise
allows, the release takes the one whose largest prefix variance is the smallest, a choice
made from public parameters only (the number of bins, ε or ρ, the caps). The largest
error over *all* prefixes at once is another matter: with Laplace noise over a year of days
the tree's is larger than added noisy counts' (its errors are correlated less favourably);
Gaussian noise is the one to choose for running totals (see the time-series how-to).
"""

from __future__ import annotations

from collections.abc import Hashable
from fractions import Fraction

import numpy as np
import pandas as pd

from pandas_dp.accounting.events import GaussianMeasurement, LaplaceMeasurement, Measurement
from pandas_dp.api.caps import caps_for
from pandas_dp.api.queries.tables import release_budget
from pandas_dp.api.release import PlannedRelease, Presentation, Pricing, Request, plan
from pandas_dp.api.release.arguments import Mechanism, Real
from pandas_dp.api.release.options import epsilon_of, parse_confidence, parse_mechanism
from pandas_dp.api.release.types import Finish, Target
from pandas_dp.budget import RhoBudget
from pandas_dp.errors import DPValueError
from pandas_dp.measures.aggregates import Aggregate, Axis, Binning, JointCounts
from pandas_dp.mechanisms.continual.sqrt import SqrtFactorization, sensitivity_squared
from pandas_dp.mechanisms.continual.strategies import NoisyBins
from pandas_dp.mechanisms.continual.tree import BinaryTree, tree_levels
from pandas_dp.mechanisms.laplace import DiscreteLaplace
from pandas_dp.planning.measurement.keys import MeasurementKey
from pandas_dp.planning.measurement.kinds import RunningTotals
from pandas_dp.planning.measurement.running import PrefixPart
from pandas_dp.planning.noise import NoiseSource
from pandas_dp.planning.request import PlannedOutput
from pandas_dp.planning.statistics.running import RunningTotal

#: The continual-counting plans a release chooses from (the least largest variance).
Counting = SqrtFactorization | NoisyBins | BinaryTree


def plan_running_totals(
    target: Target,
    on: Hashable,
    binning: Binning,
    intervals: pd.Index,
    epsilon: Real | None,
    delta: Real | None = None,
    mechanism: Mechanism = "laplace",
    ci: float | None = None,
    rho: Real | None = None,
) -> PlannedRelease[pd.Series | pd.DataFrame]:
    """The planned release of every prefix sum of the bins' row counts (nothing read).

    In a ρ session ``rho=`` measures with Gaussian noise calibrated to ρ (the square-root
    factorization or noisy bins), and ``epsilon=`` spends ``ρ = ε²/2`` with either noise.
    """
    query = "resample.size(cumulative)"
    eps, asked = epsilon_of(target, query, epsilon, rho, delta)
    zcdp = isinstance(target.session.total, RhoBudget)
    gaussian = parse_mechanism(mechanism) or (rho is not None and zcdp)
    confidence = parse_confidence(ci)
    caps = caps_for(target, False)
    k = caps.contribution.l1
    bins = len(intervals)
    if gaussian:
        share, rho = release_budget(target, eps, delta, rho)
        if rho is None:
            raise DPValueError(
                "Gaussian noise needs a δ (or a ρ-zCDP session): protect with delta=..., or "
                "leave mechanism out for Laplace noise"
            )
        exact = Fraction(rho)
        options: list[Counting] = [
            SqrtFactorization.plan(bins, rho=exact, rows_per_unit=k),
            NoisyBins.plan(bins, rho=exact, rows_per_unit=k),
        ]
    else:
        if delta is not None:
            raise DPValueError("delta is for mechanism='gaussian'; Laplace noise is pure ε-DP")
        share = None
        options = [
            BinaryTree.plan(bins, epsilon=eps, rows_per_unit=k),
            NoisyBins.plan(bins, epsilon=eps, rows_per_unit=k),
        ]
    counting = min(options, key=lambda option: float(np.max(option.variance())))
    key = RunningTotals(on)
    record = _record(key.label, counting, eps, share, k)
    part = PrefixPart(
        key.label, JointCounts((Axis(on, (), binning),)), counting.mechanism, record,
        clique=(0,), home=(0,), counting=counting,
    )  # fmt: skip
    stat = RunningTotal("size", None, keys=(key,))
    spent = Fraction(eps * eps / 2) if zcdp else None  # a ρ session's ρ: no δ for Gaussian noise
    request = Request(
        stats=(stat,), query=query, caps=caps,
        pricing=Pricing(
            epsilon=eps, delta=share, gaussian=gaussian, shares=(Fraction(1),),
            rho=spent if gaussian else None, asked=asked,
        ),
        presentation=Presentation(confidence=confidence), notes=(_note(counting, bins, k),),
    )  # fmt: skip

    def derive(exact: list[Aggregate]) -> list[Aggregate]:
        return [part.from_home(np.asarray(exact[0]))]

    def finisher(outputs: tuple[PlannedOutput, ...], shown: Presentation) -> Finish:
        (out,) = outputs

        def finish(
            _: pd.Index | None, noisy: dict[MeasurementKey, Aggregate], source: NoiseSource
        ) -> pd.Series | pd.DataFrame:
            inputs = out.inputs(noisy)
            values = np.rint(stat.value(inputs, None)).astype(np.int64)  # type: ignore[arg-type]
            totals = pd.Series(values, index=intervals, name="size")  # whole rows, as pandas
            if shown.confidence is None:
                return totals.rename(None)
            lower, upper = stat.interval(inputs, 1.0 - shown.confidence)
            return pd.DataFrame(
                {"size": totals, "size_lower": lower, "size_upper": upper}, index=intervals
            )

        return finish

    return plan(target, request, finisher, derive=derive, calibrated={key: part})


def _record(
    label: str, counting: Counting, epsilon: Fraction, delta: Fraction | None, k: int
) -> Measurement:
    """The ledger line: the noise on every encoded value, and what one unit can move."""
    noise = counting.mechanism
    if isinstance(noise, DiscreteLaplace):
        sensitivity = k * (tree_levels(counting.bins) if isinstance(counting, BinaryTree) else 1)
        return LaplaceMeasurement(
            label, noise.name, epsilon, sensitivity, noise.effective_scale,
            coordinates=counting.size,
        )  # fmt: skip
    # L2: one row moves the encoding by at most a column of norm sqrt(squared) (k rows: k
    # times): recorded as ``squared`` coordinates of sensitivity k, ρ = squared k² / (2σ²).
    squared = (
        sensitivity_squared(counting.bins, counting.shift)
        if isinstance(counting, SqrtFactorization)
        else 1
    )
    return GaussianMeasurement(
        label, noise.name, epsilon, k, noise.scale, delta=delta or Fraction(0),
        coordinates=squared, sigma2=noise.sigma2,
    )  # fmt: skip


def _note(counting: Counting, bins: int, k: int) -> str:
    scaled = (
        f" (R' = 2^{counting.shift} R in integers: noise σ/2^{counting.shift} = "
        f"{float(counting.mechanism.scale) / 2**counting.shift:.4g} in rows)"
        if isinstance(counting, SqrtFactorization)
        else ""
    )
    kind = {
        BinaryTree: "the binary tree (dyadic blocks, least-squares decoding)",
        SqrtFactorization: "the square-root factorization (Henzinger & Upadhyay)",
        NoisyBins: "noisy bins added up (the better plan for this many bins)",
    }[type(counting)]
    return (
        f"running totals over {bins} bins by {kind}{scaled}; a unit adds at most {k} rows; "
        "every prefix sum is post-processing of one measurement"
    )
