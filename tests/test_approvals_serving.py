"""Tool approval through the gateway's front ends, with their real clients.

A gateway whose weather tool requires approval, over the embedded provider: the ``ai``
package's own chat logic (``AbstractChat``, what ``useChat`` wraps: it reads the
``tool-approval-request`` part and sends the approval back with
``addToolApprovalResponse``), AG-UI's ``HttpAgent`` (the ``interrupt`` outcome, then a run
with ``resume`` entries), our ``/events`` and the chat page in Chromium. Every continuation
is a second HTTP request; with Redis, to another replica.
"""

from __future__ import annotations

import contextlib
import io
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from reactivex import operators as ops
from redis_server import redis_url  # noqa: F401  (fixture)
from rich.console import Console
from serving import chromium_or_skip, run_node, serve_command, serving_in_thread, sse_json

from solon_events import ChatEventFilter, ChatModel, tool
from solon_events.devserver import DevServer, RunningServer
from solon_events.display.live import LiveState
from solon_events.display.pretty import to_text
from solon_events.display.render import LiveRenderer
from solon_events.event_model.approvals import denied_text
from solon_events.serve import create_app

QUESTION = "What is the weather in Paris?"
KEY = "the-deployments-approval-key-0123"  # the same on every replica
SCREENSHOTS = Path(__file__).resolve().parent / "clients" / "screenshots"
RAN: list[str] = []


@tool(requires_approval=True)
def get_weather(city: str) -> str:
    """Current weather in a city.

    Args:
        city: The city's name.
    """
    RAN.append(city)
    return "18°C and sunny"


@pytest.fixture(scope="module")
def provider() -> Iterator[RunningServer]:
    with DevServer.run_in_thread() as server:
        yield server


@pytest.fixture(autouse=True)
def _forget_runs() -> Iterator[None]:
    RAN.clear()
    yield


@contextlib.contextmanager
def gateways(provider: RunningServer, count: int = 1, **options: Any) -> Iterator[list[str]]:
    """``count`` gateways (replicas: each its own model and app) serving the weather
    scenario with the tool that requires approval; their base URLs."""
    with contextlib.ExitStack() as stack:
        urls = []
        for _ in range(count):
            model = stack.enter_context(ChatModel(provider.url + "/v1/chat/completions", "weather"))
            app = create_app(model, tools=[get_weather], **options)
            urls.append(stack.enter_context(serving_in_thread(app)))
        yield urls


