"""``python -m pandas_dp``: the command line."""

import sys

from pandas_dp.cli import main

sys.exit(main())
