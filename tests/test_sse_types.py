"""The decoders' types say what they return: a :class:`~solon_events.wire.sse.Frame` list, or the
data alone (``str``) with ``data_only=True``, so that mypy checks what a caller does with
them. Checked by running mypy itself (the ``test`` extra has it) on a few lines."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from extra_modules import needed

ROOT = Path(__file__).resolve().parent.parent
FRAME = "list[tuple[str, str | None, str | None, int | None, fallback=solon_events.wire.sse.Frame]]"

CALLS = {
    "StreamDecoder().feed(b'')": FRAME,
    "StreamDecoder(data_only=True).feed(b'')": "list[str]",
    "StreamDecoder(1024, 'sse', data_only=True).close()": "list[str]",
    "StreamDecoder(data_only=False).close()": FRAME,
    "SSEDecoder().feed(b'')": FRAME,
    "SSEDecoder(data_only=True).close()": "list[str]",
    "JSONLinesDecoder().close()": FRAME,
    "JSONLinesDecoder(data_only=True).feed(b'')": "list[str]",
    "StreamDecoder(data_only=flag).feed(b'')": (
        "list[tuple[str, str | None, str | None, int | None, "
        "fallback=solon_events.wire.sse.Frame] | str]"
    ),
}


def test_feed_and_close_are_typed_by_data_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    api = needed("mypy.api")
    monkeypatch.chdir(ROOT)  # mypy finds the package here, with the project's settings
    lines = [
        "from solon_events.wire.sse import Frame, JSONLinesDecoder, SSEDecoder, StreamDecoder",
        "def check(flag: bool) -> None:",
        *(f"    reveal_type({call})" for call in CALLS),
        "    frames: list[Frame] = StreamDecoder(data_only=True).feed(b'')",
        "    data: list[str] = StreamDecoder().close()",
    ]
    snippet = tmp_path / "callers.py"
    snippet.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out, err, _ = api.run(
        [
            str(snippet),
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(ROOT / ".mypy_cache"),
            "--no-error-summary",
        ]
    )
    assert err == ""
    revealed = re.findall(r'callers\.py:(\d+): note: Revealed type is "(.*)"', out)
    assert [kind for _, kind in revealed] == list(CALLS.values())
    errors = re.findall(r"callers\.py:(\d+): error: (.*)", out)
    assert [(int(line), text.split(" (")[0]) for line, text in errors] == [
        (len(CALLS) + 3, "Incompatible types in assignment"),
        (len(CALLS) + 4, "Incompatible types in assignment"),
    ]
