"""Many tables at once, and synthetic data: accuracy against separate releases, and speed.

Data. The bundled census extract (1,000 people; age and income cut into public bins: six
columns) and a generated dataset of 10**6 rows and 12 columns with domains of 2 to 50 values,
correlated through a hidden class. Every column is coded 0..n-1 beforehand (public keys).

Accuracy: the total L1 error over every cell of every table of the workload (all 2-way tables)
at ε = 1 in a session with δ = 1e-6, averaged over seeded releases:

- ``tables``: one ``priv.dp.tables(workload, epsilon=1)`` release (δ 1e-6);
- ``separate, Laplace``: one ``groupby(table).count(epsilon=1/k)`` per table (k tables), the
  default way to release them with the same total ε (pure);
- ``separate, Gaussian``: the same with ``mechanism="gaussian"`` and ``delta=1e-6/k`` each;
- ``synthesize (MST)``, ``synthesize (AIM)``: the workload's tables counted on
  ``priv.dp.synthesize(...)``'s rows (``method="mst"``, ``method="aim"``);
- ``mbi on the tables' measurements``: where the ``mbi`` package (Private-PGM, McKenna et
  al.; needs JAX) is installed, on the census only (exact inference: its full domain has
  13,824 cells), its mirror-descent estimate (1,000 steps) from the very noisy values the
  ``tables`` release drew (drawn again from the same seed, and checked to give back that
  release). They are ResidualPlanner's residuals, ``F_A m_A`` plus independent discrete
  Gaussian noise per value, and reach mbi as what they are: linear queries of each clique's
  marginal (the basis rows ``F_A``), one measurement per row norm, with that norm's noise
  standard deviation; the total (the empty residual) as an identity query;
- ``mbi on MST's measurements, its rows``: the workload's tables counted on the rows of an
  MST run whose estimation and sampling are Private-PGM's: the measurements ``synthesize``
  makes (its own draw, not the values of the ``synthesize`` row), then mbi's graphical model
  and synthetic rows (timed without the measurements).

Ratios are computed in the run, never written down. The planned variance is also compared
with ResidualPlanner's closed-form optimum (Xiao et al. 2023), before (whole marginals) and
after (``tables`` measures the residuals themselves, in ``d_A = Π(n_i - 1)`` noise draws
each, at the exact sampler's variances), for the 12 columns and for issue 25's 8 columns of
2 to 5 keys.

Speed: a whole ``tables`` release of every 2-way and every 3-way table over the 12 columns
on 10**6 rows (plan, one pass of grouped counts per maximal table, noise, post-processing).
"""

from __future__ import annotations

import dataclasses
import itertools
import time
import warnings
from typing import Any

import numpy as np
import pandas as pd

import pandas_dp
from _util import table
from pandas_dp.api.queries.tables import plan_tables
from pandas_dp.cli.demo import load_census
from pandas_dp.mechanisms.marginals import residual_planner_variance, workload_variance

ROWS = 1_000_000
EPSILON, DELTA = 1.0, 1e-6
SIZES = (2, 3, 5, 10, 20, 50, 4, 6, 8, 12, 2, 30)
AGE_BINS = [0, 25, 35, 45, 55, 65, 120]
INCOME_BINS = [-1, 0, 10_000, 25_000, 50_000, 100_000, 1e12]


def census() -> pd.DataFrame:
    """The census extract with every column coded 0..n-1 by public keys or bins."""
    data = load_census()
    return pd.DataFrame(
        {
            "age": pd.cut(data["age"], AGE_BINS, labels=False),
            "sex": data["sex"],
            "educ": data["educ"] - 1,
            "race": data["race"] - 1,
            "income": pd.cut(data["income"], INCOME_BINS, labels=False),
            "married": data["married"],
        }
    ).astype(np.int64)


