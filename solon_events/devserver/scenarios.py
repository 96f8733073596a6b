"""Scenarios: what the embedded provider answers, chosen by the request's model name.

The model name reads ``"<scenario>[:<arg>[:<arg>]]"``; an unknown name means ``weather``
(or ``replay`` when the server was given a recording). :func:`plan` turns a request into
a :class:`~.turns.Script` (encoded by the route's wire format), or a :class:`Replay`,
:class:`StatusReply` or :class:`HtmlReply`.
"""

from __future__ import annotations

import base64
import json
import math
import random
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import orjson

from ..event_model.approvals import denied_text
from .answers import answered, broken, instance
from .encoders.base import RequestView, ToolDecl
from .turns import (
    Cut,
    Finish,
    ImagePart,
    KeepAlive,
    Part,
    Pause,
    Ping,
    RawBytes,
    Refusal,
    Script,
    ServerToolPart,
    StreamError,
    Text,
    Thinking,
    ToolCallPart,
    TurnUsage,
    WaitGate,
)

__all__ = [
    "DEFAULT_CITY",
    "GREETING",
    "JOKE",
    "LATENCY_WORDS",
    "REPORT_TOOL",
    "SCENARIOS",
    "BodyReply",
    "DropReply",
    "HtmlReply",
    "LatencyScript",
    "Plan",
    "Replay",
    "ScenarioError",
    "StatusReply",
    "city_in",
    "continued",
    "example_arguments",
    "first_event_delay",
    "latency_script",
    "lognormal_draw",
    "plan",
    "report_arguments",
]

HTML_BODY = "<!DOCTYPE html><html><body>Not here</body></html>"
"""The body of the ``html`` scenario."""

ERROR_FRAME_MESSAGE = "The engine is currently overloaded, please try again later"
"""The in-stream error message of the ``error-frame`` scenario."""


@attrs.frozen
class Replay:
    """Stream the server's recording."""


@attrs.frozen
class StatusReply:
    """Answer with HTTP ``status`` and the dialect's JSON error body (with ``message``), or
    ``body`` as it is; ``headers`` are added."""

    status: int
    message: str | None = None
    headers: Mapping[str, str] = attrs.field(factory=dict)
    body: bytes | None = None


@attrs.frozen
class HtmlReply:
    """Answer 200 with an HTML page."""


@attrs.frozen
class BodyReply:
    """Answer 200 with ``body`` of ``content_type``."""

    body: bytes
    content_type: str = "text/plain"


@attrs.frozen
class DropReply:
    """Close the connection without answering."""


Plan = Script | Replay | StatusReply | HtmlReply | BodyReply | DropReply
"""What the server does with one request."""


class ScenarioError(ValueError):
    """A scenario name with arguments that cannot be used (answered with HTTP 400)."""


def plan(view: RequestView, *, has_recording: bool = False) -> Plan:
    """The plan for a request, from its model name."""
    name, _, rest = view.model.partition(":")
    args = rest.split(":") if rest else []
    if name not in SCENARIOS:
        name, args = ("replay" if has_recording else "weather"), []
    if name == "replay" and not has_recording:
        raise ScenarioError("the replay scenario needs a DevServer started with a recording")
    chosen = SCENARIOS[name][0](view, args)
    if view.output is not None and isinstance(chosen, Script) and name not in _SHAPED:
        chosen = answered(chosen, view.output, instance(view.output.schema))
    if view.prefill and isinstance(chosen, Script):
        return continued(chosen, view.prefill)
    return chosen


def continued(script: Script, prefill: str) -> Script:
    """``script`` continued from an assistant prefill: when ``prefill`` begins its text
    (leading and trailing whitespace aside), only the rest of the answer is said, at once
    (what came before the prefill's end is said already: its thinking, its pauses, its
    text up to there); else the whole answer, as a model that starts its text anew."""
    text = "".join(part.text for part in script.parts if isinstance(part, Text))
    said = prefill.strip()
    start = text.find(said) if said else -1
    if start < 0 or text[:start].strip():
        return script
    end = start + len(said)  # the characters of ``text`` said already
    parts: list[Part] = []
    seen = 0
    for part in script.parts:
        if seen >= end and not (isinstance(part, Pause) and not parts):
            parts.append(part)
        elif isinstance(part, Text):
            if seen + len(part.text) > end:
                parts.append(Text(part.text[end - seen :]))
            seen += len(part.text)
    return attrs.evolve(script, parts=parts)


