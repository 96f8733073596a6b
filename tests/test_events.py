"""The event vocabulary and the ChatEvent value (SPEC §1-2)."""

from __future__ import annotations

from collections import OrderedDict
from types import MappingProxyType

import attrs
import pytest
from copies import WAYS, assert_built_alike, copied, keywords
from hypothesis import given
from hypothesis import strategies as st

from solon_events import (
    AssistantMessage,
    ChatEvent,
    ChatEventGroup,
    ChatEventPhase,
    ChatEventType,
    ChatResponse,
    ImageBlock,
    ToolCall,
    Usage,
)
from solon_events.event_model.events import framing_event, with_response_id

T = ChatEventType
G = ChatEventGroup
P = ChatEventPhase

TABLE = {
    T.RESPONSE_START: (G.LIFECYCLE, P.START),
    T.STATUS: (G.LIFECYCLE, P.NONE),
    T.HEARTBEAT: (G.LIFECYCLE, P.NONE),
    T.RESPONSE_END: (G.LIFECYCLE, P.END),
    T.ABORT: (G.LIFECYCLE, P.END),
    T.STEP_START: (G.STEP, P.START),
    T.STEP_END: (G.STEP, P.END),
    T.TEXT_START: (G.TEXT, P.START),
    T.TEXT_DELTA: (G.TEXT, P.DELTA),
    T.TEXT_END: (G.TEXT, P.END),
    T.THINKING_START: (G.THINKING, P.START),
    T.THINKING_DELTA: (G.THINKING, P.DELTA),
    T.THINKING_END: (G.THINKING, P.END),
    T.THINKING_SIGNATURE: (G.THINKING, P.NONE),
    T.THINKING_REDACTED: (G.THINKING, P.NONE),
    T.TOOL_CALL_START: (G.TOOL_CALL, P.START),
    T.TOOL_CALL_ARGS_DELTA: (G.TOOL_CALL, P.DELTA),
    T.TOOL_CALL_END: (G.TOOL_CALL, P.END),
    T.TOOL_CALL_CHUNK: (G.TOOL_CALL, P.NONE),
    T.TOOL_RESULT: (G.TOOL_CALL, P.NONE),
    T.SERVER_TOOL_START: (G.SERVER_TOOL, P.START),
    T.SERVER_TOOL_ARGS_DELTA: (G.SERVER_TOOL, P.DELTA),
    T.SERVER_TOOL_RESULT: (G.SERVER_TOOL, P.END),
    T.SEARCH_RESULT: (G.MEDIA, P.NONE),
    T.CITATION: (G.MEDIA, P.NONE),
    T.MEDIA_PARTIAL: (G.MEDIA, P.DELTA),
    T.MEDIA_DONE: (G.MEDIA, P.END),
    T.REFUSAL_DELTA: (G.SAFETY, P.DELTA),
    T.CONTENT_FILTER: (G.SAFETY, P.NONE),
    T.USAGE: (G.META, P.NONE),
    T.ERROR: (G.META, P.NONE),
    T.RAW: (G.META, P.NONE),
    T.CUSTOM: (G.META, P.NONE),
}

TERMINAL = {T.RESPONSE_END, T.ABORT, T.ERROR}


# vocabulary


def test_there_are_33_types_and_the_table_covers_them_all() -> None:
    assert len(ChatEventType) == 33
    assert set(TABLE) == set(ChatEventType)


def test_the_phases_and_groups_are_closed_sets() -> None:
    assert [p.name for p in ChatEventPhase] == ["START", "DELTA", "END", "NONE"]
    assert [g.name for g in ChatEventGroup] == [
        "LIFECYCLE", "STEP", "TEXT", "THINKING", "TOOL_CALL", "SERVER_TOOL", "MEDIA", "SAFETY",
        "META",
    ]  # fmt: skip


@pytest.mark.parametrize("event_type", list(ChatEventType), ids=lambda t: t.name)
def test_each_type_carries_its_group_and_phase(event_type: ChatEventType) -> None:
    group, phase = TABLE[event_type]
    assert event_type.group is group
    assert event_type.phase is phase
    assert event_type.is_delta is (phase is P.DELTA)
    assert event_type.is_terminal is (event_type in TERMINAL)


