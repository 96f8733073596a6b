"""The gateway checked by the protocols' real clients: the Vercel AI SDK's own UI message
stream reader, AG-UI's HttpAgent with its event verification, and the chat page in
headless Chromium. The npm packages are pinned by ``tests/clients/package-lock.json``;
these tests skip only when Node.js is absent or npm cannot install them (no registry), saying
why (the Chromium one also when Chromium is absent, outside CI)."""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import reactivex
import serving
from aiohttp import web
from final_texts import FINAL, STREAMED, rewritten_frames
from partial_values import long_args_frames
from reactivex import operators as ops
from redis_server import RedisServer, redis_server, redis_url  # noqa: F401  (fixtures)
from serving import (
    SHOW_MAP,
    chromium_or_skip,
    node_or_skip,
    run_node,
    serve_command,
    serving_in_thread,
)

from solon_events import ChatEventFilter, ChatModel, ChatResponse, replay
from solon_events.adapters.vercel import (
    VERCEL_DONE,
    VERCEL_HEADERS,
    to_vercel,
    ui_text,
    vercel_sse,
)
from solon_events.cli import get_weather
from solon_events.devserver import DevServer, RunningServer
from solon_events.devserver.scenarios import report_arguments
from solon_events.serve import create_app

QUESTION = "What is the weather in Paris?"
SCREENSHOTS = Path(__file__).resolve().parent / "clients" / "screenshots"


def test_with_npm_unable_to_reach_its_registry_the_clients_skip_saying_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    node = node_or_skip()
    clients = tmp_path / "clients"  # a checkout whose client packages are not installed yet
    clients.mkdir()
    for name in ("package.json", "package-lock.json"):
        shutil.copy(serving.CLIENTS / name, clients / name)
    bin_dir = tmp_path / "bin"  # node as it is, and an npm that cannot reach its registry
    bin_dir.mkdir()
    (bin_dir / "node").symlink_to(node)
    runs = tmp_path / "npm-runs"
    npm = bin_dir / "npm"
    npm.write_text(
        "#!/bin/sh\n"
        f'echo "$@" >> {runs}\n'
        "echo 'npm error code ECONNREFUSED' >&2\n"
        "echo 'npm error network request to https://registry.npmjs.org/ai failed' >&2\n"
        "exit 1\n"
    )
    npm.chmod(0o755)
    monkeypatch.setattr(serving, "CLIENTS", clients)
    monkeypatch.setenv("PATH", str(bin_dir))
    for _test in range(2):
        with pytest.raises(pytest.skip.Exception) as skipped:
            run_node("vercel_client.mjs", "http://127.0.0.1:9/api/chat", "{}")
        reason = str(skipped.value)
        assert "npm ci failed (1)" in reason and "ECONNREFUSED" in reason, reason
        assert "registry.npmjs.org/ai failed" in reason and str(clients) in reason, reason
    assert runs.read_text().split("\n")[:-1] == ["ci --no-audit --no-fund --loglevel=error"]
    monkeypatch.setenv("PATH", os.pathsep.join((str(bin_dir), str(tmp_path / "no-npm"))))
    npm.unlink()  # and with no npm at all
    monkeypatch.setattr(serving, "CLIENTS", tmp_path)
    with pytest.raises(pytest.skip.Exception, match=r"Node\.js is installed but npm is not"):
        run_node("vercel_client.mjs", "http://127.0.0.1:9/api/chat", "{}")


@pytest.fixture(scope="module")
def provider() -> Iterator[RunningServer]:
    node_or_skip()
    with DevServer.run_in_thread() as server:
        yield server


def gateway(provider: RunningServer, scenario: str, **options: Any) -> Any:
    model = ChatModel(provider.url + "/v1/chat/completions", scenario)
    return model, serving_in_thread(create_app(model, **options))


