"""The gateway's operator endpoints: what the models are, whether the gateway is up and
ready, its metrics, and Anthropic's token counting.

=====================================  ==========================================================
route                                  answer
=====================================  ==========================================================
``GET /v1/models``                     the models served, in OpenAI's shape, or Anthropic's when
                                       the request carries ``anthropic-version`` (the
                                       ``anthropic`` SDK's); ``GET /v1/models/{model}`` one
``GET /v1beta/models``                 the same in Gemini's shape (google-genai's
                                       ``models.list()``); ``GET /v1beta/models/{model}`` one
``GET /ollama/api/tags``               the same in Ollama's shape (the ``ollama`` client's
                                       ``list()``)
``GET /health/live``                   200 while the process serves
``GET /health/ready``                  200 when Redis (if any) answers and every model has a
                                       deployment that does not cool down, else 503; the body
                                       says which
``GET /metrics``                       the Prometheus text format
                                       (:mod:`solon_events.serve.metrics`; the ``metrics``
                                       extra, else 501 naming it)
``POST /v1/messages/count_tokens``     ``{"input_tokens": N}``
                                       (:mod:`solon_events.serve.token_count`)
=====================================  ==========================================================

The health routes answer without the token (a load balancer's probes carry none) and say
nothing of the deployments but how many are healthy; every other route takes the checks
of the gateway's other routes (host, origin, token).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import orjson
from aiohttp import web

from ..client.router import Router
from ..client.router_state import RedisRouterState
from . import model_lists, provider_routes
from ._http_error import HttpError as _HttpError
from .token_count import ESTIMATED_HEADER, count_tokens, first_deployment

if TYPE_CHECKING:
    import aiohttp

    from .gateway import Gateway

__all__ = ["OPERATOR_ROUTES", "Operations"]

OPERATOR_ROUTES: tuple[tuple[str, str, str], ...] = (
    ("GET", "/v1/models", "models"),
    ("GET", "/v1/models/{model}", "model"),
    ("GET", "/v1beta/models", "gemini_models"),
    ("GET", "/v1beta/models/{model}", "gemini_model"),
    ("GET", "/ollama/api/tags", "ollama_tags"),
    ("GET", "/health/live", "live"),
    ("GET", "/health/ready", "ready"),
    ("GET", "/metrics", "metrics"),
    ("POST", "/v1/messages/count_tokens", "count_tokens"),
)
"""Each operator route: its method, its path and the :class:`Operations` handler."""


class Operations:
    """The operator endpoints of ``gateway`` (see the module), each an aiohttp handler."""

    def __init__(self, gateway: Gateway) -> None:
        self._gateway = gateway
        self._session: aiohttp.ClientSession | None = None

    def _json(self, request: web.BaseRequest, value: Any, status: int = 200) -> web.Response:
        return web.Response(
            body=orjson.dumps(value),
            status=status,
            content_type="application/json",
            headers=self._gateway._cors_headers(request),
        )

    def _checked(self, request: web.BaseRequest) -> web.Response | None:
        """None when the request passes the gateway's checks, else the error answer."""
        try:
            self._gateway._check(request)
        except _HttpError as exc:
            return self._gateway._error(request, exc)
        return None

    def _names(self) -> list[str]:
        return list(self._gateway.models.models)

    def _created(self) -> float:
        return self._gateway.models.created

    # The model lists.

    async def models(self, request: web.Request) -> web.Response:
        """``GET /v1/models``: OpenAI's list, or Anthropic's for the ``anthropic`` SDK."""
        refused = self._checked(request)
        if refused is not None:
            return refused
        if "anthropic-version" in request.headers:
            return self._json(request, model_lists.anthropic_models(self._names(), self._created()))
        return self._json(request, model_lists.openai_models(self._names(), self._created()))

    async def model(self, request: web.Request) -> web.Response:
        """``GET /v1/models/{model}``: one model, or the protocol's "model not found"."""
        refused = self._checked(request)
        if refused is not None:
            return refused
        name = request.match_info["model"]
        anthropic = "anthropic-version" in request.headers
        format = "anthropic" if anthropic else "openai"
        if name not in self._names():
            return self._not_found(request, format, name)
        shape = model_lists.anthropic_model if anthropic else model_lists.openai_model
        return self._json(request, shape(name, self._created()))

    async def gemini_models(self, request: web.Request) -> web.Response:
        """``GET /v1beta/models``: Gemini's list."""
        refused = self._checked(request)
        if refused is not None:
            return refused
        return self._json(request, model_lists.gemini_models(self._names()))

    async def gemini_model(self, request: web.Request) -> web.Response:
        """``GET /v1beta/models/{model}``: one model in Gemini's shape."""
        refused = self._checked(request)
        if refused is not None:
            return refused
        name = request.match_info["model"].removeprefix("models/")
        if name not in self._names():
            return self._not_found(request, "gemini", name)
        return self._json(request, model_lists.gemini_model(name))

    async def ollama_tags(self, request: web.Request) -> web.Response:
        """``GET /ollama/api/tags``: Ollama's list of local models."""
        refused = self._checked(request)
        if refused is not None:
            return refused
        return self._json(request, model_lists.ollama_tags(self._names(), self._created()))

    def _not_found(self, request: web.BaseRequest, format: str, name: str) -> web.Response:
        unknown = _HttpError(404, provider_routes.model_not_found(format, name))
        return self._gateway._provider_error(request, format, unknown)

    # Health.

    async def live(self, request: web.Request) -> web.Response:
        """``GET /health/live``: 200 while the process serves."""
        return self._json(request, {"status": "live"})

    async def ready(self, request: web.Request) -> web.Response:
        """``GET /health/ready``: 200 when Redis answers (if the gateway has one) and every
        model has a deployment that does not cool down; else 503. The body:
        ``{"ready": ..., "redis": "ok" | why | null, "models": {name: {"healthy": n,
        "deployments": m}}}``."""
        gateway = self._gateway
        problems = await asyncio.gather(*(_problem(check) for check in self._redis_checks()))
        redis = next((p for p in problems if p), "ok" if problems else None)
        models: dict[str, dict[str, int]] = {}
        for name, model in gateway.models.models.items():
            if isinstance(model, Router):
                states = await model.astates()
                healthy = sum(not state.cooling for state in states.values())
                models[name] = {"healthy": healthy, "deployments": len(states)}
            else:  # a model or group of the code's own: healthy as far as is known
                models[name] = {"healthy": 1, "deployments": 1}
        ready = redis in (None, "ok") and all(m["healthy"] for m in models.values())
        body = {"ready": ready, "redis": redis, "models": models}
        return self._json(request, body, 200 if ready else 503)

    def _redis_checks(self) -> list[Any]:
        checks: list[Any] = []
        log = self._gateway.log
        if log is not None:
            checks.append(lambda: asyncio.wait_for(log.client().ping(), 2))
        state = self._gateway.models.state
        if isinstance(state, RedisRouterState):
            checks.append(lambda: asyncio.wrap_future(state.problem()))
        return checks

    # Metrics.

    async def metrics(self, request: web.Request) -> web.Response:
        """``GET /metrics``: the Prometheus text format (501 without the ``metrics``
        extra)."""
        refused = self._checked(request)
        if refused is not None:
            return refused
        metrics = self._gateway.metrics
        if metrics is None:
            from ..event_model.extras import install_hint

            message = f"the gateway's metrics need prometheus-client: {install_hint('metrics')}"
            return self._json(request, {"error": message}, 501)
        body, content_type = metrics.exposition()
        return web.Response(
            body=body,
            headers={"Content-Type": content_type, **self._gateway._cors_headers(request)},
        )

    # Counting tokens.

    async def count_tokens(self, request: web.Request) -> web.Response:
        """``POST /v1/messages/count_tokens``: the input tokens of an Anthropic Messages
        request (:mod:`solon_events.serve.token_count`)."""
        from ..adapters.client_requests import read_client_request

        gateway = self._gateway
        try:
            body = await gateway._accept(request)
            if isinstance(body, dict):  # a count takes no max_tokens: not the reader's business
                body = {"max_tokens": 1, **body, "stream": False}
            client = read_client_request("anthropic", body)
        except _HttpError as exc:
            return gateway._provider_error(request, "anthropic", exc)
        except ValueError as exc:
            return gateway._provider_error(request, "anthropic", _HttpError(400, str(exc)))
        model = gateway.models.get(client.model)
        if model is None:
            return self._not_found(request, "anthropic", client.model)
        deployment = await first_deployment(model)
        counted = await count_tokens(self._client(), deployment, client)
        response = self._json(request, counted.body())
        if counted.estimated:
            response.headers[ESTIMATED_HEADER] = "true"
        return response

    def _client(self) -> aiohttp.ClientSession:
        import aiohttp

        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession()
        return self._session

    async def aclose(self) -> None:
        """Close the HTTP client of the upstreams' counts."""
        session, self._session = self._session, None
        if session is not None:
            await session.close()


async def _problem(check: Any) -> str | None:
    """What a Redis check says is wrong (None: nothing)."""
    try:
        found = await check()
    except Exception as error:
        return f"Redis does not answer: {type(error).__name__}"
    if isinstance(found, str):
        return found
    return None
