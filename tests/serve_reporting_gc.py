"""``solon-events serve`` for the garbage collector's tests, with one addition: a thread
writes ``frozen N`` to stderr each time the number of objects in the collector's permanent
generation (``gc.get_freeze_count()``) changes.

usage: python tests/serve_reporting_gc.py SERVE_OPTIONS...
"""

from __future__ import annotations

import gc
import sys
import threading
import time

from solon_events.cli import main


def _report() -> None:
    said = 0
    while True:
        frozen = gc.get_freeze_count()
        if frozen != said:
            print(f"frozen {frozen}", file=sys.stderr, flush=True)
            said = frozen
        time.sleep(0.01)


if __name__ == "__main__":
    threading.Thread(target=_report, daemon=True).start()
    sys.exit(main(["serve", *sys.argv[1:]]))
