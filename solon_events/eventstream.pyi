"""The old name of solon_events.wire.eventstream:
that very module, for type checkers too (see solon_events._moved)."""

from solon_events.wire.eventstream import *  # noqa: F403
