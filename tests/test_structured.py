"""partial_json(): a JSON answer's partial values, validated at the end (SPEC §10)."""

from __future__ import annotations

import itertools
import json
from typing import Any

import attrs
import pytest
import reactivex
from partial_values import is_prefix
from reactivex import operators as ops

from solon_events import ChatEvent, ChatEventType, ChatModel, partial_json
from solon_events.devserver import DevServer

T = ChatEventType
ANSWER = {"city": "Paris", "days": [{"day": 1, "rain": 0.5}, {"day": 2, "rain": None}], "ok": True}
TEXT = json.dumps(ANSWER)


def answer_events(*steps: list[str]) -> list[ChatEvent]:
    """A response whose steps say these text deltas."""
    events = [ChatEvent(T.RESPONSE_START)]
    for number, deltas in enumerate(steps):
        events.append(ChatEvent(T.STEP_START, step=number))
        events += [ChatEvent(T.TEXT_DELTA, step=number, text=text) for text in deltas]
        events.append(ChatEvent(T.STEP_END, step=number))
    return [*events, ChatEvent(T.RESPONSE_END)]


def values_of(events: list[ChatEvent], schema: Any = None) -> tuple[list[Any], Exception | None]:
    values: list[Any] = []
    errors: list[Exception] = []
    reactivex.from_iterable(events).pipe(partial_json(schema)).subscribe(
        values.append, errors.append
    )
    return values, errors[0] if errors else None


def pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


@pytest.mark.parametrize("size", [1, 3, 7, 100])
def test_values_grow_to_the_whole_answer(size: int) -> None:
    values, error = values_of(answer_events(pieces(TEXT, size)))
    assert error is None
    assert values[-1] == ANSWER
    assert all(is_prefix(value, ANSWER) for value in values)
    assert all(is_prefix(a, b) for a, b in itertools.pairwise(values))
    assert all(a is not b for a, b in itertools.pairwise(values))  # only changes are emitted


@pytest.mark.parametrize("cut", range(0, 30))
def test_a_markdown_fence_around_the_answer_is_skipped(cut: int) -> None:
    fenced = "```json\n" + json.dumps({"code": "``` inside `a` string"}) + "\n```\n"
    values, error = values_of(answer_events([fenced[:cut], fenced[cut:]]))
    assert error is None, error
    assert values[-1] == {"code": "``` inside `a` string"}


def test_only_the_last_steps_text_is_the_answer() -> None:
    values, error = values_of(answer_events(["Let me check ", "the weather."], pieces(TEXT, 5)))
    assert error is None and values[-1] == ANSWER


@pytest.mark.parametrize(
    ("deltas", "message"),
    [
        (["The answer is 42."], "not JSON"),
        ([TEXT[:-3]], "incomplete"),
        ([TEXT, " and more"], "not JSON"),
        (["```json\n", TEXT, "\n``` more"], "not JSON"),
    ],
)
def test_an_answer_that_is_not_json_fails_with_value_error(deltas: list[str], message: str) -> None:
    _values, error = values_of(answer_events(deltas))
    assert isinstance(error, ValueError) and message in str(error)


@attrs.frozen
class Day:
    day: int
    rain: float | None


@attrs.frozen
class Forecast:
    city: str
    days: list[Day]
    ok: bool


def test_an_attrs_class_gets_the_whole_answer_as_an_instance() -> None:
    values, error = values_of(answer_events(pieces(TEXT, 4)), Forecast)
    assert error is None
    assert values[-1] == Forecast("Paris", [Day(1, 0.5), Day(2, None)], True)
    assert values[-2] == ANSWER  # the partial values are plain JSON values


def test_an_answer_that_does_not_fit_the_attrs_class_fails() -> None:
    values, error = values_of(answer_events(['{"city": "Paris", "days": "soon"}']), Forecast)
    assert isinstance(error, ValueError) and "Forecast" in str(error)
    assert values == [{"city": "Paris", "days": "soon"}]


SCHEMA = {
    "type": "object",
    "required": ["city", "days"],
    "properties": {"city": {"type": "string"}, "days": {"type": "array"}},
}


def test_a_json_schema_checks_the_whole_answer() -> None:
    values, error = values_of(answer_events(pieces(TEXT, 6)), SCHEMA)
    assert error is None and values[-1] == ANSWER
    _, error = values_of(answer_events(['{"city": 7, "days": []}']), SCHEMA)
    assert isinstance(error, ValueError) and "does not match the schema" in str(error)


def test_bad_schemas_are_refused_at_once() -> None:
    with pytest.raises(TypeError, match="attrs class or a JSON schema"):
        partial_json(dict)
    with pytest.raises(Exception, match="is not valid"):
        partial_json({"type": 12})


def test_against_the_embedded_provider() -> None:
    with (
        DevServer.run_in_thread() as server,
        ChatModel(server.url + "/v1/chat/completions", "echo") as model,
    ):
        values = model.prompt(TEXT).stream().pipe(partial_json(), ops.to_list()).run()
    assert len(values) > 3 and values[-1] == ANSWER
    assert all(is_prefix(value, ANSWER) for value in values)
