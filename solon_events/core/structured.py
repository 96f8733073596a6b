"""Structured output as it streams: a JSON answer's partial values, validated at the end.

:class:`JsonAnswer` (what :func:`~solon_events.operators.partial_json` runs) reads a
response's TEXT_DELTA texts with a :class:`~solon_events.core.partial_json.PartialJsonParser`
and reports each new partial value. Only the last step's text is the answer (a tool loop's
earlier steps may say anything), and a Markdown code fence around the JSON is skipped. At
the end the whole value is checked against what the caller gave: an attrs class (the value
is structured into it by ``cattrs``) or a JSON schema (checked by ``jsonschema``); both
come with ``pip install 'solon-events[structured]'``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from ..event_model.events import EVENT_TYPES, ChatEvent
from ..event_model.extras import require
from .partial_json import PartialJsonParser

__all__ = ["JsonAnswer", "Schema", "answer_value"]

Schema = type | Mapping[str, Any] | None
"""An attrs class, a JSON schema (a mapping), or None for any JSON value."""


class JsonAnswer:
    """The JSON answer of one response, read from its events (create one per response).

    :meth:`add` takes each event and says whether the answer's partial value changed
    (:attr:`value`); :meth:`finish` returns the whole value, validated.
    """

    __slots__ = ("_error", "_fenced", "_parser", "_pending", "_schema", "_started", "value")

    def __init__(self, schema: Schema = None) -> None:
        if schema is not None and not (
            isinstance(schema, Mapping) or (isinstance(schema, type) and attrs.has(schema))
        ):
            raise TypeError("partial_json() validates against an attrs class or a JSON schema")
        if isinstance(schema, Mapping):
            _jsonschema().validators.validator_for(schema).check_schema(schema)
        elif schema is not None:
            _cattrs()  # missing, it fails here, not when the answer ends
        self._schema = schema
        self._parser = PartialJsonParser()
        self._reset()

    def _reset(self) -> None:
        self._parser.reset()
        self._error: ValueError | None = None
        self.value: Any = None
        """The answer's latest partial value (a snapshot later text never changes)."""
        self._started = False  # whether the JSON (not a fence or whitespace) has begun
        self._fenced = False  # whether it began after a Markdown fence line
        self._pending = ""  # the start of the text, while it may still be a fence line

    def add(self, event: ChatEvent) -> bool:
        """Read ``event``; whether the answer's partial value changed."""
        kind = event.type
        if kind is EVENT_TYPES.STEP_START:  # only the last step's text is the answer
            self._reset()
            return False
        if kind is not EVENT_TYPES.TEXT_DELTA or not event.text:
            return False
        return self.add_text(event.text)

    def add_text(self, text: str) -> bool:
        """Read more of the answer's text; whether its partial value changed."""
        if self._error is not None:
            return False
        parser = self._parser
        try:
            self._feed(self._after_fence(text))
        except ValueError as error:
            self._error = error
            return False
        value = parser.value()
        if value is self.value or (value is None and not parser.complete):
            return False
        self.value = value
        return True

    def finish(self) -> Any:
        """The whole answer, validated; raises ``ValueError`` when it is not JSON, is
        incomplete or does not match the schema."""
        if self._error is not None:
            raise ValueError(f"the answer is not JSON: {self._error}") from self._error
        try:
            value = self._parser.finish()
        except ValueError as error:
            raise ValueError(f"the answer is not JSON: {error}") from error
        schema = self._schema
        if schema is None:
            return value
        if isinstance(schema, Mapping):
            jsonschema = _jsonschema()
            try:
                jsonschema.validate(value, schema)
            except jsonschema.ValidationError as error:
                message = f"the answer does not match the schema: {error.message}"
                raise ValueError(message) from error
            return value
        cattrs = _cattrs()
        try:
            return cattrs.structure(value, schema)
        except Exception as error:  # cattrs reports a group of failures
            detail = "; ".join(cattrs.transform_error(error)) if _is_cattrs_error(error) else error
            raise ValueError(f"the answer does not fit {schema.__name__}: {detail}") from error

    def _after_fence(self, text: str) -> str:
        """``text`` without a leading Markdown fence line (```json)."""
        if self._started:
            return text
        text = self._pending + text
        self._pending = ""
        stripped = text.lstrip()
        if not stripped:
            return text
        if stripped.startswith("```") or "```".startswith(stripped):
            line_end = stripped.find("\n")
            if line_end == -1:  # the fence line goes on
                self._pending = text
                return ""
            self._fenced = True
            text = stripped[line_end + 1 :]
        self._started = bool(text.strip())
        return text

    def _feed(self, text: str) -> None:
        """Feed ``text``; after a fenced document only whitespace and the closing fence."""
        parser = self._parser
        if not self._fenced:
            parser.feed(text)
            return
        while text:
            if parser.complete:
                if text.strip().strip("`"):
                    parser.feed(text)  # raises, naming the offset
                return
            tick = text.find("`")
            if tick == -1:
                parser.feed(text)
                return
            parser.feed(text[:tick])
            text = text[tick:]
            if not parser.complete:  # a backtick inside a string (anywhere else: an error)
                parser.feed("`")
                text = text[1:]


def answer_value(text: str) -> Any:
    """The JSON value of a whole answer's ``text`` (a Markdown code fence around it
    skipped); ``ValueError`` when it is not JSON or is cut short."""
    answer = JsonAnswer()
    answer.add_text(text)
    return answer.finish()


def _is_cattrs_error(error: Exception) -> bool:
    return type(error).__module__.startswith("cattrs")


def _jsonschema() -> Any:
    return require("jsonschema", feature="validating against a JSON schema", extra="structured")


def _cattrs() -> Any:
    return require("cattrs", feature="validating against an attrs class", extra="structured")
