"""The Bedrock ConverseStream dialect: events written from the Converse API reference
(botocore's ``bedrock-runtime`` service model), request building, authentication, a binary
recording replayed against botocore's own decoding, and the tool loop over real HTTP."""

from __future__ import annotations

import base64
import json
import logging
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs
import botocore.session
import orjson
import pytest
from botocore.eventstream import EventStreamError
from botocore_stream import botocore_events
from dialect_runs import feed
from reactivex import operators as ops

from solon_events import (
    ChatModel,
    ChatRequest,
    SystemMessage,
    ToolMessage,
    ToolSpec,
    UserMessage,
    final_response,
    replay,
    tool,
)
from solon_events.dialects import aws_auth, get_dialect
from solon_events.dialects.bedrock import BedrockDialect, converse_stream_url
from solon_events.event_model.errors import ChatError, ChatProtocolError, ProviderError
from solon_events.event_model.events import ChatEvent, ChatEventType
from solon_events.event_model.results import AssistantMessage, ImageBlock, ToolCall
from solon_events.wire.eventstream import event_message, exception_message

T = ChatEventType
DIALECT = BedrockDialect()
SECRET = "ABSKQmVkcm9ja0FQSUtleS1leGFtcGxlLWtleQ=="
SIGNATURE = "ErcBCkgIBRABGAIiQHRoaXMgaXMgYSBzaWduYXR1cmU="


# ---------------------------------------------------------------- fixtures (the API reference)


def start() -> dict[str, Any]:
    return {"messageStart": {"role": "assistant"}}


def delta(index: int, **content: Any) -> dict[str, Any]:
    return {"contentBlockDelta": {"contentBlockIndex": index, "delta": content, "p": "abcdef"}}


def stop_block(index: int) -> dict[str, Any]:
    return {"contentBlockStop": {"contentBlockIndex": index}}


def tool_start(index: int, tool_id: str, name: str) -> dict[str, Any]:
    start = {"toolUse": {"toolUseId": tool_id, "name": name}}
    return {"contentBlockStart": {"contentBlockIndex": index, "start": start}}


def stop(reason: str) -> dict[str, Any]:
    return {"messageStop": {"stopReason": reason}}


def metadata(**usage: Any) -> dict[str, Any]:
    usage = {"inputTokens": 20, "outputTokens": 12, "totalTokens": 32, **usage}
    return {"metadata": {"usage": usage, "metrics": {"latencyMs": 415}}}


