"""No secret in any text the library produces (#13.2): the Redactor, then every leak the
issue lists against the embedded provider in every dialect, then hypothesis: any secret
anywhere in any failing body, in any dialect, never shows."""

from __future__ import annotations

import base64
import logging
import socket
import sys
import traceback
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, quote_plus

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from outcomes import Outcome, outcome_of
from recorded import DIALECTS, ENDPOINTS, WIRES, body_of, text_body

from solon_events import (
    ChatConnectionError,
    ChatError,
    ChatEventType,
    ChatHttpError,
    ChatModel,
    ChatProtocolError,
    ProviderError,
    ToolCallError,
)
from solon_events.client.transport import RecordedResponse, ReplayTransport
from solon_events.devserver import DevServer, RunningServer
from solon_events.devserver.turns import Finish, RawBytes, Script, StreamError, Text, TurnUsage
from solon_events.dialects.base import ChatRequest
from solon_events.dialects.request import Endpoint
from solon_events.event_model.messages import UserMessage
from solon_events.support.redaction import MASK, Redactor, redact_url

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


def test_redact_url_masks_userinfo_and_every_query_value() -> None:
    assert redact_url("https://user:pw@api.example.com:8443/v1/x?key=abc#frag") == (
        f"https://{MASK}@api.example.com:8443/v1/x?key={MASK}"
    )
    assert redact_url("http://127.0.0.1/v1beta/models/m:streamGenerateContent?alt=sse&key=k") == (
        f"http://127.0.0.1/v1beta/models/m:streamGenerateContent?alt={MASK}&key={MASK}"
    )
    assert redact_url("http://[::1]:8000/v1?sk-bare-token-0123") == f"http://[::1]:8000/v1?{MASK}"
    assert redact_url("http://[::1") == "<an invalid URL>"


# --- #29: the chain, api_url, short keys, encoded forms

URL_SECRETS = {
    "userinfo": "pa55word-of-the-user",
    "api_key": "AK-0123456789abcdef",
    "key": "K2-0123456789abcdef",
    "code": "C3-0123",  # short: masked in the URL all the same
    "subscription-key": "S4-0123456789abcdef",
    "client_secret": "CS5-0123456789abcdef",
    "session": "whatever-it-is-0123",
}
URL_WITH_SECRETS = (
    f"https://azure-user:{URL_SECRETS['userinfo']}@example.com/v1/chat/completions?"
    + "&".join(f"{name}={value}" for name, value in URL_SECRETS.items() if name != "userinfo")
    + "&api-version=2024-10-21"
)
URL_SHOWN = (
    f"https://{MASK}@example.com/v1/chat/completions?api_key={MASK}&key={MASK}&code={MASK}"
    f"&subscription-key={MASK}&client_secret={MASK}&session={MASK}&api-version={MASK}"
)


def assert_no_url_secret(text: str) -> None:
    for value in [*URL_SECRETS.values(), "azure-user", "2024-10-21"]:
        assert value not in text, text


def test_a_secret_in_api_url_never_shows_in_a_repr_or_the_bad_scheme_error() -> None:
    with ChatModel(URL_WITH_SECRETS, "m", transport=ReplayTransport()) as model:
        assert f"api_url={URL_SHOWN!r}" in repr(model)
        assert_no_url_secret(repr(model))
        assert_no_url_secret(repr(model.prompt("hi")))
        request = model.build_http_request(
            ChatRequest(model="m", messages=[UserMessage(text="hi")])
        )
        assert repr(request).startswith(f"HttpRequest(url={URL_SHOWN!r}")
    endpoint = Endpoint(URL_WITH_SECRETS, api_key=SECRET)
    assert repr(endpoint) == f"Endpoint(url={URL_SHOWN!r})"
    with pytest.raises(ValueError) as raised:
        ChatModel("ftp" + URL_WITH_SECRETS[5:], "m")
    assert URL_SHOWN[5:] in str(raised.value) and "ftp://" in str(raised.value)
    assert_no_url_secret(str(raised.value))


def test_a_key_passed_as_api_url_is_not_shown() -> None:
    with pytest.raises(ValueError, match="must be an http") as raised:
        ChatModel(SECRET, "m", api_key="http://127.0.0.1:8000/v1/chat/completions")
    assert_no_secret([str(raised.value), repr(raised.value)])


def test_secret_query_values_of_api_url_are_masked_wherever_echoed() -> None:
    redactor = Redactor.for_request(api_url=URL_WITH_SECRETS)
    for name, value in URL_SECRETS.items():
        if len(value) >= 8:
            assert redactor.text(f"echo: {value}.") == f"echo: {MASK}.", name
    # A value whose name says nothing secret is masked in the URL, not everywhere.
    assert redactor.text("api-version 2024-10-21") == "api-version 2024-10-21"


