"""The embedded provider: a local aiohttp server speaking eight providers' wire formats.

``async with DevServer() as srv:`` serves on ``srv.url`` (127.0.0.1, a free port):

- ``POST /v1/chat/completions`` (OpenAI Chat Completions SSE),
- ``POST /v1/messages`` (Anthropic Messages SSE),
- ``POST /v1/responses`` (OpenAI Responses SSE),
- ``POST /v1beta/models/{model}:streamGenerateContent?alt=sse`` (Gemini SSE),
- ``POST /api/chat`` (Ollama NDJSON),
- ``POST /model/{model}/converse-stream`` (Amazon Bedrock ConverseStream, AWS event stream;
  any bearer key or SigV4 signature is accepted),
- ``POST /v2/chat`` (Cohere's Chat API v2 SSE),
- ``POST /v1beta/interactions`` (Google's Interactions API SSE).

The request's model name picks the scenario: ``weather`` (the default: thinking, a call of
the first declared tool, then an answer quoting the tool result, about the city the user's
last message names, Paris when none; a joke when it asks for one), ``echo``,
``think``, ``slow:<n>:<interval>``, ``gate``, ``first-delay:<s>``, ``stall:<s>``,
``status:<code>``, ``html``, ``truncate``, ``error-frame`` and ``replay``, and the faults
(``trickle``, ``comments``, ``endless-line``, ``pings``, ``cut``, ``flaky``, ``drop``,
``deep-error``, ``echo-key``: see ``SCENARIOS``), or ``told:<name>``: the scenario the
prompt names for ``name`` (a word ``<name>=<scenario>``), so that each model of a group
is told its fault per request. Run it from a shell with
``python -m solon_events.devserver --port 8000``.

What it served, as a provider bills it (each stream's scripted usage, the streams written
to their end and those cut short), is ``DevServer.served_usage()`` and ``GET
/devserver/usage``: what a gateway's spend log is checked against.
"""

from __future__ import annotations

from .app import ROUTES
from .scenarios import SCENARIOS
from .server import DevServer, RecordedRequest, RunningServer

__all__ = ["ROUTES", "SCENARIOS", "DevServer", "RecordedRequest", "RunningServer"]
