"""Regenerate the docs' screenshots from the browser test (headless Chromium).

``docs/assets/release-report.png`` (the report of the "Publishing a release" spec on the
bundled census extract) and ``docs/assets/notebook-views.png`` (the notebook views) are
taken by ``tests/browser/test_render.py`` in the same run that checks those pages, so a
screenshot never shows a page the tests did not pass. Not part of the package. Needs
Chromium (``apt-get install chromium``)::

    .venv/bin/python docs/_ext/report_screenshot.py

which runs ``PANDAS_DP_SAVE_SCREENSHOTS=1 python -m pytest tests/browser``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main() -> int:
    """Run the browser tests with screenshots saved into docs/assets; their exit code."""
    environment = {**os.environ, "PANDAS_DP_SAVE_SCREENSHOTS": "1"}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/browser"]
    done = subprocess.run(command, cwd=ROOT, env=environment, check=False)
    if done.returncode == 0:
        for name in ("release-report.png", "notebook-views.png"):
            print(f"wrote {ROOT / 'docs' / 'assets' / name}")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
