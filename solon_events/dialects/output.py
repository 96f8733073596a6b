"""A structured answer asked of a dialect: its mode, and the request in each mode (sans-I/O).

A :class:`~solon_events.event_model.messages.ChatRequest` whose ``output`` is set asks for an answer
of that shape. :func:`output_mode` says how the dialect asks for it (the request's own
``mode``, else :meth:`ChatDialect.output_mode <solon_events.dialects.ChatDialect.output_mode>`
for the model); :func:`prepared` writes the request the dialect's builder then reads:

- ``"native"``: the request as it is: the builder writes its provider's own mechanism
  (a dialect that has none refuses it: ``native_output``);
- ``"tool"``: the schema as one more tool (:func:`output_tool`) that the model is made to
  call (:meth:`ChatDialect.forced_tool`; any tool when the request has tools of its own,
  so that they run first): the parse side reads that call as the answer's text
  (:class:`~solon_events.dialects.output_tool.OutputToolDialect`);
- ``"prompted"``: the schema in a system instruction (:data:`OUTPUT_INSTRUCTION`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs
import orjson

from ..event_model.messages import ChatRequest, OutputFormat, OutputMode, SystemMessage, ToolSpec
from .output_schema import StrictSchema, closed_schema, plain_schema, strict_schema

if TYPE_CHECKING:
    from .base import ChatDialect

__all__ = [
    "OUTPUT_INSTRUCTION",
    "OUTPUT_MODES",
    "claude_native",
    "claude_output_mode",
    "closed_format",
    "merged_option",
    "output_mode",
    "output_tool",
    "prepared",
    "schema_for",
]

OUTPUT_MODES: tuple[OutputMode, ...] = ("native", "tool", "prompted")
"""The ways to ask for a structured answer."""

OUTPUT_INSTRUCTION = (
    "Answer with one JSON value that matches this JSON schema, and nothing else "
    "(no prose, no Markdown fence):\n{schema}"
)
"""The system instruction of ``"prompted"`` mode (``{schema}``: the schema as JSON)."""

_ANY_OBJECT = "Answer with one JSON object, and nothing else (no prose, no Markdown fence)."
_TOOL_DESCRIPTION = "Give the final answer by calling this tool with it as the arguments."


def output_mode(dialect: ChatDialect, request: ChatRequest) -> OutputMode | None:
    """How ``dialect`` asks for ``request``'s structured answer (None: it asks none)."""
    output = request.output
    if output is None:
        return None
    mode = output.mode or dialect.output_mode(request.model, output)
    if mode not in OUTPUT_MODES:
        raise ValueError(f"unknown output mode {mode!r}; use native, tool or prompted")
    return mode


def prepared(dialect: ChatDialect, request: ChatRequest) -> ChatRequest:
    """``request`` as ``dialect``'s builder writes it for its output mode (unchanged
    without an output or in native mode; a ValueError when the dialect cannot ask so)."""
    mode = output_mode(dialect, request)
    if mode is None:
        return request
    output = request.output
    assert output is not None
    if mode == "native":
        if not dialect.native_output:
            raise ValueError(
                f"the {dialect.name!r} dialect has no native structured output: "
                "ask for it with mode='tool' or mode='prompted'"
            )
        return request
    if mode == "tool":
        forced = dialect.forced_tool(None if request.tools else output.name)
        return attrs.evolve(
            request,
            tools=(*request.tools, output_tool(output)),
            options={**forced, **request.options},
            output=None,
        )
    return attrs.evolve(request, messages=_instructed(request, output), output=None)


