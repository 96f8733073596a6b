"""What the gateway's clients are told of its upstreams: deployments by name, never an
address.

The library's errors name the URL they failed on (``request to
https://10.0.0.7:8443/v1/chat/completions failed: ...``), which is right for a program
that made the request and wrong for the gateway's clients, who should not learn where
the gateway's models run. :class:`Deployments` rewrites each mention of an upstream's
address (its URL, ``host:port``, the ``('host', port)`` of a socket error, a group
member's ``name@host:port`` label) as the deployment it belongs to, named by its model
(``deployment 'gpt-4o'``); the gateway applies it to the error and status events it sends
and to its error bodies, and logs the original text.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ..client.model import ChatModel

if TYPE_CHECKING:
    from ..client.routing import ModelGroup
    from .models import ModelTable

__all__ = ["Deployments", "logger"]

logger = logging.getLogger("solon_events.serve")
"""The gateway's log: failures with the upstream's address, connection limits."""

_DEFAULT_PORTS = {"http": 80, "https": 443}
_Replace = Callable[[re.Match[str]], str]


class Deployments:
    """The upstream deployments of ``model`` (a ChatModel, a group or a table of the
    models served by name: each of their models), named by model name (``name#2`` for
    the second model of a shared name), and :meth:`shown`: a text with each mention of
    their addresses replaced by their names."""

    def __init__(self, model: ChatModel | ModelGroup | ModelTable) -> None:
        leaves = (model,) if isinstance(model, ChatModel) else model.leaves()
        names = [leaf.model for leaf in leaves]
        seen: dict[str, int] = {}
        by_place: dict[tuple[str, int], list[str]] = {}
        for leaf, name in zip(leaves, names, strict=True):
            seen[name] = seen.get(name, 0) + 1
            label = name if names.count(name) == 1 else f"{name}#{seen[name]}"
            place = _place(leaf.api_url)
            if place is not None:
                by_place.setdefault(place, []).append(label)
        self._hosts = tuple({host.encode() for host, _port in by_place})
        self._rules = [_rule(host, port, labels) for (host, port), labels in by_place.items()]

    def shown(self, text: str) -> str:
        """``text`` with the upstreams' addresses replaced by their deployments' names."""
        for pattern, replace in self._rules:
            text = pattern.sub(replace, text)
        return text

    def shown_bytes(self, data: bytes) -> bytes:
        """:meth:`shown` of UTF-8 ``data`` (as it is when no upstream host is in it)."""
        if not any(host in data for host in self._hosts):
            return data
        return self.shown(data.decode("utf-8", "replace")).encode()


def _place(url: str) -> tuple[str, int] | None:
    """The host and port of ``url`` (None when it has no host)."""
    try:
        parts = urlsplit(url)
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme, 0)
    except ValueError:
        return None
    return (parts.hostname, port) if parts.hostname else None


def _rule(host: str, port: int, labels: list[str]) -> tuple[re.Pattern[str], _Replace]:
    """The pattern of every mention of ``host``:``port`` and what replaces it."""
    named = "deployment " + " or ".join(repr(label) for label in labels)
    by_name = {label.partition("#")[0]: label for label in labels}
    shown_host = f"[{host}]" if ":" in host else host
    h, p = re.escape(shown_host), str(port)
    # The port, which a text may leave out when it is the scheme's; never another port.
    at = (rf"(?::{p})?" if port in _DEFAULT_PORTS.values() else f":{p}") + r"(?![\w:-]|\.[\w-])"
    mentions = [
        rf"(?P<name>[^\s@'\"(\[]+)@{h}{at}(?P<n>#\d+)?",  # a group's name@host:port label
        rf"https?://(?:[^\s/@'\"]*@)?{h}{at}(?:[^\s'\"<>)\]]*[^\s'\"<>)\]:,;.])?",  # a URL
        rf"\(\s*'{re.escape(host)}',\s*{p}\s*\)",  # a socket address: ('host', port)
        rf"(?:\bhost\s+)?(?<![\w.-]){h}{at}",  # host:port (host alone for the scheme's port)
    ]
    pattern = re.compile("|".join(f"(?:{mention})" for mention in mentions))

    def replace(match: re.Match[str]) -> str:
        name = match.group("name")
        if name is None:
            return named
        return by_name.get(name) or name + (match.group("n") or "")

    return pattern, replace
