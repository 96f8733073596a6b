"""The old name of solon_events.client.model:
that very module, for type checkers too (see solon_events._moved)."""

from solon_events.client.model import *  # noqa: F403
