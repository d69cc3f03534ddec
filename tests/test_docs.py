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

Printed output is checked, never pasted
---------------------------------------
Output shown on a page comes from running code, and the tests compare it:

- A ``text`` block right after a ``python`` block (only blank lines between) is what that
  block prints (see :func:`checked_examples`).
- A ``text`` block whose first line starts with ``$ pandas-dp`` is a **transcript**: each
  ``$ pandas-dp ARGS`` line is run as ``python -m pandas_dp ARGS`` and the lines under it, up
  to the next ``$`` line, are what it prints (see :func:`transcripts`). The commands of a page
  run in order in one fresh directory holding ``people.csv`` (the bundled census extract) and
  the page's named files: a ``toml`` or ``yaml`` block whose first line is ``# NAME`` (for
  example ``# release.toml``) is written to ``NAME`` first. So a later command sees what an
  earlier one wrote (``release`` then ``ledger``).
- A transcript shows standard output. A command must exit with 0 unless the line before the
  block's fence says ``<!-- exit-code: N -->``; then the block holds that one command, and
  what it prints on standard error (its message) follows its standard output. Progress lines
  and warnings, on standard error, are left to the prose.
- Shown and printed text are compared with whitespace runs as one space, after masking what
  differs on every run and says nothing about the code: hex hashes and ledger ids, times, and
  ``user@host pid N``. Everything else must match: costs, scales, error bounds, tags.
- Noisy values are never shown as a command's output: a release prints where its tables went,
  not their values. To show released numbers, say in the prose that they are an example
  (as the histogram guide does) and keep them out of transcripts.
