"""The old name of solon_events.event_model.pricing:
that very module, for type checkers too (see solon_events._moved)."""

from solon_events.event_model.pricing import *  # noqa: F403
