"""The old name of solon_events.cli.serve:
that very module, for type checkers too (see solon_events._moved)."""

from solon_events.cli.serve import *  # noqa: F403
