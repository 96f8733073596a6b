"""ChatEvents for front ends and clients: AG-UI, the Vercel AI SDK's UI message stream, our
own JSON, and every provider's wire format.

``to_agui()`` and ``to_vercel()`` are pipeable operators from ChatEvents to the
protocol's events; ``to_wire()`` to a provider's streamed body (:mod:`.provider_formats`).
The encoders behind them are sans-I/O. AG-UI needs the ``agui`` extra and is imported on
first use.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from reactivex import Observable

from ..event_model.events import ChatEvent
from .native import decode_event, encode_event, event_from_json, event_to_json
from .provider_formats import (
    WIRE_FORMATS,
    WireEncoder,
    error_body,
    response_body,
    to_wire,
    wire_encoder,
)
from .vercel import VERCEL_DONE, VERCEL_HEADERS, VercelEncoder, to_vercel, vercel_sse

if TYPE_CHECKING:
    from ag_ui.core import BaseEvent

__all__ = [
    "VERCEL_DONE",
    "VERCEL_HEADERS",
    "WIRE_FORMATS",
    "VercelEncoder",
    "WireEncoder",
    "decode_event",
    "encode_event",
    "error_body",
    "event_from_json",
    "event_to_json",
    "response_body",
    "to_agui",
    "to_vercel",
    "to_wire",
    "vercel_sse",
    "wire_encoder",
]


def to_agui(
    thread_id: str | None = None,
    run_id: str | None = None,
    *,
    client_tools: Iterable[str] = (),
    messages: Iterable[Any] | None = None,
) -> Callable[[Observable[ChatEvent]], Observable[BaseEvent]]:
    """A pipeable operator: ChatEvents -> AG-UI events (see :mod:`.agui`; ``agui`` extra)."""
    from .agui import to_agui as operator

    return operator(thread_id, run_id, client_tools=client_tools, messages=messages)


def __getattr__(name: str) -> Any:
    if name in ("AguiEncoder", "agui_sse"):
        from . import agui

        return getattr(agui, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
