"""The old name of solon_events.support.redaction:
that very module, for type checkers too (see solon_events._moved)."""

from solon_events.support.redaction import *  # noqa: F403