def full_answer() -> list[dict[str, Any]]:
    """Reasoning with its signature, cited text, then a tool call, as Claude on Bedrock
    streams it."""
    return [
        start(),
        delta(0, reasoningContent={"text": "The user wants "}),
        delta(0, reasoningContent={"text": "the weather."}),
        delta(0, reasoningContent={"signature": SIGNATURE}),
        stop_block(0),
        delta(1, text="Paris is "),
        delta(
            1,
            citation={
                "title": "Weather report",
                "source": "s3://reports/paris.pdf",
                "sourceContent": [{"text": "Paris: sunny"}],
                "location": {"documentChar": {"documentIndex": 0, "start": 3, "end": 15}},
            },
        ),
        delta(1, text="sunny. "),
        stop_block(1),
        tool_start(2, "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "get_weather"),
        delta(2, toolUse={"input": '{"city": '}),
        delta(2, toolUse={"input": '"Paris"}'}),
        stop_block(2),
        stop("tool_use"),
        metadata(cacheReadInputTokens=100, cacheWriteInputTokens=7),
    ]


def body_of(frames: Iterable[Mapping[str, Any]]) -> bytes:
    """The event-stream bytes a provider sends for ``frames``."""
    out = []
    for frame in frames:
        ((kind, payload),) = frame.items()
        if kind.endswith("Exception"):
            fields = dict(payload)
            out.append(exception_message(kind, fields.pop("message"), **fields))
        else:
            out.append(event_message(kind, payload))
    return b"".join(out)


def run(frames: Iterable[Any]) -> tuple[list[ChatEvent], Any]:
    events, stage = feed(DIALECT, frames, end=DIALECT.end_of_stream)
    return events, stage


def of(events: Iterable[ChatEvent], *types: ChatEventType) -> list[ChatEvent]:
    return [event for event in events if event.type in types]


# ---------------------------------------------------------------- events


def test_the_dialect_is_known_by_name() -> None:
    assert isinstance(get_dialect("bedrock"), BedrockDialect)


def test_a_full_answer_becomes_its_events() -> None:
    events, stage = run(full_answer())
    assert [e.type for e in events] == [
        T.THINKING_START,
        T.THINKING_DELTA,
        T.THINKING_DELTA,
        T.THINKING_SIGNATURE,
        T.THINKING_END,
        T.TEXT_START,
        T.TEXT_DELTA,
        T.CITATION,
        T.TEXT_DELTA,
        T.TEXT_END,
        T.TOOL_CALL_START,
        T.TOOL_CALL_ARGS_DELTA,
        T.TOOL_CALL_ARGS_DELTA,
        T.TOOL_CALL_END,
        T.USAGE,
        T.CUSTOM,
    ]
    assert stage.finished and stage.finish_reason == "tool_use" and stage.failure is None
    assert [e.index for e in of(events, T.THINKING_DELTA, T.TEXT_DELTA)] == [0, 0, 1, 1]
    (signature,) = of(events, T.THINKING_SIGNATURE)
    assert signature.text == SIGNATURE
    (end,) = of(events, T.TOOL_CALL_END)
    assert end.tool_call == ToolCall(
        id="tooluse_kZJMlvQmRJ6eAyJE5GIl7Q",
        name="get_weather",
        arguments={"city": "Paris"},
        arguments_str='{"city": "Paris"}',
        index=0,
    )
    (citation,) = of(events, T.CITATION)
    assert citation.citation is not None
    assert citation.citation.title == "Weather report"
    assert citation.citation.url == "s3://reports/paris.pdf"
    assert citation.citation.cited_text == "Paris: sunny"
    assert (citation.citation.start_index, citation.citation.end_index) == (3, 15)
    assert citation.citation.document_index == 0 and citation.citation.type == "documentChar"


def test_usage_counts_cache_reads_and_writes_and_latency_is_a_meta_event() -> None:
    events, _ = run(full_answer())
    (usage,) = of(events, T.USAGE)
    assert usage.usage is not None
    assert usage.usage.prompt_tokens == 20 + 100 + 7
    assert usage.usage.completion_tokens == 12
    assert usage.usage.total_tokens == 32  # as Bedrock gives it
    assert usage.usage.cache_read_input_tokens == 100
    assert usage.usage.cache_creation_input_tokens == 7
    (latency,) = of(events, T.CUSTOM)
    assert latency.type.group.value == "META"
    assert latency.sub_type == "latency" and latency.attrs["latency_ms"] == 415


def test_a_trace_is_a_custom_event() -> None:
    trace = {"guardrail": {"actionReason": "blocked"}}
    frames = [start(), delta(0, text="x"), stop("end_turn"), {"metadata": {"trace": trace}}]
    events, _ = run(frames)
    (custom,) = of(events, T.CUSTOM)
    assert custom.sub_type == "trace" and custom.attrs["guardrail"]["actionReason"] == "blocked"


def test_redacted_reasoning_is_thinking_redacted() -> None:
    data = base64.b64encode(b"\x00opaque").decode()
    events, _ = run(
        [start(), delta(0, reasoningContent={"redactedContent": data}), stop("end_turn")]
    )
    (redacted,) = of(events, T.THINKING_REDACTED)
    assert redacted.text == data and redacted.index == 0


@pytest.mark.parametrize("reason", ["end_turn", "tool_use", "max_tokens", "stop_sequence"])
def test_stop_reasons_are_the_finish_reason(reason: str) -> None:
    events, stage = run([start(), delta(0, text="Hi"), stop(reason), metadata()])
    assert stage.finish_reason == reason and not of(events, T.CONTENT_FILTER)
    assert [e.type for e in events][:3] == [T.TEXT_START, T.TEXT_DELTA, T.TEXT_END]


@pytest.mark.parametrize("reason", ["guardrail_intervened", "content_filtered"])
def test_filtering_stop_reasons_send_content_filter(reason: str) -> None:
    events, stage = run([start(), delta(0, text="Hi"), stop(reason)])
    (flagged,) = of(events, T.CONTENT_FILTER)
    assert flagged.text == reason and flagged.sub_type == reason
    assert stage.finish_reason == reason


EXCEPTIONS = [
    "throttlingException",
    "validationException",
    "modelStreamErrorException",
    "internalServerException",
    "serviceUnavailableException",
]


@pytest.mark.parametrize("kind", EXCEPTIONS)
def test_each_exception_is_a_provider_failure_with_its_type_and_message(kind: str) -> None:
    frames = [start(), delta(0, text="Hi"), {kind: {"message": "Something went wrong"}}]
    events, stage = run(frames)
    failure = stage.failure
    assert isinstance(failure, ProviderError)
    assert str(failure) == "provider error: Something went wrong"
    assert failure.provider_error == {"type": kind, "message": "Something went wrong"}
    assert of(events, T.TEXT_DELTA)[0].text == "Hi"  # what came before is kept


def test_a_model_stream_error_tells_what_the_model_said() -> None:
    exception = {"message": "failed", "originalStatusCode": 424, "originalMessage": "overloaded"}
    _, stage = run([start(), {"modelStreamErrorException": exception}])
    assert str(stage.failure) == ("provider error: failed (the model said 424: overloaded)")


def test_an_error_message_is_a_provider_failure() -> None:
    _, stage = run([start(), {"error": {"code": "InternalFailure", "message": "boom"}}])
    assert str(stage.failure) == "provider error: boom"


def test_unknown_events_and_deltas_are_raw() -> None:
    frames = [
        start(),
        {"somethingNew": {"x": 1}},
        delta(0, hologram={"source": {"bytes": "AAAA"}}),
        {"contentBlockStart": {"contentBlockIndex": 1, "start": {"video": {"format": "mp4"}}}},
        stop("end_turn"),
    ]
    events, stage = run(frames)
    assert [e.raw_type for e in of(events, T.RAW)] == [
        "somethingNew",
        "contentBlockDelta:hologram",
        "contentBlockStart",
    ]
    assert stage.finished


def test_a_stream_without_message_stop_is_truncated() -> None:
    with pytest.raises(ChatProtocolError, match="truncated"):
        replay(body_of([start(), delta(0, text="Hi")]), dialect="bedrock").run()


def test_a_frame_that_is_not_an_object_names_the_frame() -> None:
    with pytest.raises(ChatProtocolError, match="frame 2"):
        feed(DIALECT, [start(), "[1, 2]"])


def test_blocks_left_open_are_closed_after_the_stop() -> None:
    frames = [start(), delta(0, text="a"), tool_start(1, "t1", "f"), stop("tool_use")]
    events, _ = run(frames)
    assert [e.type for e in events][-2:] == [T.TEXT_END, T.TOOL_CALL_END]


def test_a_recorded_tool_loop_is_two_steps() -> None:
    first = [start(), tool_start(0, "t1", "get_weather"), delta(0, toolUse={"input": "{}"}),
             stop_block(0), stop("tool_use"), metadata()]  # fmt: skip
    second = [start(), delta(0, text="Sunny."), stop_block(0), stop("end_turn"), metadata()]
    events = replay(body_of(first + second), dialect="bedrock").pipe(ops.to_list()).run()
    ends = [e for e in events if e.type is T.STEP_END]
    assert [e.step for e in ends] == [0, 1]
    assert ends[0].response.tool_calls[0].name == "get_weather"
    assert events[-1].response.text == "Sunny."


# ---------------------------------------------------------------- done when: botocore agrees


def botocore_answer(body: bytes) -> dict[str, Any]:
    """Final text, reasoning, tool calls and usage folded from botocore's events, the way
    the Converse documentation's examples fold them."""
    text: list[str] = []
    reasoning: list[str] = []
    tools: dict[int, dict[str, Any]] = {}
    usage: dict[str, int] = {}
    stop_reason = None
    for event in botocore_events(body):
        if "contentBlockStart" in event:
            start = event["contentBlockStart"]
            tool_use = start["start"]["toolUse"]
            tools[start["contentBlockIndex"]] = {**tool_use, "input": ""}
        elif "contentBlockDelta" in event:
            block = event["contentBlockDelta"]
            change = block["delta"]
            if "text" in change:
                text.append(change["text"])
            if "text" in change.get("reasoningContent", {}):
                reasoning.append(change["reasoningContent"]["text"])
            if "toolUse" in change:
                tools[block["contentBlockIndex"]]["input"] += change["toolUse"]["input"]
        elif "messageStop" in event:
            stop_reason = event["messageStop"]["stopReason"]
        elif "metadata" in event:
            usage = event["metadata"]["usage"]
    calls = [(t["toolUseId"], t["name"], json.loads(t["input"])) for t in tools.values()]
    return {
        "text": "".join(text),
        "reasoning": "".join(reasoning),
        "tool_calls": calls,
        "usage": usage,
        "stop_reason": stop_reason,
    }


def test_replaying_a_binary_recording_agrees_with_botocore(tmp_path: Path) -> None:
    path = tmp_path / "converse-stream.bin"
    path.write_bytes(body_of(full_answer()))
    response = replay(path, dialect="bedrock").pipe(final_response()).run()
    expected = botocore_answer(path.read_bytes())
    assert response.text == expected["text"] == "Paris is sunny. "
    assert response.thinking == expected["reasoning"] == "The user wants the weather."
    calls = [(c.id, c.name, dict(c.arguments)) for c in response.tool_calls]
    assert calls == expected["tool_calls"]
    usage = expected["usage"]
    assert response.usage.completion_tokens == usage["outputTokens"]
    assert response.usage.total_tokens == usage["totalTokens"]
    assert response.usage.cache_read_input_tokens == usage["cacheReadInputTokens"]
    assert response.usage.cache_creation_input_tokens == usage["cacheWriteInputTokens"]
    assert response.usage.prompt_tokens == (
        usage["inputTokens"] + usage["cacheReadInputTokens"] + usage["cacheWriteInputTokens"]
    )
    assert response.finish_reason == expected["stop_reason"]


def test_the_embedded_providers_bytes_agree_with_botocore() -> None:
    from recorded import weather_bodies

    first, second = weather_bodies("bedrock", "18°C and sunny")
    for body in (first, second):
        response = replay(body, dialect="bedrock").pipe(final_response()).run()
        expected = botocore_answer(body)
        assert (response.text, response.thinking) == (expected["text"], expected["reasoning"])
        calls = [(c.id, c.name, dict(c.arguments)) for c in response.tool_calls]
        assert calls == expected["tool_calls"]
        assert response.usage.prompt_tokens == expected["usage"]["inputTokens"]


@pytest.mark.parametrize("kind", EXCEPTIONS)
def test_exceptions_agree_with_botocore(kind: str) -> None:
    body = body_of([start(), delta(0, text="Hi"), {kind: {"message": "Try again later"}}])
    with pytest.raises(EventStreamError) as theirs:
        list(botocore_events(body))
    with pytest.raises(ProviderError) as ours:
        replay(body, dialect="bedrock").run()
    assert theirs.value.response["Error"]["Code"] == ours.value.provider_error["type"]
    assert theirs.value.response["Error"]["Message"] == ours.value.provider_error["message"]


# ---------------------------------------------------------------- request building

URL = "https://bedrock-runtime.us-west-2.amazonaws.com"
MODEL = "anthropic.claude-sonnet-4-20250514-v1:0"


def weather_spec() -> ToolSpec:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    return ToolSpec(name="get_weather", description="Weather in a city", parameters=schema)


def test_the_url_is_the_models_converse_stream_endpoint() -> None:
    assert converse_stream_url(URL, MODEL) == (
        f"{URL}/model/anthropic.claude-sonnet-4-20250514-v1:0/converse-stream"
    )
    arn = "arn:aws:bedrock:us-west-2:123456789012:inference-profile/us.anthropic.x-v1:0"
    assert converse_stream_url(URL + "/", arn) == (
        f"{URL}/model/arn:aws:bedrock:us-west-2:123456789012:inference-profile%2Fus.anthropic"
        ".x-v1:0/converse-stream"
    )
    endpoint = f"{URL}/model/m/converse-stream"
    assert converse_stream_url(endpoint, "other") == endpoint


def test_the_converse_body() -> None:
    call = ToolCall(id="tooluse_1", name="get_weather", arguments={"city": "Paris"})
    request = ChatRequest(
        model=MODEL,
        messages=[
            SystemMessage(text="Be brief."),
            SystemMessage(text="Use tools."),
            UserMessage(
                text="Weather in Paris?", blocks=(ImageBlock(data="iVBO", mime_type="image/png"),)
            ),
            AssistantMessage(
                text="Let me look.",
                thinking="I should call the tool.",
                tool_calls=(call,),
                metadata={"thinking_signature": SIGNATURE},
            ),
            ToolMessage(tool_call_id="tooluse_1", name="get_weather", content="18°C"),
            ToolMessage(tool_call_id="tooluse_2", name="get_weather", content="no", is_error=True),
            UserMessage(text="And tomorrow?"),
        ],
        tools=[weather_spec()],
        options={
            "max_tokens": 512,
            "temperature": 0.2,
            "top_p": 0.9,
            "stop": "END",
            "top_k": 5,
            "tool_choice": {"auto": {}},
        },
    )
    http = DIALECT.build_request(request, api_url=URL, api_key=SECRET)
    assert http.body == {
        "system": [{"text": "Be brief."}, {"text": "Use tools."}],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"image": {"format": "png", "source": {"bytes": "iVBO"}}},
                    {"text": "Weather in Paris?"},
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {
                        "reasoningContent": {
                            "reasoningText": {
                                "text": "I should call the tool.",
                                "signature": SIGNATURE,
                            }
                        }
                    },
                    {"text": "Let me look."},
                    {
                        "toolUse": {
                            "toolUseId": "tooluse_1",
                            "name": "get_weather",
                            "input": {"city": "Paris"},
                        }
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "18°C"}]}},
                    {
                        "toolResult": {
                            "toolUseId": "tooluse_2",
                            "content": [{"text": "no"}],
                            "status": "error",
                        }
                    },
                    {"text": "And tomorrow?"},
                ],
            },
        ],
        "toolConfig": {
            "tools": [
                {
                    "toolSpec": {
                        "name": "get_weather",
                        "description": "Weather in a city",
                        "inputSchema": {"json": dict(weather_spec().parameters)},
                    }
                }
            ],
            "toolChoice": {"auto": {}},
        },
        "inferenceConfig": {
            "maxTokens": 512,
            "temperature": 0.2,
            "topP": 0.9,
            "stopSequences": ["END"],
        },
        "additionalModelRequestFields": {"top_k": 5},
    }


