"""``priv.dp.synthesize``: MST's measurements, charge and ledger; the rows' columns, dtypes and
keys; their marginals against the model; refusals that charge nothing.

With the ``noise`` fixture the noise is 0 and the exponential mechanism picks the best
score, so the model's marginals are the exact ones and the tree joins the most dependent
pairs: the synthetic rows are then draws from the exact one-way and tree pair marginals.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import pandas_dp
from pandas_dp.accounting.events import BoundedRangeMeasurement
from pandas_dp.budget import zcdp_to_epsilon
from pandas_dp.marks import ATTRS_KEY
from pandas_dp.mechanisms.exponential import ExponentialMechanism
from pandas_dp.mechanisms.gaussian.discrete import DiscreteGaussian
from pandas_dp.mechanisms.laplace import DiscreteLaplace
from pandas_dp.mechanisms.random import SystemRandomSource
from pandas_dp.planning.measurement.marginals import release_rho
from pandas_dp.planning.noise import NoiseSource, os_words

COLUMNS = ["age", "sex", "region", "tenure"]


def dependent(n: int = 3000) -> pd.DataFrame:
    """tenure depends strongly on region, sex on nothing, age a little on sex."""
    rng = np.random.default_rng(21)
    region = rng.choice(["north", "south", "east"], n)
    own = np.where(region == "north", 0.9, 0.1)
    tenure = np.where(rng.random(n) < own, "own", "rent")
    sex = rng.integers(0, 2, n)
    age = np.clip(rng.normal(40 + 10 * sex, 15, n), 1, 99).round()
    return pd.DataFrame({"age": age, "sex": sex, "region": region, "tenure": tenure})


def test_rows_columns_dtypes_and_report(options, protect_seeded, noise):
    frame = dependent()
    priv = protect_seeded(frame, epsilon=3.0, delta=1e-6)
    with noise(priv):
        synth = priv.dp.synthesize(COLUMNS, **options, epsilon=1.0)
    assert list(synth.columns) == COLUMNS
    assert len(synth) == 3000  # no noise: the exact total of rows inside every domain
    assert synth["sex"].dtype == frame["sex"].dtype
    assert synth["region"].dtype == frame["region"].dtype
    assert set(synth["region"]) <= set(options["keys"]["region"])
    assert set(synth["tenure"]) <= set(options["keys"]["tenure"])
    assert synth["age"].dtype == np.float64
    assert synth["age"].between(0, 120, inclusive="right").all()
    assert isinstance(synth.index, pd.RangeIndex)
    report = synth.attrs["synthesis"]
    assert report["method"] == "mst"
    assert report["rows"] == 3000
    assert ["region", "tenure"] in report["tree"]  # the strongest dependence is joined
    assert len(report["tree"]) == 3
    assert set(report["rmse"]) >= {"age", "sex", "region", "tenure", "region × tenure"}
    # A plain frame: no session rides on it, and releasing from it is refused.
    assert ATTRS_KEY not in synth.attrs
    with pytest.raises(pandas_dp.NotProtectedError):
        synth.dp.count(epsilon=0.1)


def test_synthetic_rows_follow_the_measured_marginals(options, protect_seeded, noise):
    """With zero noise the model's marginals are exact: 20,000 rows' frequencies of each
    (region, tenure) cell are binomial around the exact proportions, standard error below
    0.0036; 6 standard errors (0.022) fail with probability below 1e-8 per cell."""
    frame = dependent()
    priv = protect_seeded(frame, epsilon=3.0, delta=1e-6)
    with noise(priv):
        synth = priv.dp.synthesize(COLUMNS, **options, epsilon=1.0, rows=20_000)
    assert len(synth) == 20_000
    exact = pd.crosstab(frame["region"], frame["tenure"], normalize=True)
    got = pd.crosstab(synth["region"], synth["tenure"], normalize=True)
    assert np.abs(got.reindex_like(exact).to_numpy() - exact.to_numpy()).max() < 0.022


def test_mst_measurements_charge_and_ledger(options, protect_seeded, noise):
    priv = protect_seeded(dependent(), epsilon=3.0, delta=1e-6)
    with noise(priv) as calls:
        priv.dp.synthesize(COLUMNS, **options, epsilon=1.0)
    (release,) = priv.dp.session.releases
    labels = [m.label for m in release.measurements]
    assert labels == [
        "marginal(age)", "marginal(sex)", "marginal(region)", "marginal(tenure)", "tree",
        "marginal(tree pair 1)", "marginal(tree pair 2)", "marginal(tree pair 3)",
    ]  # fmt: skip
    assert release.cost.epsilon == 1
    assert release.cost.delta == Fraction(1, 3 * 10**6)  # the session's δ in proportion
    # The paper's split in zCDP: ρ is the largest whose conversion fits (1, δ); a third each
    # to the one-way marginals, the tree's choices (bounded range) and the tree's pairs.
    delta = float(release.cost.delta)
    rho = release_rho(Fraction(1), release.cost.delta)
    assert zcdp_to_epsilon(rho, delta) <= 1 < zcdp_to_epsilon(rho * 1.001, delta)
    tree = release.measurements[4]
    assert isinstance(tree, BoundedRangeMeasurement)
    assert tree.pure_epsilon is None
    assert tree.epsilon == Fraction(1, 3)  # its share of the release's ε
    assert tree.coordinates == 3  # three choices
    assert tree.rho == 3 * tree.choice_epsilon**2 / 8
    assert float(tree.rho) == pytest.approx(rho / 3, rel=1e-9)
    assert tree.rho <= Fraction(rho) / 3
    gaussian = [m for m in release.measurements if m.is_gaussian]
    assert float(sum(m.rho for m in gaussian[:4])) == pytest.approx(rho / 3, rel=1e-6)
    assert float(sum(m.rho for m in gaussian[4:])) == pytest.approx(rho / 3, rel=1e-6)
    total = sum((m.rho for m in release.measurements), Fraction(0))
    assert total <= Fraction(rho)
    assert float(total) == pytest.approx(rho, rel=1e-6)
    assert sum((m.epsilon for m in release.measurements), Fraction(0)) == 1  # shares add up
    choices = [c for c in calls if isinstance(c.mechanism, ExponentialMechanism)]
    assert len(choices) == 3  # one round per pair of the tree
    for call in choices:
        assert call.mechanism.epsilon == tree.choice_epsilon
        assert call.mechanism.sensitivity == 1 + Fraction(1, 16)
    noises = [c.mechanism for c in calls if isinstance(c.mechanism, DiscreteGaussian)]
    assert [c.size for c in calls if isinstance(c.mechanism, DiscreteGaussian)][:4] == [3, 2, 3, 2]
    assert len(noises) == 7


def test_a_pure_session_uses_laplace_and_a_rho_session_rho(options, protect_seeded, noise):
    pure = protect_seeded(dependent(), epsilon=3.0)
    with noise(pure) as calls:
        pure.dp.synthesize(COLUMNS, **options, epsilon=0.9)
    laplace = [c.mechanism for c in calls if isinstance(c.mechanism, DiscreteLaplace)]
    assert [m.scale for m in laplace[:4]] == [Fraction(40, 3)] * 4  # ε/3 split over 4 columns
    assert pure.dp.session.releases[0].cost.epsilon == Fraction(9, 10)
    zcdp = protect_seeded(dependent(), rho=1.0)
    with noise(zcdp):
        zcdp.dp.synthesize(COLUMNS, **options, epsilon=0.6)
    assert float(zcdp.dp.session.spent.rho) == pytest.approx(0.18, rel=1e-6)  # 0.6² / 2
    assert zcdp.dp.session.spent.rho <= Fraction(18, 100)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"method": "gan"}, "DPValueError", "one of"),
        ({"rows": -1}, "DPValueError", "rows"),
        ({"rows": True}, "DPTypeError", "rows"),
        ({"rows": 2.5}, "DPTypeError", "rows"),
        ({"columns": ["age", "nope"]}, "DPKeyError", "nope"),
        ({"columns": ["age", "age"]}, "DPValueError", "twice"),
        ({"bins": {}}, "DPValueError", "bins="),
        ({"epsilon": 5.0}, "BudgetExceededError", "remains"),
    ],
)
def test_refusals_charge_nothing(options, protect_seeded, kwargs, error, match):
    priv = protect_seeded(dependent(), epsilon=3.0, delta=1e-6)
    arguments = {"columns": COLUMNS, **options, "epsilon": 1.0, **kwargs}
    with pytest.raises(getattr(pandas_dp, error), match=match):
        priv.dp.synthesize(**arguments)
    assert priv.dp.session.releases == ()


def test_one_column_needs_no_tree(options, protect_seeded, noise):
    priv = protect_seeded(dependent(), epsilon=3.0, delta=1e-6)
    with noise(priv):
        synth = priv.dp.synthesize(["region"], **options, epsilon=1.0, rows=100)
    assert list(synth.columns) == ["region"]
    assert [m.label for m in priv.dp.session.releases[0].measurements] == ["marginal(region)"]


def test_preview_charges_nothing(options, protect_seeded):
    priv = protect_seeded(dependent(), epsilon=3.0, delta=1e-6)
    preview = priv.dp.preview.synthesize(COLUMNS, **options, epsilon=1.0)
    assert priv.dp.session.releases == ()
    assert list(preview.table.index) == [*(str((c,)) for c in COLUMNS), "synthetic rows"]
    assert preview.epsilon == pytest.approx(1.0)


def test_columns_named_like_the_tree_keep_their_own_marginals(options, protect_seeded, noise):
    frame = dependent().rename(columns={"region": "tree", "tenure": "tree pair 1"})
    keys = {"sex": [0, 1], "tree": options["keys"]["region"], "tree pair 1": ["own", "rent"]}
    priv = protect_seeded(frame, epsilon=3.0, delta=1e-6)
    with noise(priv):
        synth = priv.dp.synthesize(["sex", "tree", "tree pair 1"], keys=keys, epsilon=1.0)
    labels = [m.label for m in priv.dp.session.releases[0].measurements]
    assert labels.count("marginal(tree)") == 1
    assert labels.count("tree") == 1
    assert len(labels) == 3 + 1 + 2
    assert set(synth["tree"]) <= set(keys["tree"])


def test_rows_are_sampled_from_the_noise_source_handed_down(options, protect_seeded):
    # Issue 27: the runner hands each part, and the finishing step, the session's noise
    # source. The rows' generator is seeded by four words from it: a source whose words
    # are fixed gives the same rows twice, other words give other rows; seeded sessions
    # repeat; an unseeded source's words come from the OS CSPRNG.
    asked: list[int] = []

    def fixed(word: int):
        def words(n: int) -> np.ndarray:
            asked.append(n)
            return np.full(n, word, dtype=np.uint64)

        return words

    def draw(mechanism, n):
        return np.zeros(n, dtype=np.int64)

    def choose(mechanism, scores, denominator):
        return np.asarray(np.argmin(scores, axis=1), dtype=np.int64)

    priv = protect_seeded(dependent(), epsilon=30.0, delta=1e-6)
    session = priv.dp.session
    runs = []
    for word in (7, 7, 8):
        with session.using_noise(NoiseSource("captured", draw, choose, fixed(word))):
            runs.append(priv.dp.synthesize(COLUMNS, **options, epsilon=1.0))
    assert asked == [4, 4, 4]
    pd.testing.assert_frame_equal(runs[0], runs[1])
    assert not runs[0].equals(runs[2])
    seeded = [
        protect_seeded(dependent(), seed=3, epsilon=3.0, delta=1e-6).dp.synthesize(
            COLUMNS, **options, epsilon=1.0
        )
        for _ in range(2)
    ]
    pd.testing.assert_frame_equal(*seeded)
    assert NoiseSource.from_random(SystemRandomSource()).kind == "os"
    assert NoiseSource("captured", draw, choose).words_from is os_words


@pytest.mark.parametrize("method", ["mst", "aim"])
def test_an_epsilon_whose_noise_variance_underflows_still_releases(options, protect_seeded, method):
    # At ε = 10^5 (δ 1e-6) the noise's variance is 0.0 in float: MST's fit once divided by
    # it after the charge (ReleaseFailedError). Such a measurement is exact, so the rows
    # keep the true row count and one-way counts, up to the fit's precision.
    frame = dependent(300)
    priv = protect_seeded(frame, epsilon=1e6, delta=1e-3)
    synth = priv.dp.synthesize(COLUMNS, **options, epsilon=1e5, delta=1e-6, method=method)
    assert abs(len(synth) - len(frame)) <= 1
    expected = frame["region"].value_counts()
    assert (synth["region"].value_counts().reindex(expected.index) - expected).abs().max() <= 2
