"""An error body that cannot be read still gives ChatHttpError with its status and a bounded
snippet (#13.4): nested far too deep, not JSON, not UTF-8, huge, or of a shape the
dialect's message reader trips over."""

from __future__ import annotations

from collections.abc import Iterator

import orjson
import pytest
from outcomes import outcome_of
from recorded import DIALECTS, ENDPOINTS

from solon_events import ChatEventType, ChatHttpError, ChatModel
from solon_events.client.transport import RecordedResponse, ReplayTransport
from solon_events.devserver import DevServer, RunningServer

T = ChatEventType
SNIPPET_LIMIT = 203  # 200 characters and an ellipsis


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    running = DevServer.run_in_thread()
    yield running
    running.close()


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_body_nested_500_deep_keeps_its_status(server: RunningServer, dialect: str) -> None:
    url = server.url + ENDPOINTS[dialect]
    key = "sk-test-key-123456"
    with ChatModel(url, "deep-error:500:500", dialect=dialect, max_retries=0, api_key=key) as model:
        outcome = outcome_of(model.prompt("hi"))
    error = outcome.error
    assert isinstance(error, ChatHttpError), error
    assert error.status == 500 and error.provider_error == {}
    assert error.provider_message is not None
    assert error.provider_message.startswith('{"error": {"error": ')
    assert len(error.provider_message) <= SNIPPET_LIMIT and "RecursionError" not in str(error)
    (error_event,) = outcome.of(T.ERROR)
    assert error_event.error is error and outcome.events[-1] is error_event


DEEP_ARRAYS = b'{"error": ' + b"[" * 5000 + b"]" * 5000 + b"}"
UNREADABLE = {
    "arrays 5000 deep": DEEP_ARRAYS,
    "objects 2000 deep": b'{"a": ' * 2000 + b"1" + b"}" * 2000,
    "not JSON": b"upstream connect error or disconnect/reset before headers " * 20,
    "not UTF-8": b"\xff\xfe\x00 gateway \xc3\x28 failure" * 30,
    "huge": b'{"error": {"message": "' + b"x" * 2_000_000 + b'"}}',
    "message not a string": orjson.dumps({"error": {"message": {"nested": ["an", "object"]}}}),
    "a bare list": orjson.dumps([[[["error"]]]]),
    "null": b"null",
}


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("body", list(UNREADABLE.values()), ids=list(UNREADABLE))
def test_any_unreadable_error_body_gives_the_status_and_a_bounded_snippet(
    dialect: str, body: bytes
) -> None:
    transport = ReplayTransport(RecordedResponse(body, status=502), chunk_size=65536)
    url = "http://recorded.invalid" + ENDPOINTS[dialect]
    with ChatModel(
        url, "m", dialect=dialect, max_retries=0, transport=transport, api_key="sk-test-key-123456"
    ) as model:
        outcome = outcome_of(model.prompt("hi"))
    error = outcome.error
    assert isinstance(error, ChatHttpError), error
    assert error.status == 502
    assert error.provider_message is None or len(error.provider_message) <= SNIPPET_LIMIT
    assert len(str(error)) < 400
    assert repr(dict(error.provider_error))  # whatever is kept can be shown
    assert outcome.events[-1].type is T.ERROR
