"""The old name of solon_events.serve.approval_store:
that very module, for type checkers too (see solon_events._moved)."""

from solon_events.serve.approval_store import *  # noqa: F403