- A ``text`` block starting with ``$`` that cannot run here (another program, a cluster) says
  why on the line before its fence: ``<!-- output-not-checked: REASON -->``.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import pandas as pd
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
    block's printed output, unless it is a transcript (its first line starts with ``$``, see
    :func:`transcripts`), and the test compares them (whitespace runs, such as a line
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
            transcript = next_code.lstrip().startswith("$")
            if next_language == "text" and not transcript and not any(p.strip() for p in between):
                shown = next_code
        found.append((line, code, shown))
    return found


_NAMED = re.compile(r"^#[ \t]*(?P<name>[A-Za-z0-9_][A-Za-z0-9_.-]*\.(?:toml|ya?ml))[ \t]*$")
_MARKER = re.compile(r"^[ \t]*<!--[ \t]*(?P<key>[a-z-]+):[ \t]*(?P<value>.*?)[ \t]*-->[ \t]*$")
_MASKS = [  # what differs on every run: masked in the shown text and in the printed one alike
    (re.compile(r"\b[0-9a-f]{64}\b"), "<hash>"),
    (re.compile(r"\b[0-9a-f]{32}\b"), "<ledger id>"),
    (re.compile(r"\b\d{4}-\d\d-\d\d[ T]\d\d:\d\d(?::\d\d(?:\.\d+)?)?"), "<time>"),
    (re.compile(r"\S+@\S+ pid \d+"), "<user>@<host> pid <pid>"),
]


@dataclass(frozen=True)
class Command:
    """One ``$ pandas-dp ...`` line of a transcript and the output shown under it."""

    line: int
    args: tuple[str, ...]
    shown: str
    exit_code: int


def _source(page: Path) -> str:
    """The page's path as error messages show it: relative to the repository when inside."""
    return page.relative_to(ROOT).as_posix() if page.is_relative_to(ROOT) else str(page)


def _marker(lines: list[str], fence_index: int) -> tuple[str, str] | None:
    """The ``<!-- key: value -->`` comment on the last non-blank line before a fence."""
    index = fence_index - 1
    while index >= 0 and not lines[index].strip():
        index -= 1
    found = _MARKER.match(lines[index]) if index >= 0 else None
    return (found["key"], found["value"]) if found else None


def named_files(page: Path) -> dict[str, str]:
    """The page's ``toml``/``yaml`` blocks whose first line is ``# NAME``, by name."""
    files = {}
    text = page.read_text(encoding="utf-8")
    for _, language, code in code_blocks(text, _source(page)):
        first = code.splitlines()[0] if code.strip() else ""
        named = _NAMED.match(first)
        if language in ("toml", "yaml", "yml") and named:
            files[named["name"]] = code
    return files


def transcripts(page: Path) -> list[Command]:
    """Every ``$ pandas-dp`` command shown in the page's ``text`` blocks, in page order."""
    text = page.read_text(encoding="utf-8")
    source = _source(page)
    lines = text.splitlines()
    commands: list[Command] = []
    for line, language, code in code_blocks(text, source):
        body = code.splitlines()
        if language != "text" or not body or not body[0].startswith("$"):
            continue
        marker = _marker(lines, line - 2)
        if marker is not None and marker[0] == "output-not-checked":
            if not marker[1]:
                raise ValueError(f"{source}:{line - 2}: say why the output is not checked")
            continue
        exit_code = 0
        if marker is not None and marker[0] == "exit-code":
            exit_code = int(marker[1])
        elif marker is not None:
            raise ValueError(f"{source}:{line - 2}: unknown marker {marker[0]!r}")
        starts = [i for i, row in enumerate(body) if row.startswith("$")]
        if exit_code and len(starts) != 1:
            raise ValueError(f"{source}:{line}: an exit-code marker needs a one-command block")
        for start, end in zip(starts, [*starts[1:], len(body)], strict=True):
            words = shlex.split(body[start][1:])
            if words[:1] != ["pandas-dp"]:
                raise ValueError(
                    f"{source}:{line + start}: only pandas-dp commands run here; mark the block "
                    "<!-- output-not-checked: REASON --> if it shows another program"
                )
            shown = "\n".join(body[start + 1 : end])
            commands.append(Command(line + start, tuple(words[1:]), shown, exit_code))
    return commands


def comparable(output: str) -> str:
    """``output`` with run-to-run details masked and whitespace runs as one space."""
    for pattern, mask in _MASKS:
        output = pattern.sub(mask, output)
    return " ".join(output.split())


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


PAGES_WITH_TRANSCRIPTS = [page for page in pages() if transcripts(page)]


@pytest.mark.parametrize(
    "page",
    PAGES_WITH_TRANSCRIPTS,
    ids=[p.relative_to(ROOT).as_posix() for p in PAGES_WITH_TRANSCRIPTS],
)
def test_transcripts_match(page: Path, tmp_path: Path) -> None:
    with resources.as_file(
        resources.files("pandas_dp.data").joinpath("pums_california_1000.csv")
    ) as census:
        shutil.copy(census, tmp_path / "people.csv")
    for name, content in named_files(page).items():
        (tmp_path / name).write_text(content, encoding="utf-8")
    env = {**os.environ, "COLUMNS": "100", "NO_COLOR": "1"}
    for command in transcripts(page):
        where = f"{page.relative_to(ROOT)}:{command.line}"
        done = subprocess.run(
            [sys.executable, "-m", "pandas_dp", *command.args],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        printed = done.stdout + (done.stderr if command.exit_code else "")
        assert done.returncode == command.exit_code, (
            f"{where}: pandas-dp {shlex.join(command.args)} exited with {done.returncode}, "
            f"not {command.exit_code}:\n{done.stdout}{done.stderr}"
        )
        assert comparable(printed) == comparable(command.shown), (
            f"the output shown at {where} has drifted; "
            f"$ pandas-dp {shlex.join(command.args)} prints:\n{printed}"
        )


def test_transcripts_are_found_and_masked(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        textwrap.dedent(
            """\
            ```toml
            # spec.toml
            a = 1
            ```

            <!-- exit-code: 2 -->
            ```text
            $ pandas-dp plan 'bad spec.toml'
            pandas-dp: invalid spec
            ```

            ```text
            $ pandas-dp release spec.toml --out out/
            done
            $ pandas-dp ledger out/ledger.jsonl
            spent
            ```

            <!-- output-not-checked: needs a cluster -->
            ```text
            $ pandas-dp release big.toml --out s3://bucket/
            ```

            ```text
            not a transcript
            ```
            """
        ),
        encoding="utf-8",
    )
    found = [(c.args, c.shown, c.exit_code) for c in transcripts(page)]
    assert found == [
        (("plan", "bad spec.toml"), "pandas-dp: invalid spec", 2),
        (("release", "spec.toml", "--out", "out/"), "done", 0),
        (("ledger", "out/ledger.jsonl"), "spent", 0),
    ]
    assert named_files(page) == {"spec.toml": "# spec.toml\na = 1\n"}
    shown = "ledger x (id be3ee3caaecc47979bfa664d8c44b0fd)\n 1 2026-11-21 23:34:29 root@vm pid 17"
    printed = "ledger x (id 0123456789abcdef0123456789abcdef) 1 2027-01-02 03:04:05 ci@box pid 9"
    assert comparable(shown) == comparable(printed)
    assert comparable("tag a@cf10420fdd66") != comparable("tag a@000000000000")  # tags count
    page.write_text("```text\n$ pip install pandas-dp\n```\n", encoding="utf-8")
    with pytest.raises(ValueError, match="only pandas-dp commands"):
        transcripts(page)


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


def test_readme_crosstab_has_no_negative_cell_or_margin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's own crosstab clamps its counts (issue 44): a reader who prints it sees
    no negative count, and its margins still add up."""
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__main__"}
    for line, code in python_examples(ROOT / "README.md"):
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile("\n" * (line - 1) + code, "README.md", "exec"), namespace)
    table = namespace["table"]
    assert isinstance(table, pd.DataFrame)
    assert (table >= 0).all().all(), table
    cells = table.drop(index="All", columns="All")
    assert (table.loc["All"].drop("All") == cells.sum()).all()
    assert (table["All"].drop("All") == cells.sum(axis=1)).all()


def test_no_claim_that_drifts_in_the_project_files() -> None:
    """No test count (it grows with every change) and no CI time claimed as a fact."""
    for path in (ROOT / "pyproject.toml", ROOT / "README.md"):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"\b\d[\d,]* tests\b", text), path
        assert not re.search(r"stays under \d+ minutes", text), path


def test_a_newcomer_reads_that_plain_pandas_is_exact() -> None:
    """Where a newcomer looks first (issue 44): plain pandas on a protected frame is exact
    and charges nothing; teams whose analysts must see only releases use release files."""
    from pandas_dp.api.accessors import DataFrameDPAccessor

    quickstart = (ROOT / "docs" / "quickstart.md").read_text(encoding="utf-8")
    section = quickstart.split("## Protect a frame", 1)[1].split("\n## ", 1)[0]
    assert 'priv["age"].mean()' in section
    assert "(how-to/publishing-a-release.md)" in section
    assert any(
        'priv["age"].mean()' in code for _, code in python_examples(ROOT / "docs/quickstart.md")
    )
    doc = " ".join((DataFrameDPAccessor.protect.__doc__ or "").split())
    assert "Only ``.dp`` is private." in doc
    assert "returns exact values and charges nothing" in doc
    assert "release file" in doc


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
