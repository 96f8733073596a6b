"""The spend log: one :class:`~solon_events.client.metering.SpendRecord` per attempt,
written off the request path in batches.

:meth:`SpendLog.write` only appends the record to a buffer (it never blocks and never
fails the request); a thread of the log's own writes the buffer every ``interval``
seconds, or as soon as it holds ``batch`` records, to:

- a JSON-lines file (:class:`JsonLinesSpendLog`): one record per line, each batch one
  append (several processes may append to the same file);
- a Redis stream (:class:`RedisSpendLog`, the ``redis`` extra): one entry per record,
  its JSON in the field ``record``;
- OpenTelemetry logs (:class:`OtelSpendLog`, the ``otel`` extra): one log record per
  attempt, through the global logger provider.

:func:`read_spend` reads the records back (a file, or a Redis stream) and
:func:`spend_totals` sums them by key, model and day, as ``solon-events spend`` prints
them. :meth:`SpendLog.close` writes what is left.
"""

from __future__ import annotations

import datetime
import logging
import os
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import attrs
import orjson

from ..event_model.extras import require
from .metering import SpendRecord

__all__ = [
    "JsonLinesSpendLog",
    "OtelSpendLog",
    "RedisSpendLog",
    "SPEND_STREAM",
    "SpendLog",
    "SpendTotal",
    "read_spend",
    "spend_totals",
]

_log = logging.getLogger(__name__)

SPEND_STREAM = "solon-events:spend"
"""The Redis stream a :class:`RedisSpendLog` writes to by default."""


