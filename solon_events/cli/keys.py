"""``solon-events keys hash``: the SHA-256 digest of a gateway key, for ``key_sha256`` in
the gateway's configuration (the key itself is never stored there)."""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import Any

from rich.console import Console

__all__ = ["add_keys_parser", "keys"]


def add_keys_parser(commands: Any) -> None:
    """Add the ``keys`` command to ``solon-events``'s subcommands."""
    from .common import add_command

    parser = add_command(
        commands,
        "keys",
        "the digest of a gateway key, for its [keys.NAME] section",
        "Print the SHA-256 digest (hex) of a gateway key read from standard "
        "input, for key_sha256 in a [keys.NAME] section of the gateway's configuration: "
        "the key itself is never stored. On a terminal the key is asked for without echo; "
        "a trailing line break is not part of the key.",
    )
    actions = parser.add_subparsers(
        dest="keys_action", required=True, metavar="ACTION", help="hash: print a key's digest"
    )
    add_command(
        actions,
        "hash",
        "print the SHA-256 digest of a key read from standard input",
        "Read a key from standard input and print its SHA-256 digest (hex).",
    )


def keys(args: argparse.Namespace, console: Console) -> int:
    """Run ``solon-events keys ACTION``; returns the exit status."""
    from ..serve.keys import key_digest
    from .common import CommandError

    key = getpass.getpass("key: ") if sys.stdin.isatty() else sys.stdin.read()
    key = key.removesuffix("\n").removesuffix("\r")
    if not key.strip():
        raise CommandError("no key on standard input", 2)
    console.print(key_digest(key), highlight=False)
    return 0
