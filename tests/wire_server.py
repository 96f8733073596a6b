"""A real local HTTP server that answers every POST with the body a test set on it, so that
the official SDKs (``openai``, ``anthropic``, ...) read what our wire encoders wrote."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import attrs
from aiohttp import web
from serving import serving_in_thread

__all__ = ["BodyServer", "serving_bodies"]


@attrs.define
class BodyServer:
    """What the server answers (``body``, ``content_type``, ``status``) and where (``url``)."""

    url: str = ""
    body: bytes = b""
    content_type: str = "application/json"
    status: int = 200
    paths: list[str] = attrs.Factory(list)

    def answer(self, body: bytes, content_type: str, status: int = 200) -> None:
        """Answer the next requests with ``body``."""
        self.body, self.content_type, self.status = body, content_type, status


@contextlib.contextmanager
def serving_bodies() -> Iterator[BodyServer]:
    """A :class:`BodyServer` listening on 127.0.0.1 from its own loop thread."""
    server = BodyServer()

    async def handle(request: web.Request) -> web.Response:
        await request.read()
        server.paths.append(request.path)
        return web.Response(
            body=server.body, status=server.status, headers={"Content-Type": server.content_type}
        )

    app = web.Application()
    app.router.add_post("/{tail:.*}", handle)
    with serving_in_thread(app) as url:
        server.url = url
        yield server
