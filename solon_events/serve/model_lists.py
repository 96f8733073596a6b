"""The lists of the models a gateway serves, in each protocol's own shape (sans-I/O).

What ``GET /v1/models`` answers the ``openai`` SDK (:func:`openai_models`) and the
``anthropic`` SDK (:func:`anthropic_models`: the same path, told apart by the
``anthropic-version`` header the SDK sends), ``GET /v1beta/models`` google-genai
(:func:`gemini_models`) and ``GET /ollama/api/tags`` the ``ollama`` client
(:func:`ollama_tags`); each a JSON value for the names served, ``created`` (a Unix time)
being when the gateway's configuration was loaded.
"""

from __future__ import annotations

import datetime
import hashlib
from collections.abc import Sequence
from typing import Any

__all__ = [
    "anthropic_model",
    "anthropic_models",
    "gemini_model",
    "gemini_models",
    "ollama_tags",
    "openai_model",
    "openai_models",
]

OWNER = "solon-events"
"""Who the lists say owns the models (OpenAI's ``owned_by``)."""

_GEMINI_METHODS = ["generateContent", "streamGenerateContent"]


def _iso(created: float) -> str:
    moment = datetime.datetime.fromtimestamp(int(created), datetime.timezone.utc)
    return moment.isoformat().replace("+00:00", "Z")


def openai_model(name: str, created: float) -> dict[str, Any]:
    """One model as OpenAI's ``GET /v1/models/{model}`` gives it."""
    return {"id": name, "object": "model", "created": int(created), "owned_by": OWNER}


def openai_models(names: Sequence[str], created: float) -> dict[str, Any]:
    """OpenAI's ``GET /v1/models``: ``{"object": "list", "data": [...]}``."""
    return {"object": "list", "data": [openai_model(name, created) for name in names]}


def anthropic_model(name: str, created: float) -> dict[str, Any]:
    """One model as Anthropic's ``GET /v1/models/{model}`` gives it."""
    return {"type": "model", "id": name, "display_name": name, "created_at": _iso(created)}


def anthropic_models(names: Sequence[str], created: float) -> dict[str, Any]:
    """Anthropic's ``GET /v1/models``: one page holding every model."""
    return {
        "data": [anthropic_model(name, created) for name in names],
        "has_more": False,
        "first_id": names[0] if names else None,
        "last_id": names[-1] if names else None,
    }


def gemini_model(name: str) -> dict[str, Any]:
    """One model as Gemini's ``GET /v1beta/models/{model}`` gives it."""
    return {
        "name": f"models/{name}",
        "baseModelId": name,
        "version": "1",
        "displayName": name,
        "description": f"{name}, served by {OWNER}",
        "supportedGenerationMethods": list(_GEMINI_METHODS),
    }


def gemini_models(names: Sequence[str]) -> dict[str, Any]:
    """Gemini's ``GET /v1beta/models``: one page holding every model."""
    return {"models": [gemini_model(name) for name in names]}


def ollama_tags(names: Sequence[str], created: float) -> dict[str, Any]:
    """Ollama's ``GET /api/tags``: the local models (here, the names served)."""
    return {
        "models": [
            {
                "name": name,
                "model": name,
                "modified_at": _iso(created),
                "size": 0,
                "digest": hashlib.sha256(name.encode()).hexdigest(),
                "details": {
                    "parent_model": "",
                    "format": "",
                    "family": "",
                    "families": None,
                    "parameter_size": "",
                    "quantization_level": "",
                },
            }
            for name in names
        ]
    }
