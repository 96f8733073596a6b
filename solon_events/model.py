"""ChatModel: point it at a provider, observe the response as semantic events.

Threads: every request runs on the model's private I/O thread (an asyncio loop in a
daemon thread). An Observable from :meth:`ChatPrompt.stream` is subscribed on that thread
and delivers every event there; move delivery with ``observe_on``, e.g.
``stream().pipe(ops.observe_on(AsyncIOThreadSafeScheduler(loop)))`` for an asyncio loop.
:meth:`ChatPrompt.call` blocks the calling thread only, so it works in plain scripts and
in Jupyter, whose main thread runs a loop; :meth:`ChatPrompt.acall` and
:meth:`ChatPrompt.astream` deliver on the caller's own loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import Any

import attrs
import reactivex
from reactivex import Observable
from reactivex import operators as ops
from reactivex.scheduler.eventloop import AsyncIOThreadSafeScheduler

from .core.session import new_response_id
from .dialects.base import ChatDialect, HttpRequest, get_dialect
from .errors import ChatError
from .events import TYPES, ChatEvent
from .messages import ChatRequest, Message, to_messages
from .operators import respond
from .results import ChatResponse
from .sse import Frame
from .tool_loop import StepPlan, ToolErrorPolicy, response_steps
from .tools import Tool, ToolSet
from .transport import HttpTransport

__all__ = ["ChatModel", "ChatPrompt"]

_T = TYPES
EventFilter = Callable[[ChatEvent], bool]


class ChatModel:
    """A chat model behind ``api_url``, spoken to in ``dialect``.

    ``timeout`` bounds the wait for the first frame, ``idle_timeout`` the gap between
    frames and ``total_timeout`` the whole response (seconds; None for no limit). One model
    serves many concurrent streams over one connection pool; :meth:`close` it (or use it as
    a context manager) when done. The API key never appears in a repr, log or error.
    """

    def __init__(
        self,
        api_url: str,
        model: str,
        api_key: str | None = None,
        dialect: str | ChatDialect = "openai",
        headers: Mapping[str, str] | None = None,
        timeout: float | None = 60.0,
        idle_timeout: float | None = 60.0,
        total_timeout: float | None = None,
        *,
        max_steps: int = 8,
        tool_errors: ToolErrorPolicy = "raise",
        max_frame_size: int = 16 * 1024 * 1024,
    ) -> None:
        if not isinstance(api_url, str) or not api_url.startswith(("http://", "https://")):
            raise ValueError(f"api_url must be an http(s) URL, got {api_url!r}")
        if not model or not isinstance(model, str):
            raise ValueError("model must be a non-empty string")
        if max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        if tool_errors not in ("raise", "return"):
            raise ValueError("tool_errors must be 'raise' or 'return'")
        self.api_url = api_url
        self.model = model
        self.dialect = get_dialect(dialect)
        self._api_key = api_key
        self._headers = dict(headers or {})
        self.max_steps = max_steps
        self.tool_errors: ToolErrorPolicy = tool_errors
        secrets = [api_key or "", *self._headers.values()]
        self.transport = HttpTransport(
            timeout=timeout,
            idle_timeout=idle_timeout,
            total_timeout=total_timeout,
            max_frame_size=max_frame_size,
            secrets=secrets,
        )

    def __repr__(self) -> str:
        key = "set" if self._api_key else "none"
        return (
            f"ChatModel(api_url={self.api_url!r}, model={self.model!r}, "
            f"dialect={self.dialect.name!r}, api_key=<{key}>)"
        )

    def prompt(self, text_or_messages: str | Message | Iterable[Any]) -> ChatPrompt:
        """A request for this model; chain options, then ``call``/``stream``."""
        return ChatPrompt(self, to_messages(text_or_messages))

    def build_http_request(self, request: ChatRequest) -> HttpRequest:
        """The provider request for ``request`` (what each step posts)."""
        return self.dialect.build_request(
            request, api_url=self.api_url, api_key=self._api_key, headers=self._headers
        )

    def close(self) -> None:
        """Close the connection pool and the I/O thread."""
        self.transport.close()

    def __enter__(self) -> ChatModel:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    async def __aenter__(self) -> ChatModel:
        return self

    async def __aexit__(self, *_: object) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.close)


@attrs.frozen
class ChatPrompt:
    """A prepared request; every chained method returns a new prompt.

    Terminal methods: :meth:`call`, :meth:`acall`, :meth:`stream`, :meth:`astream`.
    """

    _model: ChatModel
    _messages: tuple[Message, ...]
    _tools: tuple[Tool, ...] = ()
    _options: Mapping[str, Any] = attrs.field(factory=dict)
    _event_filter: EventFilter | None = None
    _auto_tool_call: bool = True
    # Sees every raw frame received, in order (solon_events.recording.record sets it).
    _frame_tap: Callable[[Frame], Any] | None = None

    def tools(self, *tools: Tool | Callable[..., Any]) -> ChatPrompt:
        """Add tools (``@tool`` functions, or plain typed functions)."""
        added = tuple(ToolSet(tools).values())
        return attrs.evolve(self, tools=self._tools + added)

    def options(self, **provider_options: Any) -> ChatPrompt:
        """Provider options merged into the request body (temperature, max_tokens, ...)."""
        return attrs.evolve(self, options={**self._options, **provider_options})

    def event_filter(self, event_filter: EventFilter) -> ChatPrompt:
        """Deliver only what ``event_filter`` passes (guarded: lifecycle always passes)."""
        if not callable(event_filter):
            raise TypeError("event_filter must be a callable such as a ChatEventFilter")
        return attrs.evolve(self, event_filter=event_filter)

    def auto_tool_call(self, flag: bool = True) -> ChatPrompt:
        """Whether tool calls are executed and sent back automatically (default True)."""
        return attrs.evolve(self, auto_tool_call=bool(flag))

    def _plan(self) -> StepPlan:
        model = self._model
        toolset = ToolSet(self._tools)
        request = ChatRequest(
            model=model.model,
            messages=self._messages,
            tools=toolset.specs(),
            options=self._options,
        )
        return StepPlan(
            request=request,
            dialect=model.dialect,
            build=model.build_http_request,
            frames=self._frames,
            tools=toolset,
            auto_tool_call=self._auto_tool_call,
            max_steps=model.max_steps,
            tool_errors=model.tool_errors,
        )

    def _frames(self, http: HttpRequest) -> Observable[Frame]:
        frames = self._model.transport.frames(http, self._model.dialect)
        return frames if self._frame_tap is None else frames.pipe(ops.do_action(self._frame_tap))

    def stream(self) -> Observable[ChatEvent]:
        """A cold Observable of the response's events; each subscription is a new request.

        Events are delivered on the model's I/O thread.
        """
        plan = self._plan()
        event_filter = self._event_filter

        def pipeline(_scheduler: object) -> Observable[ChatEvent]:
            response_id = new_response_id()
            return response_steps(plan, response_id=response_id).pipe(
                respond(response_id=response_id, event_filter=event_filter)
            )

        io_scheduler = AsyncIOThreadSafeScheduler(self._model.transport.io.loop)
        return reactivex.defer(pipeline).pipe(ops.subscribe_on(io_scheduler))

    def call(self) -> ChatResponse:
        """Block until the response is complete and return it; raises its ChatError."""
        if self._model.transport.io.in_loop_thread():
            raise RuntimeError("call() would block the I/O thread; use acall() or stream()")
        done = threading.Event()
        outcome: dict[str, Any] = {}

        def on_next(event: ChatEvent) -> None:
            if event.type is _T.RESPONSE_END:
                outcome["response"] = event.response

        def on_error(error: Exception) -> None:
            outcome["error"] = error
            done.set()

        subscription = self.stream().subscribe(on_next, on_error, done.set)
        try:
            done.wait()
        finally:
            subscription.dispose()
        return _outcome(outcome)

    async def acall(self) -> ChatResponse:
        """The response, awaited on the caller's event loop."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[ChatResponse] = loop.create_future()
        outcome: dict[str, Any] = {}

        def settle() -> None:
            if future.done():
                return
            try:
                future.set_result(_outcome(outcome))
            except BaseException as exc:
                future.set_exception(exc)

        def on_next(event: ChatEvent) -> None:
            if event.type is _T.RESPONSE_END:
                outcome["response"] = event.response

        def on_error(error: Exception) -> None:
            outcome["error"] = error
            loop.call_soon_threadsafe(settle)

        def on_completed() -> None:
            loop.call_soon_threadsafe(settle)

        subscription = self.stream().subscribe(on_next, on_error, on_completed)
        try:
            return await future
        finally:
            subscription.dispose()

    async def astream(self) -> AsyncIterator[ChatEvent]:
        """The response's events as an async iterator on the caller's loop.

        Raises the response's ChatError after its ERROR event; leaving the loop early
        cancels the request.
        """
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

        def put(kind: str, value: Any) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, (kind, value))

        subscription = self.stream().subscribe(
            lambda e: put("event", e),
            lambda error: put("error", error),
            lambda: put("done", None),
        )
        try:
            while True:
                kind, value = await queue.get()
                if kind == "event":
                    yield value
                elif kind == "error":
                    raise value
                else:
                    return
        finally:
            subscription.dispose()


def _outcome(outcome: Mapping[str, Any]) -> ChatResponse:
    if "error" in outcome:
        raise outcome["error"]
    response = outcome.get("response")
    if response is None:
        raise ChatError("the response ended without a result")
    assert isinstance(response, ChatResponse)
    return response
