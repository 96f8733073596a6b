"""``python -m solon_events.devserver``: serve the embedded provider until Ctrl-C (SIGINT) or
SIGTERM."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
from collections.abc import Sequence

import attrs
import orjson

from .app import ROUTES
from .scenarios import SCENARIOS
from .server import DevServer


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m solon_events.devserver",
        description="Serve scripted and recorded chat-model streams on a local port.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000; 0: any)")
    parser.add_argument("--recording", help="a recorded stream (.jsonl) for the replay scenario")
    parser.add_argument("--pace", type=float, default=0.0, help="seconds between two frames")
    parser.add_argument(
        "--timings",
        metavar="FILE",
        help="on exit, write when each stream was received and its parts written (JSON lines)",
    )
    return parser


def _banner(server: DevServer) -> str:
    lines = [f"solon-events devserver on {server.url}", "", "routes (POST):"]
    lines += [f"  {server.url}{path}  ({dialect})" for path, _wire, dialect in ROUTES]
    lines += ["", "scenarios (the request's model name):"]
    lines += [f"  {name:<12} {description}" for name, (_plan, description) in SCENARIOS.items()]
    if server.recording is not None:
        lines += ["", f"replaying {server.recording} for unknown model names"]
    lines += ["", "Ctrl-C to stop."]
    return "\n".join(lines)


async def _serve(args: argparse.Namespace) -> None:
    # Handled on the loop, as `solon-events serve` does: a server started from a script in
    # the background (SIGINT ignored on entry) still stops on SIGINT, and SIGTERM stops it
    # cleanly.
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for number in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):  # no signal handlers on Windows' loop
            loop.add_signal_handler(number, stop.set)
    async with DevServer(
        args.host, args.port, pace=args.pace, recording=args.recording, timings=bool(args.timings)
    ) as server:
        print(_banner(server), flush=True)
        await stop.wait()
    if args.timings and server.stream_timings is not None:
        with open(args.timings, "wb") as out:
            for timing in server.stream_timings:
                out.write(orjson.dumps(attrs.asdict(timing)) + b"\n")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the server until interrupted; returns the exit status."""
    args = _parser().parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
