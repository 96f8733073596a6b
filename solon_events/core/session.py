"""Per-response bookkeeping: the response id, step numbers, cross-step usage, start/end."""

from __future__ import annotations

import os

from ..event_model.results import Cost, Usage

__all__ = ["ChatStreamSession", "new_response_id"]


def new_response_id() -> str:
    """A fresh, unique response id."""
    return f"resp_{os.urandom(16).hex()}"


class ChatStreamSession:
    """The state of one response across its steps (create one per response).

    ``response_id`` is generated unless given; :meth:`next_step` numbers steps from
    ``first_step`` (0; a response continued after a pause numbers on from the paused step);
    :meth:`accumulate_usage` adds each step's usage into :attr:`total_usage`, and
    :meth:`accumulate_cost` each step's price into :attr:`total_cost`.
    """

    __slots__ = ("_ended", "_next_step", "_started", "response_id", "step", "total_cost",
                 "total_usage")  # fmt: skip

    def __init__(self, response_id: str | None = None, first_step: int = 0) -> None:
        self.response_id: str = response_id or new_response_id()
        self._next_step = first_step
        self.step = first_step
        """The last step number given by :meth:`next_step` (``first_step`` before any)."""
        self.total_usage: Usage | None = None
        """The sum of every step usage so far, or None when no step reported usage."""
        self.total_cost: Cost | None = None
        """The sum of every step's price so far, or None when no step was priced."""
        self._started = False
        self._ended = False

    def next_step(self) -> int:
        """The next step number: ``first_step`` (0), then 1, 2, ..."""
        step = self._next_step
        self._next_step += 1
        self.step = step
        return step

    def accumulate_usage(self, usage: Usage | None) -> Usage | None:
        """Add a step's ``usage`` to the total and return the total.

        None leaves the total unchanged; the first usage is held as the same object.
        """
        if usage is not None:
            self.total_usage = usage if self.total_usage is None else self.total_usage + usage
        return self.total_usage

    def accumulate_cost(self, cost: Cost | None) -> Cost | None:
        """Add a step's ``cost`` to the total and return the total (None leaves it as it is)."""
        if cost is not None:
            self.total_cost = cost if self.total_cost is None else self.total_cost + cost
        return self.total_cost

    def mark_response_started(self) -> bool:
        """True the first time only: the response may emit its RESPONSE_START."""
        if self._started:
            return False
        self._started = True
        return True

    def mark_response_ended(self) -> bool:
        """True the first time only: the response may emit its terminal event."""
        if self._ended:
            return False
        self._ended = True
        return True

    @property
    def started(self) -> bool:
        """Whether the response has started."""
        return self._started

    @property
    def ended(self) -> bool:
        """Whether the response has ended."""
        return self._ended

    def __repr__(self) -> str:
        return f"ChatStreamSession({self.response_id!r}, step={self.step}, ended={self._ended})"
