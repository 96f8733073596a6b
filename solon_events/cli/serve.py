"""``solon-events serve``: a model served to front ends (see :mod:`solon_events.serve`).

Serves the embedded provider's scripted conversation (with the demo's weather tool)
when no ``--url`` is given, binds 127.0.0.1 unless told otherwise, and prints the address
it listens on, ``http://HOST:PORT``, as its first line. With ``--redis`` every response
is kept in Redis Streams and can be resumed on any replica that shares the Redis. With
``--config gateway.toml`` it serves the models of a configuration file by name
(:mod:`solon_events.serve.config`), and reloads the file on SIGHUP.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import ipaddress
import os
import re
import signal
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

from ..client.model import ChatModel
from ..client.routing import ModelGroup
from ..serve.approval_store import APPROVAL_KEY_ENV
from ..serve.approval_store import approval_key as approval_key_of
from ..serve.gateway import (
    BODY_TIMEOUT,
    HEADER_TIMEOUT,
    MAX_BODY,
    MAX_BUFFER,
    MAX_CONNECTIONS,
    MAX_TOTAL_BUFFER,
    WRITE_TIMEOUT,
)
from .common import add_command, add_dialect_and_key_options, number_type

if TYPE_CHECKING:
    from ..serve.access import Access
    from ..serve.gateway import Gateway

__all__ = ["add_serve_parser", "serve"]


def add_serve_parser(commands: Any) -> None:
    """Add the ``serve`` command to ``solon-events``'s subcommands."""
    parser = add_command(
        commands,
        "serve",
        "serve a model to front ends: Vercel UI stream, AG-UI, events, a chat page",
        "Serve a model over HTTP: POST /api/chat (the Vercel AI SDK's UI message "
        "stream), POST /agui (AG-UI), POST /events (our events as SSE), GET / (a chat "
        "page), and the providers' own APIs for their SDKs: /v1/chat/completions, "
        "/v1/responses, /v1/messages, /v1beta/models/{model}:generateContent and "
        ":streamGenerateContent, /ollama/api/chat, /v2/chat, /v1beta/interactions (tools "
        "there are the client's: never run here). Without --url or --upstream it serves the "
        "embedded provider and the demo's weather tool. The first line printed is the "
        "address it listens on, http://HOST:PORT.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on")
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="a TOML file naming the models served and their deployments (see the docs' "
        "gateway configuration page); reloaded on SIGHUP (a bad file keeps the old one). "
        "Replaces --url, --upstream, --model, --fallback and --hedge-after",
    )
    parser.add_argument("--port", type=int, default=8000, help="the port; 0 for any free one")
    parser.add_argument(
        "--url", help="the provider endpoint to POST to (default: the embedded provider)"
    )
    parser.add_argument(
        "--upstream",
        metavar="DIALECT:URL",
        help="the provider, as its dialect and endpoint (anthropic:https://api.anthropic.com/"
        "v1/messages): the same as --dialect DIALECT --url URL",
    )
    parser.add_argument(
        "--model",
        help="the model's name (required with --url; without it, a scenario of the embedded "
        "provider, default: weather)",
    )
    add_dialect_and_key_options(parser)
    parser.add_argument(
        "--fallback",
        action="append",
        default=[],
        metavar="MODEL",
        help="another model of the same provider, asked when the one before fails before "
        "answering (repeatable: a chain, in order; see --hedge-after)",
    )
    parser.add_argument(
        "--hedge-after",
        type=_seconds,
        metavar="SECONDS",
        help="with --fallback: also ask the next model when none has answered after this "
        "long; the first to answer wins, the others are stopped (0: ask all at once)",
    )
    parser.add_argument(
        "--token",
        help="a bearer token every request must carry (default: none; see also --token-env)",
    )
    parser.add_argument(
        "--token-env",
        metavar="NAME",
        help="environment variable holding a bearer token every request must carry",
    )
    parser.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="an origin allowed to call from a browser (repeatable; default: none)",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a host name requests may name besides 127.0.0.1, localhost and [::1] "
        "(repeatable; without a token, requests naming any other host get 403)",
    )
    parser.add_argument(
        "--write-timeout",
        type=_seconds,
        default=WRITE_TIMEOUT,
        metavar="SECONDS",
        help="drop a client that reads nothing for this long while a write to it waits, "
        "and cancel its model request (0: never)",
    )
    parser.add_argument(
        "--header-timeout",
        type=_seconds,
        default=HEADER_TIMEOUT,
        metavar="SECONDS",
        help="close a connection whose request head has not arrived this long after its "
        "first byte (or after it opened, when it sends nothing) (0: never)",
    )
    parser.add_argument(
        "--body-timeout",
        type=_seconds,
        default=BODY_TIMEOUT,
        metavar="SECONDS",
        help="answer 408 to a request whose body has not arrived this long after its head "
        "(0: never)",
    )
    parser.add_argument(
        "--max-connections",
        type=_count,
        default=MAX_CONNECTIONS,
        metavar="N",
        help="the connections held at once (fewer when ulimit -n leaves less: at most half "
        "of it, less 32); at the cap a new one takes the place of the one that waited "
        "longest for its request, or is answered 503 when every one serves a request",
    )
    parser.add_argument(
        "--upstream-connections",
        type=_count,
        default=0,
        metavar="N",
        help="the connections each model may hold to its provider at once (its pool); "
        "beyond them a request waits for one to be free (0, the default: no limit of its "
        "own; --max-connections bounds them)",
    )
    parser.add_argument(
        "--max-body",
        type=_byte_count,
        default=MAX_BODY,
        metavar="SIZE",
        help="the largest request body (e.g. 1MiB); a larger one gets 413",
    )
    parser.add_argument(
        "--max-buffer",
        type=_byte_count,
        default=MAX_BUFFER,
        metavar="SIZE",
        help="the bytes that may wait for one slow client (e.g. 8MiB) before its "
        "response is stopped",
    )
    parser.add_argument(
        "--max-total-buffer",
        type=_byte_count,
        default=MAX_TOTAL_BUFFER,
        metavar="SIZE",
        help="the bytes that may wait for all slow clients together (e.g. 128MiB)",
    )
    parser.add_argument(
        "--redis",
        metavar="URL",
        help="redis://HOST:PORT/DB: keep every response in Redis Streams, resumable on any "
        "replica sharing it (the redis extra; default: no Redis)",
    )
    parser.add_argument(
        "--require-approval",
        action="store_true",
        help="the demo's weather tool waits for a person's approval before it runs (the chat "
        "page shows Approve / Deny; without --url only)",
    )
    parser.add_argument(
        "--approval-key-env",
        metavar="NAME",
        help="environment variable holding the key (16 bytes or more, the same on every "
        f"replica) that signs the paused responses kept in Redis (default: {APPROVAL_KEY_ENV}, "
        "else one derived from the token); needed with --redis and --require-approval",
    )
    parser.add_argument(
        "--on-disconnect",
        choices=("continue", "cancel"),
        help="when a client leaves: go on or cancel the response (default: continue with "
        "--redis, else cancel)",
    )


