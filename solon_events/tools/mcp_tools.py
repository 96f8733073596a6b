"""The tools of an MCP server, used like local ones (the ``mcp`` extra: the official SDK).

:meth:`McpTools.stdio` starts a server as a subprocess and talks to it over its standard
input and output; :meth:`McpTools.http` connects to one over streamable HTTP. Either lists
the server's tools and returns them as a :class:`~.tool.ToolSet` for
``ChatPrompt.tools(...)``; a call goes to the server, and the server's progress
notifications become the call's progress reports.

Threads: the MCP session lives on an event loop of its own, in a daemon thread, opened
at connection and closed by :meth:`McpTools.close`. A chat model's I/O thread (where the
tool loop runs) awaits a call without blocking; so can any other loop, and a plain thread
blocks on it. One ``McpTools`` serves any number of models and concurrent calls.

A tool the server reports as failed, a JSON-RPC error, a timeout and a server that went
away all raise :class:`~solon_events.event_model.errors.ToolCallError` with the server's message.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import re
import tempfile
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import IO, Any, TextIO

import attrs
import orjson

from ..event_model.errors import ToolCallError
from ..event_model.extras import MissingExtraError
from ..support.loop_thread import EventLoopThread
from .context import ToolContext
from .shape import Unsupported, inline_refs
from .tool import Tool, ToolSet

__all__ = ["McpTool", "McpTools"]

_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_-]")
_Report = Callable[[float, "float | None", "str | None"], None]


def _import_mcp() -> Any:
    try:
        import mcp
    except ImportError:
        raise MissingExtraError("MCP tools", "the official MCP SDK", "mcp") from None
    return mcp


@attrs.define(eq=False, repr=False)
class _Session:
    """One MCP client session, held open by a task on a loop thread of its own."""

    label: str
    _open_client: Callable[[], Any]
    _timeout: float | None
    _stderr_log: IO[str] | None = None
    _io: EventLoopThread = attrs.field(
        init=False, factory=lambda: EventLoopThread(name="solon-events-mcp")
    )
    _client: Any = attrs.field(init=False, default=None)
    _failure: str | None = attrs.field(init=False, default=None)
    _closing: asyncio.Event | None = attrs.field(init=False, default=None)
    _ended: asyncio.Event | None = attrs.field(init=False, default=None)
    _holder: Any = attrs.field(init=False, default=None)

    def connect(self) -> list[Any]:
        """Open the session and list the server's tools (blocks the caller)."""
        listed: asyncio.Future[list[Any]] | None = None

        async def start() -> asyncio.Future[list[Any]]:
            nonlocal listed
            listed = asyncio.get_running_loop().create_future()
            self._closing, self._ended = asyncio.Event(), asyncio.Event()
            self._holder = asyncio.ensure_future(self._hold(listed))
            return listed

        try:
            ready = self._io.run(start())
            return self._io.run(_wait_for(ready, self._timeout, "listing its tools"))
        except BaseException as exc:
            if not isinstance(exc, Exception):  # KeyboardInterrupt and the like
                self.close()
                raise
            reason = str(exc) if isinstance(exc, ToolCallError) else self._describe(exc)
            self.close()
            raise ToolCallError(f"MCP server {self.label}: {reason}") from exc

    async def _hold(self, listed: asyncio.Future[list[Any]]) -> None:
        assert self._closing is not None and self._ended is not None
        try:
            async with self._open_client() as client:
                self._client = client
                listed.set_result(await _all_tools(client))
                await self._closing.wait()
        except BaseException as exc:  # the transport's task group failing, or a cancel
            if not self._closing.is_set():
                self._failure = self._describe(exc)
            if not listed.done():
                listed.set_exception(exc)
        finally:
            self._client = None
            self._ended.set()

    def _describe(self, exc: BaseException) -> str:
        """The server's own message for a failure, with the last line it wrote to stderr."""
        message = _innermost_message(exc)
        tail = _tail(self._stderr_log) if self._stderr_log is not None else ""
        return f"{message} Its stderr ended with: {tail}" if tail else message

    def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        """Run ``coro`` on the session's loop and block until it is done."""
        return self._io.run(coro)

    def submit(self, coro: Coroutine[Any, Any, Any]) -> Any:
        """Run ``coro`` on the session's loop; a concurrent future of its result."""
        if self._closing is None or self._closing.is_set():
            coro.close()
            raise ToolCallError(f"MCP server {self.label}: the connection is closed")
        return self._io.submit(coro)

    async def call(self, name: str, arguments: dict[str, Any], report: _Report) -> Any:
        """Call tool ``name`` on the server; the result, or ToolCallError (on this loop).

        ``report`` receives the server's progress notifications (progress, total, message).
        """
        assert self._ended is not None
        if self._failure is not None or self._client is None:
            raise ToolCallError(self._gone(), tool_name=name)

        async def progress(value: float, total: float | None, message: str | None) -> None:
            report(value, total, message)

        mcp = _import_mcp()
        call = asyncio.ensure_future(
            self._client.call_tool(name, arguments, progress_callback=progress)
        )
        ended = asyncio.ensure_future(self._ended.wait())
        try:
            await asyncio.wait({call, ended}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ended.cancel()
            if not call.done():
                call.cancel()
        if not call.done() or call.cancelled():
            raise ToolCallError(self._gone(), tool_name=name)
        try:
            return call.result()
        except mcp.MCPError as error:
            if error.code == mcp.types.CONNECTION_CLOSED:
                # The transport's own failure, if it has one, says more: give it a moment.
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._ended.wait(), 0.5)
                self._failure = self._failure or self._describe(error)
            if self._failure is not None:
                raise ToolCallError(self._gone(), tool_name=name) from error
            raise ToolCallError(
                f"MCP server {self.label}: tool {name!r}: {error.message}", tool_name=name
            ) from error
        except Exception as error:  # the SDK's own failures (a malformed result, say)
            raise ToolCallError(
                f"MCP server {self.label}: tool {name!r}: {_innermost_message(error)}",
                tool_name=name,
            ) from error

    def _gone(self) -> str:
        return f"MCP server {self.label} disconnected: {self._failure or 'the session ended'}"

    def close(self) -> None:
        """End the session (the server process too, for stdio) and the loop thread."""
        closing, holder = self._closing, self._holder
        if closing is not None and holder is not None and not self._io.in_loop_thread():
            with contextlib.suppress(Exception):
                self._io.loop.call_soon_threadsafe(closing.set)
                self._io.run(_wait_for(asyncio.shield(holder), 10.0, "closing"))
        self._io.close()
        if self._stderr_log is not None:
            self._stderr_log.close()