def reference(
    provider: RunningServer, scenario: str, text: str, tools: list[Any]
) -> tuple[list[ChatResponse], dict[str, Any]]:
    """What the Python API makes of the same request: each step's response, and the last
    event (RESPONSE_END or ERROR) as ``{"type", "response", "text", "usage"}``."""
    steps: list[ChatResponse] = []
    last: dict[str, Any] = {}
    done = threading.Event()
    with ChatModel(provider.url + "/v1/chat/completions", scenario) as model:
        prompt = model.prompt(text).event_filter(ChatEventFilter.all())
        if tools:
            prompt = prompt.tools(*tools)

        def on_next(event: Any) -> None:
            if event.type.name == "STEP_END":
                steps.append(event.response)
            if event.type.is_terminal:
                last.update(
                    type=event.type.name,
                    response=event.response,
                    text=event.text,
                    usage=event.usage,
                )

        prompt.stream().subscribe(on_next, lambda e: done.set(), done.set)
        assert done.wait(30)
    return steps, last


def ui_steps(message: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """The parts of a UI message, one list per step."""
    steps: list[list[dict[str, Any]]] = []
    for part in message["parts"]:
        if part["type"] == "step-start":
            steps.append([])
        elif steps:
            steps[-1].append(part)
    return steps


# Vercel: the ai package's DefaultChatTransport (chunk schema) and readUIMessageStream.


def client_and_reference(
    provider: RunningServer,
    scenario: str,
    text: str,
    tools: list[Any],
    script: str,
    path: str,
    payload: Any,
) -> tuple[Any, list[ChatResponse], dict[str, Any]]:
    """What a front-end client ``script`` made of our gateway's answer to ``payload`` posted
    to ``path``, then :func:`reference`'s steps and last event for the same request."""
    model, serving = gateway(provider, scenario, tools=tools)
    with model, serving as url:
        result = run_node(script, url + path, orjson.dumps(payload).decode())
    return (result, *reference(provider, scenario, text, tools))


VERCEL_CASES = [
    ("echo", "Tell me a story about a fox", []),
    ("weather", QUESTION, [get_weather]),
    ("error-frame", QUESTION, []),
]


@pytest.mark.parametrize(("scenario", "text", "tools"), VERCEL_CASES, ids=lambda c: str(c)[:12])
def test_the_ai_package_assembles_our_response(
    provider: RunningServer, scenario: str, text: str, tools: list[Any]
) -> None:
    ui = [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}]
    result, steps, last = client_and_reference(
        provider, scenario, text, tools, "vercel_client.mjs", "/api/chat", ui
    )
    message = result["message"]
    assert result["headers"]["x-vercel-ai-ui-message-stream"] == "v1"
    parts = ui_steps(message)
    assert len(parts) == len(steps)
    for step_parts, response in zip(parts, steps):
        texts = [p["text"] for p in step_parts if p["type"] == "text"]
        reasoning = [p["text"] for p in step_parts if p["type"] == "reasoning"]
        assert "".join(texts) == response.text
        assert "".join(reasoning) == response.thinking
        tool_parts = [p for p in step_parts if p["type"].startswith("tool-")]
        assert [p["type"] for p in tool_parts] == [f"tool-{c.name}" for c in response.tool_calls]
        assert [p["input"] for p in tool_parts] == [c.arguments for c in response.tool_calls]
        assert all(p["toolCallId"] for p in tool_parts)  # ids differ between two requests
        if tools:
            assert [p["state"] for p in tool_parts] == ["output-available"] * len(tool_parts)
            assert [p["output"] for p in tool_parts] == ["18°C and sunny"] * len(tool_parts)
    if last["type"] == "RESPONSE_END":
        assert result["error"] is None
        assert "".join(p["text"] for p in parts[-1] if p["type"] == "text") == last["response"].text
        usage = message["metadata"]["usage"]
        assert usage["total_tokens"] == last["usage"].total_tokens
        assert usage["prompt_tokens"] == last["usage"].prompt_tokens
        assert result["chunks"][-1] == "finish"
    else:
        assert result["error"] == last["text"]
        assert result["chunks"][-1] == "error"
        assert "".join(p["text"] for p in parts[-1] if p["type"] == "text") == "Partial answer"


