"""Fixtures shared by the test modules."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from solon_events.cli import ROUTES
from solon_events.client.model import ChatModel
from solon_events.devserver import DevServer, RunningServer

# Examples count, never time: a loaded CI machine may generate or run an example slowly
# (the number of examples stays what each test asks for).
settings.register_profile("solon", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("solon")

# Made-up AWS credentials (AWS's documentation example), so that a Bedrock model without an
# api_key signs its requests with SigV4 against the embedded provider; no configuration file
# or instance metadata of the machine is read.
FAKE_AWS_ENVIRONMENT = {
    "AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "AWS_REGION": "us-east-1",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    "AWS_EC2_METADATA_DISABLED": "true",
}
for _name, _value in FAKE_AWS_ENVIRONMENT.items():
    os.environ[_name] = _value
os.environ.pop("AWS_SESSION_TOKEN", None)
os.environ.pop("AWS_PROFILE", None)
os.environ.pop("AWS_BEARER_TOKEN_BEDROCK", None)


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    """One embedded provider for the module's tests that do not count disconnects."""
    running = DevServer.run_in_thread()
    yield running
    running.close()


@pytest.fixture
def fresh_server() -> Iterator[RunningServer]:
    """A provider of the test's own, whose requests and disconnects start at zero (the
    ``server`` fixture is shared by the module's tests)."""
    running = DevServer.run_in_thread()
    yield running
    running.close()


@pytest.fixture
async def provider() -> AsyncIterator[DevServer]:
    """An embedded provider of the test's own on the test's loop (the gateway tests serve
    from the same loop); a module that needs another one defines its own."""
    async with DevServer() as server:
        yield server


@pytest.fixture
def make_model() -> Iterator[Callable[..., ChatModel]]:
    """``make_model(server_or_url, model, dialect="openai", **options)``: ChatModels on the
    dialect's route of the embedded provider, closed after the test."""
    models: list[ChatModel] = []

    def build(
        srv: RunningServer | str, model: str, dialect: str = "openai", **kw: Any
    ) -> ChatModel:
        base = srv if isinstance(srv, str) else srv.url
        chat = ChatModel(base + ROUTES[dialect], model, dialect=dialect, **kw)
        models.append(chat)
        return chat

    yield build
    for chat in models:
        chat.close()


@pytest.fixture
def record_frames(monkeypatch: pytest.MonkeyPatch) -> Callable[[ModuleType, str], list[Any]]:
    """``record_frames(module, name)``: wrap the dialect function ``module.name(ctx, frame)``
    for the test, and return the list of frames it is called with."""

    def wrap(module: ModuleType, name: str) -> list[Any]:
        frames: list[Any] = []
        real = getattr(module, name)

        def recorded(ctx: Any, frame: Any) -> None:
            frames.append(frame)
            real(ctx, frame)

        monkeypatch.setattr(module, name, recorded)
        return frames

    return wrap
