"""``solon-events serve --config gateway.toml``: the models of the file by name, reloaded on
SIGHUP without dropping the streams in flight; a bad file keeps the old configuration and
says why on stderr."""

from __future__ import annotations

import asyncio
import queue
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import orjson
import pytest
from serving import serve_command, sse_json

from solon_events.cli import main
from solon_events.devserver import DevServer, RunningServer

HELD = "gate"  # one delta, then held until the test opens the embedded provider's gate
HELD_TEXT = "Before the gate. After the gate."


def section(name: str, dialect: str, route: str, server: RunningServer, model: str) -> str:
    return (
        f'[models.{name}]\nstrategy = "fallback"\n[[models.{name}.deployments]]\n'
        f'upstream = "{dialect}:{server.url}{route}"\nmodel = "{model}"\n'
    )


class Lines:
    """The lines a process writes to stderr, as they come."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self._lines: queue.Queue[str] = queue.Queue()
        assert process.stderr is not None
        stream = process.stderr
        threading.Thread(target=lambda: [self._lines.put(x) for x in stream], daemon=True).start()

    def next(self) -> str:
        return self._lines.get(timeout=30).strip()

    def next_starting(self, prefix: str) -> str:
        """The next line that starts with ``prefix`` (the lines before it are passed)."""
        while not (line := self.next()).startswith(prefix):
            pass
        return line


@pytest.fixture
def upstream() -> Iterator[RunningServer]:
    server = DevServer.run_in_thread()
    yield server
    server.close()


async def stream_events(session: aiohttp.ClientSession, url: str) -> str:
    """The text of one response of the events route (served by the first model)."""
    body = {"messages": [{"role": "user", "content": "go"}]}
    async with session.post(url + "/events", json=body) as response:
        assert response.status == 200, await response.text()
        events = sse_json(await response.read())
    assert events[-1]["type"] == "RESPONSE_END", events[-1]
    return "".join(e["text"] for e in events if e["type"] == "TEXT_DELTA")


async def stream_chat(
    session: aiohttp.ClientSession, url: str, model: str, started: asyncio.Event | None = None
) -> str:
    """The text of one streamed Ollama chat with ``model``; ``started`` set at its first
    delta."""
    body = {"model": model, "stream": True, "messages": [{"role": "user", "content": "go"}]}
    text = ""
    async with session.post(url + "/ollama/api/chat", json=body) as response:
        assert response.status == 200, await response.text()
        async for line in response.content:
            if line.strip():
                text += orjson.loads(line)["message"].get("content", "")
                if text and started is not None:
                    started.set()
    return text


def test_reload_under_load_loses_no_stream(tmp_path: Path, upstream: RunningServer) -> None:
    """Eight streams held open at the embedded provider's gate while SIGHUP swaps the
    deployment for another dialect: a new request is served by the new one meanwhile, and
    the eight end whole once the gate opens."""
    path = tmp_path / "gateway.toml"
    path.write_text(section("talk", "openai", "/v1/chat/completions", upstream, HELD))
    with serve_command("--config", str(path)) as process:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        stderr = Lines(process)

        async def run() -> None:
            async with aiohttp.ClientSession() as session:
                started = [asyncio.Event() for _ in range(8)]
                streams = [
                    asyncio.ensure_future(stream_chat(session, url, "talk", event))
                    for event in started
                ]
                await asyncio.wait_for(asyncio.gather(*(e.wait() for e in started)), 60)
                path.write_text(section("talk", "anthropic", "/v1/messages", upstream, "echo"))
                process.send_signal(signal.SIGHUP)
                assert await asyncio.get_running_loop().run_in_executor(None, stderr.next) == (
                    f"solon-events: reloaded {path}: talk"
                )
                assert await stream_chat(session, url, "talk") == "go"  # the new deployment
                assert not any(stream.done() for stream in streams)  # the old ones still open
                upstream.open_gate()
                assert await asyncio.gather(*streams) == [HELD_TEXT] * 8

        asyncio.run(run())
        routes = [r.path for r in upstream.requests]
        assert routes == ["/v1/chat/completions"] * 8 + ["/v1/messages"]


def test_a_bad_file_keeps_the_old_configuration_and_says_why(
    tmp_path: Path, upstream: RunningServer
) -> None:
    path = tmp_path / "gateway.toml"
    path.write_text(section("talk", "openai", "/v1/chat/completions", upstream, "echo"))
    with serve_command("--config", str(path)) as process:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        stderr = Lines(process)
        path.write_text(path.read_text() + 'strategy = "fastest"\n')
        process.send_signal(signal.SIGHUP)
        said = stderr.next()
        assert said.startswith("solon-events: the configuration was not reloaded, the old one")
        assert said.endswith(
            f"{path}:6: models.talk.deployments[0].strategy: unknown key (known here: "
            "api_key_env, model, upstream, weight)"
        )

        async def run() -> None:
            async with aiohttp.ClientSession() as session:
                body = {
                    "model": "talk",
                    "stream": False,
                    "messages": [{"role": "user", "content": "still"}],
                }
                async with session.post(url + "/ollama/api/chat", json=body) as response:
                    assert (await response.json())["message"]["content"] == "still"

        asyncio.run(run())


def test_a_bad_file_at_start_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "gateway.toml"
    path.write_text("[models.x]\nstrategy = 'weighted'\n")
    assert main(["serve", "--config", str(path)]) == 2
    assert f"{path}:1: models.x: deployments is required" in capsys.readouterr().err


def test_config_replaces_the_model_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", "--config", str(tmp_path / "g.toml"), "--model", "m"]) == 2
    assert "--model cannot be given with it" in capsys.readouterr().err


GC_REPORTING_SERVE = (str(Path(__file__).resolve().parent / "serve_reporting_gc.py"),)


def test_serve_keeps_what_starting_made_out_of_the_collections_until_a_reload(
    upstream: RunningServer, tmp_path: Path
) -> None:
    """What starting made is frozen out of every collection (a full one would walk it each
    time, stalling every stream); a reload lets the collector have it again, the models it
    replaced among it."""
    config = tmp_path / "gateway.toml"
    config.write_text(section("first", "openai", "/v1/chat/completions", upstream, "echo"))
    with serve_command("--config", str(config), program=GC_REPORTING_SERVE) as process:
        lines = Lines(process)
        frozen = int(lines.next_starting("frozen ").split()[1])
        assert frozen > 10_000  # the modules, classes and app of a started gateway
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert asyncio.run(_text_of_events(url)) == "go"
        process.send_signal(signal.SIGHUP)
        assert lines.next_starting("solon-events: reloaded").endswith("first")
        assert lines.next_starting("frozen ") == "frozen 0"
        assert asyncio.run(_text_of_events(url)) == "go"


async def _text_of_events(url: str) -> str:
    async with aiohttp.ClientSession() as session:
        return await stream_events(session, url)
