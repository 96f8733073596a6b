"""README.rst's examples and the documentation's as the tests run them: their Python blocks,
what each prints, what each needs, and the environment README.rst tells a reader to set.

The convention (README.rst, "The examples"): each ``.. code-block:: python`` is a whole
script that talks to ``http://127.0.0.1:8000``, where the embedded provider is started; a
``.. code-block:: text`` that comes next, before any other code block or heading, is
exactly what it prints (a ``...`` within a line stands for any text, a line of ``...``
alone for any lines); a first line ``# needs: <install command>`` says what it needs beyond
the demo's install; a block preceded by ``.. not-tested: <reason>`` is skipped with that
reason. The variables the examples read are set by the ``export`` line of the console
block in "The examples".
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from collections.abc import Mapping
from pathlib import Path

import attrs

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.rst"
DOCS = ROOT / "docs"
EXAMPLE_ADDRESS = "http://127.0.0.1:8000"
EXAMPLE_MCP_ADDRESS = "http://127.0.0.1:8001/mcp"  # examples/mcp_weather_server.py --http 8001
EXAMPLE_REDIS_ADDRESS = "redis://127.0.0.1:6379/0"  # a redis-server on its default port
SKIP_MARK = re.compile(r"^\.\. not-tested:\s*(.*)$")
NEEDS_MARK = re.compile(r"^# needs: (.+)$")
DIRECTIVE = re.compile(r"^(\s*)\.\. (?:code-block|code|sourcecode)::\s*(\S*)\s*$")
UNDERLINE = re.compile(r"^([=\-~^\"'`#*+.:_])\1{2,}\s*$")
PYTHON = ("python", "python3", "py")
# What a reader's shell has whatever README.rst says: where programs are, whose home, which
# language; everything else comes from README.rst's export line.
BASE_VARIABLES = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "SYSTEMROOT")


@attrs.frozen
class Example:
    """One Python block of a reStructuredText file."""

    line: int  # of its directive, from 1
    section: str
    code: str
    output: str | None = None  # the text block after it, if any
    skip_reason: str | None = None

    @property
    def needs(self) -> str | None:
        """The install command of its ``# needs:`` first line, if it has one."""
        match = NEEDS_MARK.match(self.code.split("\n", 1)[0])
        return match.group(1) if match else None


def _block_body(lines: list[str], start: int, indent: int) -> tuple[str, int]:
    """The content of the directive at ``lines[start]``, dedented, and the index after it."""
    i = start + 1
    while i < len(lines) and lines[i].strip().startswith(":") and lines[i].strip():
        i += 1  # directive options such as :linenos:
    body: list[str] = []
    while i < len(lines):
        line = lines[i]
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        body.append(line)
        i += 1
    while body and not body[-1].strip():
        body.pop()
    text = "\n".join(body)
    margin = min((len(x) - len(x.lstrip()) for x in body if x.strip()), default=0)
    return "\n".join(x[margin:] for x in text.split("\n")).strip("\n") + "\n", i


def examples(text: str) -> list[Example]:
    """The Python blocks of ``text`` with their outputs and skip marks."""
    lines = text.split("\n")
    found: list[Example] = []
    section = ""
    waiting: Example | None = None  # the last Python block, until something follows it
    i = 0
    while i < len(lines):
        line = lines[i]
        if i + 1 < len(lines) and line.strip() and UNDERLINE.match(lines[i + 1]):
            if not UNDERLINE.match(line):
                section, waiting = line.strip(), None
            i += 2
            continue
        match = DIRECTIVE.match(line)
        if match is None:
            i += 1
            continue
        indent, language = len(match.group(1)), match.group(2).lower()
        body, after = _block_body(lines, i, indent)
        if language in PYTHON:
            previous = next((x for x in reversed(lines[:i]) if x.strip()), "")
            mark = SKIP_MARK.match(previous.strip())
            reason = (mark.group(1) or "marked not-tested") if mark else None
            waiting = Example(i + 1, section, body, skip_reason=reason)
            found.append(waiting)
        elif language == "text" and waiting is not None:
            found[-1] = attrs.evolve(waiting, output=body)
            waiting = None
        else:
            waiting = None
        i = after
    return found


