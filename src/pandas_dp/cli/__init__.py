"""The ``pandas-dp`` command line (also ``python -m pandas_dp``).

Commands: ``plan`` (costs and error bounds of a release spec; reads no data), ``release``
(run a spec into a folder: tables, ledger, report), ``ledger`` (verify and show a ledger
file), ``demo`` (a worked example on bundled data).

Exit codes:

====  ==========================================================================
0     success
1     an error while running (a failed query, an unreadable file)
2     usage error or an invalid spec (the message says where)
3     refused for privacy: over budget, a ledger that was edited or whose budget
      differs, data that is not protected. Nothing was charged.
4     a missing optional dependency (the message gives the ``pip install`` line)
141   standard output was closed early (``pandas-dp ledger ... | head``): the rest of
      the output is dropped quietly, as a shell tool killed by SIGPIPE would
====  ==========================================================================
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from pandas_dp.cli.demo import add_demo_command
from pandas_dp.cli.release import add_release_commands
from pandas_dp.errors import (
    BudgetExceededError,
    DPError,
    LedgerError,
    MissingExtraError,
    NotProtectedError,
    SpecError,
)

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_REFUSED, EXIT_MISSING_EXTRA = 0, 1, 2, 3, 4
#: 128 + SIGPIPE: what a shell reports for a tool whose reader (``head``) went away.
EXIT_BROKEN_PIPE = 141


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every sub-command registered."""
    parser = argparse.ArgumentParser(
        prog="pandas-dp",
        description="Differentially private releases from pandas data.",
        epilog="exit codes: 0 ok, 1 error, 2 usage or invalid spec, 3 refused for privacy "
        "(nothing charged), 4 missing optional dependency",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_release_commands(commands)
    add_demo_command(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.run(args)
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
    except BrokenPipeError:
        # The reader closed stdout (``| head``): drop the rest quietly. Point stdout at
        # devnull so that Python's flush at exit cannot fail again with a traceback.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return EXIT_BROKEN_PIPE
    except SpecError as error:
        print(f"pandas-dp: invalid spec: {error}", file=sys.stderr)
        return EXIT_USAGE
    except (BudgetExceededError, NotProtectedError, LedgerError) as error:
        print(f"pandas-dp: refused: {error}", file=sys.stderr)
        return EXIT_REFUSED
    except MissingExtraError as error:
        print(f"pandas-dp: {error}", file=sys.stderr)
        return EXIT_MISSING_EXTRA
    except DPError as error:
        print(f"pandas-dp: error: {error}", file=sys.stderr)
        return EXIT_ERROR
    except OSError as error:
        print(f"pandas-dp: error: {error}", file=sys.stderr)
        return EXIT_ERROR
    return code
