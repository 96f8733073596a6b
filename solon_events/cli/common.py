"""What the commands share: their provider options, errors and warnings, the embedded
provider's routes and the demo's tool."""

from __future__ import annotations

import argparse
import ipaddress
import os
import re
import textwrap
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from rich.console import Console
from rich.text import Text

from ..dialects.base import dialect_names
from ..dialects.endpoints import dialect_for_url
from ..support.redaction import redact_url
from ..tools import ToolContext, tool

__all__ = [
    "CommandError",
    "HelpFormatter",
    "add_command",
    "add_dialect_and_key_options",
    "add_endpoint_options",
    "check_url",
    "command_line_hint",
    "number_type",
    "provider_dialect",
    "provider_key",
]

ROUTES = {
    "openai": "/v1/chat/completions",
    "openai-responses": "/v1/responses",
    "anthropic": "/v1/messages",
    "gemini": "/v1beta",
    "ollama": "/api/chat",
    "bedrock": "",  # the dialect adds /model/{model}/converse-stream
    "cohere": "/v2/chat",
    "google-interactions": "/v1beta/interactions",
}


DEMO_STATIONS = 3
"""How many weather stations the demo's tool asks, reporting progress after each."""


KEY_VARIABLES = {
    "openai": "OPENAI_API_KEY",
    "openai-responses": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "ollama": "OLLAMA_API_KEY",
    "bedrock": "AWS_BEARER_TOKEN_BEDROCK",
    "cohere": "CO_API_KEY",
    "google-interactions": "GEMINI_API_KEY",
}


KEYED = frozenset(
    {"openai", "openai-responses", "anthropic", "gemini", "cohere", "google-interactions"}
)
"""The dialects whose providers want an API key (Ollama's runs locally; Bedrock signs
requests with AWS credentials when it has no key)."""


URL_SIGNS = {
    "anthropic": "/v1/messages",
    "openai-responses": "/v1/responses",
    "gemini": ":streamGenerateContent or /v1beta",
    "google-interactions": "/interactions",
    "cohere": "/v2/chat",
    "ollama": "/api/chat",
    "bedrock": "/converse-stream",
}
"""What the path of a URL ends with when it names a dialect other than openai (what
``--dialect auto`` goes by: :func:`~solon_events.dialects.endpoints.dialect_for_url`)."""


class CommandError(Exception):
    """A failure a command reports as one line, with the exit status ``status``."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


class HelpFormatter(argparse.HelpFormatter):
    """Each option's help ends with its default, when it has one; lines break between
    words only (never at a hyphen: ``solon-events`` stays whole)."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(
            " ".join(text.split()), width, break_on_hyphens=False, break_long_words=False
        )

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return textwrap.fill(
            " ".join(text.split()),
            width,
            initial_indent=indent,
            subsequent_indent=indent,
            break_on_hyphens=False,
            break_long_words=False,
        )

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (
            "%(default)" not in text
            and default not in (None, False, [], argparse.SUPPRESS)
            and (action.option_strings or action.nargs in (argparse.OPTIONAL,))
        ):
            text += " (default: %(default)s)"
        return text


def add_command(commands: Any, name: str, summary: str, description: str) -> Any:
    """Add the subcommand ``name`` to ``commands`` (an ``add_subparsers()`` result) and
    return its parser: ``summary`` in the list of commands, ``description`` atop its help."""
    # No abbreviations: "--api-key sk-..." must not be taken for "--api-key-env".
    return commands.add_parser(
        name,
        help=summary,
        description=description,
        formatter_class=HelpFormatter,
        allow_abbrev=False,
    )


def number_type(
    kind: Callable[[str], Any], message: str, *, zero: bool = False
) -> Callable[[str], Any]:
    """An argparse ``type``: the text read by ``kind`` (``int``, ``float``), above 0 (0 too
    with ``zero``), else an error of ``message`` followed by the text."""

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not (value >= 0 if zero else value > 0):  # NaN is neither
            raise argparse.ArgumentTypeError(f"{message}: {text!r}")
        return value

    return parse


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


