"""The HTTP request a dialect builds: the request value, where it goes, its headers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import orjson

from ..support.redaction import redact_url

__all__ = ["Endpoint", "HttpRequest", "bearer", "request_headers"]


@attrs.frozen
class Endpoint:
    """Where a request goes and as whom: the ``url`` posted to, the ``api_key`` and extra
    ``headers`` (which replace a dialect's own of the same name). Its repr shows the URL
    masked and neither the key nor the headers."""

    url: str = attrs.field(repr=lambda url: repr(redact_url(url)))
    api_key: str | None = attrs.field(default=None, repr=False)
    headers: Mapping[str, str] | None = attrs.field(default=None, repr=False)


@attrs.frozen(kw_only=True)
class HttpRequest:
    """What to POST: ``url``, ``headers`` and a JSON ``body``.

    The repr hides header values and masks the URL's user info and query values (see
    :func:`~solon_events.support.redaction.redact_url`), so an API key never reaches a log line.
    """

    url: str
    headers: Mapping[str, str] = attrs.field(factory=dict)
    body: Mapping[str, Any] = attrs.field(factory=dict)

    def body_bytes(self) -> bytes:
        """The body encoded as JSON."""
        return orjson.dumps(self.body)

    def __repr__(self) -> str:
        return (
            f"HttpRequest(url={redact_url(self.url)!r}, "
            f"headers=<{len(self.headers)} hidden>, body=...)"
        )


def request_headers(
    defaults: Mapping[str, str], extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """JSON request headers: ``Content-Type``, then ``defaults`` (auth, versions), then
    ``extra``, which replaces a default of the same name whatever its letter case."""
    headers = {"Content-Type": "application/json", **defaults}
    if extra:
        replaced = {name.lower() for name in extra}
        headers = {k: v for k, v in headers.items() if k.lower() not in replaced}
        headers.update(extra)
    return headers


def bearer(api_key: str | None) -> dict[str, str]:
    """The ``Authorization: Bearer`` header of ``api_key``; no header without a key."""
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}