async def _wait_for(awaitable: Any, timeout: float | None, doing: str) -> Any:
    try:
        return await asyncio.wait_for(awaitable, timeout)
    except asyncio.TimeoutError:
        raise ToolCallError(f"timed out after {timeout} s {doing}") from None


async def _all_tools(client: Any) -> list[Any]:
    tools: list[Any] = []
    cursor: str | None = None
    while True:
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools


def _innermost_message(exc: BaseException) -> str:
    """The message of the failure at the bottom of exception groups."""
    while getattr(exc, "exceptions", None):  # an ExceptionGroup from the SDK's task groups
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    if isinstance(exc, asyncio.CancelledError):
        return "the connection was cancelled"
    text = str(exc) or type(exc).__name__
    return text if text.endswith(".") else f"{text}."


def _tail(log: IO[str]) -> str:
    """The last line a server wrote to the file holding its stderr."""
    with contextlib.suppress(Exception):
        log.seek(0)
        lines = [line.strip() for line in log.read()[-4000:].splitlines() if line.strip()]
        return lines[-1][:300] if lines else ""
    return ""


def _result_text(result: Any) -> str:
    """The text of a CallToolResult: its text blocks, else its structured content as JSON."""
    parts: list[str] = []
    for block in result.content:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource" and hasattr(block.resource, "text"):
            parts.append(block.resource.text)
        else:
            parts.append(_placeholder(kind, block))
    if not parts and result.structured_content is not None:
        return orjson.dumps(result.structured_content).decode()
    return "\n".join(parts)


def _placeholder(kind: str, block: Any) -> str:
    """``[image: image/png]``, ``[resource_link: file:///x]``: a block the model gets no text of."""
    resource = getattr(block, "resource", None)
    label = getattr(block, "mime_type", None) or getattr(block, "uri", None)
    label = label or getattr(resource, "uri", None)
    return f"[{kind}: {label}]" if label else f"[{kind}]"