def test_the_body_is_what_botocore_would_serialize() -> None:
    """botocore's own validator accepts the body as ConverseStream's input."""
    from botocore.validate import ParamValidator

    request = ChatRequest(
        model=MODEL,
        messages=[SystemMessage(text="s"), UserMessage(text="hi")],
        tools=[weather_spec()],
        options={
            "maxTokens": 10,
            "guardrailConfig": {"guardrailIdentifier": "g", "guardrailVersion": "1"},
        },
    )
    body = dict(DIALECT.build_request(request, api_url=URL, api_key=SECRET).body)
    model = botocore.session.get_session().get_service_model("bedrock-runtime")
    shape = model.operation_model("ConverseStream").input_shape
    report = ParamValidator().validate({**body, "modelId": MODEL}, shape)
    assert not report.has_errors(), report.generate_report()


def test_an_api_key_is_a_bearer_token() -> None:
    request = ChatRequest(model=MODEL, messages=[UserMessage(text="hi")])
    http = DIALECT.build_request(request, api_url=URL, api_key=SECRET, headers={"x-extra": "1"})
    assert http.url == f"{URL}/model/{MODEL}/converse-stream"
    assert dict(http.headers) == {
        "Content-Type": "application/json",
        "Accept": "application/vnd.amazon.eventstream",
        "Authorization": f"Bearer {SECRET}",
        "x-extra": "1",
    }
    assert SECRET not in repr(http)


