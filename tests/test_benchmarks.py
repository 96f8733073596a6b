"""The benchmarks' stretched recordings are real streams: they replay to the text of their
deltas repeated, with the recording's head and tail kept."""

from __future__ import annotations

import json

import orjson
import pytest
from extra_modules import needed
from recorded import needs_corpus

from benchmarks import recordings
from solon_events import ChatEventType, replay

pytestmark = needs_corpus


def _events(body: bytes, dialect: str) -> list:
    events: list = []
    failures: list = []
    replay(body, dialect).subscribe(events.append, failures.append)
    assert not failures
    return events


@pytest.mark.parametrize("recording", recordings.recordings(), ids=lambda r: r.dialect)
def test_stretched_keeps_head_and_tail_and_repeats_the_deltas(recording):
    n = recording.fixed_frames + 2 * len(recording.deltas) + 1
    payloads = recordings.payloads(recording, n)
    assert len(payloads) == n
    assert payloads[: len(recording.head)] == list(recording.head)
    tail = payloads[len(payloads) - len(recording.tail) :]
    if recording.text_of is None:
        assert tail == list(recording.tail)
    else:  # the tail restates the whole (stretched) text: the same events, another text
        assert [orjson.loads(p)["type"] for p in tail] == [
            orjson.loads(p)["type"] for p in recording.tail
        ]
    assert payloads[len(recording.head) + len(recording.deltas)] == recording.deltas[0]


@pytest.mark.parametrize("recording", recordings.recordings(), ids=lambda r: r.dialect)
def test_stretched_replays_one_text_delta_per_added_frame(recording):
    def deltas(body: bytes) -> list[str]:
        events = _events(body, recording.dialect)
        assert events[-1].type is ChatEventType.RESPONSE_END
        texts = [e.text for e in events if e.type is ChatEventType.TEXT_DELTA]
        assert "".join(texts) == events[-1].response.text
        return texts

    deltas(recordings.empty(recording))
    short = deltas(recordings.stretched(recording, recording.fixed_frames + 1))
    long = deltas(recordings.stretched(recording, recording.fixed_frames + 50))
    assert len(long) - len(short) == 49


@pytest.mark.parametrize(
    "recording", [r for r in recordings.recordings() if r.event_key], ids=lambda r: r.dialect
)
def test_event_lines_name_each_payload(recording):
    body = recordings.empty(recording)
    key = recording.event_key
    for event in body.split(b"\n\n")[:-1]:
        name, data = event.split(b"\n")
        assert name == b"event: " + orjson.loads(data[len(b"data: ") :])[key].encode()


def test_readme_block_is_replaced_between_its_markers(tmp_path):
    from benchmarks import machine, readme

    path = tmp_path / "README.rst"
    path.write_text(f"Title\n=====\n\n{readme.BEGIN}\nold table\n{readme.END}\n\nAfter\n")
    figures = {"machine": machine.describe()}
    readme.update(figures, {"stretched": "dialect  ratio\nopenai   1.80\n"}, path)
    readme.update(figures, {"stretched": "dialect  ratio\nopenai   1.90\n"}, path)
    text = path.read_text()
    assert "old table" not in text and "1.80" not in text
    assert text.count(readme.BEGIN) == 1
    assert "    openai   1.90" in text
    assert text.startswith("Title") and text.endswith("After\n")
    assert machine.cpu_model() in text


def test_picture_is_drawn_from_the_figures(tmp_path):
    needed("matplotlib")
    from benchmarks.plot import picture

    scaling = [
        {"dialect": "openai", "frames": n, "us_per_frame": 3.0, "baseline_us_per_frame": 1.5}
        for n in (1_000, 10_000)
    ]
    peers = [
        {"dialect": "openai", "peer": "solon_events", "us_per_frame": 3.0},
        {"dialect": "openai", "peer": "openai SDK", "us_per_frame": 300.0},
        {"dialect": "openai", "peer": "LiteLLM", "error": "cannot parse"},
    ]
    out = picture({"stretched": {"scaling": scaling}, "peers": peers}, tmp_path / "b.png")
    assert out.read_bytes().startswith(b"\x89PNG")