@pytest.mark.parametrize("event_type", list(ChatEventType), ids=lambda t: t.name)
def test_event_derived_properties_equal_the_types(event_type: ChatEventType) -> None:
    event = ChatEvent(event_type)
    assert event.group is event_type.group
    assert event.phase is event_type.phase
    assert event.is_delta is event_type.is_delta
    assert event.is_terminal is event_type.is_terminal


def test_types_are_usable_as_dict_keys_and_print_their_name() -> None:
    counts = {t: 0 for t in ChatEventType}
    counts[T.TEXT_DELTA] += 1
    assert counts[T.TEXT_DELTA] == 1
    assert str(T.TEXT_DELTA) == "TEXT_DELTA"
    assert T["TEXT_DELTA"] is T.TEXT_DELTA


# fields and defaults


def test_defaults() -> None:
    event = ChatEvent(T.STATUS)
    assert event.type is T.STATUS
    assert event.text is None
    assert event.response is None
    assert event.usage is None
    assert event.error is None
    assert event.step == 0
    assert event.index == -1
    assert event.response_id is None
    assert event.provider_response_id is None
    assert event.item_id is None
    assert event.tool_call_id is None
    assert event.tool_call is None
    assert event.block is None
    assert event.citation is None
    assert event.search_result is None
    assert event.raw_type is None
    assert event.sub_type is None
    assert dict(event.raw) == {}
    assert dict(event.attrs) == {}


def test_every_field_is_kept() -> None:
    given = {
        "text": "t",
        "usage": Usage(prompt_tokens=1),
        "error": RuntimeError("x"),
        "step": 3,
        "index": 4,
        "response_id": "r",
        "provider_response_id": "p",
        "item_id": "i",
        "tool_call_id": "tc",
        "tool_call": ToolCall(id="c", name="f"),
        "block": ImageBlock(url="u"),
        "raw_type": "rt",
        "sub_type": "st",
        "raw": {"a": 1},
        "attrs": {"k": "v"},
    }
    event = ChatEvent(T.CUSTOM, **given)
    assert {name: getattr(event, name) for name in given} == given


