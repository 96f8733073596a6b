"""A whole tool loop in each of the two recorded vocabularies, over HTTP on 127.0.0.1.

A small aiohttp app answers each POST with the next recorded stream of ``tests/recordings``
(as the provider sends it: SSE with ``event:`` lines) and keeps the request bodies. A
``ChatModel`` in the dialect runs the recorded tool calls with real tools, then asks again:
the second request must carry the conversation in the provider's own terms (the calls, the
thinking the provider wants back, each result paired with its call), and the final answer
is the second recording's text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from aiohttp import web
from sdk_oracles import RECORDINGS
from serving import serving_in_thread

from solon_events import ChatModel, tool


def _sse(path: Path, key: str) -> bytes:
    """The recording as SSE, each event named by the payload's ``key``."""
    out = []
    for line in path.read_bytes().splitlines():
        if line.strip():
            name = orjson.loads(line)[key].encode()
            out.append(b"event: " + name + b"\ndata: " + line + b"\n\n")
    return b"".join(out)


def _app(bodies: list[bytes], requests: list[dict[str, Any]]) -> web.Application:
    async def answer(request: web.Request) -> web.StreamResponse:
        requests.append(await request.json())
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(bodies[len(requests) - 1])
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post("/v2/chat", answer)
    app.router.add_post("/v1beta/interactions", answer)
    return app


@tool
def weather(location: str) -> str:
    """The weather in a place."""
    return f"Sunny in {location}"


@tool
def cityAttractions(city: str) -> str:
    """What to see in a city."""
    return f"The bridge of {city}"


@tool
def getWeather(location: str) -> str:
    """The weather in a place."""
    return "27C and sunny"


def test_a_cohere_tool_loop() -> None:
    folder = RECORDINGS / "cohere"
    bodies = [
        _sse(folder / f"{name}.chunks.txt", "type") for name in ("cohere-tool-call", "cohere-text")
    ]
    requests: list[dict[str, Any]] = []
    with (
        serving_in_thread(_app(bodies, requests)) as url,
        ChatModel(f"{url}/v2/chat", "command-a", api_key="co-test", dialect="cohere") as model,
    ):
        prompt = model.prompt("Weather and sights in San Francisco?")
        answer = prompt.tools(weather, cityAttractions).call()
    assert answer.text == "The capital of France is Paris."
    first, second = requests
    assert [t["function"]["name"] for t in first["tools"]] == ["weather", "cityAttractions"]
    user, assistant, *results = second["messages"]
    assert user == {"role": "user", "content": "Weather and sights in San Francisco?"}
    assert assistant["tool_plan"].startswith("I will use the weather tool")
    assert [c["id"] for c in assistant["tool_calls"]] == [
        "weather_e8p4pn45zt0t",
        "cityAttractions_pyxssbwnq9fq",
    ]
    assert orjson.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {
        "location": "San Francisco"
    }
    assert results == [
        {
            "role": "tool",
            "tool_call_id": "weather_e8p4pn45zt0t",
            "content": "Sunny in San Francisco",
        },
        {
            "role": "tool",
            "tool_call_id": "cityAttractions_pyxssbwnq9fq",
            "content": "The bridge of San Francisco",
        },
    ]


def test_an_interactions_tool_loop() -> None:
    folder = RECORDINGS / "google-interactions"
    names = ("tool-call-step1", "tool-call-step2")
    bodies = [_sse(folder / f"{name}.chunks.txt", "event_type") for name in names]
    step1 = [
        orjson.loads(line)
        for line in (folder / "tool-call-step1.chunks.txt").read_bytes().splitlines()
    ]
    signature = next(f["delta"]["signature"] for f in step1 if f.get("delta", {}).get("signature"))
    requests: list[dict[str, Any]] = []
    with (
        serving_in_thread(_app(bodies, requests)) as url,
        ChatModel(
            f"{url}/v1beta", "gemini-2.5-flash", api_key="g-test", dialect="google-interactions"
        ) as model,
    ):
        answer = model.prompt("Weather in San Francisco?").tools(getWeather).call()
    assert answer.text.startswith("The weather in San Francisco right now is sunny")
    assert answer.finish_reason == "completed"
    first, second = requests
    assert first["tools"][0]["name"] == "getWeather" and first["stream"] is True
    assert second["input"] == [
        {"type": "user_input", "content": [{"type": "text", "text": "Weather in San Francisco?"}]},
        {"type": "thought", "signature": signature},
        {
            "type": "function_call",
            "id": "61nzpsv4",
            "name": "getWeather",
            "arguments": {"location": "San Francisco"},
        },
        {
            "type": "function_result",
            "call_id": "61nzpsv4",
            "name": "getWeather",
            "result": "27C and sunny",
        },
    ]