def serve(args: argparse.Namespace, console: Console) -> int:
    """Run ``solon-events serve`` until SIGINT or SIGTERM; returns the exit status."""
    from ..serve.gateway import GATEWAY, create_app, run_app
    from ..tools import tool
    from .common import ROUTES, CommandError, get_weather, provider_dialect, provider_key

    configured = _Configured(args) if args.config else None
    if args.upstream:
        _use_upstream(args)
    if args.hedge_after is not None and not args.fallback:
        raise CommandError("--hedge-after needs a model to hedge with: give --fallback MODEL", 2)
    token = args.token or (os.environ.get(args.token_env) if args.token_env else None)
    if args.token_env and not token:
        raise CommandError(f"the environment variable {args.token_env} is empty", 2)
    keyed = configured is not None and bool(configured.config.keys)
    if keyed and token is not None:
        raise CommandError("the configuration's [keys] replace --token: give one or the other", 2)
    if token is None and not keyed and not _is_loopback(args.host):
        _stderr().print(
            Text.assemble(
                ("solon-events: warning: ", "bold yellow"),
                f"serving on {args.host} without a token: anyone who can reach it can use "
                "the model (set --token or --token-env); only requests naming 127.0.0.1, "
                "localhost, [::1] or an --allow-host name are answered",
            )
        )
    approval_key = _approval_key(args, token)
    server = None
    tools: list[Any] = []
    if configured is not None:
        url, name, api_key, dialect = "", "", None, ""
    elif args.url is None:
        from ..devserver import DevServer

        server = DevServer.run_in_thread(pace=0.02)
        dialect = provider_dialect(args.dialect, None)
        url, name, api_key = server.url + ROUTES[dialect], args.model or "weather", None
        tools = [
            tool(requires_approval=True)(get_weather) if args.require_approval else get_weather
        ]
    elif not args.model:
        raise CommandError("--model is required with --url or --upstream", 2)
    else:
        dialect, api_key = provider_key(args, args.url)
        url, name = args.url, args.model

    _log_to_stderr()

    async def run(app: Any) -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for number in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(number, stop.set)
        if configured is not None:
            gateway = app[GATEWAY]
            loop.add_signal_handler(signal.SIGHUP, lambda: _reload(configured, gateway))
        # What starting made (modules, classes, the app) lives as long as the process: kept
        # out of every later collection, it no longer stalls every stream for the time a
        # full collection takes to walk it (56.7 -> 12.6 ms here, once in 2,000 requests).
        gc.collect()
        gc.freeze()
        await run_app(app, args.host, args.port, stop=stop)

    try:
        served = (
            configured.table
            if configured is not None
            else _model(args, url, [name, *args.fallback], api_key, dialect)
        )
        with served as model:
            app = create_app(
                model,
                access=configured.access() if configured is not None else None,
                tools=tools,
                token=token,
                cors_origins=args.cors_origin,
                allowed_hosts=args.allow_host,
                max_body=args.max_body,
                max_buffer=args.max_buffer,
                max_total_buffer=args.max_total_buffer,
                write_timeout=args.write_timeout or None,
                header_timeout=args.header_timeout or None,
                body_timeout=args.body_timeout or None,
                max_connections=args.max_connections or MAX_CONNECTIONS,
                redis=configured.redis if configured is not None else args.redis,
                on_disconnect=args.on_disconnect,
                approval_key=approval_key,
            )
            asyncio.run(run(app))
    except OSError as exc:
        raise CommandError(f"cannot serve on {args.host}:{args.port}: {exc}") from exc
    finally:
        if server is not None:
            server.close()
    return 0


