"""The refusal of a request: an HTTP status, a message and headers (the gateway's and its
operator endpoints' handlers raise it; each answers it in its route's own shape)."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["HttpError"]


class HttpError(Exception):
    """A request refused with HTTP ``status``, ``message`` and ``headers``."""

    def __init__(self, status: int, message: str, headers: Mapping[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = dict(headers or {})
