"""``pandas-dp demo``: protect a bundled census extract and release a few statistics."""

from __future__ import annotations

import argparse
from importlib import resources

import numpy as np
import pandas as pd

import pandas_dp  # noqa: F401  (registers the .dp accessor)


def load_census() -> pd.DataFrame:
    """The bundled 1,000-person census extract (public-domain PUMS sample)."""
    with resources.files("pandas_dp.data").joinpath("pums_california_1000.csv").open() as f:
        return pd.read_csv(f)


def synthetic_people(rows: int, seed: int = 0) -> pd.DataFrame:
    """A generated table shaped like the census extract, of any size."""
    gen = np.random.default_rng(seed)  # test-only: generates example data, never noise
    return pd.DataFrame(
        {
            "age": gen.integers(18, 95, rows),
            "sex": gen.integers(0, 2, rows),
            "educ": gen.integers(1, 17, rows),
            "income": np.round(gen.lognormal(10.3, 1.0, rows), -2),
            "married": gen.integers(0, 2, rows),
        }
    )


def run_demo(args: argparse.Namespace) -> int:
    """Protect the data, release four statistics and print them with the ledger."""
    data = synthetic_people(args.rows) if args.rows else load_census()
    source = (
        f"{args.rows:,} generated rows" if args.rows else "bundled census extract (1,000 people)"
    )
    priv = data.dp.protect(epsilon=args.epsilon)
    eps = args.epsilon / 4
    results: dict[str, int | float] = {
        "people": priv.dp.count(epsilon=eps),
        "people aged 65+": priv[priv.age >= 65].dp.count(epsilon=eps),
        "mean age (bounds 0-100)": priv["age"].dp.mean(bounds=(0, 100), epsilon=eps),
        "total income (bounds 0-200k)": priv.dp.sum("income", bounds=(0, 200_000), epsilon=eps),
    }
    print(f"pandas-dp demo on the {source}, total budget ε = {args.epsilon:g}\n")
    width = max(len(k) for k in results)
    for name, value in results.items():
        shown = f"{value:,}" if isinstance(value, int) else f"{value:,.2f}"
        print(f"  {name:<{width}}  {shown:>18}")
    session = priv.dp.session
    print(f"\nspent {session.spent}, remaining {session.remaining}\n\nledger:")
    columns = ["sequence", "query", "columns", "epsilon", "mechanism", "noise"]
    with pd.option_context("display.max_colwidth", 90, "display.width", 200):
        print(session.ledger[columns].to_string(index=False))
    return 0


def add_demo_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``demo`` on the sub-command parser."""
    demo = commands.add_parser("demo", help="protect example data and release a few statistics")
    demo.add_argument("--epsilon", type=float, default=1.0, help="total budget (default 1.0)")
    demo.add_argument("--rows", type=int, default=0, help="use N generated rows instead")
    demo.set_defaults(run=run_demo)
