"""Gemini ``streamGenerateContent?alt=sse``: each frame a whole ``GenerateContentResponse``.

Frames end with CRLF line ends, as Google sends them. Thinking parts carry
``"thought": true``; a function call comes whole in one part (with a ``thoughtSignature``),
or, when streamed, as ``partialArgs`` pieces after a part naming it; the finish reason is
``STOP`` for answers and tool calls alike.
"""

from __future__ import annotations

import base64
import re
import secrets
from collections.abc import Iterator, Mapping
from typing import Any

from ..turns import ToolCallPart, TurnUsage
from .base import Frame, RequestView, ToolDecl, Wire, content_text, error_info, random_id

__all__ = ["GeminiWire"]


class GeminiWire(Wire):
    """The ``/v1beta/models/{model}:streamGenerateContent`` stream."""

    framing = "sse-crlf"

    def __init__(self, model: str, usage: TurnUsage) -> None:
        super().__init__(model, usage)
        self._response_id = random_id("", 22)

    @classmethod
    def read_request(cls, body: Mapping[str, Any]) -> RequestView:
        """``functionResponse`` parts of the last content; ``functionDeclarations``."""
        contents = [c for c in body.get("contents") or () if isinstance(c, Mapping)]
        results: list[str] = []
        if contents:
            results = [
                _response_text(part["functionResponse"])
                for part in contents[-1].get("parts") or ()
                if isinstance(part, Mapping) and isinstance(part.get("functionResponse"), Mapping)
            ]
        user_text = next(
            (
                text
                for c in reversed(contents)
                if c.get("role", "user") == "user" and (text := _text_parts(c.get("parts")))
            ),
            "",
        )
        return RequestView(
            model=str(body.get("model") or ""),
            user_text=user_text,
            tool_results=tuple(results),
            tools=tuple(_declarations(body.get("tools") or ())),
        )

    @classmethod
    def error_body(cls, status: int, message: str | None = None) -> dict[str, Any]:
        """``{"error": {"code", "message", "status"}}``."""
        info = error_info(status, message)
        return {"error": {"code": status, "message": info.message, "status": info.gemini_status}}

    def _usage(self, final: bool) -> dict[str, Any]:
        usage = self.usage
        details = [{"modality": "TEXT", "tokenCount": usage.prompt}]
        if not final:
            return {
                "promptTokenCount": usage.prompt,
                "totalTokenCount": usage.prompt,
                "promptTokensDetails": details,
            }
        out: dict[str, Any] = {
            "promptTokenCount": usage.prompt,
            "candidatesTokenCount": usage.completion - usage.thinking,
            "totalTokenCount": usage.total,
            "promptTokensDetails": details,
        }
        if usage.thinking:
            out["thoughtsTokenCount"] = usage.thinking
        return out

    def _chunk(self, parts: list[dict[str, Any]], finish_reason: str | None = None) -> Frame:
        candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}}
        if finish_reason is not None:
            candidate["finishReason"] = finish_reason
        candidate["index"] = 0
        return {
            "candidates": [candidate],
            "usageMetadata": self._usage(final=finish_reason is not None),
            "modelVersion": self.model,
            "responseId": self._response_id,
        }

    def thinking(self, text: str) -> list[Frame]:
        """A ``thought`` part."""
        return [self._chunk([{"text": text, "thought": True}])]

    def text(self, text: str) -> list[Frame]:
        """A text part."""
        return [self._chunk([{"text": text}])]

    def tool_call(self, call: ToolCallPart) -> list[Frame]:
        """One ``functionCall`` part with the whole ``args`` and a ``thoughtSignature``; a
        streamed call: the part naming it, one ``partialArgs`` entry per frame, a closing part."""
        signature = base64.b64encode(secrets.token_bytes(48)).decode()
        if not call.streamed:
            part = {
                "functionCall": {"name": call.name, "args": call.arguments},
                "thoughtSignature": signature,
            }
            return [self._chunk([part])]
        opening = {"functionCall": {"name": call.name, "willContinue": True}}
        frames = [self._chunk([{**opening, "thoughtSignature": signature}])]
        frames += [
            self._chunk([{"functionCall": {"partialArgs": [entry], "willContinue": True}}])
            for entry in _partial_args(call.arguments, "$")
        ]
        frames.append(self._chunk([{"functionCall": {}}]))
        return frames

    def finish(self, reason: str) -> list[Frame]:
        """An empty text part with ``finishReason: STOP`` and the full ``usageMetadata``."""
        return [self._chunk([{"text": ""}], "STOP")]

    def error(self, message: str) -> list[Frame]:
        """An ``{"error": {...}}`` frame (503 ``UNAVAILABLE``)."""
        return [self.error_body(503, message)]


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PIECE = 16  # characters of a string value per partialArgs entry


def _partial_args(value: Any, path: str) -> Iterator[dict[str, Any]]:
    """The ``partialArgs`` entries that say ``value`` at ``path``, members in order (an
    empty object or array says nothing)."""
    if isinstance(value, Mapping):
        for key, member in value.items():
            step = (
                f".{key}"
                if _NAME.fullmatch(key)
                else "['" + re.sub(r"(['\\])", r"\\\1", key) + "']"
            )
            yield from _partial_args(member, path + step)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _partial_args(item, f"{path}[{index}]")
    elif isinstance(value, str):
        for start in range(0, len(value), _PIECE):
            yield {
                "jsonPath": path,
                "stringValue": value[start : start + _PIECE],
                "willContinue": True,
            }
        yield {"jsonPath": path, "stringValue": ""}
    elif isinstance(value, bool):
        yield {"jsonPath": path, "boolValue": value}
    elif value is None:
        yield {"jsonPath": path, "nullValue": None}
    else:
        yield {"jsonPath": path, "numberValue": value}


def _text_parts(parts: Any) -> str:
    return "".join(
        p["text"]
        for p in parts or ()
        if isinstance(p, Mapping) and isinstance(p.get("text"), str) and not p.get("thought")
    )


def _response_text(function_response: Mapping[str, Any]) -> str:
    response = function_response.get("response")
    if isinstance(response, Mapping):
        for key in ("result", "output", "content"):
            if key in response:
                return content_text(response[key])
        if len(response) == 1:
            return content_text(next(iter(response.values())))
    return content_text(response)


def _declarations(tools: Any) -> list[ToolDecl]:
    found: list[ToolDecl] = []
    for tool in tools:
        if not isinstance(tool, Mapping):
            continue
        for decl in tool.get("functionDeclarations") or tool.get("function_declarations") or ():
            if isinstance(decl, Mapping) and decl.get("name"):
                schema = decl.get("parameters") or decl.get("parametersJsonSchema") or {}
                found.append(ToolDecl(str(decl["name"]), schema))
    return found