def post(url: str, body: Any) -> tuple[int, bytes]:
    request = urllib.request.Request(
        url, orjson.dumps(body), {"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def tool_parts(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in message["parts"] if p["type"].startswith("tool-")]


def texts(message: dict[str, Any]) -> str:
    return "".join(p["text"] for p in message["parts"] if p["type"] == "text")


# Vercel: the ai package's chat (useChat's logic).


def test_the_ai_package_asks_and_sends_the_approval_back_in_a_second_request(
    provider: RunningServer,
) -> None:
    with gateways(provider) as (url,):
        chat = run_node(
            "vercel_chat.mjs", orjson.dumps([url + "/api/chat"]).decode(), QUESTION,
            '{"approved": true}',
        )  # fmt: skip
    assert chat["error"] is None, chat["error"]
    (asked,) = chat["asked"]
    (call,) = asked
    assert call["input"] == {"city": "Paris"}
    assert call["approvalId"] == f"{chat['requests'][0]['responseId']}:{call['toolCallId']}"
    assert RAN == ["Paris"]  # once, after the approval
    first, second = chat["requests"]
    assert first["status"] == second["status"] == 200
    # useChat sent the assistant message back with the answer in its tool part
    sent = second["body"]["messages"][-1]
    (part,) = tool_parts(sent)
    assert part["state"] == "approval-responded"
    assert part["approval"] == {"id": call["approvalId"], "approved": True}
    # ... and went on with the same assistant message
    messages = chat["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"]
    (answer,) = tool_parts(messages[1])
    assert answer["state"] == "output-available" and answer["output"] == "18°C and sunny"
    assert "18°C and sunny" in texts(messages[1])
    assert [p["type"] for p in messages[1]["parts"]].count("step-start") == 2


def test_the_ai_package_sends_a_denial_and_the_model_reads_it(provider: RunningServer) -> None:
    with gateways(provider) as (url,):
        chat = run_node(
            "vercel_chat.mjs", orjson.dumps([url + "/api/chat"]).decode(), QUESTION,
            '{"approved": false, "reason": "not on my account"}',
        )  # fmt: skip
        # a later turn sends the conversation back: the denied call and what it said
        history = [*chat["messages"], {"id": "u2", "role": "user", "parts": [
            {"type": "text", "text": "Thanks"}]}]  # fmt: skip
        later = run_node("vercel_client.mjs", url + "/api/chat", orjson.dumps(history).decode())
    assert later["error"] is None, later["error"]
    turns = provider.requests[-1].body["messages"]
    assert [m["role"] for m in turns] == ["user", "assistant", "tool", "assistant", "user"]
    assert turns[2]["content"] == denied_text("not on my account")
    assert chat["error"] is None, chat["error"]
    assert RAN == []
    messages = chat["messages"]
    (part,) = tool_parts(messages[1])
    assert part["state"] == "output-denied"
    assert part["approval"]["reason"] == "not on my account"
    assert "the call was denied (not on my account)." in texts(messages[1])  # the model read it
    sent = provider.requests[-2].body["messages"]
    assert sent[-1]["role"] == "tool"
    assert sent[-1]["content"] == denied_text("not on my account")


def test_another_replica_continues_the_response_through_redis(
    provider: RunningServer,
    redis_url: str,  # noqa: F811
) -> None:
    with gateways(provider, 2, redis=redis_url, approval_key=KEY) as (first, second):
        urls = [first + "/api/chat", second + "/api/chat"]
        chat = run_node(
            "vercel_chat.mjs", orjson.dumps(urls).decode(), QUESTION, '{"approved": true}'
        )
        assert chat["error"] is None, chat["error"]
        assert [r["url"] for r in chat["requests"]] == urls
        assert RAN == ["Paris"]
        assert "18°C and sunny" in texts(chat["messages"][1])
        # the same decisions again, to either replica: the response was continued once
        again = chat["requests"][1]["body"]
        for url in urls:
            status, body = post(url, again)
            assert status == 404, body
            assert b"waits for approval" in body
    assert RAN == ["Paris"]


# AG-UI: HttpAgent, its interrupts and resume entries.


def agui_run(url: str, answer: dict[str, Any]) -> Any:
    run = {"messages": [{"id": "u1", "role": "user", "content": QUESTION}]}
    return run_node(
        "agui_client.mjs",
        url + "/agui",
        orjson.dumps(run).decode(),
        "",
        orjson.dumps(answer).decode(),
    )


def test_the_agui_client_resumes_an_interrupted_run(provider: RunningServer) -> None:
    with gateways(provider) as (url,):
        result = agui_run(url, {"status": "resolved", "payload": {"approved": True}})
    assert result["error"] is None, result["error"]
    finished = next(e for e in result["events"] if e["type"] == "RUN_FINISHED")
    assert finished["outcome"]["type"] == "interrupt"
    (interrupt,) = result["interrupts"]
    assert interrupt["reason"] == "tool_approval"
    call = next(m for m in result["messages"] if m["role"] == "assistant")["toolCalls"][0]
    assert interrupt["toolCallId"] == call["id"]
    assert interrupt["responseSchema"]["required"] == ["approved"]
    assert "get_weather" in interrupt["message"]
    resumed = result["resumed"]
    assert resumed["error"] is None, resumed["error"]
    kinds = [e["type"] for e in resumed["events"]]
    assert kinds[0] == "RUN_STARTED" and kinds[-1] == "RUN_FINISHED"
    assert resumed["events"][-1]["outcome"]["type"] == "success"
    (result_event,) = [e for e in resumed["events"] if e["type"] == "TOOL_CALL_RESULT"]
    assert result_event["toolCallId"] == call["id"] and result_event["content"] == "18°C and sunny"
    assert RAN == ["Paris"]
    assert "18°C and sunny" in result["messages"][-1]["content"]


def test_the_agui_client_cancels_an_interrupt_and_the_model_reads_a_denial(
    provider: RunningServer,
) -> None:
    with gateways(provider) as (url,):
        result = agui_run(url, {"status": "cancelled"})
    assert result["resumed"]["error"] is None, result["resumed"]["error"]
    assert RAN == []
    (result_event,) = [e for e in result["resumed"]["events"] if e["type"] == "TOOL_CALL_RESULT"]
    assert result_event["content"] == denied_text("cancelled")
    assert "the call was denied (cancelled)." in result["messages"][-1]["content"]


# /events: our own events, and what the gateway answers to wrong decisions.


def test_events_continue_with_approvals_and_wrong_decisions_are_refused(
    provider: RunningServer,
) -> None:
    with gateways(provider) as (url,):
        status, body = post(url + "/events", {"messages": [{"role": "user", "content": QUESTION}]})
        assert status == 200
        end = sse_json(body)[-1]
        assert end["type"] == "RESPONSE_END"
        pending = end["response"]["pending_approval"]
        (call,) = pending["tool_calls"]
        approval_id = f"{pending['response_id']}:{call['id']}"
        for wrong, status_code, says in [
            ({"approvals": [{"approval_id": "resp_0:call_1", "approved": True}]}, 404, b"waits"),
            ({"approvals": [{"approval_id": "no colon", "approved": True}]}, 400, b"approval id"),
            ({"approvals": [{"approval_id": approval_id}]}, 400, b"approved"),
            ({"approvals": []}, 400, b"non-empty"),
            (
                {"approvals": [
                    {"approval_id": approval_id, "approved": True},
                    {"approval_id": f"{pending['response_id']}:other", "approved": True},
                ]},
                400,
                b"not waiting: " + f"{pending['response_id']}:other".encode(),
            ),
        ]:  # fmt: skip
            status, body = post(url + "/events", wrong)
            assert (status, says in body) == (status_code, True), body
        assert RAN == []  # still waiting, after the refused answers too
        decision = {"approvals": [{"approval_id": approval_id, "approved": True}]}
        status, body = post(url + "/events", decision)
        assert status == 200, body
        events = sse_json(body)
        assert [e["type"] for e in events[:4]] == [
            "RESPONSE_START", "STEP_START", "TOOL_RESULT", "STEP_END"
        ]  # fmt: skip
        assert events[1]["sub_type"] == "resumed"
        assert "18°C and sunny" in events[-1]["response"]["text"]
        assert post(url + "/events", decision)[0] == 404
    assert RAN == ["Paris"]


# The chat page in headless Chromium: Approve and Deny buttons.


def chat_page(provider: RunningServer, decision: str, screenshot: str) -> Any:
    chromium = chromium_or_skip()
    SCREENSHOTS.mkdir(exist_ok=True)
    path = SCREENSHOTS / screenshot
    path.unlink(missing_ok=True)
    with gateways(provider) as (url,):
        result = run_node(
            "chat_page.mjs", url + "/", QUESTION, str(path), chromium, decision, timeout=120
        )
    assert path.stat().st_size > 10_000
    assert path.with_name(path.stem + "-asked.png").stat().st_size > 10_000  # the buttons
    return result


def test_the_chat_page_approves_a_call_in_chromium(provider: RunningServer) -> None:
    result = chat_page(provider, "approve", "chat-page-approve.png")
    assert result["errors"] == [] and result["console"] == []
    assert result["asked"] == 1 and result["posts"] == 2
    assert result["status"] == "done"
    assert RAN == ["Paris"]
    (tool_box,) = result["tools"]
    assert tool_box["state"] == "output-available"
    assert tool_box["text"] == 'get_weather({"city":"Paris"})→ 18°C and sunny'
    assert any("18°C and sunny" in text for text in result["texts"])


def test_the_chat_page_denies_a_call_in_chromium(provider: RunningServer) -> None:
    result = chat_page(provider, "deny:too far away", "chat-page-deny.png")
    assert result["errors"] == [] and result["console"] == []
    assert result["asked"] == 1 and result["posts"] == 2
    assert result["status"] == "done"
    assert RAN == []
    (tool_box,) = result["tools"]
    assert tool_box["state"] == "output-denied"
    assert tool_box["text"].endswith("✗ denied: too far away")
    assert any("the call was denied (too far away)." in text for text in result["texts"])


# The terminal and Jupyter show the calls that wait.


def test_the_terminal_and_jupyter_show_the_calls_that_wait(provider: RunningServer) -> None:
    with ChatModel(provider.url + "/v1/chat/completions", "weather") as model:
        prompt = model.prompt(QUESTION).tools(get_weather).event_filter(ChatEventFilter.all())
        events = prompt.stream().pipe(ops.to_list()).run()
    response = events[-1].response
    call = response.pending_approval.tool_calls[0]
    out = io.StringIO()
    renderer = LiveRenderer(Console(file=out, width=200, highlight=False))
    state = LiveState()
    for event in events:
        renderer(event)
        state.add(event)
    shown = out.getvalue()
    assert f'⏸ awaiting approval: get_weather({{"city":"Paris"}}) id={call.id}' in shown
    assert "awaiting approval" in state.text() and call.id in state.text()
    assert "⏸ awaiting approval" in state.html()
    assert "Awaiting approval" in response._repr_html_()
    assert f'awaiting approval: get_weather({{"city":"Paris"}})  id={call.id}' in to_text(response)


def test_solon_events_serve_require_approval_makes_the_demo_tool_ask() -> None:
    with serve_command("--require-approval") as process:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        status, body = post(url + "/events", {"messages": [{"role": "user", "content": QUESTION}]})
        assert status == 200, body
        end = sse_json(body)[-1]
        (call,) = end["response"]["pending_approval"]["tool_calls"]
        assert call["name"] == "get_weather"
        approval_id = f"{end['response']['pending_approval']['response_id']}:{call['id']}"
        decision = {"approvals": [{"approval_id": approval_id, "approved": True}]}
        status, body = post(url + "/events", decision)
    assert status == 200, body
    assert "18°C and sunny" in sse_json(body)[-1]["response"]["text"]


# The state kept for approval cannot be forged, replayed or renewed (#42).


def paused_by(url: str) -> tuple[str, str]:
    """Ask the gateway at ``url`` the question; the paused response's id and its call's
    approval id."""
    status, body = post(url + "/events", {"messages": [{"role": "user", "content": QUESTION}]})
    assert status == 200, body
    pending = sse_json(body)[-1]["response"]["pending_approval"]
    (call,) = pending["tool_calls"]
    return pending["response_id"], f"{pending['response_id']}:{call['id']}"


def approve(url: str, approval_id: str) -> tuple[int, bytes]:
    return post(url + "/events", {"approvals": [{"approval_id": approval_id, "approved": True}]})


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[Any]:  # noqa: F811
    import redis

    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


def test_tools_that_wait_for_approval_in_redis_need_a_key(
    provider: RunningServer,
    redis_url: str,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SOLON_APPROVAL_KEY", raising=False)
    with ChatModel(provider.url + "/v1/chat/completions", "weather") as model:
        with pytest.raises(ValueError, match="SOLON_APPROVAL_KEY"):
            create_app(model, tools=[get_weather], redis=redis_url)
        monkeypatch.setenv("SOLON_APPROVAL_KEY", KEY)
        create_app(model, tools=[get_weather], redis=redis_url)  # from the environment
        monkeypatch.delenv("SOLON_APPROVAL_KEY")
        create_app(model, tools=[get_weather], redis=redis_url, token="a-token")  # from it


@pytest.mark.parametrize(
    ("environment", "message"),
    [
        ({}, "give every replica the same key with --approval-key-env NAME"),
        ({"GATEWAY_APPROVAL_KEY": ""}, "the environment variable GATEWAY_APPROVAL_KEY is empty"),
        ({"GATEWAY_APPROVAL_KEY": "short"}, "GATEWAY_APPROVAL_KEY is shorter than 16 bytes"),
    ],
)
def test_serve_with_redis_and_approval_without_a_key_says_which_flag_gives_it(
    environment: dict[str, str],
    message: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from solon_events.cli import main

    monkeypatch.delenv("SOLON_APPROVAL_KEY", raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    named = ["--approval-key-env", "GATEWAY_APPROVAL_KEY"] if environment else []
    redis = ["--redis", "redis://127.0.0.1:1/0"]  # refused before it is reached
    assert main(["serve", *redis, "--require-approval", *named]) == 2
    assert message in capsys.readouterr().err


def test_serve_signs_what_it_keeps_in_redis_with_the_key_its_flag_names(
    redis_url: str,  # noqa: F811
    redis_client: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from solon_events.event_model.approvals import verified

    monkeypatch.delenv("SOLON_APPROVAL_KEY", raising=False)
    monkeypatch.setenv("GATEWAY_APPROVAL_KEY", KEY)
    options = ("--redis", redis_url, "--require-approval")
    with serve_command(*options, "--approval-key-env", "GATEWAY_APPROVAL_KEY") as process:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        response_id, approval_id = paused_by(url)
        kept = orjson.loads(redis_client.get(f"solon-events:approval:{response_id}"))
        verified(kept, KEY)  # raises when signed with another key
        with pytest.raises(ValueError, match="signature"):
            verified(kept, "another-key-0123456789")
        status, body = approve(url, approval_id)
    assert status == 200, body
    assert "18°C and sunny" in sse_json(body)[-1]["response"]["text"]


@pytest.mark.parametrize("forgery", ["edited", "unsigned", "another key"])
def test_a_state_written_to_redis_by_someone_else_runs_no_tool(
    provider: RunningServer,
    redis_url: str,  # noqa: F811
    redis_client: Any,
    forgery: str,
) -> None:
    from solon_events.event_model.approvals import signed, verified

    with gateways(provider, redis=redis_url, approval_key=KEY) as (url,):
        response_id, approval_id = paused_by(url)
        key = f"solon-events:approval:{response_id}"
        record = verified(orjson.loads(redis_client.get(key)), KEY)
        call = record["pending"]["steps"][-1]["response"]["message"]["tool_calls"][0]
        call["arguments"] = {"city": "Atlantis"}  # what runs, not what was shown
        call["arguments_str"] = '{"city": "Atlantis"}'
        written = {
            "edited": {**record, "signature": "hmac-sha256:" + "0" * 64},
            "unsigned": record,
            "another key": signed(record, "an-attackers-own-key-0123456789"),
        }[forgery]
        redis_client.set(key, orjson.dumps(written), px=60_000)
        status, body = approve(url, approval_id)
        assert status == 400 and b"signature" in body, body
    assert RAN == []


def test_a_state_written_back_after_it_was_continued_is_not_continued_again(
    provider: RunningServer,
    redis_url: str,  # noqa: F811
    redis_client: Any,
) -> None:
    with gateways(provider, 2, redis=redis_url, approval_key=KEY) as (first, second):
        response_id, approval_id = paused_by(first)
        key = f"solon-events:approval:{response_id}"
        kept = redis_client.get(key)  # a valid, signed state, copied by whoever reads Redis
        status, body = approve(second, approval_id)
        assert status == 200, body
        assert "18°C and sunny" in sse_json(body)[-1]["response"]["text"]
        assert RAN == ["Paris"]
        redis_client.set(key, kept, px=60_000)  # written back, as it was
        for url in (first, second):
            status, body = approve(url, approval_id)
            assert status == 404, body
    assert RAN == ["Paris"]


@pytest.mark.parametrize("store", ["memory", "redis"])
def test_a_wrong_decision_does_not_renew_the_time_to_live(
    provider: RunningServer,
    redis_url: str,  # noqa: F811
    redis_client: Any,
    store: str,
) -> None:
    from solon_events.serve.gateway import GATEWAY

    model = ChatModel(provider.url + "/v1/chat/completions", "weather")
    options: dict[str, Any] = {"redis": redis_url, "approval_key": KEY} if store == "redis" else {}
    app = create_app(model, tools=[get_weather], **options)
    approvals = app[GATEWAY].approvals
    with model, serving_in_thread(app) as url:
        response_id, approval_id = paused_by(url)
        key = f"solon-events:approval:{response_id}"

        def time_to_live() -> float:
            if store == "redis":
                return float(redis_client.pttl(key))
            return approvals.expires_at(response_id)  # type: ignore[attr-defined,no-any-return]

        before = time_to_live()
        wrong = {"approvals": [{"approval_id": f"{response_id}:not_a_call", "approved": True}]}
        status, body = post(url + "/events", wrong)
        assert status == 400 and b"not waiting" in body, body
        assert time_to_live() <= before  # not kept anew for a whole ttl
        status, _ = approve(url, approval_id)
        assert status == 200  # the right decision still finds it
    assert RAN == ["Paris"]
