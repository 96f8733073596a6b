"""``solon-events serve`` for the memory tests, with one addition: ``SIGUSR1`` asks the C
allocator to give its free memory back to the system (glibc's ``malloc_trim``), so that
a test can tell memory still held from memory freed but kept by the allocator for reuse.

usage: python tests/serve_with_trim.py SERVE_OPTIONS...
"""

from __future__ import annotations

import ctypes
import signal
import sys

from solon_events.cli import main


def _trim(_signal: int, _frame: object) -> None:
    ctypes.CDLL("libc.so.6").malloc_trim(0)


if __name__ == "__main__":
    signal.signal(signal.SIGUSR1, _trim)
    sys.exit(main(["serve", *sys.argv[1:]]))
