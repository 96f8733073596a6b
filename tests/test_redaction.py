"""No secret in any text the library produces (#13.2): the Redactor, then every leak the
issue lists against the embedded provider in every dialect, then hypothesis: any secret
anywhere in any failing body, in any dialect, never shows."""

from __future__ import annotations

import logging
import traceback
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from outcomes import Outcome, outcome_of
from recorded import DIALECTS, ENDPOINTS, WIRES, body_of, text_body

from solon_events import (
    ChatError,
    ChatEventType,
    ChatHttpError,
    ChatModel,
    ChatProtocolError,
    ProviderError,
)
from solon_events.devserver import DevServer, RunningServer
from solon_events.devserver.turns import Finish, RawBytes, Script, StreamError, Text, TurnUsage
from solon_events.redaction import MASK, Redactor, redact_url
from solon_events.transport import RecordedResponse, ReplayTransport

T = ChatEventType
SECRET = "sk-live-0123456789abcdefXYZ"
RECORDED_URL = {dialect: "http://recorded.invalid" + path for dialect, path in ENDPOINTS.items()}


# --- the Redactor


def test_it_learns_every_secret_of_a_models_settings() -> None:
    redactor = Redactor.for_request(
        api_key="sk-one-111111",
        headers={
            "Authorization": "Bearer tok-two-222222",
            "x-api-key": "key-three-333333",
            "Proxy-Authorization": "Basic dXNlcjpwYXNzLWZvdXItNDQ0NA==",  # user:pass-four-4444
            "X-Request-Id": "not-a-secret-555",
        },
        api_url="https://u:pw-five-5555@example.com/v1beta/models/m?alt=sse&key=k-six-6666"
        "&api_key=k-seven-7777&token=t-eight-8888",
    )
    text = (
        "sk-one-111111 tok-two-222222 key-three-333333 pass-four-4444 pw-five-5555 "
        "k-six-6666 k-seven-7777 t-eight-8888 not-a-secret-555 alt=sse"
    )
    assert redactor.text(text) == " ".join([MASK] * 8) + " not-a-secret-555 alt=sse"
    assert redactor.text("Authorization: Bearer tok-two-222222") == f"Authorization: {MASK}"
    assert redactor.secrets == 12 and "sk-one" not in repr(redactor)


def test_a_secret_cut_short_or_overlapping_shows_no_run_of_eight_characters() -> None:
    redactor = Redactor([SECRET])
    cut = SECRET[:11]
    assert redactor.text(f'frame 1 is not valid JSON: \'{{"k": "{cut}...\'') == (
        f'frame 1 is not valid JSON: \'{{"k": "{MASK}...\''
    )
    assert redactor.text(f"starts with 'key {cut}'...") == f"starts with 'key {MASK}'..."
    assert redactor.text(f"the end of {SECRET[-9:]}") == f"the end of {MASK}"
    assert redactor.text(f"s{SECRET}{SECRET[1:]}") == f"s{MASK}{MASK}"
    assert redactor.text("sk-live and 0123456 are too short to say anything") == (
        "sk-live and 0123456 are too short to say anything"
    )


def test_values_of_any_depth_are_redacted_without_recursion_errors() -> None:
    redactor = Redactor([SECRET])
    value: Any = {"message": f"bad key {SECRET}", SECRET: [1, SECRET]}
    assert redactor.value(value) == {"message": f"bad key {MASK}", MASK: [1, MASK]}
    deep: Any = SECRET
    for _ in range(5000):
        deep = {"a": [deep]}
    assert SECRET not in strings_in(redactor.value(deep))