def _reload(configured: _Configured, gateway: Gateway) -> None:
    """Reload the configuration; when it changed, let the collector have the models it
    replaced (frozen with the rest of what starting made)."""
    if configured.reload(gateway):
        gc.unfreeze()


def _approval_key(args: argparse.Namespace, token: str | None) -> str | None:
    """The key ``--approval-key-env`` names (None without it: the gateway's default); a
    CommandError when the variable is empty, or when the demo's tool waits for approval in
    Redis with no key to sign it (neither the variable, nor ``SOLON_APPROVAL_KEY``, nor a
    token)."""
    from .common import CommandError

    name = args.approval_key_env
    key = (os.environ.get(name) or None) if name else None
    if name and key is None:
        raise CommandError(f"the environment variable {name} is empty", 2)
    if key is not None and len(key.encode()) < 16:
        raise CommandError(f"the approval key in {name} is shorter than 16 bytes", 2)
    waits = args.require_approval and args.redis and not args.config
    if waits and approval_key_of(key, token) is None:
        raise CommandError(
            "--require-approval with --redis keeps the paused responses in Redis, signed: "
            "give every replica the same key with --approval-key-env NAME (or "
            f"{APPROVAL_KEY_ENV} in the environment), or a --token",
            2,
        )
    return key


def _stderr() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)


_MODEL_OPTIONS = ("url", "upstream", "model", "fallback", "hedge_after", "require_approval")
"""The options that name the model served, which a configuration file replaces."""


