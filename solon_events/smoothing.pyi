"""The old name of solon_events.operators.smoothing:
that very module, for type checkers too (see solon_events._moved)."""

from solon_events.operators.smoothing import *  # noqa: F403
