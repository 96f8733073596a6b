"""``python -m solon_events``: the ``solon-events`` command."""

import sys

from .cli import main

sys.exit(main())
