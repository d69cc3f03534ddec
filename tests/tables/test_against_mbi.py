"""Our estimator of consistent tables against Private-PGM's (the ``mbi`` package).

:func:`pandas_dp.mechanisms.reconstruction.consistent_tables` is our own numpy code; ``mbi``
(McKenna, Sheldon & Miklau 2019; 2.x needs JAX) is the maintained reference. Both estimate
tables from the same noisy marginals by least squares weighted by ``1/σ²``.

- Where the measured cliques form a junction tree (a chain and a star here) and the
  least-squares tables are non-negative, the two solve the same strictly convex problem: mbi's
  graphical model over those cliques represents every consistent non-negative set of
  marginals, and its loss is ours. The tables must agree up to mbi's optimiser (mirror
  descent run to convergence; measured: 4e-6 on counts of several hundred).
- Where noise around small counts makes least-squares cells negative, the problems differ:
  we keep the least-squares total and project in the Euclidean metric of the tables, mbi
  optimises over distributions. Our tables must then be about as accurate as mbi's: over 20
  seeded cases, a mean L1 error within 5% of mbi's (measured: 0.998 of it).

AIM's graphical model (:mod:`pandas_dp.mechanisms.graphical_model`) is checked against mbi's
on a cycle of pairs, where least squares over residuals cannot say anything about the
diagonals and a graphical model must.

The noisy marginals here are test inputs drawn with numpy (no release is made).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import pytest

from pandas_dp.mechanisms.graphical_model import Measured, Model, fit
from pandas_dp.mechanisms.marginals import Clique
from pandas_dp.mechanisms.reconstruction import consistent_tables, marginalize

# `mbi` (and the JAX it brings) are the `reference` extra, not in `dev` (JAX is hundreds of
# MB): without them this module skips, saying so. CI (.ci/run) installs the extra and runs
# this module in a step of its own that fails if anything in it is skipped.
WHY = "needs the reference implementation: pip install -e '.[reference]' (mbi, brings JAX)"
jax = pytest.importorskip("jax", reason=WHY)
jax.config.update("jax_enable_x64", True)  # float64, as our estimator
jax.config.update("jax_enable_compilation_cache", False)
with warnings.catch_warnings():  # mbi warns at import about JAX settings it cannot see yet
    warnings.simplefilter("ignore")
    mbi = pytest.importorskip("mbi", reason=WHY)

ITERATIONS = 2_000


def mbi_tables(
    noisy: Mapping[Clique, np.ndarray], sigma2: Mapping[Clique, float], sizes: Sequence[int]
) -> dict[Clique, np.ndarray]:
    """mbi's estimate of the measured tables, from the same measurements and variances."""
    names = tuple(f"c{i}" for i in range(len(sizes)))
    domain = mbi.Domain(names, tuple(sizes))
    measurements = [
        mbi.LinearMeasurement(
            np.asarray(y, dtype=np.float64).ravel(),
            tuple(names[i] for i in clique),
            float(np.sqrt(sigma2[clique])),
        )
        for clique, y in noisy.items()
    ]
    with warnings.catch_warnings():  # JAX's and mbi's deprecation notices are not ours
        warnings.simplefilter("ignore")
        model = mbi.estimation.MirrorDescent().estimate(domain, measurements, iters=ITERATIONS)
        return {
            clique: np.asarray(model.project([names[i] for i in clique]).datavector(flatten=False))
            for clique in noisy
        }


def noisy_marginals(
    seed: int, rows: int, sizes: Sequence[int], sigmas: Mapping[Clique, float]
) -> tuple[dict[Clique, np.ndarray], dict[Clique, np.ndarray]]:
    """True marginals of a random table of ``rows`` rows, and Gaussian-noised copies."""
    rng = np.random.default_rng(seed)
    cells = int(np.prod(sizes))
    full = rng.multinomial(rows, rng.dirichlet(np.ones(cells))).reshape(sizes).astype(float)
    every = tuple(range(len(sizes)))
    truth = {c: marginalize(full, every, c) for c in sigmas}
    noisy = {c: truth[c] + rng.normal(0.0, sigmas[c], truth[c].shape) for c in sigmas}
    return truth, noisy


