"""The old name of solon_events.serve.redis_log:
that very module, for type checkers too (see solon_events._moved)."""

from solon_events.serve.redis_log import *  # noqa: F403
