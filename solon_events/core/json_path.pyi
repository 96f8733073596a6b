"""The old name of solon_events.dialects.json_path:
that very module, for type checkers too (see solon_events._moved)."""

from solon_events.dialects.json_path import *  # noqa: F403
