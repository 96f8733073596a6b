"""The JSON Schema of a benchmark's results (``solon-events bench --json``,
``BenchResult.to_json()``): stable within its :data:`SCHEMA_ID`; a field is only ever
added with a new id. ``tests/test_bench_schema.py`` checks results against it."""

from __future__ import annotations

from typing import Any

from .metrics import METRICS

__all__ = ["RESULTS_SCHEMA", "SCHEMA_ID"]

SCHEMA_ID = "solon-events/bench/1"
"""The value of the results' ``schema`` field."""

_SECONDS = {"type": ["number", "null"]}
_COUNT = {"type": "integer", "minimum": 0}


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


_STATS = _object(
    {"count": _COUNT, **{k: _SECONDS for k in ("mean", "min", "max", "p50", "p90", "p95", "p99")}}
)

_LOAD = _object(
    {
        "kind": {"enum": ["poisson", "constant", "gamma", "concurrency"]},
        "rate": {"type": ["number", "null"]},
        "concurrency": {"type": ["integer", "null"]},
        "burstiness": {"type": "number"},
        "max_concurrency": {"type": ["integer", "null"]},
    }
)

_REQUEST = _object(
    {
        "index": _COUNT,
        "worker": _COUNT,
        "start": {"type": "number"},
        "scheduled": _SECONDS,
        "ttfe": _SECONDS,
        "ttft": _SECONDS,
        "first_reasoning": _SECONDS,
        "first_answer": _SECONDS,
        "e2e": _SECONDS,
        "tpot": _SECONDS,
        "itl": {"type": "array", "items": {"type": "number"}},
        "output_tokens": _COUNT,
        "output_tokens_estimated": {"type": "boolean"},
        "input_tokens": _COUNT,
        "frames": _COUNT,
        "error": {"type": ["string", "null"]},
        "error_message": {"type": ["string", "null"]},
        "cost": {"type": ["number", "null"]},
    }
)

_SUMMARY = _object(
    {
        "requests": _COUNT,
        "completed": _COUNT,
        "failed": _COUNT,
        "errors": {"type": "object", "additionalProperties": _COUNT},
        "duration": {"type": "number"},
        "request_throughput": {"type": "number"},
        "output_throughput": {"type": "number"},
        "total_input_tokens": _COUNT,
        "total_output_tokens": _COUNT,
        "estimated_output_requests": _COUNT,
        "slos": {"type": "object", "additionalProperties": {"type": "number"}},
        "slo_met": {"type": ["integer", "null"]},
        "goodput": {"type": ["number", "null"]},
        "cost": {"type": ["number", "null"]},
        "schedule_lag": _STATS,
        "metrics": _object({name: _STATS for name in METRICS}),
    }
)

_CLIENT = _object(
    {
        "cpu_seconds": {"type": "number"},
        "wall_seconds": {"type": "number"},
        "frames": _COUNT,
        "cpu_per_frame": _SECONDS,
        "processes": {"type": "integer", "minimum": 1},
        "peak_cpu_share": {"type": "number"},
        "machine_busy": {"type": ["number", "null"]},
        "loop_lag": _STATS,
        "loop_lag_samples": {"type": "array", "items": {"type": "number"}},
    }
)

RESULTS_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "solon-events benchmark results",
    **_object(
        {
            "schema": {"const": SCHEMA_ID},
            "endpoint": _object(
                {
                    "url": {"type": "string"},
                    "dialect": {"type": "string"},
                    "model": {"type": "string"},
                }
            ),
            "settings": _object(
                {
                    "requests": {"type": ["integer", "null"]},
                    "duration": _SECONDS,
                    "warmup": _COUNT,
                    "seed": {"type": ["integer", "string"]},
                    "workers": {"type": "integer", "minimum": 1},
                    "timeout": _SECONDS,
                    "prompts": {"type": "string"},
                    "options": {"type": "object"},
                    "slos": {"type": "object", "additionalProperties": {"type": "number"}},
                }
            ),
            "points": {
                "type": "array",
                "items": _object(
                    {
                        "load": _LOAD,
                        "summary": _SUMMARY,
                        "client": _CLIENT,
                        "warnings": {"type": "array", "items": {"type": "string"}},
                        "requests": {"type": "array", "items": _REQUEST},
                    }
                ),
            },
        }
    ),
}
"""The results' JSON Schema (draft 2020-12): every object closed (no field beyond those
listed), every field required; times in seconds, costs in US dollars."""
