"""``python -m benchmarks``: every benchmark, printed as tables of ratios to same-run baselines.

``--quick`` runs smaller streams and fewer rounds (for a fast look); ``--peers`` adds the
other libraries on the same bytes, the end-to-end runs over loopback and the response
cache's hits and misses beside LangChain's cache (``benchmarks/bench_cache.py``; the
``bench`` extra); ``--gateway`` runs the gateway's overhead alone, beside LiteLLM's proxy
(``benchmarks/bench_gateway.py``), its throughput on one core and memory per open stream
(``benchmarks/bench_gateway_load.py``), and its router's (the added latency of routing
over one upstream, and the throughput over two deployments at 1 to 256 concurrent
clients: ``benchmarks/bench_routing.py``); ``--litellm PATH`` names the ``litellm``
command to start LiteLLM's proxy with (installed in a virtual environment of its own);
``--limits`` adds what a limit check adds to a request, in the process and on Redis
(``benchmarks/bench_limits.py``); ``--hedging`` adds hedged requests against a
heavy-tailed first event (about half a minute: the waits are real;
``python -m benchmarks.bench_hedging`` runs it alone); ``--truth`` adds benchmark clients
(``solon-events bench``, GuideLLM, vLLM's) against a scripted server's ground truth
(``python -m benchmarks.bench_truth``, with ``--install-peers`` first); ``--soak N`` runs
the chaos soak alone: N streamed responses against faulty providers, ``--concurrency`` at
a time (:mod:`benchmarks.soak`; with ``--gateways``, through two gateway replicas sharing
a Redis restarted mid-run: :mod:`benchmarks.soak_gateways`); ``--json PATH``
writes the figures as JSON; ``--readme`` writes them, with their picture, to
``benchmarks/results/`` and puts the tables and the picture in docs/benchmarks.rst.
The partial-arguments table always runs the partial JSON parsers of the ``bench`` extra that
are installed (the others listed as not installed).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from . import (
    bench_breakdown,
    bench_cache,
    bench_dialects,
    bench_e2e,
    bench_gateway,
    bench_gateway_load,
    bench_hedging,
    bench_limits,
    bench_memory,
    bench_partial,
    bench_peers,
    bench_pipeline,
    bench_routing,
    bench_stretched,
    bench_structured,
    bench_truth,
    machine,
    readme,
    soak,
    soak_gateways,
)

RESULTS = Path(__file__).resolve().parent / "results"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller streams, fewer rounds")
    parser.add_argument(
        "--peers", action="store_true", help="other libraries and end to end (bench extra)"
    )
    parser.add_argument(
        "--gateway",
        action="store_true",
        help="only the gateway's overhead, beside LiteLLM's proxy (bench extra)",
    )
    parser.add_argument(
        "--litellm",
        type=Path,
        help="the litellm command to start LiteLLM's proxy with (its own virtual environment)",
    )
    parser.add_argument(
        "--limits",
        action="store_true",
        help="what a limit check adds per request, in the process and on Redis",
    )
    parser.add_argument(
        "--hedging",
        action="store_true",
        help="hedged requests against a heavy-tailed time to the first event",
    )
    parser.add_argument(
        "--truth",
        action="store_true",
        help="benchmark clients (ours, GuideLLM, vLLM's) against a scripted server's truth",
    )
    parser.add_argument(
        "--soak",
        type=int,
        metavar="N",
        help="only the chaos soak: N streamed responses against faulty providers",
    )
    parser.add_argument(
        "--concurrency", type=int, default=50, help="the soak's responses at a time (50)"
    )
    parser.add_argument("--seed", type=int, default=1, help="the soak's plans' seed (1)")
    parser.add_argument(
        "--gateways",
        action="store_true",
        help="the soak through two gateway replicas sharing a Redis restarted mid-run",
    )
    parser.add_argument("--json", type=Path, help="write the figures to this JSON file")
    parser.add_argument(
        "--readme",
        action="store_true",
        help="write benchmarks/results/ and the tables of docs/benchmarks.rst",
    )
    return parser


class _Tee(io.TextIOBase):
    """Standard output that also keeps what each section printed."""

    def __init__(self, out: Any) -> None:
        self.out = out
        self.text = io.StringIO()

    def write(self, text: str) -> int:
        self.out.write(text)
        self.out.flush()
        return self.text.write(text)


@contextlib.contextmanager
def _captured() -> Iterator[_Tee]:
    tee = _Tee(sys.stdout)
    with contextlib.redirect_stdout(tee):
        yield tee


def _saved(figures: dict[str, Any], path: Path | None) -> dict[str, Any]:
    """``figures``, written to ``path`` as JSON first when a path is given."""
    if path is not None:
        path.write_text(json.dumps(figures, indent=1) + "\n")
        print(f"figures written to {path}")
    return figures


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the benchmarks ``argv`` asks for; print them and return their figures."""
    args = _parser().parse_args(argv)
    quick = args.quick
    figures: dict[str, Any] = {"machine": machine.describe(), "quick": quick}
    printed: dict[str, str] = {}

    def section(key: str, title: str, run: Callable[[], Any]) -> None:
        print(f"== {title} ==")
        with _captured() as tee:
            found = run()
        print()
        printed[key] = tee.text.getvalue()
        if found is not None:
            figures[key] = found

    print("machine:", machine.summary(figures["machine"]))
    print()
    if args.litellm is not None:
        os.environ[bench_gateway.LITELLM] = str(args.litellm)
    if args.soak is not None:
        through = soak_gateways if args.gateways else soak
        name = "soak_gateways" if args.gateways else "soak"
        section(
            name, "the chaos soak", lambda: through.main(args.soak, args.concurrency, args.seed)
        )
        return _saved(figures, args.json)
    if args.gateway:
        section(
            "gateway",
            "the translating gateway over loopback, beside LiteLLM's proxy",
            lambda: bench_gateway.main(quick),
        )
        section(
            "gateway_load",
            "the gateway under load: streamed requests per second on one core, memory per "
            "open stream, beside LiteLLM's proxy",
            lambda: bench_gateway_load.main(quick),
        )
        section(
            "routing",
            "the router in the gateway, beside LiteLLM's proxy routing the same deployments",
            lambda: bench_routing.main(quick),
        )
        return _saved(figures, args.json)
    section(
        "pipeline",
        "Rx pipeline over hand-built events",
        lambda: bench_pipeline.main(100_000 if quick else 1_000_000),
    )
    section(
        "dialects",
        "replay pipeline per dialect (corpus rows: no target)",
        lambda: bench_dialects.main(10_000 if quick else 100_000),
    )
    section(
        "breakdown",
        "where a corpus replay's time goes (each layer as a ratio to the baseline)",
        lambda: bench_breakdown.main(5 if quick else 15),
    )
    section(
        "stretched",
        "the target: real recordings stretched, per frame against the bare decode",
        lambda: bench_stretched.main(quick),
    )
    section("memory", "memory: kept events", lambda: bench_memory.main(quick))
    section(
        "partial",
        "partial tool arguments: one long argument, the value so far after each fragment",
        lambda: bench_partial.main(quick),
    )
    section(
        "structured",
        "structured output: one object streamed as text and as a forced tool's arguments",
        lambda: bench_structured.main(quick),
    )
    if args.peers:
        section(
            "peers",
            "peers: the same bytes through other libraries (in-memory HTTP)",
            lambda: bench_peers.main(quick),
        )
        section(
            "e2e",
            "end to end over loopback (the embedded provider in its own process)",
            lambda: bench_e2e.main(quick),
        )
        section(
            "cache",
            "the response cache: a hit against a miss over loopback, beside LangChain's cache",
            lambda: bench_cache.main(quick),
        )
    if args.limits:
        section(
            "limits",
            "limits: what a limit check adds to a request, in the process and on Redis",
            lambda: bench_limits.main(quick),
        )
    if args.hedging:
        section(
            "hedging",
            "hedged requests: time to the first event, one model against a hedge after p90",
            lambda: bench_hedging.main(quick),
        )
    if args.truth:
        section(
            "truth",
            "benchmark clients against ground truth: TTFT and ITL of a scripted server",
            lambda: bench_truth.main(quick),
        )
    _saved(figures, args.json)
    if args.readme:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "figures.json").write_text(json.dumps(figures, indent=1) + "\n")
        from .plot import picture

        picture(figures, RESULTS / "benchmarks.png")
        readme.update(figures, printed)
        print(f"figures and picture written to {RESULTS}; docs/benchmarks.rst updated")
    return figures


if __name__ == "__main__":
    main()
