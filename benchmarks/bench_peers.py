"""The same bytes through other libraries: cost per frame side by side (the ``bench`` extra).

Each dialect's stretched recording (:mod:`benchmarks.recordings`) is served by an in-memory
HTTP transport (``httpx.MockTransport``: no socket) to each peer's public streaming API,
which reads the whole answer:

- the openai SDK: ``client.chat.completions.stream()`` (``ChatCompletionStreamState``) and
  ``client.responses.stream()`` (the Responses stream state), to the final response;
- the anthropic SDK: ``client.messages.stream()`` (``accumulate_event``), to the final message;
- the cohere SDK: ``ClientV2.chat_stream()`` (its typed stream events), the text deltas joined;
- the google-genai SDK: ``client.interactions.create(stream=True)`` (its typed
  ``InteractionSSEEvent``\\ s), the text deltas joined;
- LangChain: ``ChatOpenAI`` / ``ChatAnthropic`` ``.stream()``, the ``AIMessageChunk``\\ s merged
  with ``+``;
- pydantic-ai: ``Agent.run_stream()`` with ``stream_text(delta=True)``;
- LiteLLM: ``litellm.completion(stream=True)`` (and ``litellm.responses(stream=True)``);
- ours: ``replay(body).subscribe(...)``, the events discarded.

Each is timed (CPU time, best of several) against the baseline of
:mod:`benchmarks.bench_dialects` over the same bytes. A peer's clients are built once,
outside the timing; each timed call is one whole request. A peer that fails on a recording
is listed with its error.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from . import recordings
from .bench_dialects import replay_once, split_and_decode
from .machine import version

FRAMES = 2_000
QUICK_FRAMES = 500
BASE_URL = "http://peer.test"
MESSAGES = [{"role": "user", "content": "hi"}]

Call = Callable[[], Any]
"""One whole streamed request through a peer (its result is its final text)."""


class MissingExtra(RuntimeError):
    """A peer package is not installed."""


def _require() -> None:
    try:
        import httpx  # noqa: F401
        import openai  # noqa: F401
    except ImportError as exc:
        raise MissingExtra(
            f"the peers need the bench extra ({exc.name} is missing): "
            "pip install 'solon-events[bench]'"
        ) from exc


def _http_client(body: bytes, asynchronous: bool = False, httpx: Any = None) -> Any:
    """A client of the ``httpx`` module given (the installed one by default) whose in-memory
    transport answers every request with ``body`` as SSE."""
    if httpx is None:
        import httpx

    def handler(_request: Any) -> Any:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    transport = httpx.MockTransport(handler)
    client = httpx.AsyncClient if asynchronous else httpx.Client
    return client(transport=transport)


def _anthropic_httpx() -> Any:
    """The httpx module the installed anthropic SDK takes clients of (``httpx2`` lately)."""
    from anthropic import _base_client

    return getattr(_base_client, "httpx2", None) or _base_client.httpx


def _openai_client(body: bytes, asynchronous: bool = False) -> Any:
    import openai

    client = openai.AsyncOpenAI if asynchronous else openai.OpenAI
    http = _http_client(body, asynchronous)
    return client(api_key="x", base_url=f"{BASE_URL}/v1", http_client=http)


def _anthropic_client(body: bytes, asynchronous: bool = False) -> Any:
    import anthropic

    client = anthropic.AsyncAnthropic if asynchronous else anthropic.Anthropic
    http = _http_client(body, asynchronous, _anthropic_httpx())
    return client(api_key="x", base_url=BASE_URL, http_client=http)


# -- the openai and anthropic SDKs ---------------------------------------------------------


def openai_sdk(dialect: str, body: bytes) -> Call | None:
    client = _openai_client(body)
    if dialect == "openai":

        def chat() -> Any:
            with client.chat.completions.stream(model="m", messages=MESSAGES) as stream:
                stream.until_done()
                return stream.get_final_completion().choices[0].message.content

        return chat
    if dialect == "openai-responses":

        def responses() -> Any:
            with client.responses.stream(model="m", input="hi") as stream:
                stream.until_done()
                return stream.get_final_response().output_text

        return responses
    return None


def anthropic_sdk(dialect: str, body: bytes) -> Call | None:
    if dialect != "anthropic":
        return None
    client = _anthropic_client(body)

    def messages() -> Any:
        with client.messages.stream(model="m", max_tokens=10, messages=MESSAGES) as stream:
            stream.until_done()
            return stream.get_final_message().content[0].text

    return messages


# -- the cohere and google-genai SDKs ------------------------------------------------------


def cohere_sdk(dialect: str, body: bytes) -> Call | None:
    if dialect != "cohere":
        return None
    import cohere

    client = cohere.ClientV2(api_key="x", base_url=BASE_URL, httpx_client=_http_client(body))

    def chat() -> Any:
        parts = []
        for event in client.chat_stream(model="m", messages=MESSAGES):
            if event.type == "content-delta" and event.delta.message.content.text:
                parts.append(event.delta.message.content.text)
        return "".join(parts)

    return chat


def google_genai_sdk(dialect: str, body: bytes) -> Call | None:
    if dialect != "google-interactions":
        return None
    from google import genai
    from google.genai import types

    options = types.HttpOptions(base_url=BASE_URL, httpx_client=_http_client(body))
    client = genai.Client(api_key="x", http_options=options)

    def interaction() -> Any:
        parts = []
        for event in client.interactions.create(model="m", input="hi", stream=True):
            if event.event_type == "step.delta" and event.delta.type == "text":
                parts.append(event.delta.text)
        return "".join(parts)

    return interaction


# -- LangChain -----------------------------------------------------------------------------


def langchain(dialect: str, body: bytes) -> Call | None:
    if dialect in ("openai", "openai-responses"):
        from langchain_openai import ChatOpenAI

        model: Any = ChatOpenAI(
            model="m",
            api_key="x",  # type: ignore[arg-type]
            base_url=f"{BASE_URL}/v1",
            use_responses_api=dialect == "openai-responses",
            http_client=_openai_client(body)._client,
        )
    elif dialect == "anthropic":
        from langchain_anthropic import ChatAnthropic

        model = ChatAnthropic(model="m", api_key="x", base_url=BASE_URL, max_tokens=10)  # type: ignore[call-arg,arg-type]
        # ChatAnthropic takes no http client: its cached client is the one over the transport
        model.__dict__["_client"] = _anthropic_client(body)
    else:
        return None

    def merged() -> Any:
        message = None
        for chunk in model.stream("hi"):
            message = chunk if message is None else message + chunk
        return message.text if message is not None else None

    return merged


# -- pydantic-ai ---------------------------------------------------------------------------


def pydantic_ai(dialect: str, body: bytes) -> Call | None:
    from pydantic_ai import Agent

    if dialect in ("openai", "openai-responses"):
        from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
        from pydantic_ai.providers.openai import OpenAIProvider

        provider = OpenAIProvider(openai_client=_openai_client(body, asynchronous=True))
        kind = OpenAIChatModel if dialect == "openai" else OpenAIResponsesModel
        agent = Agent(kind("m", provider=provider))
    elif dialect == "anthropic":
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        client = _anthropic_client(body, asynchronous=True)
        agent = Agent(AnthropicModel("m", provider=AnthropicProvider(anthropic_client=client)))
    else:
        return None

    async def streamed() -> Any:
        parts = []
        async with agent.run_stream("hi") as result:
            async for text in result.stream_text(delta=True, debounce_by=None):
                parts.append(text)
        return "".join(parts)

    return _on_loop(streamed)


# -- LiteLLM -------------------------------------------------------------------------------


def litellm(dialect: str, body: bytes) -> Call | None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch at import
    import litellm as lite
    from litellm.llms.custom_httpx.http_handler import HTTPHandler

    lite.suppress_debug_info = True
    if dialect == "openai":
        options: dict[str, Any] = {"model": "openai/m", "client": _openai_client(body)}
    elif dialect in ("anthropic", "gemini"):
        handler = HTTPHandler(client=_http_client(body))
        model = "anthropic/claude-x" if dialect == "anthropic" else "gemini/gemini-2.0-flash"
        options = {"model": model, "client": handler}
    elif dialect == "openai-responses":
        handler = HTTPHandler(client=_http_client(body))
        options = {"model": "openai/m", "client": handler, "api_base": f"{BASE_URL}/v1"}

        def responses() -> Any:
            parts = []
            for event in lite.responses(input="hi", stream=True, api_key="x", **options):
                if getattr(event, "type", None) == "response.output_text.delta":
                    parts.append(event.delta)
            return "".join(parts)

        return responses
    else:
        return None

    def completion() -> Any:
        parts = []
        for chunk in lite.completion(messages=MESSAGES, stream=True, api_key="x", **options):
            parts.append(chunk.choices[0].delta.content or "")
        return "".join(parts)

    return completion


def _on_loop(make: Callable[[], Awaitable[Any]]) -> Call:
    """A blocking call of the coroutine ``make`` returns, on one loop kept for it."""
    loop = asyncio.new_event_loop()
    return lambda: loop.run_until_complete(make())


PEERS: dict[str, tuple[str, Callable[[str, bytes], Call | None]]] = {
    "openai SDK": ("openai", openai_sdk),
    "anthropic SDK": ("anthropic", anthropic_sdk),
    "cohere SDK": ("cohere", cohere_sdk),
    "google-genai SDK": ("google-genai", google_genai_sdk),
    "LangChain": ("langchain-core", langchain),
    "pydantic-ai": ("pydantic-ai-slim", pydantic_ai),
    "LiteLLM": ("litellm", litellm),
}
"""Each peer: the package whose version is printed, and what builds its call per dialect."""


def _seconds(call: Call, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        call()
        best = min(best, time.process_time() - start)
    return best


def _error(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:120]}"


def measure(frames: int, repeat: int = 3) -> list[dict[str, Any]]:
    """One figure per dialect and peer (ours first): us per frame and the ratios, or the
    error the peer failed with."""
    _require()
    figures: list[dict[str, Any]] = []
    for recording in recordings.recordings():
        dialect = recording.dialect
        body = recordings.stretched(recording, frames)
        base = _seconds(lambda body=body: split_and_decode(body), repeat * 3)
        ours = _seconds(lambda body=body, d=dialect: replay_once(body, d), repeat * 3)
        row = {"dialect": dialect, "frames": frames, "baseline_us_per_frame": base * 1e6 / frames}
        figures.append(
            {**row, "peer": "solon_events", "version": version("solon-events"), "seconds": ours}
        )
        for peer, (package, build) in PEERS.items():
            figure: dict[str, Any] = {**row, "peer": peer, "version": version(package)}
            try:
                call = build(dialect, body)
                if call is None:
                    continue
                call()  # warm: imports, first-request set-up
                figure["seconds"] = _seconds(call, repeat)
            except Exception as exc:
                figure["error"] = _error(exc)
            figures.append(figure)
    ours = {f["dialect"]: f["seconds"] for f in figures if f["peer"] == "solon_events"}
    for figure in figures:
        if "seconds" in figure:
            seconds = figure.pop("seconds")
            figure["us_per_frame"] = seconds * 1e6 / frames
            figure["ratio_to_baseline"] = figure["us_per_frame"] / figure["baseline_us_per_frame"]
            figure["ratio_to_ours"] = seconds / ours[figure["dialect"]]
    return figures


def main(quick: bool = False) -> list[dict[str, Any]]:
    """Print the peers table; return its figures."""
    if recordings.missing("peers"):
        return []
    frames = QUICK_FRAMES if quick else FRAMES
    try:
        figures = measure(frames)
    except MissingExtra as exc:
        print(f"({exc})")
        return []
    print(f"each dialect's recording stretched to {frames:,} frames, served in memory")
    print(
        f"{'dialect':<18}{'library':<15}{'version':<10}"
        f"{'us/frame':>10}{'x decode':>10}{'x ours':>9}"
    )
    for f in figures:
        head = f"{f['dialect']:<18}{f['peer']:<15}{f['version'] or '-':<10}"
        if "error" in f:
            print(f"{head}  cannot parse it: {f['error']}")
        else:
            print(
                f"{head}{f['us_per_frame']:>10.2f}{f['ratio_to_baseline']:>10.2f}"
                f"{f['ratio_to_ours']:>9.1f}"
            )
    return figures


if __name__ == "__main__":
    main("--quick" in sys.argv)
