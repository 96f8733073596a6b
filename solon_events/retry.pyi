"""The old name of solon_events.client.retry:
that very module, for type checkers too (see solon_events._moved)."""

from solon_events.client.retry import *  # noqa: F403
