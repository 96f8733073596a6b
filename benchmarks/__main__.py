"""``python -m benchmarks``: every benchmark, printed as tables of ratios to same-run baselines.

``--quick`` runs smaller streams and fewer rounds (for a fast look); ``--peers`` adds the
other libraries and the end-to-end and memory runs (the ``bench`` extra); ``--json PATH``
writes the figures as JSON.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import (
    bench_breakdown,
    bench_dialects,
    bench_peers,
    bench_pipeline,
    bench_stretched,
    machine,
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller streams, fewer rounds")
    parser.add_argument(
        "--peers", action="store_true", help="other libraries on the same bytes (bench extra)"
    )
    parser.add_argument("--json", type=Path, help="write the figures to this JSON file")
    return parser


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the benchmarks ``argv`` asks for; print them and return their figures."""
    args = _parser().parse_args(argv)
    quick = args.quick
    figures: dict[str, Any] = {"machine": machine.describe(), "quick": quick}
    print("machine:", machine.summary(figures["machine"]))
    print()
    print("== Rx pipeline over hand-built events ==")
    bench_pipeline.main(100_000 if quick else 1_000_000)
    print()
    print("== replay pipeline per dialect (corpus rows: no target) ==")
    bench_dialects.main(10_000 if quick else 100_000)
    print()
    print("== where a corpus replay's time goes (each layer as a ratio to the baseline) ==")
    bench_breakdown.main(5 if quick else 15)
    print()
    print("== the target: real recordings stretched, per frame against the bare decode ==")
    figures["stretched"] = bench_stretched.main(quick)
    if args.peers:
        print()
        print("== peers: the same bytes through other libraries (in-memory HTTP) ==")
        figures["peers"] = bench_peers.main(quick)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")
        print(f"\nfigures written to {args.json}")
    return figures


if __name__ == "__main__":
    main()
