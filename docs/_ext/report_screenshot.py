"""Regenerate docs/assets/release-report.png: the report of the "Publishing a release" spec.

Not part of the package or the tests. It runs the guide's spec on the bundled census extract
and renders the report's HTML with WeasyPrint (a CSS renderer, no browser needed), then turns
the page into a PNG with pypdfium2::

    python -m venv /tmp/shot && /tmp/shot/bin/pip install weasyprint pypdfium2 -e .[report]
    /tmp/shot/bin/python docs/_ext/report_screenshot.py
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pypdfium2
import weasyprint

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "how-to" / "publishing-a-release.md"
TARGET = ROOT / "docs" / "assets" / "release-report.png"
# One tall page at a desktop width, so the screenshot looks like the report in a browser.
PAGE = weasyprint.CSS(string="@page { size: 1040px 2650px; margin: 0 } body { margin: 24px auto }")


def main() -> None:
    spec = re.search(r"```toml\n(.*?)```", GUIDE.read_text(), re.S)
    assert spec is not None, "the guide's TOML spec was not found"
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        (work / "release.toml").write_text(spec.group(1))
        census = ROOT / "src" / "pandas_dp" / "data" / "pums_california_1000.csv"
        shutil.copy(census, work / "people.csv")
        subprocess.run(
            [sys.executable, "-m", "pandas_dp", "release", "release.toml", "--out", "out", "--quiet"],
            cwd=work,
            check=True,
        )
        pdf_path = work / "report.pdf"
        weasyprint.HTML(filename=work / "out" / "report.html").write_pdf(
            pdf_path, stylesheets=[PAGE]
        )
        page = pypdfium2.PdfDocument(pdf_path)[0]
        page.render(scale=1.0).to_pil().convert("RGB").save(TARGET, optimize=True)
    print(f"wrote {TARGET}")


if __name__ == "__main__":
    main()
