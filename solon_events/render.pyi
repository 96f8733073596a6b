"""The old name of solon_events.display.render:
that very module, for type checkers too (see solon_events._moved)."""

from solon_events.display.render import *  # noqa: F403
