"""The ``solon-events`` command: ``demo``, ``replay``, ``stream``, ``record``, ``serve`` and
``bench``.

Errors are one line on standard error (``solon-events: error: ...``) and a non-zero exit
status, never a traceback (set ``SOLON_EVENTS_DEBUG=1`` to see one); output piped into a
program that stops reading (``head``) ends quietly; when standard output is not a terminal
nothing is coloured and no line is wrapped.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from .._version import __version__
from ..client.model import ChatModel
from ..dialects.base import dialect_names
from ..display.render import LiveRenderer, event_line, event_to_json
from ..event_model.errors import ChatError
from ..event_model.events import ChatEvent, ChatEventType
from ..event_model.extras import MissingExtraError
from ..event_model.filters import ChatEventFilter
from ..replay import replay
from ..tools import Tool, tool
from .common import (  # noqa: F401
    DEMO_STATIONS,
    KEY_VARIABLES,
    KEYED,
    ROUTES,
    CommandError,
    HelpFormatter,
    _local,
    add_command,
    add_dialect_and_key_options,
    add_endpoint_options,
    command_line_hint,
    get_weather,
    provider_dialect,
    provider_key,
    warning,
)

__all__ = [
    "CommandError",
    "HelpFormatter",
    "add_dialect_and_key_options",
    "build_parser",
    "main",
    "provider_dialect",
    "provider_key",
]


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


class _Console(Console):
    """A rich Console that lets a closed standard output reach :func:`main` as
    ``BrokenPipeError`` (rich's own handling exits with status 1)."""

    def on_broken_pipe(self) -> None:
        """Write nothing more and raise ``BrokenPipeError``."""
        self.quiet = True
        raise BrokenPipeError


def demo(dialect: str, console: Console) -> int:
    """Stream the embedded provider's scripted tool-using conversations, rendered live."""
    from ..devserver import DevServer

    server = DevServer.run_in_thread(pace=0.02)
    try:
        console.print(
            f"[bold]solon-events demo[/] — embedded {dialect} provider at {server.url}",
            highlight=False,
        )
        # The embedded provider takes any key; without one, Bedrock signs with AWS credentials.
        key = "embedded-provider" if dialect == "bedrock" else None
        for scenario, prompt, demo_tool in DEMO_CONVERSATIONS:
            with ChatModel(
                server.url + ROUTES[dialect], scenario, api_key=key, dialect=dialect
            ) as model:
                console.print(f"[bold]user:[/] {prompt}")
                _render_live(model, prompt, console, demo_tool)
        return 0
    finally:
        server.close()


def _render_live(
    model: ChatModel, prompt: str, console: Console, demo_tool: Tool[..., Any] | None = None
) -> int:
    """Render the response to ``prompt`` as it streams; its failure is raised, for
    :func:`main` to print on standard error."""
    request = model.prompt(prompt).event_filter(ChatEventFilter.all())
    if demo_tool is not None:
        request = request.tools(demo_tool)
    render = LiveRenderer(console)
    done = threading.Event()
    failure: list[Exception] = []

    def on_error(error: Exception) -> None:
        failure.append(error)
        done.set()

    subscription = request.stream().subscribe(_without_errors(render), on_error, done.set)
    try:
        done.wait()
    finally:
        subscription.dispose()
        render.close()
    if failure:
        render.end_line()
        raise failure[0]
    console.print()
    return 0


def _without_errors(render: LiveRenderer) -> Callable[[ChatEvent], None]:
    """``render`` for every event but ERROR: a command prints its failure as one line on
    standard error instead."""

    def show(event: ChatEvent) -> None:
        if event.type is not ChatEventType.ERROR:
            render(event)

    return show


def replay_file(path: str, dialect: str, fmt: str, show_all: bool, console: Console) -> int:
    """Print the events of a recorded stream: one compact line each, or JSON lines."""
    event_filter = ChatEventFilter.all() if show_all else ChatEventFilter.DEFAULT
    failure: list[BaseException] = []

    def show(event: ChatEvent) -> None:
        if fmt in ("json", "jsonl"):
            sys.stdout.write(event_to_json(event).decode() + "\n")
            return
        if event.type is ChatEventType.ERROR and event.error is not None:
            said = f"{type(event.error).__name__}: {command_line_hint(str(event.error))}"
            event = event.evolve(error=None, text=said)
        console.print(event_line(event), soft_wrap=True)

    try:
        events = replay(Path(path), dialect=dialect, event_filter=event_filter)
    except IsADirectoryError:
        raise CommandError(f"{path} is a directory, not a recorded stream", 2) from None
    except FileNotFoundError:
        raise CommandError(f"no such file: {path}", 2) from None
    events.subscribe(show, failure.append)
    sys.stdout.flush()
    if failure:
        raise CommandError(f"the recording failed: {failure[0]}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``solon-events``."""
    parser = argparse.ArgumentParser(
        prog="solon-events",
        description="Semantic event streams from the streamed responses of chat models: "
        "stream, record and replay responses, and serve a model to front ends.",
        epilog="Run 'solon-events COMMAND --help' for a command's options.",
        formatter_class=HelpFormatter,
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    dialect_help = "the provider's wire format"

    demo_parser = add_command(
        commands,
        "demo",
        "stream a scripted tool-using conversation from the embedded provider",
        "Start the embedded provider (no key, no network) and stream its scripted "
        "conversation, rendered live: thinking, a tool call with progress reports, the "
        "tool's result, the answer and the usage.",
    )
    demo_parser.add_argument(
        "--dialect", choices=dialect_names(), default="openai", help=dialect_help
    )

    replay_parser = add_command(
        commands,
        "replay",
        "print the events of a recorded stream",
        "Run a recorded stream through the whole pipeline, with no network, and print its "
        "events: one line each (type, step, index and its text or key field), coloured on "
        "a terminal, or one JSON object per line. FILE is a body as a provider sent it "
        "(SSE or JSON lines) or a recording made by 'solon-events record'.",
    )
    replay_parser.add_argument("file", metavar="FILE", help="the recorded stream")
    replay_parser.add_argument(
        "--dialect",
        choices=("auto", *dialect_names()),
        default="auto",
        help=dialect_help + "; auto: a recording's own (named in its header), else told from "
        "the first frames",
    )
    replay_parser.add_argument(
        "--format",
        choices=("pretty", "json", "jsonl"),
        default="pretty",
        help="pretty: one line per event; json (or jsonl): one JSON object per event, for programs",
    )
    replay_parser.add_argument(
        "--all", action="store_true", help="show every event, HEARTBEAT and RAW included"
    )

    stream_parser = add_command(
        commands,
        "stream",
        "stream a prompt from a provider, rendered live",
        "Send PROMPT to a provider and render the response as it streams. The API key is "
        "read from an environment variable, never from a flag.",
    )
    _provider_options(stream_parser)

    record_parser = add_command(
        commands,
        "record",
        "stream a prompt and save its raw frames as a recording",
        "Like 'stream', and save the raw frames with their arrival times as a JSON-lines "
        "recording that 'solon-events replay' and replay() read.",
    )
    _provider_options(record_parser)
    record_parser.add_argument(
        "--out", required=True, metavar="FILE", help="where to write the recording"
    )

    from .bench import add_bench_parser
    from .keys import add_keys_parser
    from .serve import add_serve_parser
    from .spend import add_spend_parser

    add_serve_parser(commands)
    add_bench_parser(commands)
    add_keys_parser(commands)
    add_spend_parser(commands)
    return parser


def _provider_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("prompt", metavar="PROMPT", help="what to ask")
    add_endpoint_options(parser)


def record_file(model: ChatModel, prompt: str, out: str, console: Console) -> int:
    """Stream ``prompt`` rendered live and save what was received as a recording."""
    from ..recording import read_recording, record

    request = model.prompt(prompt).event_filter(ChatEventFilter.all())
    failure: ChatError | None = None
    try:
        record(
            request, out, on_event=_without_errors(LiveRenderer(console)), header={"prompt": prompt}
        )
    except ChatError as exc:
        failure = exc
    console.print()
    recording = read_recording(out)
    console.print(
        f"recorded {len(recording.frames)} frames in {len(recording.steps)} step(s) to {out}",
        highlight=False,
        soft_wrap=True,
    )
    if failure is not None:
        raise failure
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``solon-events``; returns the exit status.

    A failure is one line on standard error; a closed standard output (``| head``) ends
    the command quietly.
    """
    args = build_parser().parse_args(argv)
    console = _Console(highlight=False)
    if not console.is_terminal:
        console.soft_wrap = True  # a pipe or a file: whole lines, never wrapped mid-word
    try:
        return run(args, console)
    except BrokenPipeError:
        # The reader went away: send what is still buffered nowhere, and say nothing.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 0
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if os.environ.get("SOLON_EVENTS_DEBUG"):
            raise
        return error(exc)


def error(exc: BaseException) -> int:
    """Print ``exc`` as one line on standard error; returns the exit status."""
    plain = (CommandError, ChatError, ValueError, MissingExtraError)
    message = str(exc) if isinstance(exc, plain) else None
    if message is None:
        message = f"{type(exc).__name__}: {exc}"
    Console(stderr=True, highlight=False, soft_wrap=True).print(
        Text.assemble(
            ("solon-events: error: ", "bold red"), command_line_hint(" ".join(message.split()))
        )
    )
    return exc.status if isinstance(exc, CommandError) else 2 if isinstance(exc, ValueError) else 1


def run(args: argparse.Namespace, console: Console) -> int:
    """Run the command ``args`` names; raises what it cannot do."""
    if args.command == "demo":
        return demo(args.dialect, console)
    if args.command == "replay":
        return replay_file(args.file, args.dialect, args.format, args.all, console)
    if args.command == "serve":
        from .serve import serve

        return serve(args, console)
    if args.command == "bench":
        from .bench import bench

        return bench(args, console)
    if args.command == "keys":
        from .keys import keys

        return keys(args, console)
    if args.command == "spend":
        from .spend import spend

        return spend(args, console)
    dialect, api_key = provider_key(args, args.url)
    with ChatModel(args.url, args.model, api_key=api_key, dialect=dialect) as model:
        if args.command == "record":
            return record_file(model, args.prompt, args.out, console)
        return _render_live(model, args.prompt, console)
