"""The old name of solon_events.event_model.values:
that very module, for type checkers too (see solon_events._moved)."""

from solon_events.event_model.values import *  # noqa: F403