def pages() -> list[Path]:
    """README.rst and every page of docs/ whose Python blocks are examples (the generated
    API pages and the build aside)."""
    found = sorted(DOCS.rglob("*.rst"))
    return [
        README,
        *(p for p in found if not {"_build", "_generated", "api"} & set(p.relative_to(DOCS).parts)),
    ]


@attrs.frozen
class PageExample:
    """A Python block and the page it is on (``README.rst``, ``docs/guides/tools.rst``)."""

    page: str
    example: Example

    @property
    def where(self) -> str:
        """The page, the block's line and its section, as a failure names it."""
        return f"{self.page} line {self.example.line} ({self.example.section})"

    @property
    def test_id(self) -> str:
        """A short test id: the page's name, the line and the section."""
        name = Path(self.page).stem
        return f"{name}-line{self.example.line}-{self.example.section or 'top'}"


def all_examples() -> list[PageExample]:
    """The Python blocks of README.rst and of the documentation, page by page."""
    return [
        PageExample(str(page.relative_to(ROOT)), example)
        for page in pages()
        for example in examples(page.read_text(encoding="utf-8"))
    ]


def section_text(text: str, title: str) -> str:
    """The body of the section headed ``title`` (up to the next heading)."""
    lines = text.split("\n")
    start = next(
        i for i in range(len(lines) - 1) if lines[i] == title and UNDERLINE.match(lines[i + 1])
    )
    end = next(
        (
            i
            for i in range(start + 2, len(lines) - 1)
            if lines[i].strip() and UNDERLINE.match(lines[i + 1])
        ),
        len(lines),
    )
    return "\n".join(lines[start + 2 : end])


def exported_variables(text: str) -> dict[str, str]:
    """The variables the ``export`` lines of "The examples" set, with their values."""
    variables: dict[str, str] = {}
    for line in section_text(text, "The examples").split("\n"):
        command = line.strip().removeprefix("$ ")
        if command.startswith("export "):
            words = shlex.split(command)[1:]
            variables.update(word.split("=", 1) for word in words)  # type: ignore[misc]
    return variables


def read_variables(code: str) -> set[str]:
    """The environment variables ``code`` reads by name."""
    found = re.findall(
        r"""os\.environ\[\s*["'](\w+)["']|os\.environ\.get\(\s*["'](\w+)["']"""
        r"""|os\.getenv\(\s*["'](\w+)["']""",
        code,
    )
    return {name for names in found for name in names if name}


def _output_pattern(expected: str) -> re.Pattern[str]:
    parts = []
    for line in expected.rstrip("\n").split("\n"):
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*?".join(map(re.escape, line.rstrip().split("..."))) + r"\n")
    return re.compile("".join(parts), re.DOTALL)


def prints_exactly(expected: str, printed: str) -> bool:
    """Whether ``printed`` is ``expected``, line for line (trailing spaces and blank lines
    at the end aside; a ``...`` within a line is any text, a line of ``...`` any lines)."""
    normal = "".join(line.rstrip() + "\n" for line in printed.rstrip().split("\n"))
    return _output_pattern(expected).fullmatch(normal) is not None


def readme_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a reader has after following README.rst: their shell's basics and
    the variables README.rst's export line sets, nothing else (``extra`` aside)."""
    base = {name: os.environ[name] for name in BASE_VARIABLES if name in os.environ}
    return {**base, **exported_variables(README.read_text(encoding="utf-8")), **(extra or {})}


def run_example(
    python: Path | str, example: Example, workdir: Path, addresses: Mapping[str, str]
) -> subprocess.CompletedProcess[str]:
    """``example`` as a script run by ``python`` from ``workdir`` (where ``examples/`` is
    the checkout's), each of README.rst's addresses replaced by the test's own
    (``addresses``: ``EXAMPLE_ADDRESS`` to an embedded provider's, ...)."""
    if not (workdir / "examples").exists():
        (workdir / "examples").symlink_to(ROOT / "examples")
    code = example.code
    for readme_address, address in addresses.items():
        code = code.replace(readme_address, address)
    script = workdir / "example.py"
    script.write_text(code, encoding="utf-8")
    env = readme_environment({"PYTHONWARNINGS": "default"})  # every warning shown
    return subprocess.run(
        [str(python), str(script)],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