def generated(rows: int, seed: int = 5) -> pd.DataFrame:
    """``rows`` rows over 12 columns of SIZES values, dependent through a hidden class."""
    gen = np.random.default_rng(seed)  # benchmark data, never noise
    hidden = gen.integers(0, 4, rows)
    columns = {}
    for i, n in enumerate(SIZES):
        shift = (hidden * n) // 4
        spread = gen.integers(0, max(1, n // 3), rows)
        noise = gen.random(rows) < 0.3
        columns[f"a{i}"] = np.where(noise, gen.integers(0, n, rows), (shift + spread) % n)
    return pd.DataFrame(columns).astype(np.int64)


def exact(frame: pd.DataFrame, columns: tuple[str, ...], sizes: dict[str, int]) -> np.ndarray:
    codes = np.ravel_multi_index(
        [frame[c].to_numpy() for c in columns], [sizes[c] for c in columns]
    )
    return np.bincount(codes, minlength=int(np.prod([sizes[c] for c in columns]))).reshape(
        [sizes[c] for c in columns]
    )


def l1(estimates: dict[tuple[str, ...], Any], truth: dict[tuple[str, ...], np.ndarray]) -> float:
    return float(sum(np.abs(np.asarray(estimates[t], dtype=float) - truth[t]).sum() for t in truth))


def protect(frame: pd.DataFrame, seed: int) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
        return frame.dp.protect(epsilon=1e6, delta=0.5, rng=seed)


def errors(
    frame: pd.DataFrame, sizes: dict[str, int], trials: int, with_mbi: bool, mbi_tables: bool
) -> tuple[dict[str, list], dict]:
    """Total L1 error of each method over ``trials`` seeded releases, and their mean times."""
    columns = list(frame.columns)
    keys = {c: list(range(sizes[c])) for c in columns}
    workload = [tuple(p) for p in itertools.combinations(columns, 2)]
    truth = {t: exact(frame, t, sizes) for t in workload}
    k = len(workload)
    results: dict[str, list] = {"tables": [], "separate, Laplace": [], "separate, Gaussian": []}
    results["synthesize (MST)"] = []
    results["synthesize (AIM)"] = []
    if with_mbi and mbi_tables:
        results["mbi on the tables' measurements"] = []
    if with_mbi:
        results["mbi on MST's measurements, its rows"] = []
    times: dict[str, float] = dict.fromkeys(results, 0.0)
    for trial in range(trials):
        priv = protect(frame, seed=100 + trial)
        start = time.perf_counter()
        released = priv.dp.tables(
            [list(t) for t in workload], keys=keys, epsilon=EPSILON, delta=DELTA
        )
        times["tables"] += time.perf_counter() - start
        results["tables"].append(l1({t: v.to_numpy() for t, v in released.items()}, truth))
        for name, extra in (
            ("separate, Laplace", {}),
            ("separate, Gaussian", {"mechanism": "gaussian", "delta": DELTA / k}),
        ):
            start = time.perf_counter()
            alone = {
                t: priv.dp.groupby(list(t), keys={c: keys[c] for c in t})
                .count(epsilon=EPSILON / k, **extra)
                .to_numpy()
                .reshape([sizes[c] for c in t])
                for t in workload
            }
            times[name] += time.perf_counter() - start
            results[name].append(l1(alone, truth))
        start = time.perf_counter()
        synth = priv.dp.synthesize(columns, keys=keys, epsilon=EPSILON, delta=DELTA)
        counted = {t: exact(synth, t, sizes) for t in workload}
        times["synthesize (MST)"] += time.perf_counter() - start
        results["synthesize (MST)"].append(l1(counted, truth))
        start = time.perf_counter()
        synth = priv.dp.synthesize(columns, keys=keys, epsilon=EPSILON, delta=DELTA, method="aim")
        times["synthesize (AIM)"] += time.perf_counter() - start
        results["synthesize (AIM)"].append(l1({t: exact(synth, t, sizes) for t in workload}, truth))
        if with_mbi and mbi_tables:
            again = protect(frame, seed=100 + trial)  # the tables release's noise, again
            seconds, error = mbi_error(frame, again, workload, keys, sizes, truth, released)
            times["mbi on the tables' measurements"] += seconds
            results["mbi on the tables' measurements"].append(error)
        if with_mbi:
            seconds, error = mbi_mst_error(frame, priv, workload, keys, sizes, truth)
            times["mbi on MST's measurements, its rows"] += seconds
            results["mbi on MST's measurements, its rows"].append(error)
    return results, {name: t / trials for name, t in times.items()}


def noisy_values(planned, priv) -> tuple[Any, dict]:
    """The groups' keys and every part's noisy values, drawn as the release's runner draws them.

    Exact aggregates, ``derive``, then each part's ``release`` (or ``release_after``, which
    reads the values drawn before it) with the session's noise source: on a session
    protected with a release's seed, the very values that release drew.
    """
    target, source = planned.target, priv.dp.session.noise_source
    measures = tuple(part.measure for part in planned.parts.values())
    counted = target.engine.aggregate(target.data, measures, planned.grouping, planned.bounding)
    values = counted.values if planned.derive is None else planned.derive(counted.values)
    noisy: dict = {}
    for (key, part), exact_values in zip(planned.parts.items(), values, strict=True):
        after = getattr(part, "release_after", None)
        noisy[key] = (
            part.release(exact_values, source)
            if after is None
            else after(exact_values, source, noisy)
        )
    return counted.keys, noisy


def tables_measurements(priv, workload, keys) -> tuple[Any, dict, dict]:
    """A ``tables`` release's plan, its noisy values by key, and its tables made from them."""
    planned = plan_tables(priv, [list(t) for t in workload], keys, epsilon=EPSILON, delta=DELTA)
    groups, noisy = noisy_values(planned, priv)
    return planned, noisy, planned.finish(groups, noisy, priv.dp.session.noise_source)


@dataclasses.dataclass(frozen=True)  # equal by value: mbi's compiled steps are reused
class ResidualQuery:
    """The rows of squared norm ``norm`` of ResidualPlanner's basis ``F_A = ⊗ F_{n_i}``.

    Applied to a marginal over domains of ``sizes`` (the clique's order), they give the
    values a ``ResidualPart`` releases there (C order).
    """

    sizes: tuple[int, ...]
    norm: int

    def __call__(self, factor):
        import jax.numpy as jnp

        from pandas_dp.mechanisms.residuals.basis import basis
        from pandas_dp.mechanisms.residuals.planner import row_norms

        x = factor.datavector(flatten=False)
        for axis, n in enumerate(self.sizes):
            x = jnp.moveaxis(jnp.tensordot(basis(n).astype(float), x, axes=([1], [axis])), 0, axis)
        norms = row_norms(tuple(range(len(self.sizes))), self.sizes)
        return x.reshape(-1)[np.flatnonzero(norms == self.norm)]

    def op_norm_sq(self) -> float:
        """``||Q||²``: the rows are orthogonal, each of squared norm ``norm``."""
        return float(self.norm)


def mbi_measurements(planned, noisy, columns, sizes) -> list:
    """Private-PGM's ``LinearMeasurement``s equivalent to a ``tables`` release's values.

    A residual ``A`` (``ResidualPart``) is released as ``y = F_A m_A + ξ``, ``m_A`` the
    clique's marginal and ``ξ_k`` independent discrete Gaussian of the mechanism of row
    ``k``'s norm: one measurement per distinct norm, with that mechanism's standard
    deviation. The empty residual is the total, an identity query (mbi's total estimate
    reads it). A whole marginal (``MarginalPart``, when the plan measures marginals): the
    identity, with its noise's standard deviation.
    """
    import mbi

    from pandas_dp.mechanisms.residuals.planner import row_norms
    from pandas_dp.planning.measurement.marginals import ResidualPart

    out = []
    for key, part in planned.parts.items():
        names = tuple(columns[i] for i in part.clique)
        y = np.asarray(noisy[key], dtype=float).reshape(-1)
        if not isinstance(part, ResidualPart) or not part.clique:
            out.append(mbi.LinearMeasurement(y, names, float(np.sqrt(part.mechanism.variance()))))
            continue
        norms = row_norms(part.clique, part.sizes)
        for norm, mechanism in zip(part.norms, part.noises, strict=True):
            query = ResidualQuery(tuple(sizes[c] for c in names), norm)
            sd = float(np.sqrt(mechanism.variance()))
            out.append(mbi.LinearMeasurement(y[norms == norm], names, sd, query=query))
    return out


def mbi_error(frame, priv, workload, keys, sizes, truth, released) -> tuple[float, float]:
    """Private-PGM's estimate from the very noisy values a ``tables`` release drew.

    ``priv`` is protected with the seed of the release ``released``: the values are drawn
    again as its runner draws them, and checked to give back exactly ``released``.
    """
    import jax

    jax.config.update("jax_enable_x64", True)
    import mbi

    planned, noisy, ours = tables_measurements(priv, workload, keys)
    if any(not np.array_equal(ours[t].to_numpy(), released[t].to_numpy()) for t in workload):
        raise RuntimeError("the measurements drawn again are not the release's")
    columns = list(frame.columns)
    measurements = mbi_measurements(planned, noisy, columns, sizes)
    domain = mbi.Domain(tuple(columns), tuple(sizes[c] for c in columns))
    start = time.perf_counter()
    model = mbi.estimation.MirrorDescent().estimate(domain, measurements, iters=1000)
    estimates = {t: np.asarray(model.project(list(t)).datavector(flatten=False)) for t in workload}
    return time.perf_counter() - start, l1(estimates, truth)


def mbi_mst_error(frame, priv, workload, keys, sizes, truth) -> tuple[float, float]:
    """Private-PGM's model and rows from the very measurements a ``synthesize`` release makes."""
    import jax

    jax.config.update("jax_enable_x64", True)
    import mbi

    from pandas_dp.api.queries.synthesize import plan_synthesize
    from pandas_dp.planning.measurement.synthesis import TREE

    columns = list(frame.columns)
    planned = plan_synthesize(priv, columns, keys, epsilon=EPSILON, delta=DELTA)
    _, noisy = noisy_values(planned, priv)
    # On the compressed domains the tree's pairs were measured on; rows mapped back.
    compressed = planned.parts[TREE].compressing.columns(noisy)
    measurements = []
    for key, part in planned.parts.items():
        if key == TREE:
            continue
        clique = getattr(part, "clique", None) or part.pairs[int(noisy[TREE][part.position])]
        names = tuple(columns[i] for i in clique)
        sigma = float(np.sqrt(part.mechanism.variance()))
        values = np.asarray(noisy[key], float)
        if len(clique) == 1:
            values = compressed[clique[0]].table(values, 0)
        measurements.append(mbi.LinearMeasurement(values, names, sigma))
    domain = mbi.Domain(tuple(columns), tuple(c.size for c in compressed))
    start = time.perf_counter()
    model = mbi.estimation.MirrorDescent().estimate(domain, measurements, iters=1000)
    codes = pd.DataFrame(model.synthetic_data().to_dict()).astype(np.int64)
    gen = np.random.default_rng(0)  # benchmark only: which merged value a rare row takes
    rows = pd.DataFrame(
        {c: compressed[i].values(codes[c].to_numpy(), gen) for i, c in enumerate(columns)}
    )
    seconds = time.perf_counter() - start
    return seconds, l1({t: exact(rows, t, sizes) for t in workload}, truth)


def summary(name: str, results: dict[str, list], times: dict[str, float], trials: int) -> str:
    ours = float(np.mean(results["tables"]))
    rows = []
    for method, values in results.items():
        mean = float(np.mean(values))
        rows.append([method, mean, mean / ours, times[method]])
    head = f"### {name}: total L1 error of all 2-way tables at ε = 1, δ = 1e-6 ({trials} releases)"
    return head + "\n\n" + table(["method", "total L1 error", "÷ tables", "seconds"], rows)


def strategy_bound(frame: pd.DataFrame) -> str:
    """The planned variance ÷ ResidualPlanner's closed-form optimum (same ρ), before and after.

    Before: whole marginals with optimised shares (``optimal_strategy``). After: the plan
    ``tables`` uses (``choose_plan``) with the noise its release samples: ResidualPlanner's
    residuals, each in ``d_A`` draws, at the exact sampler's variances (``residual_parts``:
    σ rounded up), or the marginals when it would draw more than ``MAX_DRAWS`` values. Rows
    for the 12 columns and for the 8-column case of issue 25 (domains of 2 to 5 keys), at
    the ρ of (ε, δ) = (1, 1e-6). Analytic, from the plan alone.
    """
    from fractions import Fraction

    from pandas_dp.measures.aggregates import Axis
    from pandas_dp.mechanisms.marginals import optimal_strategy
    from pandas_dp.mechanisms.residuals.planner import ResidualPlan, choose_plan
    from pandas_dp.planning.measurement.marginals import release_rho, residual_parts

    budget = (Fraction(EPSILON), Fraction(DELTA))
    rho = release_rho(*budget)
    lines = []
    cases = [("12 columns", [int(frame[c].max()) + 1 for c in frame.columns]),
             ("8 columns, 2-5 keys", [2, 3, 4, 5, 2, 3, 4, 5])]  # fmt: skip
    for name, sizes in cases:
        axes = [Axis(i, tuple(range(n))) for i, n in enumerate(sizes)]
        for order in (2, 3):
            workload = list(itertools.combinations(range(len(sizes)), order))
            bound = residual_planner_variance(workload, sizes, rho)
            old = optimal_strategy(workload, sizes)
            before = workload_variance(workload, old.cliques, old.variances(1.0, rho), sizes)
            plan = choose_plan(workload, sizes, EPSILON, rho)
            if isinstance(plan, ResidualPlan):
                parts = residual_parts(plan, axes, plan.cliques, *budget, 1).values()
                variances = [p.variance for p in parts]
                after = sum(
                    plan.cell_variance(t, variances) * int(np.prod([sizes[i] for i in t]))
                    for t in workload
                )
                how = f"ResidualPlanner ({plan.draws:,} noise draws)"
            else:
                after = workload_variance(workload, plan.cliques, plan.variances(1.0, rho), sizes)
                how = "marginals (ResidualPlanner would exceed the draw limit)"
            lines.append([f"{name}: all {order}-way ({len(workload)})", before / bound,
                          after / bound, how])  # fmt: skip
    return table(
        ["workload", "marginals ÷ ResidualPlanner", "tables ÷ ResidualPlanner", "measured"],
        lines,
    )


def speed(frame: pd.DataFrame) -> str:
    columns = list(frame.columns)
    keys = {c: list(range(n)) for c, n in zip(columns, SIZES, strict=True)}
    rows = []
    for order in (2, 3):
        workload = [list(t) for t in itertools.combinations(columns, order)]
        priv = protect(frame, seed=7)
        start = time.perf_counter()
        priv.dp.tables(workload, keys=keys, epsilon=EPSILON, delta=DELTA)
        rows.append([f"all {order}-way tables ({len(workload)})", time.perf_counter() - start])
    return table([f"one tables release on {len(frame):,} rows × 12 columns", "seconds"], rows)


def run(rows: int = ROWS, trials: int = 3) -> str:
    """The report (markdown)."""
    with warnings.catch_warnings():  # separate releases of sparse tables are mostly noise
        warnings.simplefilter("ignore", pandas_dp.NoiseDominatedWarning)
        return _run(rows, trials)


def _run(rows: int, trials: int) -> str:
    try:
        import mbi  # noqa: F401

        with_mbi = True
    except ImportError:
        with_mbi = False
    sections = ["## Many tables at once (`priv.dp.tables`) and synthetic data (`synthesize`)"]
    small = census()
    sizes = {c: int(small[c].max()) + 1 for c in small.columns}
    results, times = errors(small, sizes, trials * 3, with_mbi, True)
    sections.append(summary("Census extract (1,000 people, 6 columns)", results, times, trials * 3))
    big = generated(rows)
    results, times = errors(
        big, dict(zip(big.columns, SIZES, strict=True)), trials, with_mbi, False
    )
    sections.append(summary(f"Generated ({rows:,} rows, 12 columns)", results, times, trials))
    sections.append(strategy_bound(big))
    sections.append(speed(big))
    if not with_mbi:
        sections.append("(mbi is not installed here: `pip install mbi` brings JAX, about 600 MB.)")
    return "\n\n".join(sections)


if __name__ == "__main__":
    print(run())
