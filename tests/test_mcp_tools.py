"""McpTools against a real MCP server (tests/mcp_server.py, the official SDK), over stdio and
streamable HTTP, alone and through the tool loop against the embedded provider."""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from executables import run_python
from mcp_process import McpHttpProcess, free_port
from outcomes import outcome_of

from solon_events import ChatModel, McpTools
from solon_events.devserver import RunningServer
from solon_events.event_model.errors import ToolCallError
from solon_events.event_model.events import ChatEvent, ChatEventType
from solon_events.tools import ToolContext

T = ChatEventType
SERVER = str(Path(__file__).with_name("mcp_server.py"))
SECRET = "Bearer sk-mcp-SECRET-42"


def http_server_process(log: Path) -> McpHttpProcess:
    return McpHttpProcess(Path(SERVER), ["http"], log)


@pytest.fixture(scope="module")
def stdio_tools() -> Iterator[McpTools]:
    with McpTools.stdio(sys.executable, [SERVER], timeout=60) as tools:
        yield tools


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpHttpProcess]:
    server = http_server_process(tmp_path_factory.mktemp("mcp") / "server.log")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def http_tools(http_server: McpHttpProcess) -> Iterator[McpTools]:
    with McpTools.http(http_server.url, headers={"Authorization": SECRET}, timeout=60) as tools:
        yield tools


@pytest.fixture(params=["stdio", "http"])
def mcp_tools(request: pytest.FixtureRequest) -> McpTools:
    """The test server's tools over each transport."""
    tools: McpTools = request.getfixturevalue(f"{request.param}_tools")
    return tools


def stream(prompt: Any, timeout: float = 60.0) -> tuple[list[ChatEvent], BaseException | None]:
    outcome = outcome_of(prompt, timeout)
    return outcome.events, outcome.error


def of(events: list[ChatEvent], kind: ChatEventType) -> list[ChatEvent]:
    return [event for event in events if event.type is kind]


# --------------------------------------------------------------------------- listing


def test_the_servers_tools_are_listed_with_their_schemas(mcp_tools: McpTools) -> None:
    assert list(mcp_tools) == ["get_forecast", "locate", "broken", "crash"]
    forecast = mcp_tools["get_forecast"]
    assert forecast.description.startswith("The weather forecast for a city.")
    assert forecast.is_async and not forecast.return_direct
    schema = forecast.parameters
    assert schema["required"] == ["city"]
    assert schema["properties"]["city"]["type"] == "string"
    assert schema["properties"]["days"] == {"default": 1, "title": "Days", "type": "integer"}
    assert "ctx" not in schema["properties"]
    place = mcp_tools["locate"].parameters["properties"]["place"]
    assert place["properties"]["city"]["description"] == "The city"
    assert "$ref" not in str(mcp_tools["locate"].parameters)
    assert mcp_tools["locate"].spec.name == "locate"


def test_repr_and_errors_name_the_server_but_never_a_header(
    http_tools: McpTools, http_server: McpHttpProcess, stdio_tools: McpTools
) -> None:
    assert repr(http_tools) == (
        f"McpTools('{http_server.url}': get_forecast, locate, broken, crash)"
    )
    assert stdio_tools.server == repr(f"{Path(sys.executable).name} {SERVER}")
    with pytest.raises(ToolCallError) as caught:
        http_tools["broken"](city="Paris")
    for text in (repr(http_tools), repr(http_tools["broken"]), str(caught.value)):
        assert "SECRET" not in text


# --------------------------------------------------------------------------- calls


def test_a_call_returns_the_servers_text(mcp_tools: McpTools) -> None:
    assert mcp_tools["get_forecast"](city="Paris", days=2) == "sunny in Paris for 2 day(s)"


def test_structured_results_come_as_json_text(mcp_tools: McpTools) -> None:
    text = mcp_tools["locate"](place={"city": "Lyon"})
    assert '"city": "Lyon"' in text and '"country": "FR"' in text


def test_progress_notifications_reach_the_context(mcp_tools: McpTools) -> None:
    reports: list[tuple[float, float | None, str | None]] = []
    context = ToolContext(None, lambda p: reports.append((p.progress, p.total, p.message)))

    async def call() -> str:
        return await mcp_tools["get_forecast"].ainvoke({"city": "Paris"}, context)

    assert asyncio.run(call()) == "sunny in Paris for 1 day(s)"
    assert reports == [(n, 3.0, f"station {int(n)} of 3") for n in (1.0, 2.0, 3.0)]


def test_a_failed_tool_raises_tool_call_error_with_the_servers_message(
    mcp_tools: McpTools,
) -> None:
    with pytest.raises(ToolCallError, match="the station in Oslo is offline") as caught:
        mcp_tools["broken"](city="Oslo")
    assert caught.value.tool_name == "broken"
    assert f"failed on MCP server {mcp_tools.server}" in str(caught.value)


def test_bad_arguments_are_refused_by_the_server(mcp_tools: McpTools) -> None:
    with pytest.raises(ToolCallError, match=r"(?s)get_forecast.*city"):
        mcp_tools["get_forecast"](days=2)


