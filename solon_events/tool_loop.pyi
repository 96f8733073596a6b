"""The old name of solon_events.client.tool_loop:
that very module, for type checkers too (see solon_events._moved)."""

from solon_events.client.tool_loop import *  # noqa: F403
