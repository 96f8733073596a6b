"""``python -m solon_events.cli``: the ``solon-events`` command."""

import sys

from . import main

sys.exit(main())
