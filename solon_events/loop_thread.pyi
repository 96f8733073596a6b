"""The old name of solon_events.support.loop_thread:
that very module, for type checkers too (see solon_events._moved)."""

from solon_events.support.loop_thread import *  # noqa: F403