def add_endpoint_options(
    parser: argparse.ArgumentParser,
    example: str = "https://api.openai.com/v1/chat/completions",
) -> None:
    """``--url`` and ``--model`` (both required), then the dialect and key options."""
    parser.add_argument("--url", required=True, help=f"the endpoint to POST to, e.g. {example}")
    parser.add_argument("--model", required=True, help="the model's name")
    add_dialect_and_key_options(parser)


def add_dialect_and_key_options(parser: argparse.ArgumentParser) -> None:
    """``--dialect`` and ``--api-key-env``, as every command that calls a provider has them
    (and ``--api-key``, which is refused, pointing to them)."""
    signs = ", ".join(f"{sign}: {dialect}" for dialect, sign in URL_SIGNS.items())
    parser.add_argument(
        "--dialect",
        choices=("auto", *dialect_names()),
        default="auto",
        help=f"the provider's wire format; auto: the one the URL's path names ({signs}), "
        "else openai",
    )
    parser.add_argument(
        "--api-key-env",
        metavar="NAME",
        help=f"environment variable holding the provider's API key (default: {_key_variables()} "
        "by dialect)",
    )
    parser.add_argument("--api-key", nargs="?", action=_NoKeyFlag, help=argparse.SUPPRESS)


class _NoKeyFlag(argparse.Action):
    """``--api-key``: refused (a key on the command line is seen by every process that can
    list them), with a pointer to the environment variables; the value is never shown."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        parser.error(
            "there is no --api-key: the API key is read from an environment variable, never "
            f"from a flag: {_key_variables()} by dialect, or the one --api-key-env NAME names"
        )


def _key_variables() -> str:
    """``"OPENAI_API_KEY, ... or CO_API_KEY"``: every variable a dialect reads its key from."""
    variables = list(dict.fromkeys(KEY_VARIABLES.values()))
    return f"{', '.join(variables[:-1])} or {variables[-1]}"


def check_url(url: str) -> None:
    """Refuse, as ``--url``'s, a URL that is not http(s) (a missing ``https://``, say)."""
    try:
        parts = urlsplit(url)
        fine = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:
        fine = False
    if fine:
        return
    if "://" in url:
        raise CommandError(f"--url must be an http(s) URL, not {redact_url(url)}", 2)
    host = urlsplit("//" + url).hostname or ""
    meant = ("http://" if _local(host) else "https://") + url
    raise CommandError(f"--url needs http:// or https:// in front: {redact_url(meant)}", 2)


def command_line_hint(message: str) -> str:
    """``message`` with the library's hints in Python syntax (``pass dialect="anthropic"``)
    given as the command's option (``pass --dialect anthropic``)."""
    return _PYTHON_DIALECT.sub(
        lambda m: f"pass --dialect {m.group(1)}" if m.group(1) else "pass --dialect", message
    )


_PYTHON_DIALECT = re.compile(r'pass dialect=(?:"([\w-]+)")?')


def provider_dialect(dialect: str, url: str | None) -> str:
    """The dialect ``--dialect`` names for ``url``: ``auto`` is the one the URL's path
    names, else ``openai``."""
    if dialect != "auto":
        return dialect
    return (dialect_for_url(url) if url else None) or "openai"


def provider_key(args: argparse.Namespace, url: str) -> tuple[str, str | None]:
    """The dialect of ``url`` (refused when it is no http(s) URL) and the API key from the
    environment variable its dialect reads (or ``--api-key-env``'s); a warning on standard
    error when that variable is not set and the provider wants a key."""
    check_url(url)
    dialect = provider_dialect(args.dialect, url)
    variable = args.api_key_env or KEY_VARIABLES[dialect]
    api_key = os.environ.get(variable) or None
    host = urlsplit(url).hostname
    if api_key is None and host and (args.api_key_env or (dialect in KEYED and not _local(host))):
        warning(f"{variable} is not set: the request is sent without an API key")
    return dialect, api_key


def warning(message: str) -> None:
    """Print ``message`` as one line on standard error: what a command goes on despite."""
    Console(stderr=True, highlight=False, soft_wrap=True).print(
        Text.assemble(("solon-events: warning: ", "bold yellow"), message)
    )


def _local(host: str) -> bool:
    """Whether ``host`` is this machine (a local server wants no key)."""
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
