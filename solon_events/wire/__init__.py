"""Bytes to frames: SSE and JSON lines (:mod:`~solon_events.wire.sse`), AWS
event-stream (:mod:`~solon_events.wire.eventstream`). Sans-I/O."""

__all__: list[str] = []
