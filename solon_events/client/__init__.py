"""One request and its response over HTTP: :class:`~solon_events.ChatModel`
(:mod:`~solon_events.client.model`), the tool loop
(:mod:`~solon_events.client.tool_loop`), the reading of a response's body with its time
budgets (:mod:`~solon_events.client.stream_reader`), the transport
(:mod:`~solon_events.client.transport`) and the retries
(:mod:`~solon_events.client.retry`).

Nothing is imported here, so that :mod:`~solon_events.client.retry` stays sans-I/O.
"""

__all__: list[str] = []
