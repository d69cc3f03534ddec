"""Synthetic data on adult (issue 25): MST and AIM against Private-PGM's reference mechanisms.

Data. Private-PGM's ``data/adult.csv`` and ``data/adult-domain.json`` (github
ryan112358/private-pgm; 48,842 rows, coded 0..n-1 by the domain file), restricted to the
issue's eight columns. Point ``PANDAS_DP_ADULT`` at the folder holding the two files; without
them the benchmark uses a generated stand-in of the same shape (same columns, domain sizes and
row count, dependent through a hidden class) and says so.

Accuracy: the total L1 error over every cell of all 28 two-way marginals of the synthetic rows,
rescaled to the true row count, at ε = 1, δ = 1e-6, for ``priv.dp.synthesize(method="mst")``
and ``method="aim"``, each run ``trials`` times with its wall time (the whole call: plan,
counts, noise, model, rows).

Reference. Where ``mbi`` imports and ``PRIVATE_PGM_MECHANISMS`` names Private-PGM's
``mechanisms/`` folder (its ``mst.py`` and ``aim.py``: the papers' authors' code, which the
``mbi`` package does not ship), the same table for their ``MST(data, ε, δ)`` and
``AIM(ε, δ).run(data, workload)`` (all 2-way marginals, weight 1, its default settings but
``max_iters``, see :data:`AIM_ITERS`), run on ``mbi`` 2.x through the names
:mod:`_mbi_compat` adds back. Ratios are computed in the run; each mean comes with its
standard error (MST's is large: its tree is one of two about equally likely, whose errors
differ by about 15%). ``python bench_synthesize.py mst --trials=40`` runs one method more.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import pandas_dp
from _util import table

EPSILON, DELTA = 1.0, 1e-6
COLUMNS = (
    "workclass", "education-num", "marital-status", "occupation", "relationship", "race",
    "sex", "income>50K",
)  # fmt: skip
#: The reference AIM's mirror-descent steps per fit (its default, 1,000, takes an hour here).
AIM_ITERS = 250


def adult() -> tuple[pd.DataFrame, dict[str, int], str]:
    """The eight columns of adult, their domain sizes, and where they came from."""
    folder = os.environ.get("PANDAS_DP_ADULT")
    if folder and (Path(folder) / "adult.csv").exists():
        frame = pd.read_csv(Path(folder) / "adult.csv", usecols=list(COLUMNS))
        domain = json.loads((Path(folder) / "adult-domain.json").read_text())
        sizes = {c: int(domain[c]) for c in COLUMNS}
        return frame[list(COLUMNS)].astype(np.int64), sizes, "adult (Private-PGM's data/)"
    sizes = dict(zip(COLUMNS, (9, 16, 7, 15, 6, 5, 2, 2), strict=True))
    gen = np.random.default_rng(25)  # benchmark data, never noise
    rows = 48_842
    hidden = gen.integers(0, 4, rows)
    columns = {}
    for c, n in sizes.items():
        skewed = np.minimum(gen.geometric(0.35, rows) - 1, n - 1)
        columns[c] = np.where(gen.random(rows) < 0.6, (hidden * n // 4 + skewed) % n, skewed)
    return pd.DataFrame(columns).astype(np.int64), sizes, "a generated stand-in of adult's shape"


def counts(frame: pd.DataFrame, pair: tuple[str, str], sizes: dict[str, int]) -> np.ndarray:
    codes = frame[pair[0]].to_numpy() * sizes[pair[1]] + frame[pair[1]].to_numpy()
    return np.bincount(codes, minlength=sizes[pair[0]] * sizes[pair[1]]).astype(np.float64)


def l1(rows: pd.DataFrame, truth: pd.DataFrame, sizes: dict[str, int]) -> float:
    """Total L1 error of all 2-way marginals of ``rows``, rescaled to ``truth``'s row count."""
    scale = len(truth) / max(len(rows), 1)
    return float(
        sum(
            np.abs(counts(rows, p, sizes) * scale - counts(truth, p, sizes)).sum()
            for p in itertools.combinations(COLUMNS, 2)
        )
    )