def output_tool(output: OutputFormat) -> ToolSpec:
    """The tool whose arguments are the answer in ``"tool"`` mode: named as the output, its
    parameters the schema (any object without one). A schema whose root is not an object
    cannot be a tool's parameters: a ValueError."""
    schema = output.schema
    if schema is None:
        schema = {"type": "object"}
    elif schema.get("type") != "object" and "properties" not in schema:
        raise ValueError(
            f"output {output.name!r} is not an object: tool mode needs an object schema "
            "(ask with mode='native' or mode='prompted')"
        )
    return ToolSpec(
        name=output.name,
        description=output.description or _TOOL_DESCRIPTION,
        parameters=plain_schema(schema),
    )


def _instructed(request: ChatRequest, output: OutputFormat) -> tuple[Any, ...]:
    """The conversation with the prompted-mode instruction after its system messages."""
    if output.schema is None:
        text = _ANY_OBJECT
    else:
        text = OUTPUT_INSTRUCTION.format(schema=orjson.dumps(plain_schema(output.schema)).decode())
    if output.description:
        text = f"{output.description}\n\n{text}"
    messages = list(request.messages)
    at = 0
    while at < len(messages) and isinstance(messages[at], SystemMessage):
        at += 1
    messages.insert(at, SystemMessage(text=text))
    return tuple(messages)


def schema_for(output: OutputFormat, transform: str) -> tuple[dict[str, Any], bool]:
    """The schema a native mechanism sends, and whether it is strict: ``transform`` is
    ``"strict"`` (:func:`~.output_schema.strict_schema`: OpenAI's), ``"closed"``
    (:func:`~.output_schema.closed_schema`: Anthropic's) or ``"plain"`` (the schema as it
    is). ``output.strict`` None: strict where the schema can be made so; True: a
    ValueError saying why it cannot; False: the schema as it is."""
    assert output.schema is not None
    if transform == "plain" or output.strict is False:
        return plain_schema(output.schema), False
    made: StrictSchema = (strict_schema if transform == "strict" else closed_schema)(output.schema)
    if not made.strict and output.strict:
        reasons = "; ".join(note for note in made.notes if "cannot be strict" in note)
        raise ValueError(f"output {output.name!r} cannot be made strict: {reasons}")
    return made.schema, made.strict


_CLAUDE = re.compile(r"claude-(?:opus|sonnet|haiku)-(\d+)(?:-(\d{1,2}))?(?![0-9])")


def claude_native(model: str) -> bool:
    """Whether a Claude model (by its name or Bedrock id) takes a native structured output:
    Opus 4.1, and every model from 4.5 on (an unknown name is taken to)."""
    if "claude" not in model:
        return True
    found = _CLAUDE.search(model)
    if found is None:  # claude-3-5-sonnet, claude-instant, claude-2
        return False
    major, minor = int(found.group(1)), int(found.group(2) or 0)
    if major == 4 and minor == 1:
        return "opus" in found.group(0)
    return (major, minor) >= (4, 5)


def claude_output_mode(model: str, output: OutputFormat) -> OutputMode:
    """``"native"`` for a Claude model that takes it (:func:`claude_native`) and a schema
    it can hold the answer to (:func:`~.output_schema.closed_schema`), else ``"tool"``
    (which Claude also takes without a schema: any JSON object)."""
    schema = output.schema
    if schema is not None and claude_native(model) and closed_schema(schema).strict:
        return "native"
    return "tool"


def closed_format(output: OutputFormat) -> dict[str, Any]:
    """Claude's ``{"type": "json_schema", "schema": ...}`` for ``output`` (Anthropic's
    ``output_config.format``), its schema closed (:func:`~.output_schema.closed_schema`)."""
    if output.schema is None:
        raise ValueError("Claude's native structured output needs a schema: ask with mode='tool'")
    schema, _strict = schema_for(output, "closed")
    return {"type": "json_schema", "schema": schema}


def merged_option(options: Mapping[str, Any], key: str, value: Mapping[str, Any]) -> Any:
    """``value`` merged under the request option ``key`` (an object the caller may have
    given too: theirs wins, key by key)."""
    given = options.get(key)
    return {**value, **given} if isinstance(given, Mapping) else dict(value)