def test_a_secret_deep_in_the_exception_chain_never_prints() -> None:
    redactor = Redactor([SECRET])
    try:
        try:
            try:
                try:
                    raise KeyError(f"the third cause quotes {SECRET}")
                except KeyError as third:
                    raise OSError(5, "the second cause") from third
            except OSError as second:
                second.add_note(f"a note quoting {SECRET}")
                raise ValueError("the first cause") from second
        except ValueError:
            raise ChatError(f"the error ({SECRET})")  # noqa: B904 (its context is the chain)
    except ChatError as raised:
        error = raised
    assert redactor.error(error) is error
    shown = "".join(traceback.format_exception(error))
    assert_no_secret([shown])
    # What shows no secret stays in the chain, redacted where it quoted one.
    assert "the first cause" in shown and "the second cause" in shown
    assert f"the third cause quotes {MASK}" in shown and f"a note quoting {MASK}" in shown


class _Shows(Exception):
    """An exception whose text is not its args (it cannot be redacted in place)."""

    def __str__(self) -> str:
        return f"shown: {SECRET}"


def test_a_chain_that_loops_or_cannot_be_redacted_is_cut() -> None:
    redactor = Redactor([SECRET])
    top, middle, bottom = ChatError("top"), ValueError("middle"), _Shows()
    top.__cause__ = middle
    middle.__context__ = bottom
    bottom.__context__ = top  # a loop back to the start
    middle.__cause__ = middle  # and one onto itself
    assert redactor.error(top) is top
    shown = "".join(traceback.format_exception(top))
    assert_no_secret([shown])
    assert "middle" in shown and middle.__context__ is None  # the unredactable link is cut


def test_a_key_shorter_than_eight_characters_mangles_no_text() -> None:
    text = "request to http://127.0.0.1:8000/v1/chat/completions failed: 1 of 1 tries"
    for short in ("1", "127", "abc1234", "0.0.1"):
        redactor = Redactor.for_request(
            api_key=short, headers={"x-api-key": short}, api_url=f"http://u:{short}@h/?key={short}"
        )
        assert redactor.text(text) == text and not redactor
    assert Redactor(["8-chars!"]).text("say 8-chars! twice: 8-CHARS!") == (
        f"say {MASK} twice: {MASK}"
    )


def test_a_trivial_key_leaves_the_error_of_a_refused_connection_readable() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    with (
        ChatModel(url, "m", api_key="1", max_retries=0) as model,
        pytest.raises(ChatConnectionError) as raised,
    ):
        model.prompt("hi").call()
    assert f"request to {url} failed" in str(raised.value)
    assert MASK not in str(raised.value)


# The AWS documentation's example secret key: it has "/", which %-encoding changes.
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def _encoded_forms(secret: str) -> dict[str, str]:
    raw = secret.encode()
    return {
        "base64": base64.b64encode(raw).decode(),
        "base64 of user:secret": base64.b64encode(b"user:" + raw).decode(),
        "base64 of a JSON body": base64.b64encode(orjson.dumps({"k": secret})).decode(),
        "base64url": base64.urlsafe_b64encode(b"x" + raw).decode().rstrip("="),
        "%-encoded": quote(secret, safe=""),
        "%-encoded, lower-case hex": quote(secret, safe="").replace("%2F", "%2f"),
        "%-encoded twice over (form)": quote_plus(secret),
        "%-encoded, every character": "".join(f"%{b:02X}" for b in raw),
        "%-encoded, every character, lower-case hex": "".join(f"%{b:02x}" for b in raw),
        "\\u escapes": "".join(f"\\u{ord(c):04x}" for c in secret),
        "\\u escapes, upper-case hex": "".join(f"\\u{ord(c):04X}" for c in secret),
        "JSON with escaped slashes": secret.replace("/", "\\/"),
        "lower case": secret.lower(),
        "upper case": secret.upper(),
        "swapped case": secret.swapcase(),
    }


@pytest.mark.parametrize("secret", [SECRET, AWS_SECRET])
@pytest.mark.parametrize("form", list(_encoded_forms(SECRET)))
def test_an_encoded_form_of_a_secret_is_masked(secret: str, form: str) -> None:
    encoded = _encoded_forms(secret)[form]
    redactor = Redactor([secret])
    shown = redactor.text(f"the provider said: <{encoded}>.")
    assert shown.startswith("the provider said: <") and shown.endswith(">.")
    assert MASK in shown and encoded not in shown
    left = shown.removeprefix("the provider said: <").removesuffix(">.").split(MASK)
    # What is left of the encoded form is too short to tell anything (a few characters at
    # the ends that base64 mixes with its neighbours).
    assert all(len(piece) <= 8 for piece in left), shown


def test_an_encoded_key_echoed_by_the_provider_never_shows() -> None:
    encoded = base64.b64encode(f"user:{SECRET}".encode()).decode()
    body = orjson.dumps({"error": {"message": f"bad credentials: Basic {encoded}"}})
    transport = ReplayTransport(RecordedResponse(body, status=401))
    with ChatModel(RECORDED_URL["openai"], "m", api_key=SECRET, transport=transport) as model:
        outcome = run(model)
    assert isinstance(outcome.error, ChatHttpError)
    texts = produced_texts(model, outcome)
    assert not any(encoded[8:20] in text for text in texts)


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


# --- keys in unusual places (#42): defence in depth

KEY_SHAPED = "sk-proj-AbCdEf0123456789GhIjKl"