def test_the_ai_package_sends_back_a_tool_loop_we_understand(provider: RunningServer) -> None:
    """The second turn of a conversation whose first turn ran a tool: the ai package's own
    history (tool parts with their output) goes back and the model sees the tool result."""
    model, serving = gateway(provider, "weather", tools=[get_weather])
    with model, serving as url:
        first = [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": QUESTION}]}]
        result = run_node("vercel_client.mjs", url + "/api/chat", orjson.dumps(first).decode())
        history = [*first, result["message"]]
        history.append({"id": "u2", "role": "user", "parts": [{"type": "text", "text": "Thanks"}]})
        count = len(provider.requests)
        again = run_node("vercel_client.mjs", url + "/api/chat", orjson.dumps(history).decode())
    assert again["error"] is None
    sent = provider.requests[count].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "assistant", "user"]
    assert sent[2]["content"] == "18°C and sunny"


# AG-UI: @ag-ui/client's HttpAgent, which verifies every event it receives.


@pytest.mark.parametrize(("scenario", "text", "tools"), VERCEL_CASES, ids=lambda c: str(c)[:12])
def test_the_agui_client_verifies_and_assembles_our_run(
    provider: RunningServer, scenario: str, text: str, tools: list[Any]
) -> None:
    run = {"messages": [{"id": "u1", "role": "user", "content": text}]}
    result, steps, last = client_and_reference(
        provider, scenario, text, tools, "agui_client.mjs", "/agui", run
    )
    messages = result["messages"][1:]
    kinds = [e["type"] for e in result["events"]]
    assert kinds[0] == "RUN_STARTED"
    if last["type"] == "ERROR":
        assert result["error"] == last["text"]
        assert kinds[-1] == "RUN_ERROR"
        assert [m.get("content") for m in messages if m["role"] == "assistant"] == [
            "Partial answer"
        ]
        return
    assert result["error"] is None, result["error"]
    assert kinds[-1] == "RUN_FINISHED"
    expected: list[tuple[str, Any]] = []
    for response in steps:
        if response.thinking:
            expected.append(("reasoning", response.thinking))
        if response.text or response.tool_calls:
            calls = [(c.name, c.arguments_str) for c in response.tool_calls]
            expected.append(("assistant", (response.text or None, calls)))
        expected += [("tool", "18°C and sunny")] * (len(response.tool_calls) if tools else 0)
    got: list[tuple[str, Any]] = []
    for m in messages:
        if m["role"] == "assistant":
            calls = [
                (c["function"]["name"], c["function"]["arguments"]) for c in m.get("toolCalls", [])
            ]
            got.append(("assistant", (m.get("content"), calls)))
        else:
            got.append((m["role"], m["content"]))
    assert got == expected
    usage = next(e for e in result["events"] if e["type"] == "RUN_FINISHED")["usage"][0]
    assert usage["totalTokens"] == last["usage"].total_tokens


def test_the_agui_client_gets_frontend_tool_calls_to_answer(provider: RunningServer) -> None:
    model, serving = gateway(provider, "weather")
    with model, serving as url:
        run = {"messages": [{"id": "u1", "role": "user", "content": QUESTION}], "tools": [SHOW_MAP]}
        first = run_node("agui_client.mjs", url + "/agui", orjson.dumps(run).decode())
        assert first["error"] is None, first["error"]
        finished = next(e for e in first["events"] if e["type"] == "RUN_FINISHED")
        call = first["messages"][-1]["toolCalls"][0]
        assert finished["outcome"]["pendingToolCallIds"] == [call["id"]]
        assert call["function"]["name"] == "show_map"
        answer = {"id": "t1", "role": "tool", "toolCallId": call["id"], "content": "shown"}
        second = {"messages": [*first["messages"], answer], "tools": [SHOW_MAP]}
        after = run_node("agui_client.mjs", url + "/agui", orjson.dumps(second).decode())
    assert after["error"] is None, after["error"]
    assert after["messages"][-1]["content"] == "It is shown in Paris right now."


