"""``python -m benchmarks``: every benchmark, printed as tables of ratios to same-run baselines.

``python -m benchmarks --quick`` runs smaller streams and fewer rounds (for a fast look).
"""

from __future__ import annotations

import sys

from . import bench_breakdown, bench_dialects, bench_pipeline


def main() -> None:
    quick = "--quick" in sys.argv
    print("== Rx pipeline over hand-built events ==")
    bench_pipeline.main(100_000 if quick else 1_000_000)
    print()
    print("== replay pipeline per dialect ==")
    bench_dialects.main(10_000 if quick else 100_000)
    print()
    print("== where a corpus replay's time goes (each layer as a ratio to the baseline) ==")
    bench_breakdown.main(5 if quick else 15)


if __name__ == "__main__":
    main()
