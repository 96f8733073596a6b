"""The gateway and what it stands on: :mod:`~solon_events.serve.gateway` (a Vercel UI
stream, AG-UI, ``/events`` and a chat page over aiohttp), resumable streams
(:mod:`~solon_events.serve.resume`) on a Redis log (:mod:`~solon_events.serve.redis_log`),
paused tool approvals in Redis (:mod:`~solon_events.serve.approval_store`), the models it
serves by name (:mod:`~solon_events.serve.models`) from a configuration file
(:mod:`~solon_events.serve.config`), and its operator endpoints
(:mod:`~solon_events.serve.operations`).
"""

from .config import load_config
from .gateway import GATEWAY, Gateway, create_app, run_app, serving
from .models import ModelTable, build_table

__all__ = [
    "GATEWAY",
    "Gateway",
    "ModelTable",
    "build_table",
    "create_app",
    "load_config",
    "run_app",
    "serving",
]
