"""Bedrock ConverseStream's server tools and images, as botocore's ``bedrock-runtime``
service model defines them: ``contentBlockStart`` ``toolUse`` with ``type:
"server_tool_use"``, ``toolResult`` (``toolUseId``, ``type``, ``status``) and ``image``
(``format``); ``contentBlockDelta`` ``toolResult`` (a list of ``text`` / ``json`` items) and
``image`` (``source.bytes`` base64 or ``source.s3Location``, or an ``error``).

The frames below are written from that model; the round trip runs the embedded provider's
Bedrock encoder (any script of server tools, images and text, by hypothesis) through the
binary event stream and the dialect, and checks the events against botocore's own decoding.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterable
from typing import Any

from botocore_stream import botocore_events
from dialect_runs import feed
from hypothesis import given
from hypothesis import strategies as st
from reactivex import operators as ops

from solon_events import ChatEventFilter, ChatModel, final_response, replay
from solon_events.devserver import RunningServer
from solon_events.devserver.encoders import BedrockWire
from solon_events.devserver.scenarios import TINY_PNG
from solon_events.devserver.turns import (
    Content,
    Finish,
    ImagePart,
    ServerToolPart,
    Text,
    TurnUsage,
)
from solon_events.dialects.bedrock import BedrockDialect
from solon_events.event_model.events import ChatEvent, ChatEventType
from solon_events.event_model.results import ImageBlock

T = ChatEventType
DIALECT = BedrockDialect()
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(40))


def start() -> dict[str, Any]:
    return {"messageStart": {"role": "assistant"}}


def block_start(index: int, **start: Any) -> dict[str, Any]:
    return {"contentBlockStart": {"contentBlockIndex": index, "start": start}}


def delta(index: int, **content: Any) -> dict[str, Any]:
    return {"contentBlockDelta": {"contentBlockIndex": index, "delta": content}}


def stop_block(index: int) -> dict[str, Any]:
    return {"contentBlockStop": {"contentBlockIndex": index}}


def stop(reason: str = "end_turn") -> dict[str, Any]:
    return {"messageStop": {"stopReason": reason}}


def run(frames: Iterable[Any]) -> tuple[list[ChatEvent], Any]:
    return feed(DIALECT, frames, end=DIALECT.end_of_stream)


def of(events: Iterable[ChatEvent], *types: ChatEventType) -> list[ChatEvent]:
    return [event for event in events if event.type in types]


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def server_search(status: str = "success") -> list[dict[str, Any]]:
    return [
        block_start(
            0,
            toolUse={"toolUseId": "tooluse_srv1", "name": "web_search", "type": "server_tool_use"},
        ),
        delta(0, toolUse={"input": '{"query": '}),
        delta(0, toolUse={"input": '"Paris weather"}'}),
        stop_block(0),
        block_start(
            1, toolResult={"toolUseId": "tooluse_srv1", "type": "web_search", "status": status}
        ),
        delta(1, toolResult=[{"text": "Paris: "}]),
        delta(1, toolResult=[{"text": "sunny"}, {"json": {"url": "https://meteo.example"}}]),
        stop_block(1),
    ]


def test_a_server_tool_call_and_its_result_are_server_tool_events_not_a_call_to_run() -> None:
    events, stage = run([start(), *server_search(), delta(2, text="Sunny."), stop_block(2), stop()])
    assert not of(events, T.TOOL_CALL_START, T.TOOL_CALL_ARGS_DELTA, T.TOOL_CALL_END, T.RAW)
    [opened] = of(events, T.SERVER_TOOL_START)
    assert (opened.tool_call_id, opened.sub_type, opened.index) == ("tooluse_srv1", "web_search", 0)
    assert opened.tool_call is not None and opened.tool_call.name == "web_search"
    args = of(events, T.SERVER_TOOL_ARGS_DELTA)
    assert "".join(e.text for e in args) == '{"query": "Paris weather"}'
    assert {(e.tool_call_id, e.sub_type) for e in args} == {("tooluse_srv1", "web_search")}
    [result] = of(events, T.SERVER_TOOL_RESULT)
    assert (result.tool_call_id, result.sub_type, result.index) == ("tooluse_srv1", "web_search", 1)
    assert result.text == "Paris: sunny"
    assert result.attr("is_error") is False
    assert result.tool_call is not None
    assert result.tool_call.arguments == {"query": "Paris weather"}
    assert result.raw["content"] == [
        {"text": "Paris: "},
        {"text": "sunny"},
        {"json": {"url": "https://meteo.example"}},
    ]
    assert result.raw["status"] == "success"
    assert stage.finished


def test_a_failed_server_tool_result_says_so() -> None:
    events, _ = run([start(), *server_search(status="error"), stop()])
    [result] = of(events, T.SERVER_TOOL_RESULT)
    assert result.attr("is_error") is True


def test_an_image_block_is_media_partial_per_delta_then_media_done() -> None:
    first, second = PNG[:20], PNG[20:]
    frames = [
        start(),
        block_start(0, image={"format": "png"}),
        delta(0, image={"source": {"bytes": b64(first)}}),
        delta(0, image={"source": {"bytes": b64(second)}}),
        stop_block(0),
        stop(),
    ]
    events, _ = run(frames)
    assert not of(events, T.RAW)
    partial = of(events, T.MEDIA_PARTIAL)
    assert [base64.b64decode(e.block.data) for e in partial] == [first, second]
    [done] = of(events, T.MEDIA_DONE)
    assert isinstance(done.block, ImageBlock)
    assert base64.b64decode(done.block.data or "") == PNG
    assert done.block.mime_type == "image/png" and done.index == 0
    assert all(e.block.mime_type == "image/png" for e in partial)


def test_an_image_in_s3_is_its_uri_and_an_image_error_is_told() -> None:
    uri = "s3://bucket/images/out.webp"
    frames = [
        start(),
        block_start(0, image={"format": "webp"}),
        delta(0, image={"source": {"s3Location": {"uri": uri}}}),
        stop_block(0),
        block_start(1, image={"format": "jpeg"}),
        delta(1, image={"error": {"message": "the image could not be made"}}),
        stop_block(1),
        stop(),
    ]
    events, _ = run(frames)
    done = of(events, T.MEDIA_DONE)
    assert done[0].block == ImageBlock(url=uri, mime_type="image/webp")
    assert done[1].block is None
    assert done[1].attr("error") == "the image could not be made"


def test_a_response_keeps_the_image_among_its_blocks_and_calls_no_server_tool() -> None:
    frames = [
        start(),
        *server_search(),
        delta(2, text="Here it is: "),
        stop_block(2),
        block_start(3, image={"format": "png"}),
        delta(3, image={"source": {"bytes": b64(PNG)}}),
        stop_block(3),
        stop(),
    ]
    body = b"".join(BedrockWire("m", TurnUsage()).frame_bytes(f) for f in frames)
    response = replay(body, dialect="bedrock").pipe(final_response()).run()
    assert response.tool_calls == ()
    assert response.text == "Here it is: "
    message = response.message
    assert message is not None
    [text, image] = message.blocks
    assert text.text == "Here it is: "
    assert isinstance(image, ImageBlock) and base64.b64decode(image.data or "") == PNG


# ---------------------------------------------------------------- the embedded provider's encoder

USAGE = TurnUsage(prompt=9, completion=4)

texts = st.text(min_size=1, max_size=12)
server_tools = st.builds(
    lambda name, query, cut, result, failed: ServerToolPart(
        name,
        _split(json.dumps({"query": query}), cut),
        result,
        failed,
    ),
    st.sampled_from(["web_search", "code_interpreter", "nova_grounding"]),
    st.text(max_size=20),
    st.integers(min_value=1, max_value=8),
    st.text(max_size=30),
    st.booleans(),
)
images = st.builds(
    ImagePart,
    st.binary(min_size=1, max_size=120),
    st.sampled_from(["png", "jpeg", "gif", "webp"]),
    st.integers(min_value=1, max_value=6),
)
scripts = st.lists(st.one_of(texts.map(Text), server_tools, images), min_size=1, max_size=6).map(
    lambda parts: [*parts, Finish("stop")]
)


def _split(text: str, size: int) -> tuple[str, ...]:
    return tuple(text[at : at + size] for at in range(0, len(text), size))


def encoded(script: list[Content]) -> bytes:
    wire = BedrockWire("test-model", USAGE)
    return b"".join(wire.frame_bytes(frame) for part in script for frame in wire.encode(part))


@given(scripts)
def test_server_tools_and_images_round_trip_and_agree_with_botocore(
    script: list[Content],
) -> None:
    body = encoded(script)
    events: list[ChatEvent] = []
    errors: list[Exception] = []
    replay(body, dialect="bedrock", event_filter=ChatEventFilter.all()).subscribe(
        events.append, errors.append
    )
    assert errors == []
    assert not of(events, T.RAW, T.TOOL_CALL_START)
    tools = [p for p in script if isinstance(p, ServerToolPart)]
    pictures = [p for p in script if isinstance(p, ImagePart)]

    starts = of(events, T.SERVER_TOOL_START)
    results = of(events, T.SERVER_TOOL_RESULT)
    assert [e.sub_type for e in starts] == [p.name for p in tools]
    assert [e.tool_call_id for e in results] == [e.tool_call_id for e in starts]
    assert len({e.tool_call_id for e in starts}) == len(starts)
    for part, begun, result in zip(tools, starts, results, strict=True):
        fragments = [
            e.text
            for e in of(events, T.SERVER_TOOL_ARGS_DELTA)
            if e.tool_call_id == begun.tool_call_id
        ]
        assert tuple(fragments) == part.fragments
        assert result.tool_call is not None
        assert result.tool_call.arguments == json.loads("".join(part.fragments))
        assert (result.text, result.attr("is_error")) == (part.result, part.is_error)

    done = of(events, T.MEDIA_DONE)
    assert [(base64.b64decode(e.block.data), e.block.mime_type) for e in done] == [
        (p.data, f"image/{p.format}") for p in pictures
    ]
    partial = of(events, T.MEDIA_PARTIAL)
    assert b"".join(base64.b64decode(e.block.data) for e in partial) == b"".join(
        p.data for p in pictures
    )

    end = events[-1]
    assert end.type is T.RESPONSE_END and end.response is not None
    response = end.response
    assert response.tool_calls == ()
    assert response.text == "".join(p.text for p in script if isinstance(p, Text))
    assert response.message is not None
    assert [b for b in response.message.blocks if isinstance(b, ImageBlock)] == [
        e.block for e in done
    ]

    # botocore reads the same bytes as the same blocks.
    folded = _botocore_blocks(body)
    assert folded["server"] == [(p.name, "".join(p.fragments)) for p in tools]
    assert folded["results"] == [
        ([{"text": p.result}], "error" if p.is_error else "success") for p in tools
    ]
    assert folded["images"] == [(p.format, p.data) for p in pictures]


def _botocore_blocks(body: bytes) -> dict[str, list[Any]]:
    """Server tool calls, results and images folded from botocore's decoding."""
    opened: dict[int, dict[str, Any]] = {}
    folded: dict[str, list[Any]] = {"server": [], "results": [], "images": []}
    for event in botocore_events(body):
        if "contentBlockStart" in event:
            block = event["contentBlockStart"]
            opened[block["contentBlockIndex"]] = {"start": block["start"], "parts": []}
        elif "contentBlockDelta" in event:
            block = event["contentBlockDelta"]
            if block["contentBlockIndex"] in opened:
                opened[block["contentBlockIndex"]]["parts"].append(block["delta"])
        elif "contentBlockStop" in event:
            block = opened.pop(event["contentBlockStop"]["contentBlockIndex"], None)
            if block is not None:
                _fold(folded, block["start"], block["parts"])
    return folded


