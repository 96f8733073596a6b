"""The old name of solon_events.support.safe_callbacks:
that very module, for type checkers too (see solon_events._moved)."""

from solon_events.support.safe_callbacks import *  # noqa: F403