@pytest.mark.parametrize(
    ("sizes", "sigmas"),
    [
        ((3, 4, 2), {(0, 1): 2.0, (1, 2): 3.0}),  # a chain
        ((3, 2, 2, 4), {(0, 1): 1.0, (0, 2): 2.0, (0, 3): 4.0}),  # a star
    ],
)
def test_same_tables_as_mbi_where_non_negativity_does_not_bind(sizes, sigmas):
    _, noisy = noisy_marginals(1, 10_000, sizes, sigmas)
    sigma2 = {c: s * s for c, s in sigmas.items()}
    ours = consistent_tables(noisy, sigma2, list(sigmas), sizes)
    assert min(float(t.min()) for t in ours.values()) > 0  # the case this test is about
    theirs = mbi_tables(noisy, sigma2, sizes)
    for clique in sigmas:
        assert ours[clique] == pytest.approx(theirs[clique], abs=1e-3)


def test_as_accurate_as_mbi_where_noise_makes_cells_negative():
    sizes, sigmas = (3, 4, 3), {(0, 1): 4.0, (1, 2): 4.0}
    sigma2 = {c: s * s for c, s in sigmas.items()}
    errors, negative = [], 0
    for seed in range(20):
        truth, noisy = noisy_marginals(seed, 60, sizes, sigmas)
        raw = consistent_tables(noisy, sigma2, list(sigmas), sizes, clamp=False)
        negative += any(float(t.min()) < 0 for t in raw.values())
        ours = consistent_tables(noisy, sigma2, list(sigmas), sizes)
        theirs = mbi_tables(noisy, sigma2, sizes)
        assert min(float(t.min()) for t in ours.values()) >= 0
        errors.append(
            [sum(float(np.abs(est[c] - truth[c]).sum()) for c in truth) for est in (ours, theirs)]
        )
    assert negative >= 15  # non-negativity binds in most cases
    ours_mean, theirs_mean = np.mean(errors, axis=0)
    assert ours_mean <= 1.05 * theirs_mean, (ours_mean, theirs_mean)


CYCLE = {(0, 1): 2.0, (1, 2): 2.0, (2, 3): 2.0, (0, 3): 10.0, (0,): 1.0}


def fitted(noisy: Mapping[Clique, np.ndarray], sigmas: Mapping[Clique, float], sizes) -> Model:
    measured = [Measured(c, noisy[c], sigmas[c]) for c in noisy]
    return fit(measured, sizes, float(noisy[(0,)].sum()), iterations=ITERATIONS)


def test_aims_model_agrees_with_mbi_on_a_cycle():
    """AIM's graphical model (our mirror descent) and mbi's fit the same family (potentials
    on the measured cliques, a 4-cycle of pairs, one pair five times noisier) to the same
    weighted loss: the marginals, measured or not (the diagonals), agree within 4 of 5,000
    in L1 (measured 1.9; after 2,000 steps both optimisers are about that far from the
    optimum). Weighting every measurement alike (the mutant) is off by 9.4."""
    sizes = (3, 4, 2, 3)
    _, noisy = noisy_marginals(4, 5_000, sizes, CYCLE)
    ours = fitted(noisy, CYCLE, sizes)
    sigma2 = {c: s * s for c, s in CYCLE.items()}
    names = tuple(f"c{i}" for i in range(len(sizes)))
    measurements = [
        mbi.LinearMeasurement(
            np.asarray(y).ravel(), tuple(names[i] for i in c), float(np.sqrt(sigma2[c]))
        )
        for c, y in noisy.items()
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = mbi.estimation.MirrorDescent().estimate(
            mbi.Domain(names, sizes), measurements, iters=ITERATIONS
        )
    mutant = fitted(noisy, dict.fromkeys(CYCLE, 1.0), sizes)
    worst = {"ours": 0.0, "mutant": 0.0}
    for clique in [*CYCLE, (0, 2), (1, 3)]:
        theirs = np.asarray(model.project([names[i] for i in clique]).datavector(flatten=False))
        for name, estimate in (("ours", ours), ("mutant", mutant)):
            gap = float(np.abs(estimate.marginal(clique) - theirs).sum())
            worst[name] = max(worst[name], gap)
    assert worst["ours"] < 4.0, worst
    assert worst["mutant"] > 8.0, worst
