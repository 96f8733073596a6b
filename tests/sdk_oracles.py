"""Independent expectations of the public recordings in ``tests/recordings``.

Each recording's expected result is reconstructed without our code, by the provider's own
SDK reading it the way it reads a live stream (its public streaming call, the recording
served as SSE by an in-memory httpx transport), in the shape of the shared corpus's
``<name>.expected.json`` (``text``, ``thinking``, ``tool_calls``, ``usage``,
``finish_reason``) plus ``citations``, ``blocks``, ``provider_response_id`` and (for
Interactions) ``model`` and ``thinking_signature`` (the last step signature):

- Cohere: ``cohere.ClientV2.chat_stream`` yields the SDK's typed stream events
  (``ContentDeltaV2ChatStreamResponse``, ``ToolCallStartV2ChatStreamResponse``, ...), which
  are accumulated here;
- Interactions: ``google.genai.Client.interactions.create(stream=True)`` yields the SDK's
  typed ``InteractionSSEEvent``\\ s; they are folded into the ``Interaction`` resource the API
  reference describes, the terminal ``interaction.completed`` payload (status, usage, id,
  model) with the ``steps`` it leaves empty filled from the step events, as the reference
  says to. The expected result is read off that resource.

How a provider's numbers become :class:`~solon_events.Usage` is the dialect's documented
mapping, restated here from the provider's fields.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from extra_modules import needed

__all__ = [
    "RECORDINGS",
    "RECORDING_DIALECTS",
    "cohere_expected",
    "cohere_fold",
    "expected_of",
    "fold_interaction",
    "interactions_expected",
    "recording_cases",
    "recording_paths",
    "sdk_http_client",
    "sse_body",
]

RECORDINGS = Path(__file__).resolve().parent / "recordings"
"""The public recordings copied into the tests (see its README for their sources)."""
RECORDING_DIALECTS = {"cohere": "cohere", "google-interactions": "google-interactions"}
"""The recordings' folders and the dialect that reads each."""


def recording_paths(folder: str) -> list[Path]:
    """The recordings of ``folder``, in name order."""
    return sorted((RECORDINGS / folder).glob("*.chunks.txt"))


def recording_cases() -> list[Any]:
    """One ``pytest.param(path, dialect)`` per recording (id ``folder/name``)."""
    return [
        pytest.param(path, dialect, id=f"{folder}/{path.name.removesuffix('.chunks.txt')}")
        for folder, dialect in RECORDING_DIALECTS.items()
        for path in recording_paths(folder)
    ]


def sse_body(path: Path) -> bytes:
    """The recording as the SSE body the provider sent: one ``data:`` event per payload."""
    lines = path.read_bytes().splitlines()
    return b"".join(b"data: " + line + b"\n\n" for line in lines if line.strip())


def sdk_http_client(body: bytes, sent: list[tuple[str, Any]] | None = None) -> Any:
    """An httpx client (what both SDKs take) that answers every request with ``body`` as
    SSE, from memory; the URL and JSON body of each request are appended to ``sent``."""
    import httpx

    def answer(request: Any) -> Any:
        if sent is not None:
            sent.append((str(request.url), json.loads(request.content)))
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    return httpx.Client(transport=httpx.MockTransport(answer))


def expected_of(path: Path, dialect: str) -> dict[str, Any]:
    """The expected result of the recording ``path`` read in ``dialect``."""
    return cohere_expected(path) if dialect == "cohere" else interactions_expected(path)


# ---------------------------------------------------------------- Cohere


def cohere_expected(path: Path) -> dict[str, Any]:
    """What the Cohere SDK's typed events of ``path`` add up to."""
    cohere = needed("cohere")
    client = cohere.ClientV2(
        api_key="test", base_url="http://sdk.test", httpx_client=sdk_http_client(sse_body(path))
    )
    return cohere_fold(
        client.chat_stream(model="recorded", messages=[{"role": "user", "content": "-"}])
    )


def cohere_fold(events: Any) -> dict[str, Any]:
    """What the Cohere SDK's typed stream events (``ClientV2.chat_stream``) add up to."""
    text: list[str] = []
    thinking: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    citations: list[dict[str, Any]] = []
    expected: dict[str, Any] = {"oracle": "cohere SDK ClientV2.chat_stream"}
    for event in events:
        message = getattr(getattr(event, "delta", None), "message", None)
        if event.type == "message-start":
            expected["provider_response_id"] = event.id
        elif event.type in ("content-start", "content-delta"):
            content = message.content
            if content.text:
                text.append(content.text)
            if content.thinking:
                thinking.append(content.thinking)
        elif event.type == "tool-plan-delta":
            thinking.append(message.tool_plan)
        elif event.type == "tool-call-start":
            call = message.tool_calls
            calls[event.index] = {
                "id": call.id,
                "name": call.function.name,
                "text": call.function.arguments or "",
            }
        elif event.type == "tool-call-delta":
            calls[event.index]["text"] += message.tool_calls.function.arguments or ""
        elif event.type == "citation-start":
            span = message.citations
            for source in span.sources or [None]:
                document = (getattr(source, "document", None) or {}) if source else {}
                citations.append(
                    {
                        "cited_text": span.text,
                        "start_index": span.start,
                        "end_index": span.end,
                        "type": source.type if source else None,
                        "title": document.get("title"),
                        "source_id": source.id if source else None,
                    }
                )
        elif event.type == "message-end":
            expected["finish_reason"] = event.delta.finish_reason
            usage = event.delta.usage
            counts = usage.tokens or usage.billed_units
            prompt, completion = int(counts.input_tokens), int(counts.output_tokens)
            expected["usage"] = {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
                "cache_read_input_tokens": int(usage.cached_tokens or 0),
                "thinking_tokens": 0,
            }
    expected["text"] = "".join(text)
    expected["thinking"] = "".join(thinking)
    expected["tool_calls"] = [
        {
            "id": call["id"],
            "name": call["name"],
            "arguments": json.loads(call["text"]) if call["text"] else {},
        }
        for _index, call in sorted(calls.items())
    ]
    expected["citations"] = citations
    expected["blocks"] = []
    return expected


