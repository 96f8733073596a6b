"""What the gateway's provider routes answer an error with, read back."""

from __future__ import annotations

from typing import Any

__all__ = ["error_message"]


def error_message(format: str, body: Any) -> str:
    """The message of a protocol's error body (a KeyError or TypeError when ``body`` is
    not that protocol's error shape)."""
    if format == "ollama":
        return str(body["error"])
    if format == "cohere":
        return str(body["message"])
    return str(body["error"]["message"])
