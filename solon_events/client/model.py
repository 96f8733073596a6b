"""ChatModel: point it at a provider, observe the response as semantic events.

Threads and loops: :meth:`ChatPrompt.astream` and :meth:`ChatPrompt.acall` run the request
on the caller's own event loop, in the caller's task: the body's bytes are decoded and
parsed there and each event is yielded as its chunk arrives, with no other thread, queue
or task switch in between (tools run between steps on that loop, sync ones in its default
executor). An Observable from :meth:`ChatPrompt.stream` runs its request on the model's
private I/O thread (an asyncio loop in a daemon thread) and delivers every event there;
move delivery with ``observe_on``, e.g.
``stream().pipe(ops.observe_on(AsyncIOThreadSafeScheduler(loop)))``.
:meth:`ChatPrompt.call` blocks the calling thread only (on the I/O thread), so it works
in plain scripts and in Jupyter, whose main thread runs a loop. Both edges run the same
steps (:class:`~solon_events.client.tool_loop.ResponseRun`).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..dialects.base import ChatDialect, HttpRequest, get_dialect
from ..dialects.endpoints import dialect_for_url
from ..event_model.extras import require
from ..event_model.messages import ChatRequest, Message
from ..event_model.pricing import price
from ..event_model.results import Cost, Usage, UsageReport
from ..support.loop_thread import EventLoopThread, IoLoop, cancel_other_tasks, loop_factory
from ..support.redaction import Redactor, redact_url
from ..wire.sse import DEFAULT_MAX_FRAME_SIZE
from .cache import ResponseCache, cache_of
from .estimate import StepAccounting
from .limiter import Limiter
from .prompt import ChatPrompt
from .retry import RetryPolicy
from .routing import _Combinable
from .stream_reader import StreamReader, TimeBudgets
from .tool_loop import ToolErrorPolicy
from .transport import AiohttpTransport, ChatTransport, pools_closed

if TYPE_CHECKING:
    from ..telemetry import Instrument
    from .prompt import _CallerRun, _ResponsePipeline

__all__ = ["ChatModel", "ChatPrompt"]


class ChatModel(_Combinable):
    """A chat model behind ``api_url``, spoken to in ``dialect``.

    ``dialect="auto"`` (the default) is the one ``api_url``'s path names
    (:func:`~solon_events.dialects.endpoints.dialect_for_url`: ``.../chat/completions``,
    ``.../v1/responses``, ``.../v1/messages``, ``...:streamGenerateContent`` or
    ``.../v1beta``, ``.../v1beta/interactions``, ``.../v2/chat``, ``.../api/chat``,
    ``.../converse-stream``), else ``"openai"`` (a compatible server's own path).

    Time budgets, in seconds (None for no limit), count decoded frames, never bytes:

    - ``timeout``: from a step's request until its first frame, retries and their waits
      included;
    - ``idle_timeout``: the provider's silence between two frames, from the delivery of a
      frame's events (the time the subscriber spends on them, in a ``stream()`` callback or
      between ``astream()``'s iterations, is not counted) to the next frame;
    - ``total_timeout``: the whole response, every step's request, its retries and their
      waits, and the tools run between steps;
    - ``tool_timeout``: each tool run. A tool that runs longer is cancelled (a sync tool's
      thread runs on, its result dropped) and fails as a raising tool does: a TOOL_RESULT
      with ``attrs["is_error"]`` for the model to read under ``tool_errors="return"``,
      else the response fails with a :class:`~solon_events.ToolCallError`.

    A budget that runs out fails the response with a :class:`~solon_events.ChatTimeoutError`
    whose ``budget`` names it. Before the first frame of a request, connection errors and
    the statuses 408, 409, 429, 500, 502, 503 and 504 are retried up to ``max_retries``
    times (each retry a STATUS event with ``sub_type="retry"`` and ``attrs`` ``attempt``,
    ``delay``, ``cause`` and ``accepted``: whether the provider had answered with a stream
    before the connection was lost), after the wait the
    provider asked for (``Retry-After``, at most ``max_retry_after`` seconds) or an
    exponential backoff; a wait that would outlast ``timeout`` or ``total_timeout`` is not
    made: the request fails with the provider's error (its ``retry_after`` says the wait).

    ``transport`` sends the requests (any :class:`~solon_events.client.transport.ChatTransport`,
    for example a :class:`~solon_events.client.transport.ReplayTransport` of recorded bytes); by
    default an :class:`~solon_events.client.transport.AiohttpTransport` whose connection pool holds
    ``connection_limit`` connections (default 100; 0 for no limit) per event loop: the
    I/O thread's (``stream()``, ``call()``) and each caller loop's (``astream()``,
    ``acall()``). Concurrent streams beyond it wait for a connection.

    ``io_loop="uvloop"`` runs the I/O thread (``stream()``, ``call()``) on a uvloop loop
    instead of asyncio's own (needs the ``uvloop`` extra): its socket reads cost less (bare
    aiohttp reads over loopback: about 15 % fewer instructions per frame). ``astream()``
    and ``acall()`` run on the caller's loop, whichever it is (``uvloop.run(main())`` gives
    them the same).

    Usage and cost (see :mod:`solon_events.client.estimate` and
    :mod:`solon_events.event_model.pricing`): a
    step the provider sent no usage for, or whose last count came before some of its
    output (a stream cancelled, cut or failed mid-answer), gets an estimate, marked
    ``Usage.estimated``; so does a request retried after the provider had accepted it (its
    retry STATUS event carries it: the input the provider may have billed).
    ``pricing=True`` prices every step and the response
    (``ChatResponse.cost``; needs the ``cost`` extra, genai-prices). ``on_usage`` is called
    with a :class:`~solon_events.UsageReport` once per response, however it ended:
    completed, failed, aborted by the provider, or cancelled (disposed, ``take(n)``,
    ``break`` out of ``astream()``), which no event may follow; it runs where the
    response runs (``stream()``: the I/O thread), after its last event, and what it raises
    is logged.

    A stream whose frames are all unknown to the dialect (only RAW events: no content,
    usage or finish reason), even one that ends with its completion marker, fails with a
    :class:`~solon_events.ChatProtocolError` naming the unknown event types (the RAW
    events reach the subscriber first): a provider that changed its vocabulary is not
    read as an empty answer. ``accept_unknown_streams=True`` takes such a stream as an
    empty answer instead.

    ``cache`` answers a request asked before from a cache instead of the provider (see
    :mod:`solon_events.client.cache`): True keeps complete answers in a SQLite file
    (:func:`~solon_events.client.cache.default_cache_path`), ``"memory"`` in the process,
    ``"sqlite:PATH"`` in that file, ``"redis://HOST:PORT/DB"`` in Redis; a
    :class:`~solon_events.ResponseCache` sets the time to live, the replay pace and single
    flight. A hit starts with a STATUS event (``sub_type="cache"``), is billed zero and
    keeps the original usage on ``ChatResponse.cached``; ``prompt(..., cache=False)`` asks
    the provider.

    ``limiter`` holds the model's requests to its limits (a
    :class:`~solon_events.client.limiter.Limiter`: requests and tokens per minute,
    requests in flight, budgets; in the process or on Redis): each request reserves its
    estimate first, waiting for capacity as long as the limiter's ``wait`` allows, else
    fails at once with a :class:`~solon_events.client.limits.LimitExceededError` (HTTP
    429: a router's next deployment is asked), and is charged its exact usage when it ends.

    ``telemetry=True`` records every response as OpenTelemetry spans and metrics per the
    GenAI semantic conventions, through the global tracer and meter providers (see
    :mod:`solon_events.telemetry`; needs the ``otel`` extra). A mapping instead of True
    passes ``capture_content``, ``tracer_provider`` or ``meter_provider`` on to
    :func:`~solon_events.telemetry.instrument`.

    One model serves many concurrent streams over one connection pool; :meth:`close` it (or
    use it as a context manager) when done: streams still in flight then end with a
    ChatError saying the model was closed. A model never closed is closed when it is
    garbage collected or when the interpreter exits. No secret it knows (the API key, the
    values of auth-like headers, the user info and secret-like query values of
    ``api_url``), nor an encoded form of one, appears in a repr, an error or an event; a URL
    is shown with its user info and every query value masked.
    """

    def __init__(
        self,
        api_url: str,
        model: str,
        api_key: str | None = None,
        dialect: str | ChatDialect = "auto",
        headers: Mapping[str, str] | None = None,
        timeout: float | None = 60.0,
        idle_timeout: float | None = 60.0,
        total_timeout: float | None = None,
        *,
        max_steps: int = 8,
        tool_errors: ToolErrorPolicy = "raise",
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        max_retries: int = 2,
        max_retry_after: float = 60.0,
        tool_timeout: float | None = None,
        transport: ChatTransport | None = None,
        connection_limit: int | None = None,
        telemetry: bool | Mapping[str, Any] = False,
        io_loop: IoLoop = "asyncio",
        pricing: bool = False,
        on_usage: Callable[[UsageReport], Any] | None = None,
        accept_unknown_streams: bool = False,
        cache: Any = None,
        limiter: Limiter | None = None,
    ) -> None:
        new_loop = loop_factory(io_loop)
        if dialect == "auto":
            dialect = (isinstance(api_url, str) and dialect_for_url(api_url)) or "openai"
        chosen = get_dialect(dialect)
        redactor = Redactor.for_request(
            api_key=api_key,
            headers=headers,
            api_url=api_url if isinstance(api_url, str) else None,
            extra=chosen.secrets(
                api_key=api_key, api_url=api_url if isinstance(api_url, str) else None
            ),
        )
        if not isinstance(api_url, str) or not api_url.startswith(("http://", "https://")):
            raise ValueError(f"api_url must be an http(s) URL, got {_shown_url(api_url)}")
        if not model or not isinstance(model, str):
            raise ValueError("model must be a non-empty string")
        if max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        if tool_errors not in ("raise", "return"):
            raise ValueError("tool_errors must be 'raise' or 'return'")
        if transport is None:
            transport = AiohttpTransport(
                connection_limit=100 if connection_limit is None else connection_limit
            )
        elif connection_limit is not None:
            raise ValueError(
                "connection_limit sizes the default transport's pool; "
                "with transport=..., size the pool of that transport instead"
            )
        elif not callable(getattr(transport, "send", None)):
            raise TypeError("transport must have an async send(request) method")
        self._telemetry = _telemetry_options(telemetry)
        self.cache: ResponseCache | None
        """The response cache (None: none; see :mod:`solon_events.client.cache`)."""
        self.cache, self._own_cache = cache_of(cache)
        if pricing:  # the extra is checked now, as telemetry's is
            require("genai_prices", feature="pricing", extra="cost", package="genai-prices")
        if on_usage is not None and not callable(on_usage):
            raise TypeError(f"on_usage takes a callable, not {type(on_usage).__name__}")
        self.pricing = bool(pricing)
        """Whether every step and response is priced (``ChatResponse.cost``)."""
        self.on_usage = on_usage
        """Called with every response's :class:`~solon_events.UsageReport` (or None)."""
        self.accept_unknown_streams = bool(accept_unknown_streams)
        """Whether a stream whose every frame the dialect does not know is an empty answer
        (by default a :class:`~solon_events.ChatProtocolError`)."""
        if limiter is not None and not isinstance(limiter, Limiter):
            raise TypeError(f"limiter takes a Limiter, not {type(limiter).__name__}")
        self.limiter = limiter
        """The :class:`~solon_events.client.limiter.Limiter` every request reserves from
        (or None)."""
        self.api_url = api_url
        self.model = model
        self.dialect = chosen
        self._api_key = api_key
        self._headers = dict(headers or {})
        self.max_steps = max_steps
        self.tool_errors: ToolErrorPolicy = tool_errors
        self.transport: ChatTransport = transport
        """What sends the requests."""
        self._redactor = redactor
        self._io = EventLoopThread(new_loop=new_loop)
        self._reader = StreamReader(
            transport,
            self._io,
            self.dialect,
            budgets=TimeBudgets(
                timeout=timeout,
                idle_timeout=idle_timeout,
                total_timeout=total_timeout,
                tool_timeout=tool_timeout,
            ),
            max_frame_size=max_frame_size,
            retry_policy=RetryPolicy(max_retries=max_retries, max_retry_after=max_retry_after),
            redactor=redactor,
        )
        self._lifecycle = _Lifecycle(self._io, self._reader)
        self._close = weakref.finalize(self, self._lifecycle.close)

    @property
    def max_retries(self) -> int:
        """How many times a request is retried before its first frame."""
        return self._reader.retry_policy.max_retries

    @property
    def budgets(self) -> TimeBudgets:
        """The time budgets (``timeout``, ``idle_timeout``, ``total_timeout``,
        ``tool_timeout``)."""
        return self._reader.budgets

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._lifecycle.closed

    def __repr__(self) -> str:
        key = "set" if self._api_key else "none"
        return (
            f"ChatModel(api_url={self._redactor.text(redact_url(self.api_url))!r}, "
            f"model={self.model!r}, "
            f"dialect={self.dialect.name!r}, api_key=<{key}>)"
        )

    prompt = _Combinable.prompt  # documented with the model's own methods

    fallback = _Combinable.fallback  # documented with the model's own methods
    hedge = _Combinable.hedge

    @property
    def telemetry(self) -> bool:
        """Whether every response is recorded with OpenTelemetry."""
        return self._telemetry is not None

    def _instrument(self, messages: Iterable[Message], options: Mapping[str, Any]) -> Instrument:
        """The telemetry operator for one prompt of this model (its ``stage`` for
        ``astream()``)."""
        from ..telemetry import instrument

        return instrument(**self._telemetry_options(messages, options))

    def _telemetry_options(
        self, messages: Iterable[Message], options: Mapping[str, Any]
    ) -> dict[str, Any]:
        url = urlsplit(self.api_url)
        return {
            "model": self.model,
            "provider": self.dialect.name,
            "server_address": url.hostname,
            "server_port": url.port or (443 if url.scheme == "https" else 80),
            "input_messages": messages,
            "options": options,
            "redactor": self._redactor,
            **(self._telemetry or {}),
        }

    def _accounting(self, request: ChatRequest) -> StepAccounting:
        """What settles the usage (and price) of a step sending ``request``."""
        return StepAccounting(request, self._price if self.pricing else None)

    def _price(self, usage: Usage, model: str) -> Cost:
        return price(usage, model, self.dialect.name, api_url=self.api_url)

    def build_http_request(self, request: ChatRequest) -> HttpRequest:
        """The provider request for ``request`` (what each step posts)."""
        return self.dialect.build_request(
            request, api_url=self.api_url, api_key=self._api_key, headers=self._headers
        )

    def close(self) -> None:
        """End the streams still in flight (each with a ChatError saying the model was
        closed, after its ERROR event), close the transport and stop the I/O thread.
        Idempotent; later streams fail at once. A cache the model made (from a string or
        True) is closed too."""
        self._close()
        if self._own_cache and self.cache is not None:
            self.cache.close()

    async def __aenter__(self) -> ChatModel:
        return self

    async def __aexit__(self, *_: object) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.close)
        await pools_closed()  # this loop's connections (astream, acall) are closed too


