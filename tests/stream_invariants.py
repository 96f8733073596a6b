"""A recorded stream replayed whole, and the stream invariants every replay must keep (SPEC
section 7): what the conformance suites check of each recording, whatever its oracle."""

from __future__ import annotations

from pathlib import Path

from solon_events import ChatEvent, ChatEventFilter, ChatEventType, replay

__all__ = ["check_invariants", "collect"]

T = ChatEventType


def collect(
    source: Path | bytes, dialect: str = "auto"
) -> tuple[list[ChatEvent], BaseException | None]:
    """Every event of ``source`` replayed in ``dialect``, and the failure it ended with."""
    events: list[ChatEvent] = []
    errors: list[BaseException] = []
    replay(source, dialect=dialect, event_filter=ChatEventFilter.all()).subscribe(
        events.append, errors.append
    )
    return events, errors[0] if errors else None


def check_invariants(events: list[ChatEvent], error: BaseException | None) -> None:
    """One RESPONSE_START first and one terminal event last (matching ``error``), steps
    paired, one response id, every text and thinking delta inside its block, text and
    thinking blocks never open together, none open at a step's end."""
    types = [e.type for e in events]
    assert types[0] is T.RESPONSE_START
    assert types.count(T.RESPONSE_START) == 1
    terminal = [t for t in types if t.is_terminal]
    assert len(terminal) == 1 and types[-1] is terminal[0]
    if error is None:
        assert types[-1] is T.RESPONSE_END
    else:
        assert types[-1] is T.ERROR and events[-1].error is error
    assert types.count(T.STEP_START) == types.count(T.STEP_END) >= 1
    response_id = events[0].response_id
    assert all(e.response_id == response_id for e in events)
    open_blocks: dict[str, int] = {"TEXT": 0, "THINKING": 0}
    for e in events:
        group = e.type.group.name
        if group in open_blocks:
            if e.type.phase.name == "START":
                open_blocks[group] += 1
            elif e.type.phase.name == "END":
                open_blocks[group] -= 1
            elif e.type.is_delta:
                assert open_blocks[group] > 0, f"{e!r} outside its block"
            assert not (open_blocks["TEXT"] and open_blocks["THINKING"])
        if e.type is T.STEP_END:
            assert open_blocks == {"TEXT": 0, "THINKING": 0}
