"""Every optional feature, used without its extra, says which extra to install.

A virtual environment is made once per test session with the checkout installed and
nothing else (``pip install -e .``: the core dependencies alone), and each feature is used
there in a process of its own: it must fail with the message naming its extra
(``pip install 'solon-events[x]'``), never a bare ModuleNotFoundError, a traceback or a
hang; the gateway's ``/agui`` answers 501 with that message; the demo's first screen has
no warning. Every example of README.rst and docs/ runs there too, unless its first line says what it
needs (``# needs: ...``), and then it does not.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from readme_examples import EXAMPLE_ADDRESS, PageExample, all_examples, prints_exactly, run_example

from solon_events.devserver import DevServer, RunningServer
from solon_events.event_model.extras import install_hint

ROOT = Path(__file__).resolve().parent.parent
EXTRA_PACKAGES = (
    "pydantic",
    "mcp",
    "ag_ui",
    "redis",
    "opentelemetry",
    "matplotlib",
    "jsonschema",
    "cattrs",
    "botocore",
    "uvloop",
)


@pytest.fixture(scope="session")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Python of a virtual environment holding the checkout and its core dependencies."""
    venv = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    installed = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "-e", str(ROOT)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return python


def run_bare(python: Path, code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``code`` run by the bare environment's Python, from a scratch directory."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONWARNINGS")}
    return subprocess.run(
        [str(python), "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, "COLUMNS": "200"},
        cwd=python.parent,
    )


def test_the_bare_environment_has_no_extra(bare_python: Path) -> None:
    code = """
    import importlib.util, sys
    print([name for name in sys.argv[1:] if importlib.util.find_spec(name) is not None])
    import solon_events
    print(solon_events.__file__)
    """
    done = run_bare(bare_python, code, *EXTRA_PACKAGES)
    assert done.returncode == 0, done.stderr
    found, where = done.stdout.splitlines()
    assert found == "[]"
    assert where == str(ROOT / "solon_events" / "__init__.py")  # the checkout, editable


# Each feature used without its extra; the code prints the error it caught.
FEATURES = {
    "tools: a parameter only pydantic describes": (
        "tools",
        """
        import datetime
        from solon_events import tool
        def on(day: datetime.date) -> str:
            '''The agenda of a day.'''
            return ""
        try:
            tool(on)
        except TypeError as error:
            print(error)
        """,
    ),
    "mcp: McpTools": (
        "mcp",
        """
        import sys
        from solon_events import McpTools
        try:
            McpTools.stdio(sys.executable, ["server.py"])
        except ImportError as error:
            print(error)
        """,
    ),
    "agui: the adapter module": (
        "agui",
        """
        try:
            import solon_events.adapters.agui
        except ImportError as error:
            print(error)
        """,
    ),
    "agui: to_agui()": (
        "agui",
        """
        from solon_events.adapters import to_agui
        try:
            to_agui()
        except ImportError as error:
            print(error)
        """,
    ),
    "agui: reading a RunAgentInput": (
        "agui",
        """
        from solon_events.adapters.inputs import run_from_agui
        try:
            run_from_agui({"threadId": "t", "runId": "r", "messages": []})
        except ImportError as error:
            print(error)
        """,
    ),
    "redis: the stream log": (
        "redis",
        """
        try:
            from solon_events.serve.redis_log import RedisStreamLog
        except ImportError as error:
            print(error)
        """,
    ),
    "redis: a gateway that resumes": (
        "redis",
        """
        from solon_events import ChatModel
        from solon_events.serve import create_app
        with ChatModel("http://127.0.0.1:9/v1/chat/completions", "m") as model:
            try:
                create_app(model, redis="redis://127.0.0.1:6379/0")
            except ImportError as error:
                print(error)
        """,
    ),
    "otel: ChatModel(telemetry=True)": (
        "otel",
        """
        from solon_events import ChatModel
        try:
            ChatModel("http://127.0.0.1:9/v1/chat/completions", "m", telemetry=True)
        except ImportError as error:
            print(error)
        """,
    ),
    "otel: instrument()": (
        "otel",
        """
        from solon_events import replay
        from solon_events.telemetry import instrument
        try:
            replay(b"data: [DONE]\\n\\n").pipe(instrument(model="m", provider="openai"))
        except ImportError as error:
            print(error)
        """,
    ),
    "notebook: timeline()": (
        "notebook",
        """
        from reactivex import operators as ops
        from solon_events import replay
        from solon_events.display import timeline
        recording = sys.argv[1]
        events = replay(recording).pipe(ops.to_list()).run()
        try:
            timeline(events)
        except ImportError as error:
            print(error)
        """,
    ),
    "structured: partial_json(a JSON schema)": (
        "structured",
        """
        from solon_events import partial_json
        try:
            partial_json({"type": "object"})
        except ImportError as error:
            print(error)
        """,
    ),
    "structured: partial_json(an attrs class)": (
        "structured",
        """
        import attrs
        from solon_events import partial_json
        @attrs.frozen
        class Trip:
            city: str
        try:
            partial_json(Trip)
        except ImportError as error:
            print(error)
        """,
    ),
    "bedrock: requests signed with AWS credentials": (
        "bedrock",
        """
        from solon_events import ChatError, ChatModel
        from solon_events.devserver import DevServer
        with DevServer.run_in_thread() as server, ChatModel(
            server.url, "echo", dialect="bedrock", max_retries=0
        ) as model:
            try:
                model.prompt("hi").call()
            except ChatError as error:
                print(error)
        """,
    ),
    "uvloop: ChatModel(io_loop='uvloop')": (
        "uvloop",
        """
        from solon_events import ChatModel
        try:
            ChatModel("http://127.0.0.1:9/v1/chat/completions", "m", io_loop="uvloop")
        except ImportError as error:
            print(error)
        """,
    ),
}


@pytest.mark.parametrize(("extra", "code"), FEATURES.values(), ids=FEATURES.keys())
def test_a_feature_without_its_extra_names_it(bare_python: Path, extra: str, code: str) -> None:
    recording = str(ROOT / "examples" / "recordings" / "tool-loop-openai.jsonl")
    done = run_bare(bare_python, "import sys\n" + textwrap.dedent(code), recording)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert install_hint(extra) in done.stdout, done.stdout
    assert "No module named" not in done.stdout


def test_the_gateway_answers_agui_with_501_naming_the_extra(bare_python: Path) -> None:
    code = """
    import asyncio
    from aiohttp import ClientSession
    from solon_events import ChatModel
    from solon_events.devserver import DevServer
    from solon_events.serve import create_app, serving

    async def main():
        with DevServer.run_in_thread() as provider:
            async with ChatModel(provider.url + "/v1/chat/completions", "echo") as model:
                async with serving(create_app(model)) as url, ClientSession() as client:
                    run = {"threadId": "t", "runId": "r", "tools": [], "context": [],
                           "state": {}, "forwardedProps": {},
                           "messages": [{"id": "m", "role": "user", "content": "Hi"}]}
                    async with client.post(url + "/agui", json=run) as response:
                        print(response.status, (await response.json())["error"])
                    chat = {"messages": [{"role": "user", "parts": [{"type": "text",
                                                                     "text": "Hi"}]}]}
                    async with client.post(url + "/api/chat", json=chat) as response:
                        print(response.status)

    asyncio.run(main())
    """
    done = run_bare(bare_python, code)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "ModuleNotFoundError" not in done.stderr
    agui, vercel = done.stdout.splitlines()
    assert agui == f"501 AG-UI needs ag-ui-protocol: {install_hint('agui')}"
    assert vercel == "200"  # the routes that need no extra still serve


def test_serve_with_redis_and_without_its_extra_is_one_line(bare_python: Path) -> None:
    code = """
    import sys
    from solon_events.cli import main
    sys.exit(main(["serve", "--port", "0", "--redis", "redis://127.0.0.1:6379/0"]))
    """
    done = run_bare(bare_python, code)
    assert done.returncode == 1
    assert done.stderr == (
        f"solon-events: error: resumable streams (Redis) needs redis: {install_hint('redis')}\n"
    )


def test_the_demo_says_no_warning_without_extras(bare_python: Path) -> None:
    demo = bare_python.parent / "solon-events"
    done = subprocess.run(
        [str(demo), "demo"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": "", "COLUMNS": "200", "PYTHONWARNINGS": "default"},
        cwd=bare_python.parent,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.startswith("solon-events demo — embedded openai provider at http://")
    assert "It is 18°C and sunny in Paris right now." in done.stdout


EXAMPLES = [found for found in all_examples() if not found.example.skip_reason]


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with DevServer.run_in_thread() as running:
        yield running


@pytest.mark.parametrize("found", EXAMPLES, ids=[found.test_id for found in EXAMPLES])
def test_an_example_runs_without_extras_unless_it_says_what_it_needs(
    bare_python: Path, server: RunningServer, found: PageExample, tmp_path: Path
) -> None:
    example, where = found.example, found.where
    result = run_example(bare_python, example, tmp_path, {EXAMPLE_ADDRESS: server.url})
    if example.needs is None:
        assert result.returncode == 0 and result.stderr == "", (
            f"{where} needs what the demo's install lacks; say it on its first line "
            f"('# needs: ...'):\n{result.stderr}"
        )
        assert example.output is None or prints_exactly(example.output, result.stdout)
    else:
        assert result.returncode != 0, f"{where} runs without {example.needs!r}"
        missing = ("ModuleNotFoundError", "pip install 'solon-events[")
        assert any(text in result.stderr for text in missing), result.stderr