def _float(args: Sequence[str], index: int, default: float) -> float:
    try:
        return float(args[index]) if len(args) > index and args[index] else default
    except ValueError:
        raise ScenarioError(f"scenario argument {args[index]!r} is not a number") from None


def _int(args: Sequence[str], index: int, default: int) -> int:
    value = _float(args, index, default)
    if value != int(value) or value < 0:
        raise ScenarioError(f"scenario argument {args[index]!r} is not a count")
    return int(value)


def _words(text: str) -> list[str]:
    return re.findall(r"\s*\S+", text)


def _chunks(text: str, count: int) -> list[str]:
    words = _words(text)
    size = max(1, -(-len(words) // count))
    return ["".join(words[i : i + size]) for i in range(0, len(words), size)]


def _fragments(json_text: str) -> tuple[str, ...]:
    if len(json_text) < 6:
        return (json_text,)
    third = len(json_text) // 3
    return (json_text[:third], json_text[third : 2 * third], json_text[2 * third :])


def example_value(schema: Mapping[str, Any], string: str = "Paris") -> Any:
    """A plausible value for a JSON schema: ``string`` (``"Paris"``), 3, 1.5, true, an
    enum's first value."""
    if schema.get("enum"):
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    for key in ("anyOf", "oneOf", "allOf"):
        options = [o for o in schema.get(key) or () if isinstance(o, Mapping)]
        options = [o for o in options if str(o.get("type", "")).lower() != "null"] or options
        if options:
            return example_value(options[0], string)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    kind = str(kind or ("object" if "properties" in schema else "string")).lower()
    if kind == "object":
        return example_arguments(schema, string)
    if kind == "array":
        items = schema.get("items")
        return [example_value(items, string)] if isinstance(items, Mapping) else []
    return _EXAMPLES.get(kind, string)


_EXAMPLES: dict[str, Any] = {"integer": 3, "number": 1.5, "boolean": True, "null": None}


def example_arguments(schema: Mapping[str, Any], string: str = "Paris") -> dict[str, Any]:
    """Arguments holding a value for each required property of an object schema (each
    string ``string``)."""
    properties = schema.get("properties") or {}
    return {
        name: example_value(properties.get(name) or {}, string)
        for name in schema.get("required") or ()
        if isinstance(name, str)
    }


DEFAULT_CITY = "Paris"
"""The city of the ``weather`` scenario when the user's message names none."""

JOKE = "Why do programmers prefer dark mode? Because light attracts bugs."
"""The ``weather`` scenario's answer to a message that asks for a joke."""

_WORD = re.compile(r"[^\W\d_][\w'\u2019-]*|[.!?]")
_BEFORE_A_PLACE = frozenset({"in", "for", "at", "about"})
_ASKS_FOR_A_JOKE = re.compile(r"\bjokes?\b", re.IGNORECASE)
# "Hi", "Hello there!", "Good morning": a greeting that asks nothing
_GREETS = re.compile(
    r"^\W*(?:hi|hello|hey|hiya|greetings|good (?:morning|afternoon|evening))\b[^?]*$",
    re.IGNORECASE,
)
_ABOUT_THE_WEATHER = re.compile(r"\b(?:weather|forecast|temperature|rain|sunny)", re.IGNORECASE)

_CONDITION_KEY = re.compile(r"condition|sky|summary", re.IGNORECASE)  # "skyCondition"

GREETING = "Hello! Ask me about the weather in a city, or for a joke."
"""The ``weather`` scenario's answer to a greeting."""


def city_in(message: str) -> str:
    """The city a user's message asks about: the capitalized words after "in", "for", "at"
    or "about" ("And in Lyon?", "the weather for New York"), else the first capitalized
    word that does not start a sentence ("How about Tokyo?"), else :data:`DEFAULT_CITY`."""
    words = list(_WORD.finditer(message))

    def name_from(i: int) -> str:  # the capitalized words from i, apart by spaces only
        names = [words[i]] if i < len(words) and words[i].group()[0].isupper() else []
        while names and i + 1 < len(words) and words[i + 1].group()[0].isupper():
            if not message[names[-1].end() : words[i + 1].start()].isspace():
                break
            i += 1
            names.append(words[i])
        return " ".join(word.group() for word in names)

    for i, word in enumerate(words):
        if word.group().lower() in _BEFORE_A_PLACE and (name := name_from(i + 1)):
            return name
    for i in range(1, len(words)):
        starts_a_sentence = words[i - 1].group() in ".!?"
        if not starts_a_sentence and words[i].group() != "I" and (name := name_from(i)):
            return name
    return DEFAULT_CITY


def _weather(view: RequestView, args: Sequence[str]) -> Script:
    city = city_in(view.user_text)
    if view.tool_results:
        parts: list[Part] = [Text(piece) for piece in _answer_with(view.tool_results, city)]
        return Script([*parts, Finish("stop")], TurnUsage(prompt=80, completion=12))
    if _ASKS_FOR_A_JOKE.search(view.user_text):
        parts = [Text(chunk) for chunk in _chunks(JOKE, 4)]
        return Script([*parts, Finish("stop")], TurnUsage(prompt=40, completion=14))
    if _GREETS.match(view.user_text) and not _ABOUT_THE_WEATHER.search(view.user_text):
        parts = [Text(chunk) for chunk in _chunks(GREETING, 4)]
        return Script([*parts, Finish("stop")], TurnUsage(prompt=42, completion=15))
    if not view.tools:
        answer = f"I would look up the weather in {city}, but I was given no tool for it."
        parts = [Text(chunk) for chunk in _chunks(answer, 4)]
        return Script([*parts, Finish("stop")], TurnUsage(prompt=42, completion=15))
    tool = view.tools[0]
    thought = f"The user wants the weather in {city}. I should call {tool.name}."
    call = _tool_call(tool, city)
    parts = [Thinking(chunk) for chunk in _chunks(thought, 4)]
    return Script(
        [*parts, call, Finish("tool_calls")], TurnUsage(prompt=42, completion=17, thinking=9)
    )


def _answer_with(results: Sequence[str], city: str) -> list[str]:
    """The answer once the tools have answered, in the pieces it streams in, as a person
    would put it: the weather they gave, or why there is none (a call denied, a tool that
    failed)."""
    denied = denied_text()
    for result in results:
        if result.startswith(denied):
            reason = result[len(denied) :].strip().removeprefix("Reason:").strip()
            because = f" ({reason})" if reason else ""
            return _chunks(
                f"I did not look up the weather in {city}: the call was denied{because}.", 4
            )
        if result.startswith("Error:"):
            failure = result.removeprefix("Error:").strip()
            return _chunks(f"I could not look up the weather in {city}: {failure}", 4)
    said = " and ".join(_in_words(result) for result in results)
    if f" in {city}" in said:  # the tool's own sentence: "sunny and 18°C in Paris for a day"
        return ["It is ", said, "."]
    return ["It is ", said, f" in {city}", " right now."]


def _in_words(result: str) -> str:
    """A tool's result as words: a JSON object's temperature and conditions (``18°C and
    sunny``), else its text as it is."""
    try:
        value = orjson.loads(result)
    except orjson.JSONDecodeError:
        return result
    if not isinstance(value, dict):
        return result
    words = [
        f"{number:g}°C"
        for key, number in value.items()
        if key in ("celsius", "temperature", "temp_c") and isinstance(number, (int, float))
    ]
    words += [
        text for key, text in value.items() if _CONDITION_KEY.search(key) and isinstance(text, str)
    ]
    return " and ".join(words) or result


def _agent(view: RequestView, args: Sequence[str]) -> Script:
    rounds = _int(args, 0, 3)
    done = (view.attempt - 1) % (rounds + 1)  # a request's view holds the last turn only
    if done >= rounds or not view.tools:
        answer = f"Done after {done} tool calls."
        return Script(
            [Text(answer), Finish("stop")], TurnUsage(prompt=30 + 10 * done, completion=6)
        )
    call = _tool_call(view.tools[done % len(view.tools)])
    return Script([call, Finish("tool_calls")], TurnUsage(prompt=30 + 10 * done, completion=8))


def _think(view: RequestView, args: Sequence[str]) -> Script:
    thought = (
        "The user asks why the sky is blue. Rayleigh scattering: shorter wavelengths scatter more."
    )
    answer = (
        "The sky looks blue because air molecules scatter short (blue) wavelengths of "
        "sunlight much more than long (red) ones, so blue light reaches your eyes from "
        "every direction."
    )
    parts: list[Part] = [Thinking(chunk) for chunk in _chunks(thought, 5)]
    parts += [Text(chunk) for chunk in _chunks(answer, 8)]
    return Script([*parts, Finish("stop")], TurnUsage(prompt=14, completion=48, thinking=16))


TINY_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)
"""The image of the ``media`` scenario: a 1x1 PNG."""


def _media(view: RequestView, args: Sequence[str]) -> Script:
    search = ServerToolPart(
        "web_search", ('{"query": ', '"Paris weather"}'), "Paris: 18°C and sunny"
    )
    parts: list[Part] = [
        search,
        Text("Here is Paris today: "),
        ImagePart(TINY_PNG, "png", pieces=3),
        Text("18°C and sunny."),
    ]
    return Script([*parts, Finish("stop")], TurnUsage(prompt=30, completion=20))


def _tool_call(tool: ToolDecl, string: str = "Paris") -> ToolCallPart:
    arguments = orjson.dumps(example_arguments(tool.schema, string)).decode()
    return ToolCallPart(tool.name, _fragments(arguments))


REPORT_TOOL = "write_report"
"""The tool the ``long-args`` scenario calls."""


def report_arguments(sections: int) -> dict[str, Any]:
    """The long, nested argument of the ``long-args`` scenario: a report of ``sections``
    sections (paragraphs, a table with a null, escapes and non-ASCII text)."""
    return {
        "title": 'Quarterly report: "Paris" & <Lyon> \u2014 d\u00e9j\u00e0 vu',
        "draft": False,
        "version": 3,
        "sections": [
            {
                "heading": f"Section {number}",
                "paragraphs": [
                    f"Paragraph {line} of section {number}: sales grew {number + line}.5 % "
                    f'in the "north" region,\nled by caf\u00e9s \U0001f4c8.'
                    for line in range(1, 4)
                ],
                "table": {
                    "columns": ["city", "sales", "change"],
                    "rows": [["Paris", 1200 + number, 0.25 * number], ["Nice", None, -1.5]],
                },
            }
            for number in range(1, sections + 1)
        ],
        "tags": ["finance", "q3", "r\u00e9sum\u00e9"],
    }


def _long_args(view: RequestView, args: Sequence[str]) -> Script:
    if view.tool_results:
        answer = f"The report is written ({view.tool_results[-1]})."
        parts: list[Part] = [Text(chunk) for chunk in _chunks(answer, 4)]
        return Script([*parts, Finish("stop")], TurnUsage(prompt=900, completion=12))
    text = json.dumps(report_arguments(_int(args, 0, 4)))  # \u escapes, cut anywhere below
    fragments = tuple(text[start : start + 16] for start in range(0, len(text), 16))
    parts = [Thinking("The user wants the report written; I call write_report."),
             ToolCallPart(REPORT_TOOL, fragments, streamed=True), Finish("tool_calls")]  # fmt: skip
    return Script(parts, TurnUsage(prompt=60, completion=len(text) // 4, thinking=12))


def _echo(view: RequestView, args: Sequence[str]) -> Script:
    words = _words(view.user_text)
    parts: list[Part] = [Text(word) for word in words]
    usage = TurnUsage(prompt=max(1, len(words)), completion=len(words))
    return Script([*parts, Finish("stop")], usage)


def _slow(view: RequestView, args: Sequence[str]) -> Script:
    count, interval = _int(args, 0, 200), _float(args, 1, 0.05)
    parts: list[Part] = []
    for i in range(count):
        if i:
            parts.append(Pause(interval))
        parts.append(Text(f"{i} "))
    return Script([*parts, Finish("stop")], TurnUsage(prompt=10, completion=count))


def _gate(view: RequestView, args: Sequence[str]) -> Script:
    if args and args[0] == "first":
        parts: list[Part] = [WaitGate(), Text("After"), Text(" the gate.")]
        return Script([*parts, Finish("stop")], TurnUsage(prompt=10, completion=2))
    if args and args[0] == "cut":
        parts = [Text("Before the gate."), WaitGate(), Cut()]
        return Script(parts, TurnUsage(prompt=10, completion=1))
    if args:
        raise ScenarioError(f"gate:{args[0]}: expected gate, gate:first or gate:cut")
    parts = [Text("Before the gate."), WaitGate(), Text(" After"), Text(" the gate.")]
    return Script([*parts, Finish("stop")], TurnUsage(prompt=10, completion=3))


def _first_delay(view: RequestView, args: Sequence[str]) -> Script:
    parts: list[Part] = [Pause(_float(args, 0, 1.0)), Text("Hello"), Text(" after a delay.")]
    return Script([*parts, Finish("stop")], TurnUsage(prompt=10, completion=2))


Z_99 = 2.3263478740408408
"""The standard normal's 99th percentile: a lognormal's p99 is its median times
``exp(Z_99 * sigma)``."""


def lognormal_draw(rng: random.Random, p50: float, p99: float) -> float:
    """A lognormal draw of median ``p50`` and 99th percentile ``p99`` from ``rng`` (exactly
    ``p50`` when the two are equal)."""
    if not 0 < p50 <= p99:
        raise ScenarioError(f"latency needs 0 < p50 <= p99, got {p50} and {p99}")
    if p50 == p99:
        return p50
    return rng.lognormvariate(math.log(p50), math.log(p99 / p50) / Z_99)


def first_event_delay(p50: float, p99: float, seed: str, draw: int) -> float:
    """The ``latency`` scenario's wait before the first event of request number ``draw``
    (1, 2, ...): a lognormal draw of median ``p50`` and 99th percentile ``p99`` (a heavy
    tail), the same for the same ``seed`` and ``draw``."""
    return lognormal_draw(random.Random(f"{seed}:{draw}"), p50, p99)


LATENCY_WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel")
"""The words of a latency script's deltas (each one token, said with a leading space)."""


@attrs.frozen
class LatencyScript:
    """What the ``latency`` scenario does for one request: wait ``first_event`` seconds
    before the headers and first event, then send ``len(gaps) + 1`` text deltas of one
    token each, ``gaps[i]`` seconds between delta ``i`` and delta ``i + 1`` (no deltas
    counted: the scenario's short answer, at once)."""

    first_event: float
    gaps: tuple[float, ...] = ()
    deltas: int = 0


def latency_script(
    p50: float,
    p99: float,
    seed: str,
    draw: int,
    deltas: int = 0,
    gap_p50: float = 0.0,
    gap_p99: float | None = None,
) -> LatencyScript:
    """The latency script of request number ``draw`` (1, 2, ...) of the ``latency``
    scenario: its first event after :func:`first_event_delay`, then ``deltas`` one-token
    text deltas whose gaps are lognormal draws of median ``gap_p50`` and 99th percentile
    ``gap_p99`` (``gap_p50`` when not given: every gap the same; 0: no wait), the same
    for the same ``seed`` and ``draw``. The ground truth a benchmark client is measured
    against (``benchmarks/bench_truth.py``)."""
    first = first_event_delay(p50, p99, seed, draw)
    top = gap_p50 if gap_p99 is None else gap_p99
    if gap_p50 < 0 or top < gap_p50:
        raise ScenarioError(f"latency gaps need 0 <= p50 <= p99, got {gap_p50} and {top}")
    if deltas < 2 or gap_p50 == 0:
        return LatencyScript(first, (0.0,) * max(0, deltas - 1), deltas)
    rng = random.Random(f"{seed}:{draw}:gaps")
    gaps = tuple(lognormal_draw(rng, gap_p50, top) for _ in range(deltas - 1))
    return LatencyScript(first, gaps, deltas)


def _latency(view: RequestView, args: Sequence[str]) -> Script:
    seed = args[2] if len(args) > 2 and args[2] else "0"
    gap_p50 = _float(args, 4, 0.0)
    script = latency_script(
        _float(args, 0, 0.2),
        _float(args, 1, 3.0),
        seed,
        view.attempt,
        deltas=_int(args, 3, 0),
        gap_p50=gap_p50,
        gap_p99=_float(args, 5, gap_p50),
    )
    if not script.deltas:
        words = [Text(chunk) for chunk in _chunks("The first event came after a wait.", 3)]
        return Script([Pause(script.first_event), *words, Finish("stop")], TurnUsage(10, 7))
    parts: list[Part] = [Pause(script.first_event)]
    for i in range(script.deltas):
        if i and script.gaps[i - 1]:
            parts.append(Pause(script.gaps[i - 1]))
        parts.append(Text(" " + LATENCY_WORDS[i % len(LATENCY_WORDS)]))
    prompt = max(1, len(_words(view.user_text)))
    return Script([*parts, Finish("stop")], TurnUsage(prompt=prompt, completion=script.deltas))


def _stall(view: RequestView, args: Sequence[str]) -> Script:
    parts: list[Part] = [Text("Stalling"), Pause(_float(args, 0, 1.0)), Text(" and done.")]
    return Script([*parts, Finish("stop")], TurnUsage(prompt=10, completion=2))


def _truncate(view: RequestView, args: Sequence[str]) -> Script:
    return Script([Text("This is"), Text(" a partial"), Text(" answer")], TurnUsage(10, 3))


def _error_frame(view: RequestView, args: Sequence[str]) -> Script:
    parts: list[Part] = [Text("Partial"), Text(" answer"), StreamError(ERROR_FRAME_MESSAGE)]
    return Script(parts, TurnUsage(prompt=10, completion=2))


def _status(view: RequestView, args: Sequence[str]) -> StatusReply:
    status = _int(args, 0, 500)
    if not 400 <= status <= 599:
        raise ScenarioError(f"status:{status} is not an HTTP error status (400-599)")
    return StatusReply(status)


def _html(view: RequestView, args: Sequence[str]) -> HtmlReply:
    return HtmlReply()


def _replay(view: RequestView, args: Sequence[str]) -> Replay:
    return Replay()


# --- faults: time budgets, retries, unreadable bodies, connections dropped, keys echoed


def _trickle(view: RequestView, args: Sequence[str]) -> Script:
    return attrs.evolve(_echo(view, ()), byte_interval=_float(args, 0, 0.05))


def _comments(view: RequestView, args: Sequence[str]) -> Script:
    interval, count = _float(args, 0, 0.05), _int(args, 1, 1000)
    parts: list[Part] = []
    for _ in range(count):
        parts += [KeepAlive(), Pause(interval)]
    return Script([*parts, Text("Finally"), Text(" an answer."), Finish("stop")], TurnUsage(10, 3))


def _endless_line(view: RequestView, args: Sequence[str]) -> Script:
    interval, count = _float(args, 0, 0.05), _int(args, 1, 1000)
    parts: list[Part] = [Text("Partial"), RawBytes(b'data: {"partial": "')]
    for _ in range(count):
        parts += [Pause(interval), RawBytes(b"x")]
    return Script(parts, TurnUsage(10, 1))


def _pings(view: RequestView, args: Sequence[str]) -> Script:
    interval, count = _float(args, 0, 0.05), _int(args, 1, 20)
    parts: list[Part] = [Text("Hello")]
    for _ in range(count):
        parts += [Pause(interval), Ping()]
    return Script([*parts, Text(" after the pings."), Finish("stop")], TurnUsage(10, 2))


def _pings_first(view: RequestView, args: Sequence[str]) -> Script:
    interval, count = _float(args, 0, 0.05), _int(args, 1, 20)
    parts: list[Part] = []
    for _ in range(count):
        parts += [Ping(), Pause(interval)]
    echo = _echo(view, ())
    return attrs.evolve(echo, parts=[*parts, *echo.parts])


def _cut(view: RequestView, args: Sequence[str]) -> Script:
    parts: list[Part] = [Text("This is"), Text(" a cut"), RawBytes(b'data: {"choi'), Cut()]
    return Script(parts, TurnUsage(10, 2))


def _cut_in_call(view: RequestView, args: Sequence[str]) -> Script:
    tool = view.tools[0] if view.tools else ToolDecl("get_weather", _CITY_SCHEMA)
    parts: list[Part] = [Text("Let me check."), _tool_call(tool), Cut()]
    return Script(parts, TurnUsage(10, 8))


_CITY_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def _malformed(view: RequestView, args: Sequence[str]) -> Script:
    how = args[0] if args and args[0] else "type"
    if how not in ("type", "missing"):
        raise ScenarioError(f"malformed:{how}: say type or missing")
    script = _weather(view, ())
    asked = view.output
    if asked is None:
        return script
    wrong = asked.retries < _int(args, 1, 1)
    value = broken(asked.schema, how) if wrong else instance(asked.schema)
    return answered(script, asked, value)


def _refuse(view: RequestView, args: Sequence[str]) -> Script:
    parts: list[Part] = [Refusal("I can't help with that."), Finish("content_filter")]
    return Script(parts, TurnUsage(prompt=20, completion=6))


def _length(view: RequestView, args: Sequence[str]) -> Script:
    parts: list[Part] = [Text("An answer cut"), Text(" at its token"), Finish("length")]
    return Script(parts, TurnUsage(prompt=10, completion=2))


_SHAPED = frozenset({"malformed", "refuse"})  # scenarios that answer a schema their own way


def _error_status(args: Sequence[str], index: int, default: int) -> int:
    status = _int(args, index, default)
    if not 400 <= status <= 599:
        raise ScenarioError(f"{status} is not an HTTP error status (400-599)")
    return status


def _flaky(view: RequestView, args: Sequence[str]) -> Plan:
    failures, status = _int(args, 0, 1), _error_status(args, 1, 503)
    if view.attempt <= failures:
        return StatusReply(status, headers={"retry-after-ms": str(_int(args, 2, 10))})
    return _echo(view, ())


def _limited(view: RequestView, args: Sequence[str]) -> Plan:
    if view.attempt <= _int(args, 0, 1):
        return StatusReply(429, headers={"retry-after": str(_int(args, 1, 1))})
    return _echo(view, ())


def _drop(view: RequestView, args: Sequence[str]) -> Plan:
    return DropReply() if view.attempt <= _int(args, 0, 1) else _echo(view, ())


def _cut_early(view: RequestView, args: Sequence[str]) -> Plan:
    if view.attempt <= _int(args, 0, 1):  # answered, then lost before the first frame
        return Script([RawBytes(b'data: {"'), Cut()], TurnUsage(0, 0))
    return _echo(view, ())


def _told(view: RequestView, args: Sequence[str]) -> Plan:
    """``told:<name>``: the scenario the last user message names for ``name`` (a word
    ``<name>=<scenario>[:<args>]``, or ``<name>=reset``: the connection dropped before any
    answer), else the echo answer; so that a client picks each model's fault per request
    (a soak, a gateway's fallback chain of ``told:a``, ``told:b``...)."""
    name = args[0] if args else ""
    for word in view.user_text.split():
        key, said, spec = word.partition("=")
        if not said or key != name:
            continue
        scenario, *spec_args = spec.split(":")
        if scenario == "reset":
            return DropReply()
        if scenario in ("told", "replay") or scenario not in SCENARIOS:
            raise ScenarioError(f"told:{name}: no scenario {scenario!r} to play")
        return SCENARIOS[scenario][0](view, spec_args)
    return _echo(view, ())


def _deep_error(view: RequestView, args: Sequence[str]) -> StatusReply:
    depth = _int(args, 1, 500)
    body = b'{"error": ' * depth + b'"too deep"' + b"}" * depth
    return StatusReply(_error_status(args, 0, 500), body=body)


def _echo_key(view: RequestView, args: Sequence[str]) -> Plan:
    where = args[0] if args else "frame"
    said = f"Incorrect API key provided: {view.credential}"
    if where == "frame":
        return Script([Text("Partial"), StreamError(said)], TurnUsage(10, 1))
    if where == "status":
        return StatusReply(401, said)
    if where == "page":
        return BodyReply(f"<html><body>{said}</body></html>".encode(), "text/html")
    if where == "text":
        return BodyReply(said.encode())
    if where == "malformed":
        data = orjson.dumps({"detail": said})[:-1]  # the closing brace is missing
        return Script([Text("Partial"), RawBytes(b"data: " + data + b"\n\n")], TurnUsage(10, 1))
    raise ScenarioError(f"echo-key:{where}: expected frame, status, page, text or malformed")


SCENARIOS: dict[str, tuple[Callable[[RequestView, Sequence[str]], Plan], str]] = {
    "weather": (
        _weather,
        "the weather in the city the user's message names (Paris when none): thinking, then "
        "a call of the first declared tool; then the answer (or why there is none: the call "
        "denied, the tool failed); a joke when asked for one, a greeting back to a greeting",
    ),
    "echo": (_echo, "the last user message, word by word"),
    "agent": (
        _agent,
        "agent:<n>[:<tag>] - n turns that each call a declared tool (the first, the second, "
        "... in turn), then the answer: the route's requests with this model name counted "
        "(a tag makes a name of its own)",
    ),
    "think": (_think, "thinking, then an answer (no tool)"),
    "media": (
        _media,
        "a server tool's web search and its result, text, an image in 3 pieces, more text "
        "(wires without server tools or images send only the text)",
    ),
    "slow": (_slow, "slow:<n>:<interval> - n text deltas, one every interval seconds"),
    "gate": (
        _gate,
        "gate[:first|:cut] - one delta, then waits for DevServer.open_gate() (first: waits "
        "before its first delta; cut: then drops the connection)",
    ),
    "first-delay": (_first_delay, "first-delay:<s> - waits s seconds before the headers"),
    "latency": (
        _latency,
        "latency:<p50>:<p99>[:<seed>[:<n>[:<gap p50>[:<gap p99>]]]] - waits before the "
        "headers and first event for a lognormal time of median p50 and 99th percentile p99 "
        "(s; default 0.2 and 3), drawn for each request with this model name in turn from "
        "the seed; then a short answer, or n one-token deltas with lognormal gaps between "
        "them (gap p99 default: gap p50, every gap the same)",
    ),
    "stall": (_stall, "stall:<s> - one delta, a pause of s seconds, then the rest"),
    "status": (_status, "status:<code> - that HTTP status with the provider's error body"),
    "html": (_html, "200 with an HTML page"),
    "truncate": (_truncate, "a few deltas, then the body ends without completion"),
    "error-frame": (_error_frame, "some text, then an in-stream provider error"),
    "replay": (_replay, "the server's recording, paced"),
    "trickle": (_trickle, "trickle:<s> - the echo answer, one byte every s seconds"),
    "comments": (_comments, "comments:<s>:<n> - n SSE comments (blank JSON lines), s apart"),
    "endless-line": (_endless_line, "endless-line:<s>:<n> - a delta, then a line never ended"),
    "pings": (_pings, "pings:<s>:<n> - a delta, n provider pings s apart (Anthropic), the rest"),
    "pings-first": (
        _pings_first,
        "pings-first:<s>:<n> - n provider pings s apart (Anthropic; nothing elsewhere) "
        "before the echo answer",
    ),
    "cut": (_cut, "two deltas, half a frame, then the connection is dropped"),
    "cut-in-call": (
        _cut_in_call,
        "a delta, a call of the first declared tool (else get_weather), then the connection "
        "is dropped before the turn ends",
    ),
    "flaky": (_flaky, "flaky:<n>:<code>:<ms> - n answers of code (retry-after-ms), then echo"),
    "limited": (
        _limited,
        "limited:<n>:<s> - n answers of 429 with Retry-After: s (seconds), then echo",
    ),
    "drop": (_drop, "drop:<n> - the first n requests lose their connection, then echo"),
    "cut-early": (
        _cut_early,
        "cut-early:<n> - the first n requests are answered, then cut before a frame; then echo",
    ),
    "deep-error": (_deep_error, "deep-error:<code>:<depth> - an error body nested depth deep"),
    "echo-key": (_echo_key, "echo-key:<frame|status|page|text|malformed> - quotes the API key"),
    "malformed": (
        _malformed,
        "malformed:<type|missing>:<n> - asked for a structured answer, the first n answers "
        "(default 1) have a field of the wrong type (or the first required one missing); "
        "the next fit",
    ),
    "refuse": (_refuse, "a refusal (a refusal delta, finish content_filter)"),
    "length": (_length, "some text, then the finish of an answer cut at its token limit"),
    "told": (
        _told,
        "told:<name> - the scenario the last user message names in a word "
        "<name>=<scenario>[:<args>] (<name>=reset: the connection dropped), else echo",
    ),
    "long-args": (
        _long_args,
        "long-args:<n> - a write_report call whose long, nested argument (n sections) streams "
        "in 16-character pieces (Gemini: partialArgs); then the answer",
    ),
}
"""Each scenario's planner and a one-line description."""
