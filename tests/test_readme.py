"""Every Python example of README.rst runs as a plain script against the embedded provider.

The convention (README.rst, "The examples"): each ``.. code-block:: python`` is a whole
script that talks to ``http://127.0.0.1:8000``, where ``python -m solon_events.devserver
--port 8000`` serves the embedded provider. Here each runs in a fresh interpreter, with that
address replaced by an embedded provider's on a free port and ``OPENAI_API_KEY`` set, in a
scratch directory where ``examples/`` is the repository's (paths read as from a checkout,
and a file the example writes goes nowhere). It must exit 0, write nothing to stderr (no
traceback, no warning such as "Unclosed client session") and print something. A
``.. code-block:: text`` that comes next, before any other code block or heading, is what
it prints: each of its lines must appear in the output, in order. A block preceded by
``.. not-tested: <reason>`` is skipped with that reason.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
from mcp_process import McpHttpProcess

from solon_events.devserver import DevServer, RunningServer

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.rst"
EXAMPLE_ADDRESS = "http://127.0.0.1:8000"
EXAMPLE_MCP_ADDRESS = "http://127.0.0.1:8001/mcp"  # examples/mcp_weather_server.py --http 8001
SKIP_MARK = re.compile(r"^\.\. not-tested:\s*(.*)$")
DIRECTIVE = re.compile(r"^(\s*)\.\. (?:code-block|code|sourcecode)::\s*(\S*)\s*$")
UNDERLINE = re.compile(r"^([=\-~^\"'`#*+.:_])\1{2,}\s*$")
PYTHON = ("python", "python3", "py")


@attrs.frozen
class Example:
    """One Python block of a reStructuredText file."""

    line: int  # of its directive, from 1
    section: str
    code: str
    output: str | None = None  # the text block after it, if any
    skip_reason: str | None = None


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


EXAMPLES = examples(README.read_text(encoding="utf-8"))


def appears_in_order(expected: str, printed: str) -> bool:
    """Whether every non-blank line of ``expected`` is in ``printed``, in order
    (whitespace runs compared as one space)."""
    position = 0
    flat = " ".join(printed.split())
    for line in expected.splitlines():
        wanted = " ".join(line.split())
        if not wanted:
            continue
        found = flat.find(wanted, position)
        if found < 0:
            return False
        position = found + len(wanted)
    return True


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with DevServer.run_in_thread() as running:
        yield running


@pytest.fixture(scope="module")
def mcp_address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The example MCP server over HTTP, for the examples that use EXAMPLE_MCP_ADDRESS."""
    log = tmp_path_factory.mktemp("mcp") / "server.log"
    process = McpHttpProcess(ROOT / "examples" / "mcp_weather_server.py", ["--http"], log)
    yield process.url
    process.stop()


@pytest.mark.parametrize(
    "example", EXAMPLES, ids=[f"line{e.line}-{e.section or 'top'}" for e in EXAMPLES]
)
def test_readme_example_runs_as_a_script(
    example: Example, server: RunningServer, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if example.skip_reason is not None:
        pytest.skip(f"README line {example.line}: {example.skip_reason}")
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    code = example.code
    if EXAMPLE_MCP_ADDRESS in code:
        code = code.replace(EXAMPLE_MCP_ADDRESS, request.getfixturevalue("mcp_address"))
    script = tmp_path / "example.py"
    script.write_text(code.replace(EXAMPLE_ADDRESS, server.url), encoding="utf-8")
    env = {
        **os.environ,
        "OPENAI_API_KEY": "sk-readme-example",
        "ANTHROPIC_API_KEY": "sk-ant-readme-example",
        "GEMINI_API_KEY": "readme-example",
        "AWS_BEARER_TOKEN_BEDROCK": "readme-example",
        "PYTHONWARNINGS": "default",
        "COLUMNS": "200",
    }
    result = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    where = f"README.rst line {example.line} ({example.section})"
    assert result.returncode == 0, f"{where} failed:\n{result.stderr}"
    assert result.stderr == "", f"{where} wrote to stderr:\n{result.stderr}"
    assert result.stdout.strip(), f"{where} printed nothing"
    if example.output is not None:
        assert appears_in_order(example.output, result.stdout), (
            f"{where} should print:\n{example.output}\nbut printed:\n{result.stdout}"
        )


def test_the_readme_has_examples_and_most_run() -> None:
    assert len(EXAMPLES) >= 5
    skipped = [e for e in EXAMPLES if e.skip_reason is not None]
    assert len(skipped) <= len(EXAMPLES) // 4, "not-tested blocks are to stay rare"


SAMPLE = """\
Title
=====

.. code-block:: python

    print("one")

It prints:

.. code-block:: text

    one

Second
------

.. not-tested: needs a real account

.. code-block:: python
   :linenos:

    import boto3
        # indented

::

    not python

.. code-block:: python

    print("three")

Third
-----

.. code-block:: text

    not an output: a heading came first
"""


def test_the_block_reader_follows_the_convention() -> None:
    found = examples(SAMPLE)
    assert [(e.section, e.code, e.output, e.skip_reason) for e in found] == [
        ("Title", 'print("one")\n', "one\n", None),
        ("Second", "import boto3\n    # indented\n", None, "needs a real account"),
        ("Second", 'print("three")\n', None, None),
    ]


def test_output_lines_must_appear_in_order() -> None:
    assert appears_in_order("a b\n\nc", "x a   b y\nc")
    assert not appears_in_order("c\na", "a\nc")
    assert not appears_in_order("missing", "something else")
