"""The documentation's examples run, and the site builds.

Every fenced code block tagged ``python`` in ``README.md`` and in ``docs/**/*.md`` is executed.
Blocks tagged anything else (``text``, ``bash``, ``pycon``, ``yaml``, untagged, ...) are shown,
not run.

Conventions for page authors
----------------------------
- One test per page. The page's ``python`` blocks run in order, in one namespace shared by
  that page only, so a later block may use names from an earlier one. A page must be
  self-contained: nothing carries over from another page.
- The working directory is a fresh temporary directory holding ``people.csv`` (the bundled
  census extract, with ``age`` and ``income`` among its columns) so that the README example
  runs as written. For other data use ``from pandas_dp.cli.demo import load_census`` or
  generate it with numpy.
- Releases are noisy: check properties with ``assert`` (``assert 900 < n < 1100``), never
  print exact values. Tolerances must be practically impossible to miss; state the noise
  scale and the tail probability in a comment, e.g. ``# scale 10: P(|noise| > 300) < 1e-13``
  (for discrete Laplace of scale b, ``P(|noise| >= k) <= 2 * exp(-k / b)``).
- Warnings are errors (pyproject.toml). An example that seeds ``protect(rng=...)`` or uses
  ``pandas_dp.testing.capture_noise`` must catch the ``PrivacyLeakWarning`` it causes.
- Blocks may sit inside admonitions (indented fences are found). A failing block is reported
  with its page and line.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pandas_dp.cli.demo import load_census

ROOT = Path(__file__).resolve().parents[1]

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")


def code_blocks(text: str, source: str = "<text>") -> list[tuple[int, str, str]]:
    """All fenced code blocks of a Markdown text as ``(first code line, language, code)``.

    The language is the first word of the info string, lower-cased, without braces or a
    leading dot (so ```` ```python ````, ```` ``` python title="x" ```` and
    ```` ```{.python} ```` are all ``"python"``). Indented fences (inside admonitions or
    lists) are dedented by the fence's own indentation.
    """
    lines = text.splitlines()
    blocks: list[tuple[int, str, str]] = []
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None or (opening["fence"][0] == "`" and "`" in opening["info"]):
            i += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        words = opening["info"].strip().strip("{}").split()
        language = words[0].lstrip(".").lower() if words else ""
        closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        body: list[str] = []
        j = i + 1
        while j < len(lines) and closing.match(lines[j]) is None:
            line = lines[j]
            body.append(line[len(indent) :] if line.startswith(indent) else line.lstrip())
            j += 1
        if j == len(lines):
            raise ValueError(f"{source}:{i + 1}: code fence {fence!r} is never closed")
        blocks.append((i + 2, language, "\n".join(body) + "\n"))
        i = j + 1
    return blocks


def python_examples(page: Path) -> list[tuple[int, str]]:
    """The ``python`` blocks of ``page`` as ``(first code line, code)``."""
    return [(line, code) for line, code, _ in checked_examples(page)]


def checked_examples(page: Path) -> list[tuple[int, str, str | None]]:
    """The ``python`` blocks of ``page``, each with the ``text`` block that shows its output.

    A ``text`` block right after a ``python`` block (only blank lines between) is that
    block's printed output, and the test compares them (whitespace runs, such as a line
    wrapped for the page, count as one space). Output that varies with the noise must not be
    printed there: put prose between, or assert on it instead.
    """
    text = page.read_text(encoding="utf-8")
    source = page.relative_to(ROOT).as_posix()
    lines = text.splitlines()
    blocks = code_blocks(text, source)
    found: list[tuple[int, str, str | None]] = []
    for index, (line, language, code) in enumerate(blocks):
        if language != "python":
            continue
        shown = None
        if index + 1 < len(blocks):
            after, next_language, next_code = blocks[index + 1]
            end = line + code.count("\n")  # the closing fence's index in ``lines``
            between = lines[end : after - 2]
            if next_language == "text" and not any(part.strip() for part in between):
                shown = next_code
        found.append((line, code, shown))
    return found


def pages() -> list[Path]:
    """README.md and every Markdown page of the documentation."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


PAGES_WITH_EXAMPLES = [page for page in pages() if python_examples(page)]


@pytest.mark.parametrize(
    "page", PAGES_WITH_EXAMPLES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES_WITH_EXAMPLES]
)
def test_examples_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    load_census().to_csv(tmp_path / "people.csv", index=False)
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__main__"}
    for line, code, shown in checked_examples(page):
        # Pad so that tracebacks point at the Markdown file's own line numbers.
        compiled = compile("\n" * (line - 1) + code, str(page), "exec")
        printed = io.StringIO()
        try:
            with contextlib.redirect_stdout(printed):
                exec(compiled, namespace)
        except BaseException as error:
            error.add_note(f"in the example starting at {page.relative_to(ROOT)}:{line}")
            raise
        if shown is not None:
            where = f"{page.relative_to(ROOT)}:{line}"
            assert " ".join(printed.getvalue().split()) == " ".join(shown.split()), (
                f"the output shown after the example at {where} has drifted; it prints:\n"
                f"{printed.getvalue()}"
            )


def test_main_pages_have_examples() -> None:
    found = {p.relative_to(ROOT).as_posix() for p in PAGES_WITH_EXAMPLES}
    expected = {
        "README.md",
        "docs/index.md",
        "docs/quickstart.md",
        "docs/privacy-model.md",
        "docs/how-to/count-sum-mean.md",
    }
    assert expected <= found


def test_only_python_blocks_are_examples() -> None:
    text = textwrap.dedent(
        """\
        ```python
        a = 1
        ```
        ```text
        not python
        ```
        ```bash
        pip install pandas-dp
        ```
        ```pycon
        >>> 1 + 1
        ```
        ~~~ python title="tilde"
        b = 2
        ~~~
        !!! note

            ````{.python}
            if True:
                c = 3
            ````
        ```
        untagged
        ```
        """
    )
    blocks = code_blocks(text)
    languages = [lang for _, lang, _ in blocks]
    assert languages == ["python", "text", "bash", "pycon", "python", "python", ""]
    python = [(line, code) for line, lang, code in blocks if lang == "python"]
    assert python == [(2, "a = 1\n"), (14, "b = 2\n"), (19, "if True:\n    c = 3\n")]
    with pytest.raises(ValueError, match="never closed"):
        code_blocks("```python\nx = 1\n")


def test_mkdocs_build_strict(tmp_path: Path) -> None:
    import mkdocs  # noqa: F401  (the docs extra; a missing one fails, never skips)

    site = tmp_path / "site"
    command = [
        sys.executable, "-m", "mkdocs", "build", "--strict",
        "--config-file", str(ROOT / "mkdocs.yml"), "--site-dir", str(site),
    ]  # fmt: skip
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "WARNING" not in output, output
    reference = (site / "reference" / "accessors" / "index.html").read_text(encoding="utf-8")
    assert "pandas_dp.api.accessors.DataFrameDPAccessor.sum" in reference  # mkdocstrings ran
