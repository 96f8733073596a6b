"""The dialects guide's "Writing a dialect: the whole contract" example (once README's), run
as it is written, and what it promises."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from typing import Any

import pytest

from solon_events import ChatError, ChatProtocolError, ProviderError, UserMessage, replay
from solon_events.event_model.messages import ChatRequest

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "guides" / "dialects.rst"
TITLE = "Writing a dialect: the whole contract"


def _example() -> str:
    text = GUIDE.read_text(encoding="utf-8")
    section = text[text.index(f"{TITLE}\n{'-' * len(TITLE)}") :]
    block = section[section.index(".. code-block:: python") :].split("\n\n", 1)[1]
    lines = []
    for line in block.splitlines():
        if line and not line.startswith("    "):
            break
        lines.append(line[4:])
    return "\n".join(lines)


def _run_example() -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "readme_dialect"}
    with contextlib.redirect_stdout(io.StringIO()) as out:
        exec(compile(_example(), str(GUIDE), "exec"), namespace)
    namespace["printed"] = out.getvalue()
    return namespace


def test_the_example_dialect_replays_its_recording() -> None:
    example = _run_example()
    assert example["printed"].strip() == "Hello end"
    response = example["response"]
    assert response.text == "Hello" and response.finish_reason == "end"


def _fail_with(body: bytes) -> ChatError:
    dialect = _run_example()["LinesDialect"]()
    errors: list[ChatError] = []
    replay(body, dialect=dialect).subscribe(lambda _e: None, errors.append)
    (error,) = errors
    return error


def test_the_example_dialect_fails_as_the_readme_says() -> None:
    provider = _fail_with(b'{"delta": "a"}\n{"error": {"message": "overloaded"}}\n')
    assert isinstance(provider, ProviderError) and "overloaded" in str(provider)
    assert provider.partial_response.text == "a"
    bad = _fail_with(b'{"delta": "a"}\n[1, 2]\n')
    assert isinstance(bad, ChatProtocolError)
    assert re.search(r"frame 2 .*ValueError: expected a JSON object", str(bad))
    truncated = _fail_with(b'{"delta": "a"}\n')
    assert isinstance(truncated, ChatProtocolError) and "truncated" in str(truncated)


def test_the_example_dialect_builds_its_request() -> None:
    dialect = _run_example()["LinesDialect"]()
    request = ChatRequest(model="m", messages=(UserMessage(text="Hi"),))
    http = dialect.build_request(request, api_url="http://127.0.0.1:1/v1", api_key="k")
    assert http.url == "http://127.0.0.1:1/v1"
    assert http.body == {"model": "m", "prompt": "Hi"}
    assert http.headers == {"Authorization": "Bearer k"}


def test_the_example_is_found() -> None:
    assert "class LinesDialect(ChatDialect)" in _example()
    with pytest.raises(ValueError):
        _example().index("Errors\n------")
