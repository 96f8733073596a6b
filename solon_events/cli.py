"""The ``solon-events`` command: ``demo``, ``replay``, ``stream``, ``record`` and ``serve``."""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

from rich.console import Console

from ._version import __version__
from .dialects.base import dialect_names
from .errors import ChatError
from .events import ChatEvent
from .filters import ChatEventFilter
from .model import ChatModel
from .render import LiveRenderer, event_to_json
from .replay import replay
from .tools import Tool, ToolContext, tool

__all__ = ["main"]

ROUTES = {
    "openai": "/v1/chat/completions",
    "openai-responses": "/v1/responses",
    "anthropic": "/v1/messages",
    "gemini": "/v1beta",
    "ollama": "/api/chat",
}
DEMO_STATIONS = 3
"""How many weather stations the demo's tool asks, reporting progress after each."""
KEY_VARIABLES = {
    "openai": "OPENAI_API_KEY",
    "openai-responses": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "ollama": "OLLAMA_API_KEY",
}


@tool
def get_weather(city: str, ctx: ToolContext) -> str:
    """Current weather in a city.

    Args:
        city: The city's name, e.g. Paris.
    """
    for station in range(1, DEMO_STATIONS + 1):
        time.sleep(0.1)  # a real tool would ask each station
        ctx.progress(station, DEMO_STATIONS, f"asked station {station} of {DEMO_STATIONS}")
    return "18°C and sunny"


@tool
def write_report(
    title: str, draft: bool, version: int, sections: list[dict[str, Any]], tags: list[str]
) -> str:
    """Save a report.

    Args:
        title: The report's title.
        draft: Whether it is a draft.
        version: Its version number.
        sections: Its sections: heading, paragraphs and a table each.
        tags: Words to find it by.
    """
    return f"{len(sections)} sections saved"


DEMO_CONVERSATIONS: tuple[tuple[str, str, Tool[..., Any]], ...] = (
    ("weather", "What is the weather in Paris?", get_weather),
    ("long-args:3", "Write the quarterly report.", write_report),
)
"""The demo's conversations: the embedded provider's scenario, the prompt, the tool. In
the second, the call's long argument grows on screen as it streams."""


def demo(dialect: str, console: Console) -> int:
    """Stream the embedded provider's scripted tool-using conversations, rendered live."""
    from .devserver import DevServer

    server = DevServer.run_in_thread(pace=0.02)
    try:
        console.print(
            f"[bold]solon-events demo[/] — embedded {dialect} provider at {server.url}",
            highlight=False,
        )
        for scenario, prompt, demo_tool in DEMO_CONVERSATIONS:
            with ChatModel(server.url + ROUTES[dialect], scenario, dialect=dialect) as model:
                console.print(f"[bold]user:[/] {prompt}")
                if _render_live(model, prompt, console, demo_tool):
                    return 1
        return 0
    finally:
        server.close()


def _render_live(
    model: ChatModel, prompt: str, console: Console, demo_tool: Tool[..., Any] | None = None
) -> int:
    request = model.prompt(prompt).event_filter(ChatEventFilter.all())
    if demo_tool is not None:
        request = request.tools(demo_tool)
    render = LiveRenderer(console)
    done = threading.Event()
    failure: list[BaseException] = []

    def on_error(error: Exception) -> None:
        failure.append(error)
        done.set()

    subscription = request.stream().subscribe(render, on_error, done.set)
    try:
        done.wait()
    finally:
        subscription.dispose()
        render.close()
    console.print()
    return 1 if failure else 0


