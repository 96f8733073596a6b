"""The old name of solon_events.client.stream_reader:
that very module, for type checkers too (see solon_events._moved)."""

from solon_events.client.stream_reader import *  # noqa: F403
