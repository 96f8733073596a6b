"""The old name of solon_events.event_model.display_hooks:
that very module, for type checkers too (see solon_events._moved)."""

from solon_events.event_model.display_hooks import *  # noqa: F403
