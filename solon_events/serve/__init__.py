"""The gateway and what it stands on: :mod:`~solon_events.serve.gateway` (a Vercel UI
stream, AG-UI, ``/events`` and a chat page over aiohttp), resumable streams
(:mod:`~solon_events.serve.resume`) on a Redis log (:mod:`~solon_events.serve.redis_log`),
paused tool approvals in Redis (:mod:`~solon_events.serve.approval_store`).
"""

from .gateway import GATEWAY, Gateway, create_app, run_app, serving

__all__ = ["GATEWAY", "Gateway", "create_app", "run_app", "serving"]