def strings_in(value: Any) -> list[str]:
    """Every string in a JSON-like value of any depth (keys too), walked without recursion."""
    found: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def test_errors_are_redacted_in_place_and_causes_showing_a_secret_are_dropped() -> None:
    redactor = Redactor([SECRET])
    try:
        try:
            raise ValueError(f"invalid URL https://x.example/?key={SECRET}")
        except ValueError as exc:
            raise ChatHttpError(
                401,
                f"Incorrect API key provided: {SECRET}",
                provider_error={"error": {"message": SECRET}},
                url=f"https://x.example/?key={SECRET}",
                headers={"x-echo": SECRET},
            ) from exc
    except ChatHttpError as raised:
        error = raised
    assert redactor.error(error) is error
    shown = "".join(traceback.format_exception(error))
    assert SECRET not in shown and SECRET not in repr(error.args)
    assert error.provider_message == f"Incorrect API key provided: {MASK}"
    assert error.provider_error == {"error": {"message": MASK}}
    assert error.headers == {"x-echo": MASK} and SECRET not in str(error.url)
    innocent = ChatError("no secret here")
    innocent.__cause__ = ValueError("nor here")
    assert redactor.error(innocent).__cause__ is not None


def test_redact_url_drops_query_and_userinfo() -> None:
    assert redact_url("https://user:pw@api.example.com:8443/v1/x?key=abc#frag") == (
        "https://api.example.com:8443/v1/x"
    )
    assert redact_url("http://127.0.0.1/v1beta/models/m:streamGenerateContent?alt=sse&key=k") == (
        "http://127.0.0.1/v1beta/models/m:streamGenerateContent"
    )
    assert redact_url("http://[::1") == "<an invalid URL>"


# --- every leak of the issue, over HTTP


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    running = DevServer.run_in_thread()
    yield running
    running.close()


def produced_texts(model: ChatModel, outcome: Outcome) -> list[str]:
    """Every text the library produced about this response (never the model's content)."""
    texts = [repr(model), repr(model.prompt("hi")), repr(model.transport)]
    error = outcome.error
    if error is not None:
        texts += [str(error), repr(error), repr(error.args)]
        texts += traceback.format_exception(error)
        if isinstance(error, ChatError):
            texts.append(repr(dict(error.provider_error)))
        if isinstance(error, ChatHttpError):
            texts += [str(error.provider_message), str(error.url), repr(error.headers)]
    for event in outcome.events:  # a dialect's own STATUS events carry the provider's frame
        if event.type is T.ERROR or event.sub_type == "retry":
            texts += [repr(event), str(event.text), repr(dict(event.raw)), repr(dict(event.attrs))]
    return texts


def assert_no_secret(texts: list[str], secret: str = SECRET) -> None:
    windows = {secret[i : i + 8] for i in range(len(secret) - 7)}
    for text in texts:
        assert secret not in text, text
        assert not any(window in text for window in windows), text


def run(model: ChatModel) -> Outcome:
    return outcome_of(model.prompt("hi"))


KEY_PLACES: dict[str, dict[str, Any]] = {
    "api_key": {"api_key": SECRET},
    "authorization header": {"headers": {"Authorization": f"Bearer {SECRET}"}},
    "x-api-key header": {"headers": {"x-api-key": SECRET}},
}
LEAKS = {
    "frame": ProviderError,
    "malformed": ChatProtocolError,
    "text": ChatProtocolError,
    "page": ChatProtocolError,
    "status": ChatHttpError,
}


