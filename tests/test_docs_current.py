"""What README.rst, docs/ and the notebooks tell a new user matches the code (#49.5).

Every dotted name they quote resolves; the notebooks that name the embedded provider's wire
formats name them all; a command that installs the package installs it from a checkout
(it is not on PyPI); the servers README.rst and docs/ have you start each have a port of
their own; the paragraph after the test command names the programs the suite runs.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
from collections.abc import Iterator

from readme_examples import README, ROOT

import solon_events
from solon_events._moved import MOVED
from solon_events.cli import build_parser
from solon_events.dialects.base import dialect_names

DOCS = ROOT / "docs"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
MODULES = {info.name for info in pkgutil.iter_modules(solon_events.__path__)}
PACKAGES = {info.name for info in pkgutil.iter_modules(solon_events.__path__) if info.ispkg}
# ``solon_events.core.parsing.ParseStage``, ``dialects.reading.plain_json`` (a name relative
# to the package, when it starts with a subpackage), ``solon_events.replay()``
QUOTED = re.compile(r"``?((?:[A-Za-z_]\w*\.)+[A-Za-z_]\w*)(?:\(\))?``?")


def texts() -> Iterator[tuple[str, str]]:
    """README.rst, every page of docs/ and the notebooks' Markdown cells, by name."""
    yield "README.rst", README.read_text(encoding="utf-8")
    for path in sorted(DOCS.rglob("*.rst")):
        if not {"_build", "_generated", "api"} & set(path.relative_to(DOCS).parts):
            yield str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")
    for path in NOTEBOOKS:
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        markdown = ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "markdown"]
        yield str(path.relative_to(ROOT)), "\n".join(markdown)


def python_name(quoted: str) -> list[str] | None:
    """``quoted`` as the parts of a name in the package, or None when it names something
    else (a telemetry attribute such as ``solon_events.usage.cost``, a variable's method)."""
    parts = quoted.split(".")
    if parts[0] == "solon_events":
        known = parts[1] in MODULES or f"solon_events.{parts[1]}" in MOVED
        return parts if known or parts[1] in solon_events.__all__ else None
    return ["solon_events", *parts] if parts[0] in PACKAGES else None


def resolves(parts: list[str]) -> bool:
    """Whether ``parts`` name a module of the package or something in one."""
    name = ".".join(parts)
    if any(name == old or name.startswith(old + ".") for old in MOVED):
        return True  # an old name the pages list as moved
    for split in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attribute in parts[split:]:
            if not hasattr(found, attribute):
                return False
            found = getattr(found, attribute)
        return True
    return False


def test_every_name_the_docs_quote_is_in_the_code() -> None:
    checked, missing = 0, []
    for where, text in texts():
        for match in QUOTED.finditer(text):
            parts = python_name(match.group(1))
            if parts is not None:
                checked += 1
                if not resolves(parts):
                    missing.append(f"{where}: {match.group(1)}")
    assert not missing, "quoted names the code no longer has:\n" + "\n".join(missing)
    assert checked > 50, checked  # the pattern finds the names it is for


def test_the_name_check_sees_a_name_that_moved() -> None:
    assert resolves(["solon_events", "dialects", "reading", "plain_json"])
    assert not resolves(["solon_events", "dialects", "base", "plain_json"])
    assert python_name("solon_events.usage.cost") is None  # a span attribute
    assert python_name("events.append") is None  # a list's method


# What each dialect's provider is called where a text lists the wire formats.
PROVIDER_WORDS = {
    "openai": "Chat Completions",
    "openai-responses": "Responses",
    "anthropic": "Anthropic",
    "gemini": "Gemini",
    "ollama": "Ollama",
    "bedrock": "Bedrock",
    "cohere": "Cohere",
    "google-interactions": "Interactions",
}


def test_the_notebooks_name_every_wire_format_the_embedded_provider_speaks() -> None:
    assert set(PROVIDER_WORDS) == set(dialect_names())
    said = 0
    for where, text in texts():
        for paragraph in text.split("\n\n"):
            if "speaks the wire formats of" in paragraph:
                said += 1
                listed = " ".join(paragraph.split())
                for dialect, words in PROVIDER_WORDS.items():
                    assert words in listed, (where, dialect)
    assert said >= 3


SHELL_BLOCK = re.compile(r"^\s*\.\. code-block:: (console|bash|shell|sh)\s*$")