def test_without_a_key_the_request_is_signed_with_sigv4() -> None:
    request = ChatRequest(model=MODEL, messages=[UserMessage(text="hi")])
    http = DIALECT.build_request(request, api_url=URL, headers={"x-api-key": "hidden"})
    authorization = http.headers["Authorization"]
    assert authorization.startswith("AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/")
    assert "/us-west-2/bedrock/aws4_request" in authorization
    assert "SignedHeaders=accept;content-type;host;x-amz-date," in authorization
    assert "x-api-key" not in authorization.split("SignedHeaders=")[1]  # never signed, logged
    assert http.headers["X-Amz-Date"] and http.headers["x-api-key"] == "hidden"
    # The signature is botocore's over the very bytes that are sent.
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    again = AWSRequest(
        method="POST",
        url=http.url,
        data=http.body_bytes(),
        headers={
            k: v for k, v in http.headers.items() if k in ("Content-Type", "Accept", "X-Amz-Date")
        },
    )
    signer = SigV4Auth(
        Credentials("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
        "bedrock",
        "us-west-2",
    )
    again.context["timestamp"] = http.headers["X-Amz-Date"]
    signer.add_auth(again)
    assert again.headers["Authorization"] == authorization


def test_the_region_comes_from_the_host_else_the_configuration() -> None:
    assert (
        aws_auth.region_of("https://bedrock-runtime.eu-central-1.amazonaws.com") == "eu-central-1"
    )
    assert aws_auth.region_of("https://bedrock-runtime-fips.us-east-2.amazonaws.com") == "us-east-2"
    assert aws_auth.region_of("http://127.0.0.1:8000") == "us-east-1"  # AWS_REGION (conftest)


def test_without_botocore_signing_says_which_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    aws_auth._session.cache_clear()
    monkeypatch.setitem(sys.modules, "botocore.session", None)
    try:
        request = ChatRequest(model=MODEL, messages=[UserMessage(text="hi")])
        with pytest.raises(ChatError, match=r"pip install 'solon-events\[bedrock\]'"):
            DIALECT.build_request(request, api_url=URL)
        assert DIALECT.secrets() == []
        # an API key needs no botocore
        assert DIALECT.build_request(request, api_url=URL, api_key=SECRET).headers
    finally:
        aws_auth._session.cache_clear()


def test_without_credentials_signing_says_how_to_give_them(monkeypatch: pytest.MonkeyPatch) -> None:
    aws_auth._session.cache_clear()
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    try:
        request = ChatRequest(model=MODEL, messages=[UserMessage(text="hi")])
        with pytest.raises(ChatError, match="no AWS credentials found"):
            DIALECT.build_request(request, api_url=URL)
    finally:
        aws_auth._session.cache_clear()


def test_the_model_never_shows_the_aws_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    aws_auth._session.cache_clear()
    monkeypatch.setenv("AWS_SESSION_TOKEN", "IQoJb3JpZ2luX2VjEXAMPLETOKEN0123456789")
    try:
        with ChatModel(URL, MODEL, dialect="bedrock") as model:
            redactor = model._redactor
            for secret in (
                "AKIAIOSFODNN7EXAMPLE",
                "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                "IQoJb3JpZ2luX2VjEXAMPLETOKEN0123456789",
            ):
                assert secret not in redactor.text(f"it said {secret} and {secret[:12]}")
            assert "AKIAIOSFODNN7EXAMPLE" not in repr(model)
            http = model.build_http_request(
                ChatRequest(model=MODEL, messages=[UserMessage(text="hi")])
            )
            assert http.headers["X-Amz-Security-Token"].startswith("IQoJ")
            assert "IQoJ" not in repr(http)
    finally:
        aws_auth._session.cache_clear()


def test_signing_logs_no_credential_at_debug_level(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """botocore logs its canonical request (each signed header's value, the session token
    included) and the signature at DEBUG: none of it may reach a log line (#29.4)."""
    token = "IQoJb3JpZ2luX2VjEXAMPLETOKEN0123456789"
    aws_auth._session.cache_clear()
    monkeypatch.setenv("AWS_SESSION_TOKEN", token)
    caplog.set_level(logging.DEBUG)  # the root logger: every logger's records, captured
    try:
        with ChatModel(URL, MODEL, dialect="bedrock") as model:
            http = model.build_http_request(
                ChatRequest(model=MODEL, messages=[UserMessage(text="hi")])
            )
    finally:
        aws_auth._session.cache_clear()
    assert http.headers["X-Amz-Security-Token"] == token
    assert "x-amz-security-token" in http.headers["Authorization"]  # signed all the same
    signature = http.headers["Authorization"].rsplit("Signature=", 1)[1]
    logged = "\n".join(f"{record.name} {record.getMessage()}" for record in caplog.records)
    assert "botocore" in logged  # botocore did log at DEBUG (its credential lookup)
    for secret in (token, "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", signature):
        assert secret not in logged


def test_the_signers_silence_is_its_own(caplog: pytest.LogCaptureFixture) -> None:
    """Signing silences botocore's signer for its own signature only: the same logger still
    logs for anyone else (another thread's boto3 client, a test's own signer)."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    caplog.set_level(logging.DEBUG)
    aws_auth.sign(URL + "/model/m/converse-stream", b"{}", {})
    assert not [r for r in caplog.records if r.name == "botocore.auth"]
    signer = SigV4Auth(Credentials("AKIDEXAMPLE", "not-ours-0123456789"), "bedrock", "us-west-2")
    signer.add_auth(AWSRequest(method="POST", url=URL, data=b"{}"))
    assert [r for r in caplog.records if r.name == "botocore.auth"]


# ---------------------------------------------------------------- over real HTTP


@tool
def get_weather(city: str) -> str:
    """Current weather in a city.

    Args:
        city: The city's name.
    """
    return "18°C and sunny"


@pytest.mark.parametrize("auth", ["api key", "sigv4"])
def test_the_tool_loop_runs_against_the_embedded_provider(server: Any, auth: str) -> None:
    before = len(server.requests)
    key = {"api_key": SECRET} if auth == "api key" else {}
    with ChatModel(server.url, "weather", dialect="bedrock", **key) as model:
        events = (
            model.prompt("Weather in Paris?").tools(get_weather).stream().pipe(ops.to_list()).run()
        )
    response = events[-1].response
    assert response.text == "It is 18°C and sunny in Paris right now."
    assert any(e.type is T.THINKING_DELTA for e in events)
    assert [e.text for e in events if e.type is T.TOOL_RESULT] == ["18°C and sunny"]
    assert [e.sub_type for e in events if e.type is T.CUSTOM] == ["latency", "latency"]
    first, second = server.requests[before:]
    assert first.path == second.path == "/model/weather/converse-stream"
    scheme = "Bearer " if auth == "api key" else "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/"
    assert first.headers["Authorization"].startswith(scheme)
    assert first.body["toolConfig"]["tools"][0]["toolSpec"]["name"] == "get_weather"
    results = [b["toolResult"] for b in second.body["messages"][-1]["content"]]
    assert results[0]["content"] == [{"text": "18°C and sunny"}]
    assert second.body["messages"][1]["content"][-1]["toolUse"]["input"] == {"city": "Paris"}


def test_an_in_stream_exception_over_http_is_a_provider_error(server: Any) -> None:
    with (
        ChatModel(server.url, "error-frame", dialect="bedrock", api_key=SECRET) as model,
        pytest.raises(ProviderError, match="The engine is currently overloaded") as raised,
    ):
        model.prompt("hi").call()
    assert raised.value.partial_response is not None


def test_a_body_that_is_not_an_event_stream_says_so(server: Any) -> None:
    with (
        ChatModel(server.url, "echo-key:text", dialect="bedrock", api_key=SECRET) as model,
        pytest.raises(ChatProtocolError, match="not an AWS event stream") as raised,
    ):
        model.prompt("hi").call()
    assert SECRET not in str(raised.value) and "***" in str(raised.value)


def test_a_recording_made_live_replays_the_same(server: Any, tmp_path: Path) -> None:
    from solon_events.recording import record

    out = tmp_path / "bedrock.jsonl"
    with ChatModel(server.url, "weather", dialect="bedrock", api_key=SECRET) as model:
        live = record(model.prompt("Weather in Paris?").tools(get_weather), out)
    assert orjson.loads(out.read_bytes().splitlines()[2])["json"] == {
        "messageStart": {"role": "assistant"}
    }
    assert replay(out, dialect="auto").pipe(final_response()).run() == live


@pytest.mark.parametrize(
    "options",
    [
        {"tool_choice": {"auto": {}}},
        {"toolChoice": {"any": {}}},
        {"toolConfig": {"tools": []}},
        {"toolConfig": {"toolChoice": {"auto": {}}}},
    ],
)
def test_a_tool_config_without_tools_is_never_sent(options: dict[str, Any]) -> None:
    # #42: a tool choice with no tool offered made toolConfig.tools [], which Converse
    # refuses (botocore's own validator says so: its tools have at least one member)
    from botocore.validate import ParamValidator

    request = ChatRequest(model=MODEL, messages=[UserMessage(text="hi")], options=options)
    body = dict(DIALECT.build_request(request, api_url=URL, api_key=SECRET).body)
    assert "toolConfig" not in body
    model = botocore.session.get_session().get_service_model("bedrock-runtime")
    shape = model.operation_model("ConverseStream").input_shape
    report = ParamValidator().validate({**body, "modelId": MODEL}, shape)
    assert not report.has_errors(), report.generate_report()
    if "toolConfig" in options:  # the caller's own config: sent as given, merged
        return
    with_tools = attrs.evolve(request, tools=(weather_spec(),))
    config = dict(DIALECT.build_request(with_tools, api_url=URL, api_key=SECRET).body)["toolConfig"]
    assert [t["toolSpec"]["name"] for t in config["tools"]] == ["get_weather"]
