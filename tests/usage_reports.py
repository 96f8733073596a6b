"""What ``on_usage`` hooks were told, for the usage tests."""

from __future__ import annotations

import threading

from solon_events import UsageReport


class Reports:
    """An ``on_usage`` hook that keeps what it was told, waited for across threads (the
    hook runs where the response runs: ``stream()``'s and ``call()``'s on the I/O thread,
    after the end the caller may have seen already)."""

    def __init__(self) -> None:
        self.items: list[UsageReport] = []
        self._changed = threading.Condition()

    def __call__(self, report: UsageReport) -> None:
        with self._changed:
            self.items.append(report)
            self._changed.notify_all()

    def one(self) -> UsageReport:
        """The one report (waiting for it to be told)."""
        with self._changed:
            assert self._changed.wait_for(lambda: self.items, timeout=10)
        assert len(self.items) == 1, self.items
        return self.items[0]