class McpTool(Tool[..., str]):
    """One tool of an MCP server: its name, description and schema as the server lists them.

    A call sends the arguments to the server unchanged (the server validates them) and
    returns the text of its result. Calling the tool blocks until the server answers.
    """

    __slots__ = ("_server_name", "_session")

    def __init__(self, session: _Session, listed: Any) -> None:
        self._session = session
        self._server_name: str = listed.name
        name = _UNSAFE_NAME.sub("_", listed.name)[:64] or "tool"
        schema = dict(listed.input_schema or {})
        with contextlib.suppress(Unsupported):
            schema = inline_refs(schema)
        schema.setdefault("type", "object")
        schema.setdefault("properties", {})
        self._describe(
            self._call_blocking,
            name=name,
            description=inspect.cleandoc(listed.description or listed.title or ""),
            parameters=schema,
            return_direct=False,
            is_async=True,
        )

    def __repr__(self) -> str:
        return f"McpTool(name={self._name!r}, server={self._session.label})"

    def _call_blocking(self, **arguments: Any) -> str:
        return str(self._session.run(self.ainvoke(arguments)))

    def invoke(
        self, arguments: Mapping[str, Any] | None = None, context: ToolContext | None = None
    ) -> Any:
        """The coroutine of :meth:`ainvoke` (an MCP tool is async)."""
        return self.ainvoke(arguments, context)

    async def ainvoke(
        self, arguments: Mapping[str, Any] | None = None, context: ToolContext | None = None
    ) -> str:
        """Call the tool on the server and return its result's text.

        Raises :class:`ToolCallError` with the server's message when the tool failed, the
        server answered with an error, or it went away.
        """
        if arguments is not None and not isinstance(arguments, Mapping):
            raise ToolCallError(
                f"tool {self._name!r}: the arguments must be a JSON object", tool_name=self._name
            )
        report = context.progress if context is not None else _ignore
        future = self._session.submit(
            self._session.call(self._server_name, dict(arguments or {}), report)
        )
        result = await asyncio.wrap_future(future)
        text = _result_text(result)
        if result.is_error:
            raise ToolCallError(
                f"tool {self._name!r} failed on MCP server {self._session.label}: {text}",
                tool_name=self._name,
            )
        return text


def _ignore(*_: Any) -> None:
    """Progress reports of a call made outside a tool loop go nowhere."""


class McpTools(ToolSet):
    """The tools of one MCP server, connected: pass them to ``ChatPrompt.tools(...)``.

    Build with :meth:`stdio` or :meth:`http`; :meth:`close` it (or use it as a context
    manager) to end the session.
    """

    __slots__ = ("_session",)

    def __init__(self, session: _Session, listed: Sequence[Any]) -> None:
        super().__init__(McpTool(session, item) for item in listed)
        self._session = session

    @classmethod
    def stdio(
        cls,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        stderr: TextIO | None = None,
        timeout: float | None = 30.0,
    ) -> McpTools:
        """Start ``command args...`` as an MCP server over stdio, and list its tools.

        ``env`` is added to the few variables the SDK passes on (``PATH``, ``HOME``...).
        The server's stderr goes to ``stderr`` when given; by default it is kept in a
        temporary file whose last line is quoted when the server fails. ``timeout`` bounds
        the start and the listing (seconds). Raises :class:`ToolCallError` when the server
        cannot be started or listed, ``ImportError`` without the ``mcp`` extra.
        """
        mcp = _import_mcp()
        parameters = mcp.StdioServerParameters(
            command=command, args=list(args), env=dict(env) if env else None, cwd=cwd
        )
        # The session closes the file (see _Session.close).
        log = None if stderr is not None else tempfile.TemporaryFile("w+")  # noqa: SIM115
        errlog: Any = stderr if stderr is not None else log

        def open_client() -> Any:
            from mcp.client.stdio import stdio_client

            return mcp.Client(stdio_client(parameters, errlog=errlog))

        label = repr(" ".join([os.path.basename(command), *args]))
        return cls._connected(_Session(label, open_client, timeout, log))

    @classmethod
    def http(
        cls, url: str, *, headers: Mapping[str, str] | None = None, timeout: float | None = 30.0
    ) -> McpTools:
        """Connect to the MCP server at ``url`` over streamable HTTP, and list its tools.

        ``headers`` (an ``Authorization`` header, say) go with every request and appear in
        no repr or error. ``timeout`` bounds the connection and the listing (seconds).
        """
        mcp = _import_mcp()
        fixed_headers = dict(headers or {})

        @contextlib.asynccontextmanager
        async def open_client() -> Any:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            limits = httpx2.Timeout(30.0, read=300.0)
            async with (
                httpx2.AsyncClient(headers=fixed_headers, timeout=limits) as http,
                mcp.Client(streamable_http_client(url, http_client=http)) as client,
            ):
                yield client

        return cls._connected(_Session(repr(url.split("?", 1)[0]), open_client, timeout))

    @classmethod
    def _connected(cls, session: _Session) -> McpTools:
        listed = session.connect()
        try:
            return cls(session, listed)
        except BaseException:  # a tool the SDK listed that we cannot describe
            session.close()
            raise

    @property
    def server(self) -> str:
        """The server, as errors name it: its command line or URL."""
        return self._session.label

    def close(self) -> None:
        """End the session: the server is told, a stdio server's process ends (idempotent)."""
        self._session.close()

    def __enter__(self) -> McpTools:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"McpTools({self._session.label}: {', '.join(self)})"