def test_type_is_required() -> None:
    with pytest.raises(TypeError):
        ChatEvent()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        ChatEvent(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ChatEvent(type=None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ChatEvent(text="no type")  # type: ignore[call-arg]


# raw and attrs


def test_raw_is_never_none() -> None:
    assert ChatEvent(T.RAW, raw=None).raw is not None
    assert len(ChatEvent(T.RAW, raw=None).raw) == 0
    assert len(ChatEvent(T.RAW, raw={}).raw) == 0


@pytest.mark.parametrize("source", [{"a": 1}, OrderedDict(a=1)], ids=["dict", "OrderedDict"])
def test_raw_is_read_only(source: dict[str, int]) -> None:
    event = ChatEvent(T.RAW, raw=source)
    assert event.raw["a"] == 1
    with pytest.raises(TypeError):
        event.raw["a"] = 2  # type: ignore[index]
    with pytest.raises(TypeError):
        ChatEvent(T.RAW).raw["x"] = 1  # type: ignore[index]
    assert source["a"] == 1


def test_attrs_is_a_snapshot() -> None:
    source = {"k": "v"}
    event = ChatEvent(T.CUSTOM, attrs=source)
    source["k"] = "changed"
    source["new"] = 1
    assert dict(event.attrs) == {"k": "v"}


def test_attrs_built_from_a_proxy_is_a_snapshot_too() -> None:
    underlying = {"k": "v"}
    event = ChatEvent(T.CUSTOM, attrs=MappingProxyType(underlying))
    underlying["k"] = "changed"
    assert event.attrs["k"] == "v"


def test_attrs_is_read_only() -> None:
    event = ChatEvent(T.CUSTOM, attrs={"k": "v"})
    with pytest.raises(TypeError):
        event.attrs["k"] = "w"  # type: ignore[index]
    with pytest.raises(TypeError):
        ChatEvent(T.CUSTOM).attrs["k"] = "w"  # type: ignore[index]


def test_attr_reads_attrs_with_a_default() -> None:
    event = ChatEvent(T.CUSTOM, attrs={"k": "v", "none": None})
    assert event.attr("k") == "v"
    assert event.attr("missing") is None
    assert event.attr("missing", 7) == 7
    assert event.attr("none", 7) is None


# derived and predicates


@pytest.mark.parametrize(("text", "expected"), [(None, False), ("", False), ("x", True)])
def test_has_text(text: str | None, expected: bool) -> None:
    assert ChatEvent(T.TEXT_DELTA, text=text).has_text is expected


def test_is_type_and_is_group() -> None:
    event = ChatEvent(T.TEXT_DELTA, text="x")
    assert event.is_type(T.TEXT_DELTA)
    assert event.is_type(T.USAGE, T.TEXT_DELTA)
    assert not event.is_type(T.TEXT_START)
    assert not event.is_type()
    assert event.is_group(G.TEXT)
    assert event.is_group(G.META, G.TEXT)
    assert not event.is_group(G.THINKING)
    assert not event.is_group()


# evolve and immutability


def test_evolve_returns_a_changed_copy() -> None:
    event = ChatEvent(T.TEXT_DELTA, text="a", step=1, raw={"x": 1}, attrs={"k": 1})
    copy = event.evolve(text="b", index=5)
    assert copy is not event
    assert (copy.text, copy.index, copy.step) == ("b", 5, 1)
    assert copy.raw["x"] == 1
    assert copy.attrs["k"] == 1
    assert (event.text, event.index) == ("a", -1)
    assert event.evolve() == event


@pytest.mark.parametrize("field", ["type", "text", "step", "raw", "attrs", "response_id"])
def test_events_are_frozen(field: str) -> None:
    event = ChatEvent(T.TEXT_DELTA, text="a")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        setattr(event, field, None)
    assert event.text == "a"


def test_events_have_no_dict() -> None:
    event = ChatEvent(T.TEXT_DELTA)
    with pytest.raises((AttributeError, attrs.exceptions.FrozenInstanceError)):
        event.extra = 1  # type: ignore[attr-defined]
    assert not hasattr(event, "__dict__")


def test_with_response_id_equals_evolve() -> None:
    event = ChatEvent(
        T.TOOL_CALL_START,
        text="t",
        step=2,
        index=1,
        item_id="i",
        tool_call_id="c",
        tool_call=ToolCall(id="c", name="f"),
        raw={"r": 1},
        attrs={"a": 2},
    )
    stamped = with_response_id(event, "resp_1")
    assert stamped == event.evolve(response_id="resp_1")
    assert isinstance(stamped, ChatEvent)
    assert stamped.response_id == "resp_1"
    assert event.response_id is None
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        stamped.text = "x"  # type: ignore[misc]
    assert with_response_id(stamped, "resp_1") == stamped


_IDS = st.none() | st.text(max_size=3)
FRAMING_FIELDS = (
    "step response_id provider_response_id index item_id tool_call_id tool_call response usage"
    " raw text"
)


@given(
    event_type=st.sampled_from(list(ChatEventType)),
    step=st.integers(0, 3),
    ids=st.tuples(_IDS, _IDS, _IDS, _IDS),
    index=st.integers(-1, 3),
    call=st.none() | st.builds(ToolCall, id=st.text(max_size=2), name=st.text(max_size=2)),
    response=st.none() | st.just(ChatResponse(text="r")),
    usage=st.none() | st.builds(Usage, prompt_tokens=st.integers(0, 9)),
    raw=st.none() | st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
    text=st.none() | st.text(max_size=3),
)
def test_framing_event_builds_what_the_constructor_builds(
    event_type: ChatEventType,
    step: int,
    ids: tuple[str | None, str | None, str | None, str | None],
    index: int,
    call: ToolCall | None,
    response: ChatResponse | None,
    usage: Usage | None,
    raw: dict[str, int] | None,
    text: str | None,
) -> None:
    values = (step, *ids[:2], index, *ids[2:], call, response, usage, raw, text)
    built = framing_event(event_type, *values)
    expected = ChatEvent(event_type, **keywords(FRAMING_FIELDS, values))
    assert_built_alike(built, expected)
    assert isinstance(built.raw, MappingProxyType) or built.raw == {}


# message projection


def test_message_of_an_event_with_a_response_is_the_responses() -> None:
    message = AssistantMessage(text="hi")
    for event_type in (T.STEP_END, T.RESPONSE_END, T.TEXT_DELTA):
        event = ChatEvent(event_type, text="delta", response=ChatResponse(message=message))
        assert event.message is message


def test_message_of_a_response_without_message_is_none() -> None:
    assert ChatEvent(T.RESPONSE_END, response=ChatResponse()).message is None


def test_message_of_text_delta() -> None:
    message = ChatEvent(T.TEXT_DELTA, text="hello").message
    assert message is not None
    assert (message.text, message.thinking, message.blocks) == ("hello", "", ())
    empty = ChatEvent(T.TEXT_DELTA).message
    assert empty is not None
    assert empty.text == ""


def test_message_of_thinking_delta() -> None:
    message = ChatEvent(T.THINKING_DELTA, text="hmm").message
    assert message is not None
    assert (message.text, message.thinking) == ("", "hmm")
    assert message.is_thinking


def test_message_of_media_done() -> None:
    block = ImageBlock(url="https://x/y.png")
    message = ChatEvent(T.MEDIA_DONE, block=block).message
    assert message is not None
    assert message.blocks == (block,)
    assert message.text == ""
    assert message.has_media
    assert ChatEvent(T.MEDIA_DONE).message is None


@pytest.mark.parametrize(
    "event_type",
    [t for t in ChatEventType if t not in (T.TEXT_DELTA, T.THINKING_DELTA, T.MEDIA_DONE)],
    ids=lambda t: t.name,
)
def test_message_of_other_types_is_none(event_type: ChatEventType) -> None:
    event = ChatEvent(event_type, text="some text", block=ImageBlock(url="u"))
    assert event.message is None
    assert event.message_or_empty == AssistantMessage()


def test_message_or_empty_never_none() -> None:
    assert ChatEvent(T.RESPONSE_END, response=ChatResponse()).message_or_empty == AssistantMessage()
    assert ChatEvent(T.TEXT_DELTA, text="x").message_or_empty.text == "x"


# repr


def test_repr_format() -> None:
    event = ChatEvent(
        T.TEXT_DELTA, step=1, index=2, item_id="it", raw_type="raw.t", text="0123456789" * 6
    )
    text = repr(event)
    assert text.startswith("ChatEvent(TEXT_DELTA, step=1, index=2, item_id=it, raw_type=raw.t, ")
    assert text.endswith(f"text='{'0123456789' * 4}...')")


def test_repr_is_short_and_omits_defaults() -> None:
    assert repr(ChatEvent(T.HEARTBEAT)) == "ChatEvent(HEARTBEAT)"
    assert repr(ChatEvent(T.TEXT_DELTA, text="short")) == "ChatEvent(TEXT_DELTA, text='short')"
    long = repr(ChatEvent(T.TEXT_DELTA, text="x" * 10_000, raw={"big": "y" * 10_000}))
    assert len(long) < 100


# --- one constructor: copies, evolve and pickling go through it ------------------------------


def _full_event() -> ChatEvent:
    response = ChatResponse(
        message=AssistantMessage(text="hi", tool_calls=(ToolCall(id="c", name="f"),)),
        usage=Usage(prompt_tokens=1, completion_tokens=2, server_tool_use={"web": 1}),
    )
    return ChatEvent(
        T.STEP_END,
        text="hi",
        response=response,
        usage=response.usage,
        step=2,
        index=0,
        response_id="r",
        provider_response_id="p",
        item_id="i",
        tool_call_id="c",
        tool_call=ToolCall(id="c", name="f", arguments_str='{"a": 1}'),
        block=ImageBlock(url="u"),
        raw={"type": "x", "nested": {"a": [1]}},
        attrs={"k": "v"},
    )


@pytest.mark.parametrize("how", WAYS)
def test_an_event_copies_and_pickles_to_an_equal_event(how: str) -> None:
    event = _full_event()
    again = copied(event, how)
    assert again == event and type(again) is ChatEvent
    assert type(again.raw) is MappingProxyType and type(again.attrs) is MappingProxyType
    assert again.response == event.response and again.usage == event.usage


def test_attrs_evolve_and_the_evolve_method_build_through_the_constructor() -> None:
    event = _full_event()
    for evolved in (attrs.evolve(event, text="other"), event.evolve(text="other")):
        assert evolved.text == "other" and evolved.raw == event.raw
        assert attrs.evolve(evolved, text="hi") == event
        assert type(evolved.raw) is MappingProxyType
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        event.text = "x"  # type: ignore[misc]


def test_the_constructor_takes_the_fields_in_order_of_attrs_fields() -> None:
    names = [field.name for field in attrs.fields(ChatEvent)]
    values = {name: getattr(_full_event(), name) for name in names}
    assert ChatEvent(*values.values()) == ChatEvent(**values) == _full_event()
