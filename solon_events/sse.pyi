"""The old name of solon_events.wire.sse:
that very module, for type checkers too (see solon_events._moved)."""

from solon_events.wire.sse import *  # noqa: F403
