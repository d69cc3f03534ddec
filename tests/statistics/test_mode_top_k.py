"""Glue and behaviour of ``.dp.mode`` and ``.dp.top_k`` (exponential mechanism over counts).

Documented: candidate ``c`` is chosen with probability ``∝ exp(ε count_c / Δ)`` (monotone
scores, ``Δ`` = rows one privacy unit may add to one candidate, 1 by default); top-k peels
``k`` rounds at ``ε/k`` each; values outside the candidates (and missing values) count for
nothing, silently.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from pandas_dp.errors import DPKeyError, DPTypeError, DPValueError
from pandas_dp.mechanisms.exponential import ExponentialMechanism

CODES = ["A", "B", "C", "D", "E"]
#: Counts 50, 30, 20, 10, 0 among the candidates; "Z" (100 rows) and missing values (40) are
#: not candidates and must be ignored.
TRUE_ORDER = ["A", "B", "C", "D", "E"]


@pytest.fixture
def diagnoses(rng: np.random.Generator) -> pd.DataFrame:
    values = ["A"] * 50 + ["B"] * 30 + ["C"] * 20 + ["D"] * 10 + ["Z"] * 100 + [None] * 40
    return pd.DataFrame({"diagnosis": rng.permutation(np.array(values, dtype=object))})


@pytest.mark.parametrize("path", ["frame", "series"])
def test_zero_noise_returns_the_true_mode(diagnoses, protect_seeded, noise, path):
    priv = protect_seeded(diagnoses, epsilon=10)
    with noise(priv, value=0) as calls:
        if path == "frame":
            mode = priv.dp.mode("diagnosis", candidates=CODES, epsilon=0.5)
        else:
            mode = priv["diagnosis"].dp.mode(candidates=CODES, epsilon=0.5)
    assert mode == "A"
    (call,) = calls
    assert call.mechanism == ExponentialMechanism(Fraction(1, 2), Fraction(1), monotone=True)
    assert call.mechanism.rate == Fraction(1, 2)  # ε/Δ: counts are monotone scores
    (record,) = priv.dp.session.releases
    assert (record.query, record.columns, record.composition) == (
        "mode",
        ("diagnosis",),
        "sequential",
    )
    (m,) = record.measurements
    assert (m.label, m.mechanism, m.epsilon, m.sensitivity, m.scale) == (
        "mode(diagnosis)",
        "exponential",
        Fraction(1, 2),
        1,
        2,
    )
    assert "5 public candidates" in record.note
    assert priv.dp.session.spent.epsilon == Fraction(1, 2)


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_zero_noise_top_k_is_the_true_ranking_with_epsilon_per_round(
    diagnoses, protect_seeded, noise, k
):
    priv = protect_seeded(diagnoses, epsilon=10)
    with noise(priv, value=0) as calls:
        top = priv["diagnosis"].dp.top_k(k, candidates=CODES, epsilon=0.6)
        frame_form = priv.dp.top_k("diagnosis", k, candidates=CODES, epsilon=0.6)
    assert top == frame_form == TRUE_ORDER[:k]
    rounds = [c.mechanism for c in calls]
    assert len(rounds) == 2 * k  # two releases, k rounds each
    assert all(r.epsilon == Fraction(3, 5) / k and r.monotone for r in rounds)
    assert all(r.rate == Fraction(3, 5) / k for r in rounds)
    record = priv.dp.session.releases[0]
    assert record.query == "top_k"
    assert record.cost.epsilon == Fraction(3, 5)
    (m,) = record.measurements
    assert m.label == f"top_k(diagnosis, {k})"
    if k > 1:
        assert f"{k} rounds of peeling at ε/{k} each" in record.note
    assert priv.dp.session.spent.epsilon == Fraction(6, 5)


def test_ties_pick_a_tied_candidate(protect_seeded, noise):
    data = pd.DataFrame({"c": ["x", "y", "y", "x", "z"]})
    priv = protect_seeded(data, epsilon=10)
    with noise(priv, value=0):
        assert priv.dp.mode("c", candidates=["z", "x", "y"], epsilon=1.0) in ("x", "y")
        top = priv.dp.top_k("c", 2, candidates=["z", "x", "y"], epsilon=1.0)
    assert sorted(top) == ["x", "y"]


def test_candidates_may_be_absent_from_the_data_and_other_dtypes(protect_seeded, noise):
    data = pd.DataFrame(
        {
            "n": [3, 3, 1, 2, 3, 7],
            "flag": [True, False, True, True, False, True],
            "cat": pd.Categorical(list("aabbbc"), categories=list("abcd")),
        }
    )
    priv = protect_seeded(data, epsilon=10)
    with noise(priv, value=0):
        assert priv.dp.mode("n", candidates=[0, 1, 2, 3, 4], epsilon=1.0) == 3
        assert priv.dp.mode("flag", candidates=[False, True], epsilon=1.0)
        assert priv.dp.top_k("cat", 2, candidates=["d", "b", "a"], epsilon=1.0) == ["b", "a"]
        # Only absent candidates: every count is 0, any of them may come out.
        assert priv.dp.mode("n", candidates=[10, 11], epsilon=1.0) in (10, 11)


def test_privacy_unit_scales_the_sensitivity(protect_seeded, noise):
    data = pd.DataFrame({"pid": [1, 1, 1, 2, 2, 3], "c": list("aababc")})
    priv = protect_seeded(data, epsilon=10, privacy_unit="pid", max_rows_per_unit=2)
    with noise(priv, value=0) as calls:
        priv.dp.mode("c", candidates=list("abc"), epsilon=1.0)
    # One unit may add 2 rows to one candidate: Δ = 2, weights exp(ε count / 2).
    assert calls[0].mechanism.sensitivity == 2
    assert calls[0].mechanism.rate == Fraction(1, 2)
    (m,) = priv.dp.session.releases[0].measurements
    assert (m.sensitivity, m.scale) == (2, 2)


BAD = {
    "no candidates": ({"candidates": None}, DPValueError),
    "empty": ({"candidates": []}, DPValueError),
    "duplicates": ({"candidates": ["A", "A"]}, DPValueError),
    "a string": ({"candidates": "AB"}, DPTypeError),
    "missing": ({"candidates": ["A", None]}, DPValueError),
    "nan": ({"candidates": ["A", math.nan]}, DPValueError),
    "epsilon": ({"epsilon": 0}, DPValueError),
    "epsilon text": ({"epsilon": "1"}, DPTypeError),
}


@pytest.mark.parametrize(("kwargs", "error"), BAD.values(), ids=BAD.keys())
def test_bad_arguments_charge_nothing(diagnoses, protect_seeded, kwargs, error):
    priv = protect_seeded(diagnoses, epsilon=10)
    arguments = {"candidates": CODES, "epsilon": 1.0, **kwargs}
    with pytest.raises(error):
        priv["diagnosis"].dp.mode(**arguments)
    with pytest.raises(error):
        priv.dp.top_k("diagnosis", 2, **arguments)
    assert priv.dp.session.releases == ()


@pytest.mark.parametrize(
    ("k", "error"),
    [(0, DPValueError), (-1, DPValueError), (6, DPValueError), (2.0, DPTypeError),
     (True, DPTypeError), ("2", DPTypeError), (None, DPTypeError)],
)  # fmt: skip
def test_bad_k(diagnoses, protect_seeded, k, error):
    priv = protect_seeded(diagnoses, epsilon=10)
    with pytest.raises(error):
        priv["diagnosis"].dp.top_k(k, candidates=CODES, epsilon=1.0)
    assert priv.dp.session.releases == ()


def test_candidates_of_the_wrong_type(protect_seeded):
    # Checked from the dtype only (public): strings are no candidates for an int column.
    priv = protect_seeded(pd.DataFrame({"n": [1, 2, 2]}), epsilon=10)
    with pytest.raises(DPTypeError):
        priv.dp.mode("n", candidates=["1", "2"], epsilon=1.0)
    with pytest.raises(DPTypeError):
        priv["n"].dp.top_k(1, candidates=["1", "2"], epsilon=1.0)
    assert priv.dp.session.releases == ()


def test_missing_column(diagnoses, protect_seeded):
    priv = protect_seeded(diagnoses, epsilon=10)
    with pytest.raises(DPKeyError):
        priv.dp.mode("no such column", candidates=CODES, epsilon=1.0)
    with pytest.raises(DPKeyError):
        priv.dp.top_k("no such column", 1, candidates=CODES, epsilon=1.0)
    assert priv.dp.session.releases == ()


# --- seeded distributions --------------------------------------------------------------------

COUNTS = {"p": 4, "q": 2, "r": 2, "s": 0}
RUNS = 300


def chi2_pvalue(observed: np.ndarray, expected: np.ndarray) -> float:
    """χ² p-value after merging the rarest bins until every expected count is at least 5."""
    observed, expected = np.asarray(observed, float), np.asarray(expected, float)
    while True:
        order = np.argsort(expected)
        observed, expected = observed[order], expected[order]
        if expected[0] >= 5 or expected.size < 3:
            break
        observed = np.concatenate([[observed[0] + observed[1]], observed[2:]])
        expected = np.concatenate([[expected[0] + expected[1]], expected[2:]])
    return float(stats.chisquare(observed, expected * observed.sum() / expected.sum()).pvalue)


def law(weights: dict, runs: int) -> np.ndarray:
    total = sum(weights.values())
    return np.array([runs * w / total for w in weights.values()])


def test_mode_frequencies_follow_exp_epsilon_count(protect_seeded):
    """300 seeded releases at ε = 1: ``P(c) ∝ e^{count_c}`` (χ², p > 1e-6). The law of the
    non-monotone rate ε/2 must be rejected: its noncentrality is about 140 here, against a
    critical value near 28, so the test has power."""
    data = pd.DataFrame({"c": [c for c, n in COUNTS.items() for _ in range(n)] + ["t"] * 9})
    priv = protect_seeded(data, seed=41, epsilon=RUNS)
    picks = [priv.dp.mode("c", candidates=list(COUNTS), epsilon=1.0) for _ in range(RUNS)]
    observed = np.array([picks.count(c) for c in COUNTS])
    exact = law({c: math.exp(n) for c, n in COUNTS.items()}, RUNS)
    assert chi2_pvalue(observed, exact) > 1e-6
    halved = law({c: math.exp(n / 2) for c, n in COUNTS.items()}, RUNS)
    assert chi2_pvalue(observed, halved) < 1e-6


def test_top_2_frequencies_follow_peeling(protect_seeded):
    """Ordered pairs from top_k(2) at ε = 2: round one picks ``a`` with ``∝ e^{count_a}`` (ε/2
    per round), round two ``b`` among the rest likewise. χ² over the 12 ordered pairs."""
    data = pd.DataFrame({"c": [c for c, n in COUNTS.items() for _ in range(n)]})
    priv = protect_seeded(data, seed=43, epsilon=2 * RUNS)
    picks = [
        tuple(priv.dp.top_k("c", 2, candidates=list(COUNTS), epsilon=2.0)) for _ in range(RUNS)
    ]
    assert all(a != b for a, b in picks)
    weight = {c: math.exp(n) for c, n in COUNTS.items()}
    total = sum(weight.values())
    pairs = list(itertools.permutations(COUNTS, 2))
    pairs_law = {(a, b): weight[a] / total * weight[b] / (total - weight[a]) for a, b in pairs}
    observed = np.array([picks.count(p) for p in pairs])
    assert chi2_pvalue(observed, np.array([RUNS * pairs_law[p] for p in pairs])) > 1e-6
