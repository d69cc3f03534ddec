"""``import pandas_dp`` loads only what a count or a mean needs (issue 28, interactive speed).

SciPy, the synthetic-data models, plotting, the release-file package and the optional extras
load on first use. Each check runs in a fresh interpreter, since this test process has long
imported everything.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

#: Never loaded by ``import pandas_dp`` (after ``import pandas``).
LAZY = [
    "scipy",
    "scipy.optimize",
    "scipy.special",
    "matplotlib",
    "dask",
    "pandera",
    "yaml",
    "pandas_dp.mechanisms.graphical_model",
    "pandas_dp.mechanisms.belief_propagation",
    "pandas_dp.mechanisms.compression",
    "pandas_dp.mechanisms.tree_model",
    "pandas_dp.mechanisms.marginals",
    "pandas_dp.mechanisms.reconstruction",
    "pandas_dp.planning.measurement.aim",
    "pandas_dp.planning.measurement.synthesis",
    "pandas_dp.api.queries.synthesize",
    "pandas_dp.api.plotting",
    "pandas_dp.publish",
    "pandas_dp.cli",
]


def loaded_after(code: str) -> list[str]:
    """Which of :data:`LAZY` a fresh interpreter has loaded after running ``code``."""
    report = f"print(json.dumps([m for m in {LAZY!r} if m in sys.modules]))"
    script = f"import json, sys\n{code}\n{report}"
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    loaded: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


def test_import_loads_none_of_the_rarely_used_modules() -> None:
    assert loaded_after("import pandas\nimport pandas_dp") == []


def test_import_still_registers_the_accessors() -> None:
    code = (
        "import pandas as pd\nimport pandas_dp\n"
        "assert pd.DataFrame.dp is pandas_dp.DataFrameDPAccessor"
    )
    assert loaded_after(code) == []


RELEASES = """
import warnings
import numpy as np
import pandas as pd
import pandas_dp
warnings.simplefilter("ignore", pandas_dp.NoiseDominatedWarning)
df = pd.DataFrame({"x": np.linspace(0.0, 100.0, 1000), "k": np.arange(1000) % 4})
priv = df.dp.protect(epsilon=100.0)
priv.dp.count(epsilon=1.0)
priv.dp.mean("x", bounds=(0, 100), epsilon=1.0)
priv.dp.groupby("k", keys=[0, 1, 2, 3]).agg(
    n="count", m=("x", "mean"), bounds={"x": (0, 100)}, epsilon=1.0
)
priv.dp.preview.mean("x", bounds=(0, 100), epsilon=1.0)
repr(priv.dp.session)
"""


def test_count_mean_and_grouped_releases_need_no_scipy() -> None:
    # Laplace releases are pure integer sampling; only Gaussian calibration (log Φ) and
    # the marginal-workload optimiser use SciPy, and they import it when they run.
    assert loaded_after(RELEASES) == []


@pytest.mark.parametrize(
    ("code", "module"),
    [
        ("import pandas_dp\npandas_dp.plot_intervals", "pandas_dp.api.plotting"),
        (
            "from pandas_dp.mechanisms.gaussian.discrete import DiscreteGaussian\n"
            "from fractions import Fraction\n"
            "DiscreteGaussian(Fraction(4)).quantile_halfwidth(0.05)",
            "scipy.special",
        ),
        (
            "from pandas_dp.mechanisms.marginals import optimal_strategy\n"
            "optimal_strategy([(0, 1)], [2, 3])",
            "scipy.optimize",
        ),
    ],
)
def test_lazy_modules_load_when_used(code: str, module: str) -> None:
    assert module in loaded_after(code)