def _answering(status: int, body: bytes, headers: dict[str, str]) -> Any:
    """A provider on 127.0.0.1 that answers every POST with ``status``, ``body`` and
    ``headers`` (its requests' paths noted in ``.paths``)."""
    from aiohttp import web
    from wire_server import serving_in_thread

    paths: list[str] = []

    async def handle(request: web.Request) -> web.Response:
        await request.read()
        paths.append(request.path)
        return web.Response(status=status, body=body, headers=headers)

    app = web.Application()
    app.router.add_post("/{tail:.*}", handle)
    return serving_in_thread(app), paths


def test_a_fully_percent_encoded_key_in_an_error_text_never_shows() -> None:
    encoded = "".join(f"%{b:02X}" for b in SECRET.encode())
    body = orjson.dumps({"error": {"message": f"invalid key {encoded} (as received)"}})
    serving, _paths = _answering(401, body, {"Content-Type": "application/json"})
    with serving as url, ChatModel(url + "/v1/chat/completions", "m", api_key=SECRET) as model:
        outcome = run(model)
    assert isinstance(outcome.error, ChatHttpError) and "invalid key" in str(outcome.error)
    texts = produced_texts(model, outcome)
    assert not any(encoded[:24] in text or encoded[-24:] in text for text in texts)


@pytest.mark.parametrize("known", [True, False])
def test_a_key_as_a_response_headers_name_never_shows(known: bool) -> None:
    headers = {"Content-Type": "application/json", f"x-{KEY_SHAPED}": "1"}
    serving, _paths = _answering(403, b'{"error": {"message": "no"}}', headers)
    options = {"api_key": KEY_SHAPED} if known else {}
    with serving as url, ChatModel(url + "/v1/chat/completions", "m", **options) as model:
        outcome = run(model)
    error = outcome.error
    assert isinstance(error, ChatHttpError) and error.status == 403
    assert any(MASK in name for name in error.headers)  # the header is there, its name masked
    assert_no_secret(produced_texts(model, outcome), KEY_SHAPED)


def test_a_key_in_the_url_path_without_an_api_key_never_shows() -> None:
    serving, paths = _answering(404, b'{"error": {"message": "no such route"}}', {})
    with serving as url:
        api_url = f"{url}/keys/{KEY_SHAPED}/v1/chat/completions"
        with ChatModel(api_url, "m", max_retries=0) as model:
            outcome = run(model)
            texts = produced_texts(model, outcome)
    assert paths == [f"/keys/{KEY_SHAPED}/v1/chat/completions"]  # it was sent: it is the URL
    assert isinstance(outcome.error, ChatHttpError)
    assert_no_secret(texts, KEY_SHAPED)
    assert "/keys/***/v1/chat/completions" in str(outcome.error)
    assert redact_url(f"https://h/v1/{KEY_SHAPED}/x") == "https://h/v1/***/x"
    assert redact_url("https://h/v1/models/gpt-4o-mini:generate") == (
        "https://h/v1/models/gpt-4o-mini:generate"
    )


@pytest.mark.parametrize(
    "key",
    [
        "sk-ant-api03-AbCdEf0123456789GhIjKl",
        "AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW",
        "xai-AbCdEf0123456789GhIjKlMnOp",
        "gsk_AbCdEf0123456789GhIjKlMnOp",
        "hf_AbCdEf0123456789GhIjKlMnOp",
        "AKIAIOSFODNN7EXAMPLE",
    ],
)
def test_the_shapes_of_the_well_known_keys(key: str) -> None:
    from solon_events.support.redaction import mask_key_shaped

    assert mask_key_shaped(f"/v1/{key}/chat") == "/v1/***/chat"
    assert mask_key_shaped("/v1/task-list/skeleton") == "/v1/task-list/skeleton"


if sys.version_info >= (3, 11):
    from builtins import ExceptionGroup
else:  # pytest's own dependency on 3.10
    from exceptiongroup import ExceptionGroup


class _Leaky(Exception):
    """An exception whose ``str()`` is made from an attribute, as HTTP clients' errors are
    (a URL with its query): redacting its args does not reach it."""

    def __init__(self, url: str) -> None:
        super().__init__("request failed")
        self.url = url

    def __str__(self) -> str:
        return f"request to {self.url} failed"


@pytest.mark.parametrize("where", ["the error", "its cause"])
def test_the_str_of_an_exception_groups_members_goes_through_the_redactor(where: str) -> None:
    member = _Leaky(f"https://api.example/v1?key={SECRET}")
    group = ExceptionGroup("tools failed", [member, ValueError(f"bad {SECRET}")])
    error: BaseException = group
    if where == "its cause":
        error = ToolCallError("the tool failed")
        error.__cause__ = group
    assert Redactor([SECRET]).error(error) is error
    shown = "".join(traceback.format_exception(error))
    assert_no_secret([shown])
    assert isinstance(member, _Leaky) and group.exceptions[0] is member  # still itself
    assert str(member) == "request to https://api.example/v1?key=*** failed"
    assert SECRET not in repr(member) and "request to https://api.example" in shown
