"""The old name of solon_events.client.estimate:
that very module, for type checkers too (see solon_events._moved)."""

from solon_events.client.estimate import *  # noqa: F403
