"""Closing the async iterators the library wraps: an async generator that stops reading
another must close it, so that the other's own ``finally`` runs now, not when it is
collected.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import TypeVar

__all__ = ["aclose", "ending_with"]

_T = TypeVar("_T")


async def aclose(iterator: object) -> None:
    """Close ``iterator`` when it can be closed (it has an ``aclose``, as an async
    generator has); any other iterator is left as it is."""
    close = getattr(iterator, "aclose", None)
    if close is not None:
        await close()


async def ending_with(items: AsyncIterator[_T], done: Callable[[], object]) -> AsyncIterator[_T]:
    """``items`` as they come; once they end, fail or are closed: ``done()``, then ``items``
    closed (see :func:`aclose`)."""
    try:
        async for item in items:
            yield item
    finally:
        done()
        await aclose(items)
