"""The load of a benchmark run: arrivals at a rate, or a fixed number of requests in flight
(sans-I/O).

A rate's arrivals are a Poisson process by default (exponential gaps), evenly spaced with
``constant``, or gamma-distributed gaps of shape ``burstiness`` (as vLLM's ``--burstiness``:
1 is Poisson, below 1 burstier, above 1 steadier; the mean gap is always ``1 / rate``).
An infinite rate (``float("inf")``) sends every request at once. A :class:`Load` with
``concurrency`` keeps that many requests in flight, each sent as the one before it ends.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from typing import Any

import attrs

__all__ = ["Load", "arrival_gaps", "arrival_times"]


def _positive(_instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not (isinstance(value, (int, float)) and value > 0):
        raise ValueError(f"{attribute.name} must be a number above 0, got {value!r}")


@attrs.frozen
class Load:
    """One load point: ``rate`` requests per second (arriving as ``constant``,
    ``burstiness`` say), or ``concurrency`` requests in flight at once; with a rate,
    ``max_concurrency`` caps the requests in flight (an arrival beyond it waits)."""

    rate: float | None = attrs.field(default=None, validator=_positive)
    concurrency: int | None = attrs.field(default=None, validator=_positive)
    burstiness: float = attrs.field(default=1.0, validator=_positive)
    constant: bool = False
    max_concurrency: int | None = attrs.field(default=None, validator=_positive)

    def __attrs_post_init__(self) -> None:
        if (self.rate is None) == (self.concurrency is None):
            raise ValueError("a Load has either a rate or a concurrency")
        if self.concurrency is not None and int(self.concurrency) != self.concurrency:
            raise ValueError(f"concurrency must be a whole number, got {self.concurrency}")
        if self.concurrency is not None and (self.constant or self.burstiness != 1.0):
            raise ValueError("constant and burstiness shape a rate's arrivals, not a concurrency")
        if self.constant and self.burstiness != 1.0:
            raise ValueError("constant arrivals have no burstiness")

    @property
    def kind(self) -> str:
        """``"concurrency"``, ``"constant"``, ``"poisson"`` or ``"gamma"``."""
        if self.concurrency is not None:
            return "concurrency"
        if self.constant:
            return "constant"
        return "poisson" if self.burstiness == 1.0 else "gamma"

    @property
    def value(self) -> float:
        """The rate, or the concurrency: the load's place on a plot's x axis."""
        return float(self.rate if self.rate is not None else self.concurrency)  # type: ignore[arg-type]

    @property
    def label(self) -> str:
        """The load in words: ``"4 req/s (poisson)"``, ``"concurrency 8"``."""
        if self.concurrency is not None:
            return f"concurrency {self.concurrency}"
        shape = self.kind if self.kind != "gamma" else f"gamma, burstiness {self.burstiness:g}"
        cap = f", at most {self.max_concurrency} in flight" if self.max_concurrency else ""
        return f"{self.rate:g} req/s ({shape}{cap})"

    def to_json(self) -> dict[str, object]:
        """The load as the results' JSON writes it: its kind, then its fields (``constant``
        is one of the kinds)."""
        return {"kind": self.kind, **attrs.asdict(self, filter=attrs.filters.exclude("constant"))}

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Load:
        """The load :meth:`to_json` wrote."""
        return cls(
            rate=data.get("rate"),  # type: ignore[arg-type]
            concurrency=data.get("concurrency"),  # type: ignore[arg-type]
            burstiness=data.get("burstiness", 1.0),  # type: ignore[arg-type]
            constant=data.get("kind") == "constant",
            max_concurrency=data.get("max_concurrency"),  # type: ignore[arg-type]
        )


def arrival_gaps(load: Load, seed: int | str = 0) -> Iterator[float]:
    """The gaps, in seconds, before each arrival of a rate ``load`` (the first before the
    first arrival), endless, the same for the same ``seed``."""
    if load.rate is None:
        raise ValueError("a concurrency load has no arrivals")
    rate = float(load.rate)
    if math.isinf(rate):  # every request at once, as vLLM's --request-rate inf
        while True:
            yield 0.0
    if load.constant:
        while True:
            yield 1.0 / rate
    rng = random.Random(f"arrivals:{seed}")
    shape = float(load.burstiness)
    scale = 1.0 / (rate * shape)
    while True:
        yield rng.gammavariate(shape, scale)


def arrival_times(
    load: Load, seed: int | str = 0, *, count: int | None = None, until: float | None = None
) -> list[float]:
    """The arrival times of a rate ``load`` from 0 (seconds), ``count`` of them or those
    before ``until``; a constant rate's first arrival is at 0, the others' after a gap."""
    if count is None and until is None:
        raise ValueError("arrival_times needs a count or an end")
    if count is None and load.rate is not None and math.isinf(load.rate):
        raise ValueError("an infinite rate needs a request count, not a duration")
    times: list[float] = []
    now = 0.0
    for i, gap in enumerate(arrival_gaps(load, seed)):
        if count is not None and len(times) >= count:
            break
        if not (load.constant and i == 0):
            now += gap
        if until is not None and now >= until:
            break
        times.append(now)
    return times