def test_both_clients_read_resumable_streams_with_their_ids(
    provider: RunningServer,
    redis_url: str,  # noqa: F811
) -> None:
    """With Redis every SSE event carries an ``id:`` line; both clients take it in stride."""
    model, serving = gateway(provider, "weather", tools=[get_weather], redis=redis_url)
    with model, serving as url:
        ui = [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": QUESTION}]}]
        vercel = run_node("vercel_client.mjs", url + "/api/chat", orjson.dumps(ui).decode())
        run = {"messages": [{"id": "u1", "role": "user", "content": QUESTION}]}
        agui = run_node("agui_client.mjs", url + "/agui", orjson.dumps(run).decode())
    assert vercel["error"] is None and agui["error"] is None, (vercel["error"], agui["error"])
    assert vercel["chunks"][-1] == "finish"
    text = [p["text"] for p in vercel["message"]["parts"] if p["type"] == "text"]
    assert text == ["It is 18°C and sunny in Paris right now."]
    assert agui["messages"][-1]["content"] == "It is 18°C and sunny in Paris right now."
    assert vercel["headers"]["x-response-id"].startswith("resp_")


def test_both_clients_get_an_error_when_redis_is_down(
    redis_server: RedisServer,  # noqa: F811
) -> None:
    """``solon-events serve --redis`` with its Redis stopped, a short answer: each client
    reports the failure instead of an empty success (on main, the ai package assembled no
    message and no error, and the AG-UI client a run of no events)."""
    node_or_skip()
    redis_server.stop()
    with serve_command("--redis", redis_server.url, "--model", "echo") as process:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        ui = [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Hi"}]}]
        vercel = run_node("vercel_client.mjs", url + "/api/chat", orjson.dumps(ui).decode())
        run = {"messages": [{"id": "u1", "role": "user", "content": "Hi"}]}
        agui = run_node("agui_client.mjs", url + "/agui", orjson.dumps(run).decode())
    for result in (vercel, agui):
        assert result["error"] and "could not be stored" in result["error"], result["error"]
    assert vercel["message"] is None
    assert [m["role"] for m in agui["messages"]] == ["user"]


# A final text that rewrites the deltas (TEXT_END.text), through each real client.


@pytest.fixture(scope="module")
def rewriting(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """The embedded provider replaying an OpenAI Responses stream whose final text
    (``output_text.done``) rewrites what its deltas said."""
    node_or_skip()
    path = tmp_path_factory.mktemp("rewritten") / "rewritten.jsonl"
    path.write_bytes(b"".join(orjson.dumps(frame) + b"\n" for frame in rewritten_frames()))
    with DevServer.run_in_thread(recording=path) as server:
        yield server


def rewriting_gateway(server: RunningServer) -> Any:
    model = ChatModel(server.url + "/v1/responses", "replay", dialect="openai-responses")
    return model, serving_in_thread(create_app(model))


def test_both_clients_end_with_the_final_text_that_rewrote_the_deltas(
    rewriting: RunningServer,
) -> None:
    model, serving = rewriting_gateway(rewriting)
    ui = [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": QUESTION}]}]
    run = {"messages": [{"id": "u1", "role": "user", "content": QUESTION}]}
    with model, serving as url:
        assert model.prompt(QUESTION).call().text == FINAL  # the Python API's response
        vercel = run_node("vercel_client.mjs", url + "/api/chat", orjson.dumps(ui).decode())
        agui = run_node("agui_client.mjs", url + "/agui", orjson.dumps(run).decode())
        history = [*ui, vercel["message"]]
        history.append({"id": "u2", "role": "user", "parts": [{"type": "text", "text": "And?"}]})
        again = run_node("vercel_client.mjs", url + "/api/chat", orjson.dumps(history).decode())
    # the ai package: the text part keeps what streamed, and the final text the UI shows
    assert vercel["error"] is None and vercel["chunks"][-1] == "finish"
    (part,) = [p for p in vercel["message"]["parts"] if p["type"] == "text"]
    assert part["text"] == STREAMED and ui_text(part) == FINAL
    # ... and sends it back as the assistant's turn
    assert again["error"] is None
    sent = rewriting.requests[-1].body["input"]
    assistant = [item for item in sent if item.get("role") == "assistant"]
    assert orjson.dumps(assistant).decode().count(FINAL) == 1 and STREAMED not in str(assistant)
    # AG-UI: the client's messages after the run's MESSAGES_SNAPSHOT
    assert agui["error"] is None, agui["error"]
    kinds = [e["type"] for e in agui["events"]]
    assert kinds.count("MESSAGES_SNAPSHOT") == 1 and kinds[-1] == "RUN_FINISHED"
    assert [(m["role"], m["content"]) for m in agui["messages"]] == [
        ("user", QUESTION),
        ("assistant", FINAL),
    ]


# The chat page in headless Chromium.


def chat_page(gateway: tuple[ChatModel, Any], screenshot: Path) -> Any:
    """What the chat page in headless Chromium shows of the answer to QUESTION."""
    chromium = chromium_or_skip()
    SCREENSHOTS.mkdir(exist_ok=True)
    screenshot.unlink(missing_ok=True)
    model, serving = gateway
    with model, serving as url:
        return run_node(
            "chat_page.mjs", url + "/", QUESTION, str(screenshot), chromium, timeout=120
        )


def test_the_chat_page_in_chromium_shows_the_answer_and_the_tool_call(
    provider: RunningServer,
) -> None:
    screenshot = SCREENSHOTS / "chat-page.png"
    result = chat_page(gateway(provider, "weather", tools=[get_weather]), screenshot)
    assert result["errors"] == [] and result["console"] == []
    assert result["status"] == "done"
    assert result["texts"] == ["It is 18°C and sunny in Paris right now."]
    assert result["reasoning"] == [
        "The user wants the weather in Paris. I should call get_weather."
    ]
    assert result["tools"] == [
        {"state": "output-available", "text": 'get_weather({"city":"Paris"})→ 18°C and sunny'}
    ]
    assert result["usage"] == ["tokens: prompt 122 · completion 29 · total 151"]
    assert screenshot.stat().st_size > 10_000


def test_the_chat_page_in_chromium_shows_the_final_text_that_rewrote_the_deltas(
    rewriting: RunningServer,
) -> None:
    result = chat_page(rewriting_gateway(rewriting), SCREENSHOTS / "chat-page-final-text.png")
    assert result["errors"] == [] and result["console"] == []
    assert result["status"] == "done"
    assert result["texts"] == [FINAL]


def test_the_ai_package_takes_the_argument_delta_parts() -> None:
    """VercelEncoder(argument_deltas=True)'s transient data-tool-input-delta parts pass the
    ai package's chunk schema, and its message is the same as without them."""
    node_or_skip()
    events = replay(long_args_frames("openai"), dialect="openai").pipe(ops.to_list()).run()
    chunks = (
        reactivex.from_iterable(events).pipe(to_vercel(argument_deltas=True), ops.to_list()).run()
    )

    async def chat(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers=VERCEL_HEADERS)
        await response.prepare(request)
        for chunk in chunks:
            await response.write(vercel_sse(chunk))
        await response.write(VERCEL_DONE)
        return response

    app = web.Application()
    app.router.add_post("/api/chat", chat)
    ui = [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Write the report"}]}]
    with serving_in_thread(app) as url:
        result = run_node("vercel_client.mjs", url + "/api/chat", orjson.dumps(ui).decode())
    assert result["error"] is None
    sent = [chunk["type"] for chunk in chunks]
    assert result["chunks"] == sent and sent.count("data-tool-input-delta") >= 20
    (tool,) = [p for p in result["message"]["parts"] if p["type"].startswith("tool-")]
    assert tool["input"] == report_arguments(3)
    assert not any(p["type"] == "data-tool-input-delta" for p in result["message"]["parts"])