class _Configured:
    """``serve --config FILE``: the models of the file by name (``table``), its Redis,
    and :meth:`reload` (on SIGHUP)."""

    def __init__(self, args: argparse.Namespace) -> None:
        from ..serve.config import ConfigError, load_config
        from ..serve.models import build_table
        from .common import CommandError

        given = [
            "--" + name.replace("_", "-")
            for name in _MODEL_OPTIONS
            if getattr(args, name) not in (None, False, [])
        ]
        if given:
            raise CommandError(
                f"--config names the models served: {', '.join(given)} cannot be given with it",
                2,
            )
        self._path = args.config
        self._pool = args.upstream_connections
        try:
            self.config = load_config(self._path)
            if args.redis and self.config.redis and args.redis != self.config.redis:
                raise CommandError("give Redis once: --redis or the file's redis, not both", 2)
            self.table = build_table(self.config, connection_limit=self._pool)
        except ConfigError as exc:
            raise CommandError(str(exc), 2) from None
        self.redis: str | None = self.config.redis or args.redis

    def access(self) -> Access:
        """The keys, limits, spend log and prices of the configuration."""
        from ..serve.access import build_access

        return build_access(self.config)

    def reload(self, gateway: Gateway) -> bool:
        """Read the file again and serve its models (True); a file that cannot be used
        changes nothing, and standard error says why (False)."""
        from ..serve.access import build_access
        from ..serve.config import ConfigError, load_config
        from ..serve.models import build_table

        try:
            new = load_config(self._path)
            if new.redis != self.config.redis:
                raise ConfigError(
                    "redis cannot change on a reload (restart to change it)",
                    path=new.path,
                    key="redis",
                )
            gateway.use(build_table(new, previous=gateway.models, connection_limit=self._pool))
            gateway.use_access(build_access(new, previous=gateway.access))
        except ConfigError as exc:
            _stderr().print(
                Text.assemble(
                    ("solon-events: ", "bold red"),
                    f"the configuration was not reloaded, the old one stays: {exc}",
                )
            )
            return False
        keys = f"; keys: {', '.join(new.keys)}" if new.keys else ""
        _stderr().print(f"solon-events: reloaded {self._path}: {', '.join(new.models)}{keys}")
        return True


def _log_to_stderr() -> None:
    """The gateway's log (failures with the upstream's address, connection limits) on
    standard error, one line each, unless the logging configuration already says where."""
    import logging

    log = logging.getLogger("solon_events.serve")
    if log.handlers or logging.getLogger().handlers:
        return
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("solon-events serve: %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)


def _model(
    args: argparse.Namespace, url: str, names: list[str], api_key: str | None, dialect: str
) -> ChatModel | ModelGroup:
    """The model served: one, or a fallback chain (a hedge with ``--hedge-after``) of
    ``names`` at the same provider."""
    pool = args.upstream_connections
    first, *others = [
        ChatModel(url, n, api_key=api_key, dialect=dialect, connection_limit=pool) for n in names
    ]
    if not others:
        return first
    if args.hedge_after is not None:
        return first.hedge(others[0], *others[1:], after=args.hedge_after)
    return first.fallback(others[0], *others[1:])


def _is_loopback(host: str) -> bool:
    """Whether ``host`` (an address to listen on) is reachable from this machine only."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


_SIZE = re.compile(r"\s*(\d+(?:\.\d*)?)\s*([kmg]?)(?:i?b)?\s*", re.IGNORECASE)


def _byte_count(text: str) -> int:
    """A size on the command line: bytes, or a number with KiB, MiB or GiB (K, M, G)."""
    match = _SIZE.fullmatch(text)
    if match is None:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 65536, 64KiB, 8MiB)")
    number, unit = match.groups()
    size = int(float(number) * 1024 ** " kmg".index(unit.lower() or " "))
    if size <= 0:
        raise argparse.ArgumentTypeError(f"a size must be positive, not {text!r}")
    return size


_count = number_type(int, "not a whole number", zero=True)
"""A number of connections on the command line: a whole number, 0 or more."""
_seconds = number_type(float, "not a number of seconds", zero=True)
"""A time on the command line: seconds, 0 or more."""


def _use_upstream(args: argparse.Namespace) -> None:
    """Read ``--upstream DIALECT:URL`` into ``args.dialect`` and ``args.url``."""
    from ..serve.config import parse_upstream
    from .common import CommandError

    try:
        dialect, url = parse_upstream(args.upstream)
    except ValueError as exc:
        raise CommandError(f"--upstream {exc}", 2) from None
    if args.dialect not in ("auto", dialect):
        raise CommandError(f"--dialect {args.dialect} contradicts --upstream {dialect}:...", 2)
    if args.url is not None and args.url != url:
        raise CommandError("give the provider once: --upstream or --url, not both", 2)
    args.dialect, args.url = dialect, url
