"""Every Python example of README.rst and of the documentation (docs/) runs as a plain script
against the embedded provider.

The convention (README.rst, "The examples"; read by ``readme_examples.py``): each
``.. code-block:: python`` is a whole script that talks to ``http://127.0.0.1:8000``,
where ``.venv/bin/python -m solon_events.devserver --port 8000`` serves the embedded
provider. Here each runs in a fresh interpreter, with that address replaced by an embedded
provider's on a free port, in a scratch directory where ``examples/`` is the repository's
(paths read as from a checkout, and a file the example writes goes nowhere), with only the
environment variables README.rst tells the reader to set. It must exit 0, write nothing to
stderr (no traceback, no warning such as "Unclosed client session") and print something;
a ``.. code-block:: text`` that comes next is exactly what it prints. A block preceded by
``.. not-tested: <reason>`` is skipped with that reason. The documentation's pages follow
the same convention: an example that leaves README.rst for a guide is run there.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_process import ExampleMcpServer
from readme_examples import (
    EXAMPLE_ADDRESS,
    EXAMPLE_MCP_ADDRESS,
    EXAMPLE_REDIS_ADDRESS,
    README,
    PageExample,
    all_examples,
    examples,
    exported_variables,
    prints_exactly,
    read_variables,
    run_example,
    section_text,
)
from redis_server import redis_url  # noqa: F401  (a fixture)

from solon_events.devserver import DevServer, RunningServer

TEXT = README.read_text(encoding="utf-8")
EXAMPLES = examples(TEXT)
ALL_EXAMPLES = all_examples()


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with DevServer.run_in_thread() as running:
        yield running


@pytest.fixture(scope="module")
def mcp_address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The example MCP server over HTTP, for the examples that use EXAMPLE_MCP_ADDRESS."""
    process = ExampleMcpServer(tmp_path_factory.mktemp("mcp") / "server.log")
    yield process.url
    process.stop()


@pytest.mark.parametrize("found", ALL_EXAMPLES, ids=[found.test_id for found in ALL_EXAMPLES])
def test_example_runs_as_a_script(
    found: PageExample, server: RunningServer, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    example, where = found.example, found.where
    if example.skip_reason is not None:
        pytest.skip(f"{where}: {example.skip_reason}")
    addresses = {EXAMPLE_ADDRESS: server.url}
    if EXAMPLE_MCP_ADDRESS in example.code:
        addresses[EXAMPLE_MCP_ADDRESS] = request.getfixturevalue("mcp_address")
    if EXAMPLE_REDIS_ADDRESS in example.code:
        addresses[EXAMPLE_REDIS_ADDRESS] = request.getfixturevalue("redis_url")
    result = run_example(sys.executable, example, tmp_path, addresses)
    assert result.returncode == 0, f"{where} failed:\n{result.stderr}"
    assert result.stderr == "", f"{where} wrote to stderr:\n{result.stderr}"
    assert result.stdout.strip(), f"{where} printed nothing"
    if example.output is not None:
        assert prints_exactly(example.output, result.stdout), (
            f"{where} should print:\n{example.output}\nbut printed:\n{result.stdout}"
        )


def test_the_readme_has_examples_and_most_run() -> None:
    assert len(EXAMPLES) >= 2  # the event stream and the gateway; the others are in docs/
    everywhere = [found.example for found in ALL_EXAMPLES]
    assert len(everywhere) >= 50
    skipped = [e for e in everywhere if e.skip_reason is not None]
    assert len(skipped) <= len(everywhere) // 4, "not-tested blocks are to stay rare"


def test_the_documentations_pages_are_read_for_examples() -> None:
    pages = {found.page for found in ALL_EXAMPLES}
    assert {"README.rst", "docs/guides/tools.rst", "docs/guides/errors.rst"} <= pages
    assert not any("/api/" in page or "_build" in page for page in pages)


def test_every_variable_an_example_reads_is_named_where_the_examples_start() -> None:
    named = exported_variables(TEXT)
    assert "OPENAI_API_KEY" in named
    read = {name for found in ALL_EXAMPLES for name in read_variables(found.example.code)}
    assert read <= set(named), f"not named in 'The examples': {sorted(read - set(named))}"


def test_an_example_needing_an_extra_says_how_to_install_it() -> None:
    for example in (found.example for found in ALL_EXAMPLES):
        if example.needs is not None:
            assert example.needs.startswith(".venv/bin/pip install -e '.["), example.needs


def _installed_by(command: str) -> set[str]:
    """The extras (``extra:tools``) and packages ``.venv/bin/pip install -e '.[...]' ...``
    installs (what follows a ``;`` is not pip's)."""
    pip = command.split(";", 1)[0]
    extras = re.search(r"'\.\[([\w,]+)\]'", pip)
    packages = pip.split("]'", 1)[-1].split()
    return {f"extra:{name}" for name in (extras.group(1).split(",") if extras else ())} | set(
        packages
    )


def test_the_install_line_for_all_examples_covers_every_needs_line() -> None:
    section = " ".join(section_text(TEXT, "The examples").split())
    command = re.search(r"``(\.venv/bin/pip install[^`]*)`` installs what they all use", section)
    assert command is not None
    everything = _installed_by(command.group(1))
    for found in ALL_EXAMPLES:
        if found.example.needs is not None:
            missing = _installed_by(found.example.needs) - everything
            assert not missing, f"{found.where} needs {missing}"


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

    # needs: .venv/bin/pip install -e '.[tools]'
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
        ("Second", "# needs: .venv/bin/pip install -e '.[tools]'\nprint(\"three\")\n", None, None),
    ]
    assert [e.needs for e in found] == [None, None, ".venv/bin/pip install -e '.[tools]'"]


def test_the_output_is_what_is_printed_whole() -> None:
    assert prints_exactly("a b\n\nc\n", "a b  \n\nc\n\n")
    assert not prints_exactly("a b\nc", "a b\nc\nd")  # a line left out of the block
    assert not prints_exactly("a\nc", "a\nb\nc")
    assert not prints_exactly("c\na", "a\nc")
    assert prints_exactly("took ... ms\n", "took 12 ms\n")
    assert not prints_exactly("took ... ms\n", "took 12 ms\nmore\n")
    assert prints_exactly("first\n...\nlast\n", "first\nx\ny\nlast\n")
    assert prints_exactly("first\n...\nlast\n", "first\nlast\n")


def test_the_variables_are_read_from_the_export_line() -> None:
    text = "The examples\n------------\n\n::\n\n    $ export A=1 B='two words'\n\nNext\n----\n"
    assert exported_variables(text) == {"A": "1", "B": "two words"}
    assert read_variables('os.environ["A"]; os.environ.get("B"); os.getenv(\'C\')') == {
        "A",
        "B",
        "C",
    }
