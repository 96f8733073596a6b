"""The Rx side of the adapters: a sans-I/O translator run as a pipeable operator."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from reactivex import Observable, abc
from reactivex import create as rx_create

from ..event_model.events import ChatEvent
from ..support.safe_callbacks import Callbacks, subscribe_safely

__all__ = ["Translator", "translating"]

_Out = TypeVar("_Out")


class Translator(Protocol[_Out]):
    """What an adapter's encoder offers: the items an event becomes, and a failure's."""

    def feed(self, event: ChatEvent) -> list[_Out]:
        """The items ``event`` becomes."""

    def fail(self, error: BaseException | None, text: str | None = None) -> list[_Out]:
        """The items that end a response that failed with ``error``."""


def translating(
    factory: Callable[[], Translator[Any]], name: str = "translating()"
) -> Callable[[Observable[ChatEvent]], Observable[Any]]:
    """A pipeable operator (``name``) feeding each event to a fresh translator per
    subscription.

    A failure upstream first sends what the translator makes of it (nothing more when
    the ERROR event already ended the response), then reaches ``on_error``. A translator
    that raises ends the stream with a ChatError naming the operator.
    """

    where = f"the {name} operator"

    def operator(source: Observable[ChatEvent]) -> Observable[Any]:
        def subscribe(
            observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            def start() -> Callbacks:
                translator = factory()

                def on_next(event: ChatEvent) -> None:
                    for item in translator.feed(event):
                        observer.on_next(item)

                def on_error(error: Exception) -> None:
                    for item in translator.fail(error):
                        observer.on_next(item)
                    observer.on_error(error)

                return on_next, on_error, observer.on_completed

            return subscribe_safely(source, observer, scheduler, start, where=where)

        return rx_create(subscribe)

    return operator
