"""``POST /v1/messages/count_tokens``: Anthropic's token counting, for any model served.

Claude Code (and the ``anthropic`` SDK's ``messages.count_tokens()``, or
``beta.messages.count_tokens()``: the same route with ``?beta=true``) asks how many input
tokens a request would take. The gateway reads the body as an Anthropic Messages request,
picks the model by its ``model`` as ``POST /v1/messages`` does, and answers
``{"input_tokens": N}`` counted by the deployment that request would ask first:

- an Anthropic deployment counts it itself: the request, in that deployment's terms
  (its model, its key), is posted to its ``.../v1/messages/count_tokens``;
- any other, or an Anthropic one whose count fails, gets an estimate
  (:func:`solon_events.client.estimate.request_tokens`: tiktoken where it knows the model, else
  the documented heuristic), marked as such: ``"estimated": true`` and ``"method"`` (how it
  was counted) in the body, and the header ``x-solon-estimated: true``.
"""

from __future__ import annotations

import logging
from typing import Any

import aiohttp
import attrs
import orjson

from ..adapters.client_requests import ClientRequest
from ..client.estimate import request_tokens, token_counter
from ..client.model import ChatModel
from ..client.router import Router
from ..client.routing import ModelGroup
from ..event_model.messages import ChatRequest

__all__ = [
    "COUNT_TOKENS_ROUTE",
    "ESTIMATED_HEADER",
    "TokenCount",
    "count_tokens",
    "first_deployment",
]

COUNT_TOKENS_ROUTE = "/v1/messages/count_tokens"
"""The route."""

ESTIMATED_HEADER = "x-solon-estimated"
"""The response header that marks an estimated count."""

_COUNTED = ("model", "messages", "system", "tools", "tool_choice", "thinking")
"""The fields of a Messages request that Anthropic's count takes."""

_log = logging.getLogger(__name__)


@attrs.frozen
class TokenCount:
    """A request's input tokens: counted by the upstream, or ``estimated`` (``method``
    says how: ``"heuristic"``, ``"tiktoken o200k_base"``)."""

    input_tokens: int
    estimated: bool = False
    method: str = "upstream"

    def body(self) -> dict[str, Any]:
        """The response body: ``{"input_tokens": N}``, and for an estimate
        ``"estimated": true`` and the ``"method"``."""
        if not self.estimated:
            return {"input_tokens": self.input_tokens}
        return {"input_tokens": self.input_tokens, "estimated": True, "method": self.method}


async def first_deployment(model: ChatModel | ModelGroup) -> ChatModel:
    """The deployment a request to ``model`` would ask first now (a router's in its
    strategy's order, a group's first model)."""
    if isinstance(model, Router):
        ordered = model.order(await model.astates())
        if ordered:
            return ordered[0]
    if isinstance(model, ModelGroup):
        return model.leaves()[0]
    return model


async def count_tokens(
    session: aiohttp.ClientSession, deployment: ChatModel, client: ClientRequest
) -> TokenCount:
    """The input tokens of ``client``'s request as ``deployment`` would be sent it."""
    request = ChatRequest(
        model=deployment.model,
        messages=client.messages,
        tools=client.tools,
        options=client.options.for_dialect(deployment.dialect.name),
    )
    if deployment.dialect.name == "anthropic" and deployment.api_url.endswith("/messages"):
        try:
            return await _upstream_count(session, deployment, request)
        except Exception as error:  # the estimate answers instead; the reason is logged
            _log.info(
                "the count of tokens of %s failed (%s): estimated instead",
                deployment.model,
                type(error).__name__,
            )
    counter = token_counter(deployment.model)
    return TokenCount(request_tokens(request, counter), estimated=True, method=counter.method)


async def _upstream_count(
    session: aiohttp.ClientSession, deployment: ChatModel, request: ChatRequest
) -> TokenCount:
    http = deployment.build_http_request(request)
    body = {key: http.body[key] for key in _COUNTED if key in http.body}
    timeout = aiohttp.ClientTimeout(total=deployment.budgets.timeout)
    async with session.post(
        http.url + "/count_tokens",
        data=orjson.dumps(body),
        headers={**http.headers, "Content-Type": "application/json"},
        timeout=timeout,
    ) as response:
        if response.status != 200:
            raise ValueError(f"HTTP {response.status}")
        counted = orjson.loads(await response.read())
    tokens = counted.get("input_tokens") if isinstance(counted, dict) else None
    if isinstance(tokens, bool) or not isinstance(tokens, int):
        raise ValueError("no input_tokens in the answer")
    return TokenCount(tokens)
