"""ConverseStream bodies decoded by botocore itself: the independent reading the Bedrock
tests hold the dialect and the embedded provider's encoder against."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import botocore.session
from botocore.eventstream import EventStream
from botocore.parsers import EventStreamJSONParser


class _RawStream:
    def __init__(self, body: bytes, size: int) -> None:
        self._body = body
        self._size = size

    def stream(self) -> Iterator[bytes]:
        for at in range(0, len(self._body), self._size):
            yield self._body[at : at + self._size]

    def close(self) -> None:
        pass


def botocore_events(body: bytes, chunk: int = 97) -> Iterator[dict[str, Any]]:
    """ConverseStream events as boto3 hands them to its callers, from the same bytes
    (read ``chunk`` bytes at a time)."""
    model = botocore.session.get_session().get_service_model("bedrock-runtime")
    shape = model.operation_model("ConverseStream").output_shape.members["stream"]
    parser = EventStreamJSONParser()  # the one botocore's rest-json client uses
    return iter(EventStream(_RawStream(body, chunk), shape, parser, "ConverseStream"))