def test_concurrent_calls_from_many_threads(mcp_tools: McpTools) -> None:
    cities = [f"City{n}" for n in range(8)]
    with ThreadPoolExecutor(8) as pool:
        texts = list(pool.map(lambda c: mcp_tools["get_forecast"](city=c), cities))
    assert texts == [f"sunny in {city} for 1 day(s)" for city in cities]


# --------------------------------------------------------------------------- the tool loop


def test_mcp_tools_run_through_the_tool_loop(
    mcp_tools: McpTools, server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    model = make_model(server, "weather")
    events, error = stream(model.prompt("Weather in Paris?").tools(mcp_tools))
    assert error is None
    call = of(events, T.TOOL_CALL_END)[0].tool_call
    assert call is not None and call.name == "get_forecast"
    assert call.arguments == {"city": "Paris"}
    result = of(events, T.TOOL_RESULT)[0]
    assert result.text == "sunny in Paris for 1 day(s)"
    assert result.attrs["tool_name"] == "get_forecast" and result.attrs["is_error"] is False
    progress = [e for e in of(events, T.STATUS) if e.sub_type == "tool_progress"]
    assert [e.text for e in progress] == [f"station {n} of 3" for n in (1, 2, 3)]
    assert events.index(progress[-1]) < events.index(result)
    assert all(e.tool_call_id == result.tool_call_id for e in progress)
    end = events[-1]
    assert end.type is T.RESPONSE_END and end.response is not None
    assert end.response.text == "It is sunny in Paris for 1 day(s)."  # the tool's own sentence


@pytest.mark.parametrize("dialect", ["anthropic", "gemini"])
def test_mcp_tools_in_other_dialects(
    http_tools: McpTools,
    server: RunningServer,
    make_model: Callable[..., ChatModel],
    dialect: str,
) -> None:
    model = make_model(server, "weather", dialect)
    response = model.prompt("Weather?").tools(http_tools["locate"]).call()
    assert '"city": "Paris"' in response.text


def test_a_failed_mcp_tool_fails_the_response_or_goes_back_to_the_model(
    mcp_tools: McpTools, server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    failing = make_model(server, "weather")
    _events, error = stream(failing.prompt("Weather?").tools(mcp_tools["broken"]))
    assert isinstance(error, ToolCallError)
    assert "the station in Paris is offline" in str(error) and error.tool_call_id

    forgiving = make_model(server, "weather", tool_errors="return")
    events, error = stream(forgiving.prompt("Weather?").tools(mcp_tools["broken"]))
    assert error is None
    result = of(events, T.TOOL_RESULT)[0]
    assert result.attrs["is_error"] is True
    assert "the station in Paris is offline" in (result.text or "")


# --------------------------------------------------------------------------- disconnects


def test_a_stdio_server_that_dies_is_a_tool_call_error_with_its_last_words(
    server: RunningServer, make_model: Callable[..., ChatModel]
) -> None:
    with McpTools.stdio(sys.executable, [SERVER], timeout=60) as tools:
        model = make_model(server, "weather")
        _events, error = stream(model.prompt("Weather?").tools(tools["crash"]))
        assert isinstance(error, ToolCallError)
        message = str(error)
        assert f"MCP server {tools.server} disconnected" in message
        assert "fatal: lost the station in Paris" in message
        with pytest.raises(ToolCallError, match="disconnected"):
            tools["get_forecast"](city="Paris")


def test_an_http_server_that_dies_is_a_tool_call_error(tmp_path: Path) -> None:
    http = http_server_process(tmp_path / "server.log")
    try:
        with McpTools.http(http.url, timeout=60) as tools:
            with pytest.raises(ToolCallError, match="disconnected") as caught:
                tools["crash"](city="Paris")
            assert http.url in str(caught.value)
            with pytest.raises(ToolCallError, match="disconnected"):
                tools["get_forecast"](city="Paris")
    finally:
        http.stop()


def test_calls_after_close_are_refused() -> None:
    tools = McpTools.stdio(sys.executable, [SERVER], timeout=60)
    forecast = tools["get_forecast"]
    tools.close()
    tools.close()
    with pytest.raises(ToolCallError, match="the connection is closed"):
        forecast(city="Paris")


def test_a_command_that_is_no_mcp_server() -> None:
    code = "import sys; print('no MCP here', file=sys.stderr)"
    command = re.escape(Path(sys.executable).name)
    with pytest.raises(ToolCallError, match=f"MCP server .{command} -c .*: .*no MCP here"):
        McpTools.stdio(sys.executable, ["-c", code], timeout=30)


def test_nothing_listening() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    with pytest.raises(ToolCallError, match=f"MCP server '{re.escape(url)}'"):
        McpTools.http(url, timeout=30)


def test_without_the_mcp_sdk_the_error_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['mcp'] = None\n"
        "from solon_events import McpTools\n"
        "try:\n    McpTools.stdio('x')\nexcept ImportError as e:\n    print(e)\n"
    )
    done = run_python(code)
    assert "pip install 'solon-events[mcp]'" in done.stdout, done.stderr
