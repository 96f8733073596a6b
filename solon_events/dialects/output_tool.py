"""``"tool"`` mode read back: the forced output tool's call, read as the answer's text.

:class:`OutputToolDialect` wraps the dialect of a step asked for a structured answer in
``"tool"`` mode (:mod:`~solon_events.dialects.output`): after each frame it rewrites what
the wrapped dialect recorded, so that the call of the output tool reaches the stream as
text (its argument deltas as TEXT_DELTA, its end as TEXT_END, a whole call as one delta),
and the provider's finish for a tool call as its word for a finished answer. Every other
event passes as it is. So the answer streams, folds and validates as a text answer does,
whichever the mode, and a gateway writes it in its client's form as text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from ..event_model.events import EVENT_TYPES, ChatEvent
from .base import ChatDialect, FrameDecoder
from .context import ChatStreamContext, Finish, Outcome

__all__ = ["OutputToolDialect"]

_START = EVENT_TYPES.TOOL_CALL_START
_DELTA = EVENT_TYPES.TOOL_CALL_ARGS_DELTA
_END = EVENT_TYPES.TOOL_CALL_END
_CHUNK = EVENT_TYPES.TOOL_CALL_CHUNK
_CALLS = frozenset({_START, _DELTA, _END, _CHUNK})
_STATE = "output_tool.calls"  # the output tool's calls open in this step: key -> text sent

_ANSWERED = {"tool_calls": "stop", "tool_use": "end_turn", "TOOL_CALL": "COMPLETE"}
"""A tool call's finish reason, in each provider's words, as its finished answer's."""


def _key(event: ChatEvent) -> Any:
    return event.tool_call_id if event.tool_call_id is not None else ("index", event.index)


def _arguments_text(event: ChatEvent) -> str:
    call = event.tool_call
    if call is None:
        return ""
    if call.arguments_str:
        return call.arguments_str
    return orjson.dumps(dict(call.arguments)).decode() if call.arguments else ""


class OutputToolDialect(ChatDialect):
    """``dialect``, with the calls of the tool ``name`` read as text."""

    def __init__(self, dialect: ChatDialect, name: str) -> None:
        self.dialect = dialect
        self.tool_name = name
        self.name = dialect.name
        self.assistant_prefill = dialect.assistant_prefill
        self.native_output = dialect.native_output

    def parse_frame(self, ctx: ChatStreamContext, frame: Any) -> None:
        """The wrapped dialect's reading of ``frame``, the output tool's call as text."""
        self.dialect.parse_frame(ctx, frame)
        self._rewrite(ctx)

    def parse_done(self, ctx: ChatStreamContext) -> None:
        """The wrapped dialect's ``[DONE]``."""
        self.dialect.parse_done(ctx)
        self._rewrite(ctx)

    def end_of_stream(self, ctx: ChatStreamContext) -> None:
        """The wrapped dialect's end of the stream."""
        self.dialect.end_of_stream(ctx)
        self._rewrite(ctx)

    def _rewrite(self, ctx: ChatStreamContext) -> None:
        record = ctx.recorded
        if not any(_touches(outcome) for outcome in record):
            return
        calls: dict[Any, list[str]] = ctx.state_of(_STATE, dict)
        rewritten: list[Outcome] = []
        for outcome in record:
            if type(outcome) is Finish:
                if ctx.state.get(_STATE + ".answered") and outcome.reason in _ANSWERED:
                    outcome = Finish(_ANSWERED[outcome.reason])
                rewritten.append(outcome)
            elif type(outcome) is ChatEvent and outcome.type in _CALLS:
                rewritten.extend(self._event(ctx, calls, outcome))
            else:
                rewritten.append(outcome)
        record[:] = rewritten

    def _event(
        self, ctx: ChatStreamContext, calls: dict[Any, list[str]], event: ChatEvent
    ) -> list[ChatEvent]:
        kind = event.type
        call = event.tool_call
        if kind is _START or kind is _CHUNK:
            if call is None or call.name != self.tool_name:
                return [event]
            ctx.state[_STATE + ".answered"] = True
            if kind is _START:
                calls[_key(event)] = []
                return []
            return _text(event, _arguments_text(event))
        sent = calls.get(_key(event))
        if sent is None:
            return [event]
        if kind is _DELTA:
            sent.append(event.text or "")
            return [event.evolve(type=EVENT_TYPES.TEXT_DELTA, tool_call_id=None)]
        del calls[_key(event)]
        so_far = "".join(sent)
        whole = _arguments_text(event)
        rest = whole[len(so_far) :] if whole.startswith(so_far) else ""
        return _text(event, rest)

    # Everything else is the wrapped dialect's.

    def frame_decoder(self, max_frame_size: int, *, data_only: bool = False) -> FrameDecoder:
        """The wrapped dialect's decoder."""
        return self.dialect.frame_decoder(max_frame_size, data_only=data_only)

    def claims(self, frame: Any) -> bool:
        """Whether the wrapped dialect claims ``frame``."""
        return self.dialect.claims(frame)

    def error_message(self, body: Any) -> str | None:
        """The wrapped dialect's reading of an error body."""
        return self.dialect.error_message(body)

    def __repr__(self) -> str:
        return f"<OutputToolDialect {self.name!r} tool={self.tool_name!r}>"


def _touches(outcome: Outcome) -> bool:
    return (type(outcome) is ChatEvent and outcome.type in _CALLS) or type(outcome) is Finish


def _text(event: ChatEvent, text: str) -> list[ChatEvent]:
    """TEXT_DELTA of ``text`` (when there is some), then TEXT_END, in ``event``'s place."""
    ids: Mapping[str, Any] = {"tool_call_id": None, "tool_call": None}
    out = [event.evolve(type=EVENT_TYPES.TEXT_DELTA, text=text, **ids)] if text else []
    out.append(event.evolve(type=EVENT_TYPES.TEXT_END, text=None, **ids))
    return out
