"""``python -m solon_events.bench.worker``: one worker process of a benchmark run with
``workers`` above 1 (see :func:`solon_events.bench.run.worker_main`); not for direct use."""

from __future__ import annotations

from .run import worker_main

__all__: list[str] = []

if __name__ == "__main__":
    raise SystemExit(worker_main())