def _fold(folded: dict[str, list[Any]], start: dict[str, Any], parts: list[Any]) -> None:
    if start.get("toolUse", {}).get("type") == "server_tool_use":
        text = "".join(p["toolUse"]["input"] for p in parts)
        folded["server"].append((start["toolUse"]["name"], text))
    elif "toolResult" in start:
        items = [item for p in parts for item in p["toolResult"]]
        folded["results"].append((items, start["toolResult"]["status"]))
    elif "image" in start:
        data = b"".join(p["image"]["source"]["bytes"] for p in parts)  # bytes: botocore decodes
        folded["images"].append((start["image"]["format"], data))


def test_the_media_scenario_over_http_calls_no_server_tool(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    model = make_model(server, "media", dialect="bedrock", api_key="key")
    events = model.prompt("Show me Paris").stream().pipe(ops.to_list()).run()
    end = events[-1]
    assert end.type is T.RESPONSE_END and end.response is not None
    response = end.response
    assert response.text == "Here is Paris today: 18°C and sunny."
    assert response.tool_calls == ()
    [result] = of(events, T.SERVER_TOOL_RESULT)
    assert result.text == "Paris: 18°C and sunny" and result.sub_type == "web_search"
    assert len(of(events, T.MEDIA_PARTIAL)) == 3
    assert response.message is not None
    blocks = response.message.blocks
    assert [type(b).__name__ for b in blocks] == ["TextBlock", "ImageBlock", "TextBlock"]
    assert base64.b64decode(blocks[1].data) == TINY_PNG
