"""The ``pandas-dp`` command line (also ``python -m pandas_dp``).

Exit codes: 0 success, 2 usage error, 3 privacy refusal (budget exceeded, not protected),
1 any other error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from pandas_dp.cli.demo import add_demo_command
from pandas_dp.errors import BudgetExceededError, DPError, NotProtectedError

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_REFUSED = 0, 1, 2, 3


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every sub-command registered."""
    parser = argparse.ArgumentParser(
        prog="pandas-dp", description="Differentially private releases from pandas data."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_demo_command(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.run(args)
    except (BudgetExceededError, NotProtectedError) as error:
        print(f"pandas-dp: refused: {error}", file=sys.stderr)
        return EXIT_REFUSED
    except DPError as error:
        print(f"pandas-dp: error: {error}", file=sys.stderr)
        return EXIT_ERROR
    return code
