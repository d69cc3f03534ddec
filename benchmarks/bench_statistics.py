"""How much error do DP quantiles and spreads add, next to the sampling error of the data?

A sample is already a noisy picture of its population: its median, quantiles and variance
differ from the population's. This benchmark puts the error of the DP release at ε = 1 next
to that sampling error, for samples of 10^5 and 10^6 rows from two population models:

- ``income``: lognormal (log-mean 10.5, log-sd 0.8), released with bounds (0, 200,000);
- ``age``: normal (mean 45, sd 15), released with bounds (0, 100).

For each of ``REPEATS`` independent samples, every statistic is released on its own at ε = 1
through the public API (``priv["x"].dp.median(...)``, ``.quantile``, ``.var``, ``.std``), with
fresh noise from the library's CSPRNG. The table reports mean absolute errors:

- **DP error**: the release against the sample's own statistic of the clipped values
  (``numpy.quantile``, ``var(ddof=1)``): the error that privacy adds;
- **sampling error**: the non-private estimator (that same sample statistic) against the
  population value of the clipped variable: the error the analyst has without any privacy;
- **DP total**: the release against the population value.

Population quantiles are exact (the quantile functions; every level lies inside the bounds);
the population variance of the clipped variable comes from numerical integration.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import integrate, stats

import pandas_dp  # noqa: F401
from _util import table

SIZES = (100_000, 1_000_000)
REPEATS = 30
EPSILON = 1.0
FINE_CELLS = 65_536  # the finest quantile grid, for one extra median row


@dataclass(frozen=True)
class Population:
    """A population model: its distribution and the public bounds of the released column."""

    name: str
    dist: stats.rv_continuous
    bounds: tuple[float, float]

    def draw(self, gen: np.random.Generator, n: int) -> np.ndarray:
        """An independent sample of ``n`` values (not clipped: the release clips)."""
        return np.asarray(self.dist.rvs(size=n, random_state=gen), dtype=np.float64)

    def clipped_moments(self) -> tuple[float, float]:
        """Mean and variance of the variable clipped to the bounds (numerical integration)."""
        lower, upper = self.bounds
        moments = []
        for power in (1, 2):
            inner, _ = integrate.quad(
                lambda x, p=power: x**p * self.dist.pdf(x), lower, upper, limit=500,
                points=[float(self.dist.median())],
            )  # fmt: skip
            below, above = self.dist.cdf(lower), self.dist.sf(upper)
            moments.append(lower**power * below + inner + upper**power * above)
        return moments[0], moments[1] - moments[0] ** 2


POPULATIONS = (
    Population("income", stats.lognorm(s=0.8, scale=np.exp(10.5)), (0.0, 200_000.0)),
    Population("age", stats.norm(loc=45.0, scale=15.0), (0.0, 100.0)),
)


@dataclass(frozen=True)
class Statistic:
    """One statistic: its DP release, its non-private sample estimator, its population value."""

    name: str
    release: Callable[[pd.Series, tuple[float, float]], float]
    sample: Callable[[np.ndarray], float]
    population: Callable[[Population], float]


def _quantile(q: float, cells: int | None = None) -> Statistic:
    label = "median" if q == 0.5 else f"quantile {q}"
    if cells is not None:
        label += f" (cells={cells:,})"
    return Statistic(
        label,
        lambda s, b: float(s.dp.quantile(q, bounds=b, epsilon=EPSILON, cells=cells)),
        lambda x: float(np.quantile(x, q)),
        lambda pop: float(pop.dist.ppf(q)),
    )


STATISTICS = (
    _quantile(0.5),
    _quantile(0.5, FINE_CELLS),
    _quantile(0.1),
    _quantile(0.9),
    Statistic(
        "var",
        lambda s, b: s.dp.var(bounds=b, epsilon=EPSILON),
        lambda x: float(x.var(ddof=1)),
        lambda pop: pop.clipped_moments()[1],
    ),
    Statistic(
        "std",
        lambda s, b: s.dp.std(bounds=b, epsilon=EPSILON),
        lambda x: float(x.std(ddof=1)),
        lambda pop: float(np.sqrt(pop.clipped_moments()[1])),
    ),
)


def _errors(pop: Population, n: int, repeats: int, gen: np.random.Generator) -> np.ndarray:
    """Absolute errors, shape (statistics, 3, repeats): DP vs sample, sample vs pop, DP vs pop."""
    truth = np.array([stat.population(pop) for stat in STATISTICS])
    errors = np.empty((len(STATISTICS), 3, repeats))
    for r in range(repeats):
        values = pop.draw(gen, n)
        clipped = np.clip(values, *pop.bounds)
        priv = pd.DataFrame({pop.name: values}).dp.protect(epsilon=1e6)
        column = priv[pop.name]
        for i, stat in enumerate(STATISTICS):
            dp, plain = stat.release(column, pop.bounds), stat.sample(clipped)
            errors[i, :, r] = np.abs([dp - plain, plain - truth[i], dp - truth[i]])
    return errors


def run(sizes: Sequence[int] = SIZES, repeats: int = REPEATS) -> str:
    """Mean absolute errors of the DP releases and of the sample estimators (markdown)."""
    gen = np.random.default_rng(5)  # test-only: generates benchmark data, never noise
    rows = []
    for pop in POPULATIONS:
        for n in sizes:
            mean = _errors(pop, n, repeats, gen).mean(axis=2)
            for stat, (dp, sampling, total) in zip(STATISTICS, mean, strict=True):
                rows.append(
                    [f"{pop.name}, n={n:,}", stat.name, stat.population(pop), dp, sampling,
                     dp / sampling, total]
                )  # fmt: skip
    headers = [
        "data", "statistic", "population value", "DP error", "sampling error",
        "DP / sampling", "DP total",
    ]  # fmt: skip
    return "\n".join(
        [
            f"### DP quantiles and spreads at ε = {EPSILON:g}: mean absolute error over "
            f"{repeats} samples",
            "",
            "DP error: release vs the sample's own statistic (clipped values). Sampling error: "
            "that statistic vs the population value. DP total: release vs the population. "
            "Each statistic is released alone at ε = 1; quantiles on the default grid of "
            "4,096 cells unless stated; income bounds (0, 200,000), age bounds (0, 100).",
            "",
            table(headers, rows),
        ]
    )


if __name__ == "__main__":
    print(run())