def ours(frame: pd.DataFrame, sizes: dict[str, int], method: str, seed: int) -> tuple[float, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pandas_dp.PrivacyLeakWarning)
        priv = frame.dp.protect(epsilon=1e6, delta=0.5, rng=seed)
    keys = {c: list(range(n)) for c, n in sizes.items()}
    start = time.perf_counter()
    rows = priv.dp.synthesize(list(COLUMNS), keys=keys, epsilon=EPSILON, delta=DELTA, method=method)
    seconds = time.perf_counter() - start
    return l1(rows.astype(np.int64), frame, sizes), seconds


def reference(
    frame: pd.DataFrame, sizes: dict[str, int], method: str, seed: int
) -> tuple[float, float]:
    """Private-PGM's own MST or AIM on the same data (its numpy randomness, seeded)."""
    import mbi

    from _mbi_compat import install

    install()  # the scripts are written for mbi 1.x
    folder = os.environ["PRIVATE_PGM_MECHANISMS"]
    if folder not in sys.path:
        sys.path.insert(0, folder)
    np.random.seed(seed)  # noqa: NPY002 (the reference draws from numpy's global generator)
    data = mbi.Dataset(frame, mbi.Domain(COLUMNS, tuple(sizes[c] for c in COLUMNS)))
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):  # both print their progress
        if method == "mst":
            from mst import MST

            synth = MST(data, EPSILON, DELTA)
        else:
            from aim import AIM

            workload = [(p, 1.0) for p in itertools.combinations(COLUMNS, 2)]
            mech = AIM(EPSILON, DELTA, prng=np.random.RandomState(seed), max_iters=AIM_ITERS)
            synth = mech.run(data, workload)[1]
    seconds = time.perf_counter() - start
    return l1(synth.df.astype(np.int64), frame, sizes), seconds


def with_reference() -> bool:
    if not os.environ.get("PRIVATE_PGM_MECHANISMS"):
        return False
    try:
        import mbi  # noqa: F401
    except ImportError:
        return False
    return True


def run(trials: int = 3, methods: tuple[str, ...] = ("mst", "aim")) -> str:
    """The report (markdown)."""
    frame, sizes, source = adult()
    rows: list[list[Any]] = []
    refs = with_reference()
    for method in methods:
        runs = {"pandas-dp": [ours(frame, sizes, method, 100 + t) for t in range(trials)]}
        if refs:
            runs["Private-PGM"] = [reference(frame, sizes, method, 100 + t) for t in range(trials)]
        base = float(np.mean([e for e, _ in runs.get("Private-PGM", runs["pandas-dp"])]))
        for who, results in runs.items():
            errors = [e for e, _ in results]
            seconds = [s for _, s in results]
            spread = float(np.std(errors, ddof=1) / np.sqrt(len(errors))) if trials > 1 else 0.0
            rows.append([
                f"{method.upper()}, {who}", f"{np.mean(errors):,.0f} ± {spread:,.0f}",
                float(np.mean(errors)) / base,
                " / ".join(f"{e:,.0f}" for e in errors), float(np.mean(seconds)),
            ])  # fmt: skip
    head = (
        f"### Synthetic data on {source}, {len(frame):,} rows, 8 columns: total L1 error of "
        f"all 28 2-way marginals at ε = 1, δ = 1e-6 ({trials} runs each)"
    )
    note = "" if refs else "\n\n(reference not run: needs `mbi` and PRIVATE_PGM_MECHANISMS.)"
    return head + "\n\n" + table(
        ["method", "total L1 error ± s.e.", "÷ reference", "runs", "seconds"], rows
    ) + note  # fmt: skip


if __name__ == "__main__":
    chosen = tuple(a for a in sys.argv[1:] if a in ("mst", "aim")) or ("mst", "aim")
    trials = [int(a.split("=")[1]) for a in sys.argv[1:] if a.startswith("--trials=")]
    print(run(trials=trials[0] if trials else 3, methods=chosen))