def _shown_url(api_url: object) -> str:
    """A wrong ``api_url`` as its error shows it: a URL masked (user info, query values),
    anything else by its type alone (it may be a key passed in the wrong place)."""
    if isinstance(api_url, str) and "://" in api_url:
        return repr(redact_url(api_url))
    return f"a {type(api_url).__name__} that is no URL (not shown: it may be a secret)"


_SHUTDOWN_TIMEOUT = 10.0
_TELEMETRY_OPTIONS = frozenset({"capture_content", "tracer_provider", "meter_provider"})


def _telemetry_options(telemetry: bool | Mapping[str, Any]) -> dict[str, Any] | None:
    """None for no telemetry, else the options for ``instrument()`` (checked, and the
    OpenTelemetry API imported now, so that a missing extra fails at construction)."""
    if telemetry is False or telemetry is None:
        return None
    options = {} if telemetry is True else dict(telemetry)
    unknown = sorted(set(options) - _TELEMETRY_OPTIONS)
    if unknown:
        raise ValueError(
            f"unknown telemetry option(s) {', '.join(unknown)}; "
            f"known: {', '.join(sorted(_TELEMETRY_OPTIONS))}"
        )
    from ..telemetry import _otel

    _otel()
    return options


class _Lifecycle:
    """What a ChatModel holds open: its I/O thread, its transport and the responses in
    flight (on the I/O loop or on callers' loops). It never refers to the model, so that
    an unreferenced model is collected and closed by its finalizer (also at interpreter
    exit)."""

    def __init__(self, io: EventLoopThread, reader: StreamReader) -> None:
        self._io = io
        self._reader = reader
        self._lock = threading.Lock()
        self._live: set[_ResponsePipeline | _CallerRun] = set()
        self.closed = False

    def admit(self, pipeline: _ResponsePipeline) -> bool:
        """Start ``pipeline`` on the I/O loop; False once closed."""
        with self._lock:
            if self.closed:
                return False
            self._live.add(pipeline)
            self._io.loop.call_soon_threadsafe(pipeline.start)
            return True

    def enter(self, run: _CallerRun) -> bool:
        """Count ``run`` (on its caller's loop) in flight; False once closed."""
        with self._lock:
            if self.closed:
                return False
            self._live.add(run)
            return True

    def call_soon(self, callback: Callable[[], object]) -> None:
        """Call ``callback`` on the I/O loop (after what was scheduled before it)."""
        self._io.call_soon(callback)

    def release(self, pipeline: _ResponsePipeline | _CallerRun) -> None:
        """``pipeline`` has ended or was disposed."""
        with self._lock:
            self._live.discard(pipeline)

    def close(self) -> None:
        with self._lock:
            if self.closed:
                return
            self.closed = self._reader.closed = True
        transport = self._reader.transport
        if isinstance(transport, AiohttpTransport):  # closed from inside a caller's loop
            transport.close_soon()
        io = self._io
        if io.in_loop_thread():  # closed from a callback: shut down after it returns
            asyncio.get_running_loop().create_task(self._shutdown()).add_done_callback(
                lambda _: io.close()
            )
            return
        try:
            if io.started or callable(getattr(self._reader.transport, "aclose", None)):
                with contextlib.suppress(Exception):
                    io.run(self._shutdown(), timeout=_SHUTDOWN_TIMEOUT)
        finally:
            io.close()

    async def _shutdown(self) -> None:
        # What was scheduled before close() (a subscription, a request task being
        # created) runs first, so that it is cancelled below rather than lost.
        for _ in range(3):
            await asyncio.sleep(0)
        await cancel_other_tasks()
        with self._lock:
            unfinished = list(self._live)
        for pipeline in unfinished:
            pipeline.fail()
        aclose = getattr(self._reader.transport, "aclose", None)
        if callable(aclose):
            with contextlib.suppress(Exception):
                await asyncio.wait_for(aclose(), _SHUTDOWN_TIMEOUT / 2)
