"""The old name of solon_events.dialects.tool_calls:
that very module, for type checkers too (see solon_events._moved)."""

from solon_events.dialects.tool_calls import *  # noqa: F403
