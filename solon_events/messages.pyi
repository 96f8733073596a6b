"""The old name of solon_events.event_model.messages:
that very module, for type checkers too (see solon_events._moved)."""

from solon_events.event_model.messages import *  # noqa: F403
