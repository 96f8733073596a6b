"""ChatEventFilter: the delivery policy (SPEC §4)."""

from __future__ import annotations

import pytest

from solon_events import ChatEvent, ChatEventFilter, ChatEventGroup, ChatEventType

T = ChatEventType
G = ChatEventGroup
ALL_EVENTS = [ChatEvent(t) for t in ChatEventType]


def passed(f: ChatEventFilter) -> set[ChatEventType]:
    """The types ``f`` lets through, checked both through ``f(e)`` and ``f.test(e)``."""
    result = {e.type for e in ALL_EVENTS if f(e)}
    assert result == {e.type for e in ALL_EVENTS if f.test(e)}
    return result


def test_default_passes_everything_but_heartbeat_and_raw() -> None:
    assert passed(ChatEventFilter.DEFAULT) == set(T) - {T.HEARTBEAT, T.RAW}


def test_all_passes_everything() -> None:
    assert passed(ChatEventFilter.all()) == set(T)


def test_of_passes_exactly_the_types() -> None:
    assert passed(ChatEventFilter.of(T.TEXT_DELTA, T.USAGE)) == {T.TEXT_DELTA, T.USAGE}
    assert passed(ChatEventFilter.of()) == set()


def test_of_groups_passes_every_type_of_the_groups() -> None:
    assert passed(ChatEventFilter.of_groups(G.TEXT)) == {T.TEXT_START, T.TEXT_DELTA, T.TEXT_END}
    both = passed(ChatEventFilter.of_groups(G.THINKING, G.SAFETY))
    assert both == {t for t in T if t.group in (G.THINKING, G.SAFETY)}
    assert len(both) == 7


def test_or() -> None:
    a, b = ChatEventFilter.of(T.TEXT_DELTA), ChatEventFilter.of(T.USAGE)
    assert passed(a | b) == {T.TEXT_DELTA, T.USAGE}
    assert passed(a.or_(b)) == {T.TEXT_DELTA, T.USAGE}


def test_and() -> None:
    text = ChatEventFilter.of_groups(G.TEXT)
    deltas = ChatEventFilter(lambda e: e.is_delta)
    assert passed(text & deltas) == {T.TEXT_DELTA}
    assert passed(text.and_(ChatEventFilter.of(T.TEXT_END, T.USAGE))) == {T.TEXT_END}


def test_invert() -> None:
    assert passed(~ChatEventFilter.DEFAULT) == {T.HEARTBEAT, T.RAW}
    assert passed(~ChatEventFilter.all()) == set()
    custom = ChatEventFilter(lambda e: e.is_delta)
    assert passed(~custom) == {t for t in T if not t.is_delta}
    assert passed(custom.negate()) == {t for t in T if not t.is_delta}


def test_custom_predicates_combine_with_type_filters() -> None:
    has_text = ChatEventFilter(lambda e: e.has_text)
    text_deltas = ChatEventFilter.of(T.TEXT_DELTA) & has_text
    assert text_deltas(ChatEvent(T.TEXT_DELTA, text="x"))
    assert not text_deltas(ChatEvent(T.TEXT_DELTA, text=""))
    assert not text_deltas(ChatEvent(T.STATUS, text="x"))
    either = has_text | ChatEventFilter.of(T.USAGE)
    assert either(ChatEvent(T.USAGE))
    assert either(ChatEvent(T.STATUS, text="working"))
    assert not either(ChatEvent(T.STATUS))
    plain_function = ChatEventFilter.of(T.USAGE) | (lambda e: e.step == 2)
    assert plain_function(ChatEvent(T.TEXT_DELTA, step=2))
    assert not plain_function(ChatEvent(T.TEXT_DELTA, step=1))


def test_results_are_bools() -> None:
    f = ChatEventFilter(lambda e: e.text)  # type: ignore[arg-type, return-value]
    assert f(ChatEvent(T.TEXT_DELTA, text="x")) is True
    assert f(ChatEvent(T.TEXT_DELTA)) is False


LIFECYCLE_AND_STEP = {t for t in T if t.group in (G.LIFECYCLE, G.STEP)} - {T.HEARTBEAT}


def test_guarded_passes_lifecycle_and_step_whatever_the_filter_says() -> None:
    nothing = ChatEventFilter.of()
    assert passed(ChatEventFilter.guarded(nothing)) == LIFECYCLE_AND_STEP
    refuse = ChatEventFilter(lambda e: False)
    assert passed(ChatEventFilter.guarded(refuse)) == LIFECYCLE_AND_STEP


def test_guarded_asks_the_filter_about_the_rest() -> None:
    guarded = ChatEventFilter.guarded(ChatEventFilter.of(T.TEXT_DELTA))
    assert passed(guarded) == LIFECYCLE_AND_STEP | {T.TEXT_DELTA}
    guarded_custom = ChatEventFilter.guarded(lambda e: e.type is T.TEXT_DELTA)
    assert passed(guarded_custom) == LIFECYCLE_AND_STEP | {T.TEXT_DELTA}


def test_guarded_heartbeat_passes_only_when_the_filter_passes_it() -> None:
    heartbeat = ChatEvent(T.HEARTBEAT)
    assert not ChatEventFilter.guarded(ChatEventFilter.DEFAULT)(heartbeat)
    assert not ChatEventFilter.guarded(lambda e: False)(heartbeat)
    assert ChatEventFilter.guarded(ChatEventFilter.all())(heartbeat)
    assert ChatEventFilter.guarded(ChatEventFilter.of(T.HEARTBEAT))(heartbeat)
    assert ChatEventFilter.guarded(lambda e: e.type is T.HEARTBEAT)(heartbeat)


def test_guarded_default() -> None:
    assert passed(ChatEventFilter.guarded(ChatEventFilter.DEFAULT)) == set(T) - {
        T.HEARTBEAT,
        T.RAW,
    }


@pytest.mark.parametrize(
    "make",
    [
        lambda: ChatEventFilter.of("TEXT_DELTA"),
        lambda: ChatEventFilter.of(G.TEXT),
        lambda: ChatEventFilter.of_groups(T.TEXT_DELTA),
        lambda: ChatEventFilter.of_groups("TEXT"),
        lambda: ChatEventFilter(),
        lambda: ChatEventFilter(42),
        lambda: ChatEventFilter.DEFAULT | 3,
        lambda: ChatEventFilter.DEFAULT & "TEXT_DELTA",
        lambda: ChatEventFilter.DEFAULT.or_(None),
        lambda: ChatEventFilter.guarded(T.TEXT_DELTA),
    ],
)
def test_bad_arguments_raise_type_error(make: object) -> None:
    with pytest.raises(TypeError):
        make()  # type: ignore[operator]


def test_repr_names_the_filter() -> None:
    assert "DEFAULT" in repr(ChatEventFilter.DEFAULT)
    assert "TEXT_DELTA" in repr(ChatEventFilter.of(T.TEXT_DELTA))
