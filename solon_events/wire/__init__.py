"""Bytes to frames: SSE and JSON lines (:mod:`~solon_events.wire.sse`), AWS
event-stream (:mod:`~solon_events.wire.eventstream`); frames to bytes, as the provider
formats' encoders write them (:mod:`~solon_events.wire.writing`). Sans-I/O."""

__all__: list[str] = []
