"""A prompt's structured answer: what is asked for, and how the answer is settled.

:class:`OutputRequest` is what ``prompt(..., output=X)`` (:meth:`ChatPrompt.output
<solon_events.ChatPrompt.output>`) keeps: the
:class:`~solon_events.event_model.messages.OutputFormat`
each request carries to its dialect, the :class:`~solon_events.tools.output.OutputType`
that checks the answer (None when the caller only asks, as the gateway does for its
clients), and how many times a wrong answer is asked again. The tool loop settles the
last step's answer with :meth:`OutputRequest.settle`: the model's refusal, text that is
not JSON, or a value that does not fit the type raise
:class:`~solon_events.event_model.errors.StructuredOutputError`; :meth:`OutputRequest.feedback` is
the message a retry sends back.
"""

from __future__ import annotations

from typing import Any

import attrs

from ..core.structured import answer_value
from ..dialects.output import OUTPUT_MODES
from ..event_model.errors import StructuredOutputError
from ..event_model.messages import OutputFormat, OutputMode, UserMessage
from ..event_model.results import ChatResponse
from ..tools.output import OutputMismatch, OutputType

__all__ = ["RETRY_FEEDBACK", "OutputRequest"]

RETRY_FEEDBACK = (
    "Your answer does not fit the requested schema{where}: {reason}. "
    "Answer again with one JSON value that fits it, and nothing else."
)
"""What a retry tells the model about its wrong answer (``{where}``: `` at $.path``)."""

_REFUSED = frozenset({"refusal", "content_filter", "SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST"})
"""Finish reasons (the providers' words) that say the model refused."""


@attrs.frozen
class OutputRequest:
    """A structured answer asked of a prompt (see the module's documentation)."""

    format: OutputFormat
    type: OutputType | None = None
    retries: int = 0

    @classmethod
    def of(
        cls,
        output: Any,
        *,
        mode: OutputMode | None = None,
        retries: int = 0,
        name: str | None = None,
        strict: bool | None = None,
    ) -> OutputRequest:
        """The request of ``output``: a type or a JSON schema (checked at the end), or an
        :class:`~solon_events.event_model.messages.OutputFormat` (asked for only, never checked)."""
        if mode is not None and mode not in OUTPUT_MODES:
            raise ValueError(f"mode must be native, tool, prompted or None, not {mode!r}")
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ValueError(f"retries must be a count (0 or more), not {retries!r}")
        if isinstance(output, OutputFormat):
            changes: dict[str, Any] = {"mode": mode or output.mode}
            if name is not None:
                changes["name"] = name
            if strict is not None:
                changes["strict"] = strict
            return cls(attrs.evolve(output, **changes), None, retries)
        kind = OutputType.of(output, name)
        asked = OutputFormat(schema=kind.schema, name=kind.name, mode=mode, strict=strict)
        return cls(asked, kind, retries)

    def settle(self, response: ChatResponse, attempts: int) -> Any:
        """The answer of ``response`` (the last step's), checked: an instance of the type,
        the JSON value (a schema), or None when nothing is checked. Raises
        :class:`~solon_events.event_model.errors.StructuredOutputError` (``attempts`` so far)."""
        kind = self.type
        if kind is None:
            return None
        text = response.text
        message = response.message
        refusal = message.refusal if message is not None else ""
        if refusal or (response.finish_reason in _REFUSED and not text.strip()):
            said = refusal or f"finish reason {response.finish_reason}"
            raise StructuredOutputError(
                f"the model refused to answer as {kind.name}: {said}",
                raw=text,
                refusal=said,
                attempts=attempts,
            )
        try:
            value = answer_value(text)
        except ValueError as error:
            raise StructuredOutputError(
                f"the answer is not {kind.name}: {error}",
                raw=text,
                reason=str(error),
                attempts=attempts,
            ) from None
        try:
            return kind.check(value)
        except OutputMismatch as error:
            raise StructuredOutputError(
                f"the answer does not fit {kind.name} at {error.path}: {error.reason}",
                raw=text,
                path=error.path,
                reason=error.reason,
                attempts=attempts,
            ) from error

    def feedback(self, error: StructuredOutputError) -> UserMessage:
        """The message that asks again after ``error``."""
        where = f" at {error.path}" if error.path else ""
        return UserMessage(text=RETRY_FEEDBACK.format(where=where, reason=error.reason))