@pytest.mark.parametrize("where", list(LEAKS))
@pytest.mark.parametrize("place", list(KEY_PLACES))
@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_key_echoed_by_the_provider_never_shows(
    server: RunningServer,
    dialect: str,
    place: str,
    where: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    url = server.url + ENDPOINTS[dialect]
    before = len(server.requests)
    key = KEY_PLACES[place]
    with ChatModel(url, f"echo-key:{where}", dialect=dialect, max_retries=0, **key) as model:
        outcome = run(model)
    assert SECRET in str(server.requests[before].headers), "the key must reach the provider"
    assert isinstance(outcome.error, LEAKS[where]), outcome.error
    assert MASK in str(outcome.error)
    assert_no_secret(produced_texts(model, outcome))
    assert_no_secret([record.getMessage() for record in caplog.records])


def test_a_key_in_geminis_api_url_never_shows(server: RunningServer) -> None:
    url = f"{server.url}/v1beta/models/echo-key:frame:streamGenerateContent?alt=sse&key={SECRET}"
    with ChatModel(url, "echo-key:frame", dialect="gemini", max_retries=0) as model:
        assert SECRET not in repr(model) and SECRET not in repr(model.prompt("hi"))
        assert "key=***" in repr(model)
        outcome = run(model)
    assert SECRET in str(server.requests[-1].headers)
    assert isinstance(outcome.error, ProviderError)
    assert_no_secret(produced_texts(model, outcome))


def test_a_retry_never_tells_the_key() -> None:
    echoed = orjson.dumps({"error": {"message": f"Overloaded (key {SECRET})"}})
    transport = ReplayTransport(
        RecordedResponse(echoed, status=503, headers={"retry-after-ms": "1"}),
        text_body("openai", "fine"),
    )
    with ChatModel(RECORDED_URL["openai"], "m", api_key=SECRET, transport=transport) as model:
        outcome = run(model)
    (status,) = [e for e in outcome.events if e.type is T.STATUS]
    assert f"Overloaded (key {MASK})" in status.attrs["cause"]
    assert outcome.error is None
    assert_no_secret(produced_texts(model, outcome))


# --- hypothesis: any secret, anywhere in any failing body, any dialect


def _failing_bodies(dialect: str, key: str) -> list[RecordedResponse]:
    wire = WIRES[dialect]
    said = f"Incorrect API key provided: {key}"
    partial: list[Any] = [Text("Partial"), Text(" answer")]
    return [
        RecordedResponse(orjson.dumps(wire.error_body(401, said)), status=401),
        RecordedResponse(orjson.dumps({"detail": said}), status=503),
        RecordedResponse(said, status=500),
        RecordedResponse(
            f"<html><body>{said}</body></html>", headers={"content-type": "text/html"}
        ),
        RecordedResponse(f"{said}\n"),
        RecordedResponse(body_of(dialect, Script([*partial, StreamError(said)]))),
        RecordedResponse(
            body_of(dialect, Script([*partial, RawBytes(b"data: {" + said.encode() + b"\n\n")]))
        ),
        RecordedResponse(body_of(dialect, Script(partial, TurnUsage(3, 2)))),
        RecordedResponse(body_of(dialect, Script([*partial, Finish("stop")]))[:-9]),
    ]


# Keys of the usual alphabet, letters and digits alternating: no run of letters spells a word
# the library itself writes ("response", "provided"), which the check above would take for
# a fragment of the key.
secrets = st.lists(
    st.tuples(
        st.sampled_from("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"),
        st.sampled_from("0123456789_-"),
    ),
    min_size=6,
    max_size=24,
).map(lambda pairs: "sk-" + "".join(letter + other for letter, other in pairs))


@pytest.mark.parametrize("dialect", DIALECTS)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_no_secret_anywhere_in_a_failing_body_ever_shows(dialect: str, data: Any) -> None:
    secret = data.draw(secrets, label="secret")
    place = data.draw(st.sampled_from(["api_key", "bearer", "x-api-key"]), label="place")
    settings_: dict[str, Any] = {
        "api_key": {"api_key": secret},
        "bearer": {"headers": {"Authorization": f"Bearer {secret}"}},
        "x-api-key": {"headers": {"x-api-key": secret}},
    }[place]
    recorded = data.draw(st.sampled_from(_failing_bodies(dialect, secret)), label="body")
    at = data.draw(st.integers(0, len(recorded.body)), label="inserted at")
    body = recorded.body[:at] + secret.encode() + recorded.body[at:]
    chunk = data.draw(st.sampled_from([None, 1, 7]), label="chunk size")
    transport = ReplayTransport(
        RecordedResponse(body, recorded.status, recorded.headers), chunk_size=chunk
    )
    model = ChatModel(
        RECORDED_URL[dialect],
        "m",
        dialect=dialect,
        max_retries=0,
        transport=transport,
        **settings_,
    )
    try:
        outcome = run(model)
    finally:
        model.close()
    assert isinstance(outcome.error, ChatError) or outcome.error is None
    assert_no_secret(produced_texts(model, outcome), secret)