# ---------------------------------------------------------------- Interactions


def interactions_expected(path: Path) -> dict[str, Any]:
    """What the Interaction resource built from the google-genai SDK's typed events of
    ``path`` says."""
    interaction = completed_interaction(path)
    text: list[str] = []
    thinking: list[str] = []
    calls: list[dict[str, Any]] = []
    citations: list[dict[str, Any]] = []
    blocks: list[dict[str, Any]] = []
    signature = None
    for step in interaction["steps"]:
        if step.get("signature"):
            signature = step["signature"]
        if step["type"] == "model_output":
            for item in step.get("content") or []:
                if item["type"] == "text":
                    text.append(item["text"])
                    for annotation in item.get("annotations") or []:
                        citations.append(
                            {
                                "url": annotation.get("url"),
                                "title": annotation.get("title"),
                                "start_index": annotation.get("start_index"),
                                "end_index": annotation.get("end_index"),
                                "type": annotation.get("type"),
                            }
                        )
                else:
                    blocks.append(item)
        elif step["type"] == "thought":
            thinking.extend(item["text"] for item in step.get("summary") or [])
        elif step["type"] == "function_call":
            calls.append({"id": step["id"], "name": step["name"], "arguments": step["arguments"]})
    usage = interaction["usage"]
    prompt = usage.get("total_input_tokens", 0) + usage.get("total_tool_use_tokens", 0)
    thoughts = usage.get("total_thought_tokens", 0)
    completion = usage.get("total_output_tokens", 0) + thoughts
    interaction_id = interaction["id"]
    return {
        "oracle": "google-genai SDK interactions.create(stream=True), folded into the Interaction",
        "provider_response_id": interaction_id or None,
        "model": interaction["model"],
        "text": "".join(text),
        "thinking": "".join(thinking),
        "tool_calls": calls,
        "citations": citations,
        "blocks": blocks,
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": usage.get("total_tokens", prompt + completion),
            "cache_read_input_tokens": usage.get("total_cached_tokens", 0),
            "thinking_tokens": thoughts,
        },
        "finish_reason": interaction["status"],
        "thinking_signature": signature,
    }


def completed_interaction(path: Path) -> dict[str, Any]:
    """The terminal ``interaction.completed`` payload of ``path`` as a plain dict, its
    ``steps`` filled in from the stream's step events."""
    genai = needed("google.genai")
    from google.genai import types

    options = types.HttpOptions(
        base_url="http://sdk.test", httpx_client=sdk_http_client(sse_body(path))
    )
    client = genai.Client(api_key="test", http_options=options)
    return fold_interaction(client.interactions.create(model="recorded", input="-", stream=True))


def fold_interaction(events: Any) -> dict[str, Any]:
    """The terminal ``interaction.completed`` payload of google-genai's typed stream events
    as a plain dict, its ``steps`` filled in from the step events."""
    steps: dict[int, dict[str, Any]] = {}
    arguments: dict[int, str] = {}
    interaction: dict[str, Any] = {}
    for event in events:
        kind = event.event_type
        if kind == "interaction.completed":
            interaction = event.interaction.model_dump(mode="json", exclude_none=True)
        elif kind == "step.start":
            steps[event.index] = event.step.model_dump(mode="json", exclude_none=True)
        elif kind == "step.delta":
            _fold_delta(steps[event.index], arguments, event.index, event.delta)
        elif kind == "step.stop" and event.index in arguments:
            steps[event.index]["arguments"] = json.loads(arguments.pop(event.index))
    interaction["steps"] = [step for _index, step in sorted(steps.items())]
    return interaction


def _fold_delta(step: dict[str, Any], arguments: dict[int, str], index: int, delta: Any) -> None:
    """Fold one step delta into its step, as the Interaction resource holds it."""
    kind = delta.type
    if kind == "text":
        content = step.setdefault("content", [])
        if not content or content[-1]["type"] != "text":
            content.append({"type": "text", "text": ""})
        content[-1]["text"] += delta.text
    elif kind == "text_annotation_delta":
        content = step.setdefault("content", [])
        annotations = [a.model_dump(mode="json", exclude_none=True) for a in delta.annotations]
        content[-1].setdefault("annotations", []).extend(annotations)
    elif kind == "thought_signature":
        step["signature"] = delta.signature
    elif kind == "thought_summary":
        step.setdefault("summary", []).append(delta.content.model_dump(mode="json"))
    elif kind == "arguments_delta":
        arguments[index] = arguments.get(index, "") + (delta.arguments or "")
    elif kind in ("image", "audio", "video", "document"):
        step.setdefault("content", []).append(delta.model_dump(mode="json", exclude_none=True))
    else:  # a built-in tool's call or result: the step holds what the delta carries
        step.update(delta.model_dump(mode="json", exclude_none=True))