def literal_lines(text: str) -> Iterator[str]:
    """The lines of ``text``'s commands: its literal blocks (after ``::``) and its console
    blocks, with no ``$`` prompt (Python and output blocks are not commands)."""
    lines = text.split("\n")
    for number, line in enumerate(lines):
        directive = line.lstrip().startswith("..")
        if not SHELL_BLOCK.match(line) and (directive or not line.rstrip().endswith("::")):
            continue
        indent = len(line) - len(line.lstrip())
        for inside in lines[number + 1 :]:
            if inside.strip() and len(inside) - len(inside.lstrip()) <= indent:
                break
            if inside.strip() and not inside.strip().startswith(":"):
                yield inside.strip().removeprefix("$ ")


def test_no_command_installs_the_package_from_pypi() -> None:
    """It is not published: ``pip install 'solon-events[...]'`` in a fresh environment
    fails. Prose may name an extra that way (it works once the package is installed)."""
    commands = 0
    for where, text in texts():
        for line in literal_lines(text):
            if "pip install" in line:
                commands += 1
                wanted = line.split("pip install", 1)[1].split("#", 1)[0]
                assert not re.search(r"(^|\s)'?solon[-_]events\b", wanted), (where, line)
    assert commands >= 5
    intro = README.read_text(encoding="utf-8").split("The examples\n---", 1)[0]
    assert "It is not on PyPI: to use it in a project of your own" in intro
    assert "pip install\n'/path/to/solon_events[redis]'" in intro


SERVERS = re.compile(
    r"(?P<program>python -m solon_events\.devserver|examples/mcp_weather_server\.py"
    r"|solon-events serve)(?P<options>[^`\n]*)"
)


def started_servers(text: str) -> list[tuple[str, int]]:
    """The servers README.rst has you start, with their ports: the commands of its literal
    blocks (a synopsis with ``[...]`` aside), and any that names its port in prose."""
    defaults = {"python -m solon_events.devserver": 8000, "solon-events serve": 8000}
    found = []
    commands = [(line, True) for line in literal_lines(text)]
    commands += [(inline, False) for inline in re.findall(r"``([^`]+)``", text.replace("\n", " "))]
    for command, literal in commands:
        for match in SERVERS.finditer(command):
            options = match.group("options")
            if "[" in options:
                continue
            port = re.search(r"--(?:port|http) (\d+)", options)
            if port is not None:
                found.append((match.group("program"), int(port.group(1))))
            elif literal and match.group("program") in defaults:
                found.append((match.group("program"), defaults[match.group("program")]))
    return found


def test_the_servers_the_readme_starts_each_have_a_port_of_their_own() -> None:
    servers = [server for _where, text in texts() for server in started_servers(text)]
    programs: dict[int, set[str]] = {}
    for program, port in servers:
        programs.setdefault(port, set()).add(program)
    assert {port: names for port, names in programs.items() if len(names) > 1} == {}
    replicas = [port for program, port in servers if program == "solon-events serve"]
    assert len(replicas) >= 3  # serve alone, the gateway, two replicas (each its own port)
    assert {program for program, _port in servers} == {
        "python -m solon_events.devserver",
        "examples/mcp_weather_server.py",
        "solon-events serve",
    }
    serve = build_parser().parse_args(["serve"])
    assert serve.port == 8000  # the default counted for a serve command without --port


def test_the_port_check_sees_a_collision() -> None:
    text = (
        "Start it with ``python -m solon_events.devserver --port 8000``, then::\n\n"
        "    solon-events serve --url URL --model M\n"
    )
    assert started_servers(text) == [
        ("solon-events serve", 8000),
        ("python -m solon_events.devserver", 8000),
    ]


def test_the_test_commands_paragraph_names_what_the_suite_runs() -> None:
    readme = README.read_text(encoding="utf-8")
    after = " ".join(readme.split(".venv/bin/python -m pytest", 1)[1].split("----", 1)[0].split())
    assert "about 10 to 12 minutes on 2 cores" in after
    needed = {"npm ci"}  # tests/serving.py installs the front-end clients with it
    for path in (ROOT / "tests").glob("*.py"):
        for names in re.findall(r"executable_or_skip\(([^)]*)\)", path.read_text()):
            first = re.match(r'\s*"([^"]+)"', names)
            if first is not None and first.group(1) != "*names":
                needed.add(first.group(1))
    assert {"chromium", "redis-server"} <= needed
    for program in needed:
        assert program.lower() in after.lower(), program