def replay_file(path: str, dialect: str, fmt: str, show_all: bool, console: Console) -> int:
    """Print the events of a recorded stream."""
    event_filter = ChatEventFilter.all() if show_all else ChatEventFilter.DEFAULT
    failure: list[BaseException] = []

    def show(event: ChatEvent) -> None:
        if fmt == "jsonl":
            sys.stdout.write(event_to_json(event).decode() + "\n")
        else:
            console.print(repr(event), highlight=False, soft_wrap=True)

    if not os.path.isfile(path):
        console.print(f"[bold red]no such file:[/] {path}")
        return 2
    replay(path, dialect=dialect, event_filter=event_filter).subscribe(show, failure.append)
    sys.stdout.flush()
    if failure:
        Console(stderr=True).print(f"[bold red]failed:[/] {failure[0]}")
        return 1
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``solon-events``."""
    parser = argparse.ArgumentParser(
        prog="solon-events",
        description="Semantic event streams from chat models.",
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    demo_parser = commands.add_parser(
        "demo",
        help="stream a scripted tool-using conversation from the embedded provider",
        allow_abbrev=False,
    )
    demo_parser.add_argument("--dialect", choices=dialect_names(), default="openai")

    replay_parser = commands.add_parser(
        "replay", help="print the events of a recorded stream", allow_abbrev=False
    )
    replay_parser.add_argument("file")
    replay_parser.add_argument("--dialect", choices=dialect_names(), default="openai")
    replay_parser.add_argument("--format", choices=("pretty", "jsonl"), default="pretty")
    replay_parser.add_argument(
        "--all", action="store_true", help="show every event, HEARTBEAT and RAW included"
    )

    # No abbreviations: "--api-key sk-..." must not be taken for "--api-key-env".
    stream_parser = commands.add_parser(
        "stream",
        help="stream a prompt from a provider (API key from an environment variable)",
        allow_abbrev=False,
    )
    _provider_options(stream_parser)

    record_parser = commands.add_parser(
        "record",
        help="stream a prompt and save its raw frames with their arrival times "
        "(a JSON-lines recording that replay reads)",
        allow_abbrev=False,
    )
    _provider_options(record_parser)
    record_parser.add_argument("--out", required=True, metavar="FILE", help="the recording")

    from .serve_cli import add_serve_parser

    add_serve_parser(commands)
    return parser


def _provider_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("prompt")
    parser.add_argument("--url", required=True, help="the endpoint to POST to")
    parser.add_argument("--model", required=True)
    parser.add_argument("--dialect", choices=dialect_names(), default="openai")
    parser.add_argument(
        "--api-key-env",
        metavar="NAME",
        help="environment variable holding the API key "
        "(default: OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY by dialect)",
    )


def record_file(model: ChatModel, prompt: str, out: str, console: Console) -> int:
    """Stream ``prompt`` rendered live and save what was received as a recording."""
    from .recording import read_recording, record

    request = model.prompt(prompt).event_filter(ChatEventFilter.all())
    failed = False
    try:
        record(request, out, on_event=LiveRenderer(console), header={"prompt": prompt})
    except ChatError as exc:
        console.print(f"[bold red]failed:[/] {exc}")
        failed = True
    console.print()
    recording = read_recording(out)
    console.print(
        f"recorded {len(recording.frames)} frames in {len(recording.steps)} step(s) to {out}",
        highlight=False,
        soft_wrap=True,
    )
    return 1 if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``solon-events``; returns the exit status."""
    args = build_parser().parse_args(argv)
    console = Console(highlight=False)
    if args.command == "demo":
        return demo(args.dialect, console)
    if args.command == "replay":
        return replay_file(args.file, args.dialect, args.format, args.all, console)
    if args.command == "serve":
        from .serve_cli import serve

        return serve(args, console)
    variable = args.api_key_env or KEY_VARIABLES[args.dialect]
    api_key = os.environ.get(variable)
    try:
        model = ChatModel(args.url, args.model, api_key=api_key, dialect=args.dialect)
    except ValueError as exc:
        console.print(f"[bold red]{exc}[/]")
        return 2
    with model:
        if args.command == "record":
            return record_file(model, args.prompt, args.out, console)
        return _render_live(model, args.prompt, console)


if __name__ == "__main__":
    sys.exit(main())