def test_partial_arguments_table_lists_every_parser_at_every_size(monkeypatch):
    from benchmarks import bench_partial, readme

    def missing():
        raise ImportError("not here")

    def wrong(pieces):
        return {"not": "the argument"}

    parsers = (
        *bench_partial.PARSERS[:2],
        ("a missing peer", "no-such-package", missing),
        ("a wrong peer", "pytest", lambda: wrong),
    )
    monkeypatch.setattr(bench_partial, "PARSERS", parsers)
    sizes = (300, 3_000, 30_000)
    rows = bench_partial.run(sizes, budget=1e-9)  # every size after the first is projected
    assert {row["parser"] for row in rows} == {label for label, _p, _l in parsers}
    ours = [row for row in rows if row["parser"] == parsers[0][0]]
    assert [row["size"] for row in ours] == list(sizes)
    assert ours[0]["us_per_kb"] > 0 and ours[0]["bytes"] >= 300
    assert all(row["projected"] > ours[0]["seconds"] for row in ours[1:])
    assert [row for row in rows if "missing" in row] == [
        {"parser": "a missing peer", "missing": "no-such-package"}
    ]
    assert any(row["parser"] == "a wrong peer" and "error" in row for row in rows)
    printed = bench_partial.table(rows, sizes)
    assert printed.count("µs per KB") == 1 and "total ms" in printed
    assert "a missing peer" in printed and "not installed (no-such-package)" in printed
    assert "a wrong peer failed at" in printed and "skip ~" in printed
    assert "partial" in dict(readme.SECTIONS)


def test_partial_arguments_argument_is_the_long_args_report():
    from benchmarks import bench_partial

    text = bench_partial.argument(10_000)
    assert 9_000 < len(text) < 11_000 and text.isascii()
    pieces = bench_partial.fragments(text)
    assert "".join(pieces) == text and {len(p) for p in pieces[:-1]} == {bench_partial.FRAGMENT}
    assert bench_partial.ours(pieces) == bench_partial.ours_feed_only(pieces) == json.loads(text)


def test_string_argument_table_rows_each_rebuild_the_argument(monkeypatch):
    from benchmarks import bench_partial

    text = bench_partial.string_argument(5_000)
    content = json.loads(text)["content"]
    assert len(content) == 5_000 and not content.isascii() and '\\"' in text
    pieces = bench_partial.fragments(text)
    for _label, parse in bench_partial.STRING_ROWS:
        assert parse(pieces) == json.loads(text)
    rows = bench_partial.string_run((1_000, 4_000))
    assert [(row["parser"], row["size"]) for row in rows] == [
        (label, size) for size in (1_000, 4_000) for label, _parse in bench_partial.STRING_ROWS
    ]
    assert all(row["us_per_kb"] > 0 for row in rows)
    printed = bench_partial.string_table(rows, (1_000, 4_000))
    assert "cost per KB, largest / smallest, 1 KB to 4 KB:" in printed
    assert printed.count("x\n") + printed.endswith("x") == len(bench_partial.STRING_ROWS)


async def test_the_relay_passes_a_stream_through_unchanged():
    """The bytes-only relay of ``--gateway`` (the floor of a proxy's hop): an SSE stream
    read through it is the stream read directly."""
    import asyncio
    import sys

    import aiohttp

    from solon_events.devserver import DevServer

    async def read(url: str) -> bytes:
        body = {"model": "slow:20:0", "messages": [{"role": "user", "content": "hi"}]}
        async with (
            aiohttp.ClientSession() as session,
            session.post(url, json={**body, "stream": True}) as response,
        ):
            return await response.read()

    async with DevServer(port=0) as provider:
        port = int(provider.url.rsplit(":", 1)[1])
        relay = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "benchmarks.bench_gateway", "relay", "127.0.0.1", str(port),
            stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        try:
            assert relay.stdout is not None
            relayed = (await asyncio.wait_for(relay.stdout.readline(), 60)).decode().strip()
            through, direct = await asyncio.gather(
                read(relayed + "/v1/chat/completions"), read(provider.url + "/v1/chat/completions")
            )
        finally:
            relay.terminate()
            await relay.wait()

    def deltas(body: bytes) -> list[str]:
        """The text of each chunk (the rest of a chunk is each response's own: its id)."""
        return [
            json.loads(line[6:])["choices"][0]["delta"].get("content") or ""
            for line in body.splitlines()
            if line.startswith(b"data: {") and b'"choices":[{' in line
        ]

    assert deltas(through) == deltas(direct)
    assert "".join(deltas(direct)) == "".join(f"{n} " for n in range(20))