class SpendLog:
    """A spend log's buffer and its writer thread (the base of the logs here): ``batch``
    records at most per write, at least every ``interval`` seconds."""

    def __init__(self, *, batch: int = 500, interval: float = 0.5) -> None:
        if batch < 1 or not interval > 0:
            raise ValueError("batch must be 1 or more, interval a positive number of seconds")
        self.batch = batch
        self.interval = interval
        self._buffer: list[SpendRecord] = []
        self._lock = threading.Condition()
        self._closed = False
        self._writing = 0  # records taken from the buffer and not written yet
        self._thread: threading.Thread | None = None
        self.written = 0
        """The records written so far."""
        self.failures = 0
        """The batches that could not be written (logged, then dropped)."""

    def write(self, record: SpendRecord) -> None:
        """Add ``record`` to the next batch (never blocks; once the log is closed, a late
        record, an attempt that ended after, is written at once)."""
        with self._lock:
            closed = self._closed
            if not closed:
                self._buffer.append(record)
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._run,
                        name=f"solon-events-spend-{type(self).__name__}",
                        daemon=True,
                    )
                    self._thread.start()
                if len(self._buffer) >= self.batch:
                    self._lock.notify()
        if closed:
            try:
                self._write([record])
            except Exception:
                _log.exception("%r could not write a late spend record", self)
            else:
                self.written += 1

    def __call__(self, record: SpendRecord) -> None:
        """:meth:`write` (so that a log is an ``on_attempt`` callback)."""
        self.write(record)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every record written so far is out (or ``timeout`` seconds
        passed): whether it is."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            self._lock.notify()
            while self._buffer or self._writing:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._lock.wait(left if left is not None else 0.05)
                self._lock.notify()
        return True

    def close(self) -> None:
        """Write what is left, then stop the writer thread (and close what it holds)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._lock.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(30)
        self._close()

    def __enter__(self) -> SpendLog:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._buffer and not self._closed:
                    self._lock.wait(self.interval)
                records, self._buffer = self._buffer[: self.batch], self._buffer[self.batch :]
                self._writing = len(records)
                done = self._closed and not records and not self._buffer
            if done:
                return
            if records:
                try:
                    self._write(records)
                    written = len(records)
                except Exception:
                    self.failures += 1
                    written = 0
                    _log.exception("%r could not write %d spend records", self, len(records))
                with self._lock:
                    self.written += written
                    self._writing = 0
                    self._lock.notify_all()

    def _write(self, records: Sequence[SpendRecord]) -> None:
        raise NotImplementedError

    def _close(self) -> None:
        """Close what the writer held (after its last batch)."""


class JsonLinesSpendLog(SpendLog):
    """A spend log in the JSON-lines file at ``path`` (appended to; made when missing)."""

    def __init__(self, path: str | os.PathLike[str], **options: Any) -> None:
        super().__init__(**options)
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"JsonLinesSpendLog({str(self.path)!r})"

    def _write(self, records: Sequence[SpendRecord]) -> None:
        data = b"".join(record.to_bytes() for record in records)
        descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(descriptor, view) :]
        finally:
            os.close(descriptor)


class RedisSpendLog(SpendLog):
    """A spend log in the Redis stream ``stream`` at ``url`` (the ``redis`` extra): one
    entry per record, its JSON in the field ``record``; ``maxlen``: keep about that many
    entries (None: all)."""

    def __init__(
        self, url: str, stream: str = SPEND_STREAM, *, maxlen: int | None = None, **options: Any
    ) -> None:
        require("redis", feature="a spend log in Redis", extra="redis")
        super().__init__(**options)
        self.url = url
        self.stream = stream
        self.maxlen = maxlen
        self._client: Any = None

    def __repr__(self) -> str:
        from ..support.redaction import redact_url

        return f"RedisSpendLog({redact_url(self.url)!r}, {self.stream!r})"

    def _write(self, records: Sequence[SpendRecord]) -> None:
        if self._client is None:
            import redis

            self._client = redis.Redis.from_url(self.url, socket_timeout=5)
        pipe = self._client.pipeline(transaction=False)
        for record in records:
            pipe.xadd(
                self.stream,
                {"record": orjson.dumps(record.to_json())},
                maxlen=self.maxlen,
                approximate=True,
            )
        pipe.execute()

    def _close(self) -> None:
        if self._client is not None:
            self._client.close()


class OtelSpendLog(SpendLog):
    """The spend log as OpenTelemetry log records (the ``otel`` extra), through the
    global logger provider (or ``logger_provider``): one per attempt, its body the
    record's JSON, its attributes ``solon_events.spend.*`` (key, model, deployment,
    outcome, tokens, cost) and the GenAI conventions' ``gen_ai.usage.input_tokens`` and
    ``output_tokens``. Nothing is exported until an OpenTelemetry SDK is installed."""

    def __init__(self, logger_provider: Any = None, **options: Any) -> None:
        logs = require("opentelemetry._logs", feature="spend records as OpenTelemetry logs",
                       extra="otel", package="opentelemetry-api")  # fmt: skip
        super().__init__(**options)
        self._logs = logs
        provider = logger_provider or logs.get_logger_provider()
        self._logger = provider.get_logger("solon_events.spend")

    def __repr__(self) -> str:
        return "OtelSpendLog()"

    def _write(self, records: Sequence[SpendRecord]) -> None:
        logs = self._logs
        for record in records:
            body = record.to_json()
            usage = body["usage"] or {}
            attributes = {
                "solon_events.spend.key": record.key or "",
                "solon_events.spend.model": record.model,
                "solon_events.spend.deployment": record.deployment,
                "solon_events.spend.outcome": record.outcome,
                "solon_events.spend.estimated": bool(usage.get("estimated", False)),
                "solon_events.spend.cost_usd": body["cost_usd"] or "",
                "gen_ai.usage.input_tokens": int(usage.get("input_tokens", 0)),
                "gen_ai.usage.output_tokens": int(usage.get("output_tokens", 0)),
                "gen_ai.response.id": record.response_id or "",
            }
            self._logger.emit(
                logs.LogRecord(
                    timestamp=int(record.time * 1e9),
                    severity_number=logs.SeverityNumber.INFO,
                    severity_text="INFO",
                    body=body,
                    attributes=attributes,
                )
            )


# --- reading


def read_spend(source: str, *, stream: str = SPEND_STREAM) -> Iterator[SpendRecord]:
    """The records of a spend log: a JSON-lines file's path, or a ``redis://`` URL (its
    ``stream``). A line or entry that is no record raises ``ValueError`` naming where."""
    if source.startswith(("redis://", "rediss://", "unix://")):
        yield from _read_redis(source, stream)
        return
    with open(source, "rb") as file:
        for number, line in enumerate(file, 1):
            if not line.strip():
                continue
            try:
                yield SpendRecord.from_json(orjson.loads(line))
            except (orjson.JSONDecodeError, ValueError, AttributeError) as error:
                raise ValueError(f"{source}:{number}: {error}") from None


def _read_redis(url: str, stream: str) -> Iterator[SpendRecord]:
    require("redis", feature="a spend log in Redis", extra="redis")
    import redis

    client: Any = redis.Redis.from_url(url, socket_timeout=10)
    try:
        last = "-"
        while True:
            entries = client.xrange(stream, min=last, count=1000)
            if last != "-":
                entries = entries[1:]  # the one read last time
            if not entries:
                return
            for entry_id, fields in entries:
                try:
                    yield SpendRecord.from_json(orjson.loads(fields[b"record"]))
                except (KeyError, orjson.JSONDecodeError, ValueError) as error:
                    raise ValueError(f"{stream} entry {entry_id.decode()}: {error}") from None
            last = entries[-1][0].decode()
    finally:
        client.close()


@attrs.define
class SpendTotal:
    """The sums of a group of records (a key's model's day): ``attempts``, token counts,
    ``cost_usd`` (of the priced ones), how many were ``estimated`` and ``unpriced``."""

    key: str
    model: str
    day: str
    attempts: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cost_usd: Decimal = Decimal(0)
    estimated: int = 0
    unpriced: int = 0
    cached: int = 0

    def to_json(self) -> dict[str, Any]:
        """The sums as a JSON object (``cost_usd`` a decimal string)."""
        values = attrs.asdict(self)
        values["cost_usd"] = format(self.cost_usd.normalize(), "f") if self.cost_usd else "0"
        return values


def spend_totals(records: Iterable[SpendRecord]) -> list[SpendTotal]:
    """``records`` summed by key (``-`` for none), model and UTC day, in that order."""
    totals: dict[tuple[str, str, str], SpendTotal] = {}
    for record in records:
        day = datetime.datetime.fromtimestamp(record.time, datetime.timezone.utc).date()
        group = (record.key or "-", record.model, day.isoformat())
        total = totals.get(group)
        if total is None:
            total = totals[group] = SpendTotal(*group)
        total.attempts += 1
        if record.cached:
            total.cached += 1
            continue
        usage = record.usage
        if usage is not None:
            total.input_tokens += usage.prompt_tokens
            total.output_tokens += usage.completion_tokens
            total.total_tokens += usage.total_tokens
            total.estimated += usage.estimated
        if record.cost is not None and record.cost.total is not None:
            total.cost_usd += record.cost.total
        elif usage is not None:
            total.unpriced += 1
    return [totals[group] for group in sorted(totals)]
