"""The old name of solon_events.client.transport:
that very module, for type checkers too (see solon_events._moved)."""

from solon_events.client.transport import *  # noqa: F403
