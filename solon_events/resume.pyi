"""The old name of solon_events.serve.resume:
that very module, for type checkers too (see solon_events._moved)."""

from solon_events.serve.resume import *  # noqa: F403
