"""Benchmark clients measured against ground truth: ``solon-events bench``, GuideLLM and
vLLM's benchmark client against the same scripted server.

The embedded provider (in a process of its own) serves its latency script
``latency:P50:P99:SEED:N:GAP_P50:GAP_P99``: before the first event of each request it
waits a lognormal time (median 0.1 s, p99 0.5 s), then sends 8 one-token deltas with
lognormal gaps between them (median 30 ms, p99 120 ms), each request's draws made from the
seed and its number (``latency_script()``), so the truth of every request is known: its
time to first token is its first wait, its inter-token latencies its gaps. Each tool runs
at concurrency 1, 100 and 1,000 (20, 300 and 1,000 requests), each run against a fresh
server process (so every tool gets the same draws, 1 to N), and its reported TTFT and ITL
p50 and p99 are set against the same percentiles of the script, and of what the server
did (``--timings``: when it received each request and wrote each delta; a busy machine
makes a server late, and that lateness is no client's error).

The peers run from virtual environments of their own (``--install-peers`` makes them under
``/tmp/solon-events-peers/``, with pip from PyPI; never in the project's environment):
GuideLLM (``guidellm run``, the OpenAI HTTP backend, synthetic prompts) and vLLM's
``vllm bench serve`` (``openai-chat`` backend, random prompts). Both need a Hugging Face
tokenizer, which cannot be downloaded here: a small byte-level BPE tokenizer is trained
locally, in the peer's environment, for them. A tool that is not installed, or fails,
is listed with the reason.

GuideLLM reports its inter-token latency per request (the request's mean gap), not per
gap: its ITL percentiles are of those means, which the table marks. The truth and our
figures are over every gap.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from solon_events.bench.metrics import percentile
from solon_events.devserver.scenarios import latency_script

from . import machine

P50, P99 = 0.1, 0.5
DELTAS = 8
GAP_P50, GAP_P99 = 0.03, 0.12
LEVELS = ((1, 20), (100, 300), (1000, 1000))
"""Each concurrency and its request count."""
QUICK_LEVELS = ((1, 10), (100, 200))
PEERS = Path("/tmp/solon-events-peers")
TIMEOUT = 900


def model_name(seed: str) -> str:
    return f"latency:{P50}:{P99}:{seed}:{DELTAS}:{GAP_P50}:{GAP_P99}"


def truth(seed: str, requests: int) -> dict[str, float]:
    """The drawn TTFT and ITL p50 and p99 of requests 1 to ``requests`` (seconds)."""
    scripts = [
        latency_script(P50, P99, seed, n, DELTAS, GAP_P50, GAP_P99) for n in range(1, requests + 1)
    ]
    firsts = [s.first_event for s in scripts]
    gaps = [g for s in scripts for g in s.gaps]
    return _figures(firsts, gaps)


@contextlib.contextmanager
def timed_server(timings: Path) -> Iterator[str]:
    """A fresh embedded provider in a process of its own, writing its stream timings to
    ``timings`` when it stops; its base URL."""
    process = subprocess.Popen(
        [sys.executable, "-m", "solon_events.devserver", "--port", "0", "--timings", str(timings)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        found = re.search(r"http://\S+", process.stdout.readline())
        if not found:
            raise RuntimeError("the devserver did not start")
        yield found.group(0)
    finally:
        process.terminate()
        process.wait(30)


def server_account(timings: Path, model: str) -> dict[str, float]:
    """TTFT and ITL p50 and p99 of the streams of ``model`` as the server wrote them."""
    firsts, gaps = [], []
    for line in timings.read_text().splitlines():
        timing = json.loads(line)
        if timing["model"] != model or len(timing["writes"]) < DELTAS:
            continue
        writes = timing["writes"][:DELTAS]
        firsts.append(writes[0] - timing["received"])
        gaps += [b - a for a, b in itertools.pairwise(writes)]
    return _figures(firsts, gaps)


def _figures(firsts: list[float], gaps: list[float]) -> dict[str, float]:
    return {
        "ttft_p50": percentile(firsts, 50) or math.nan,
        "ttft_p99": percentile(firsts, 99) or math.nan,
        "itl_p50": percentile(gaps, 50) or math.nan,
        "itl_p99": percentile(gaps, 99) or math.nan,
    }


class Unavailable(Exception):
    """A tool that could not run, and why."""


def _run(command: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT, cwd=cwd)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise Unavailable(f"exit {done.returncode}: {' / '.join(tail)[:300]}")
    return done


def ours(workers: int) -> Callable[[str, str, int, int, Path], dict[str, float]]:
    def run(url: str, model: str, concurrency: int, requests: int, _tok: Path) -> dict[str, float]:
        done = _run(
            [sys.executable, "-m", "solon_events", "bench", "--url", url + "/v1/chat/completions",
             "--model", model, "--concurrency", str(concurrency), "--requests", str(requests),
             "--workers", str(workers), "--prompt", "Tell me a story.", "--no-progress",
             "--json", "-", "--timeout", "120"]
        )  # fmt: skip
        (point,) = json.loads(done.stdout)["points"]
        metrics = point["summary"]["metrics"]
        failed = point["summary"]["failed"]
        if failed:
            raise Unavailable(f"{failed} requests failed: {point['summary']['errors']}")
        return {
            "ttft_p50": metrics["ttft"]["p50"],
            "ttft_p99": metrics["ttft"]["p99"],
            "itl_p50": metrics["itl"]["p50"],
            "itl_p99": metrics["itl"]["p99"],
            "warned": bool(point["warnings"]),
        }

    return run


def _peer(name: str, program: str) -> Path:
    path = PEERS / name / "bin" / program
    if not path.exists():
        raise Unavailable(f"not installed ({path}; run with --install-peers)")
    return path


def guidellm(url: str, model: str, concurrency: int, requests: int, tok: Path) -> dict[str, float]:
    program = _peer("guidellm", "guidellm")
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "guidellm.json"
        _run(
            [str(program), "run",
             "--backend", f"kind=openai_http,target={url},model={model},validate_backend=false",
             "--profile", f"kind=concurrent,streams={concurrency}",
             "--constraint", f"kind=max_requests,count={requests}",
             "--data", "kind=synthetic_text,prompt_tokens=16,output_tokens=8",
             "--tokenizer", f"kind=huggingface_auto,model={tok}",
             "--output", f"kind=json,path={out}", "--disable-console"],
            cwd=Path(scratch),
        )  # fmt: skip
        (benchmark,) = json.loads(out.read_text())["benchmarks"]
    metrics = benchmark["metrics"]
    ttft = metrics["time_to_first_token_ms"]["successful"]["percentiles"]
    itl = metrics["inter_token_latency_ms"]["successful"]["percentiles"]
    return {
        "ttft_p50": ttft["p50"] / 1000,
        "ttft_p99": ttft["p99"] / 1000,
        "itl_p50": itl["p50"] / 1000,
        "itl_p99": itl["p99"] / 1000,
        "per_request_itl": True,
    }


def vllm(url: str, model: str, concurrency: int, requests: int, tok: Path) -> dict[str, float]:
    program = _peer("vllm", "vllm")
    with tempfile.TemporaryDirectory() as scratch:
        _run(
            [str(program), "bench", "serve", "--backend", "openai-chat", "--base-url", url,
             "--endpoint", "/v1/chat/completions", "--model", model, "--tokenizer", str(tok),
             "--dataset-name", "random", "--random-input-len", "16", "--random-output-len", "8",
             "--num-prompts", str(requests), "--max-concurrency", str(concurrency),
             "--request-rate", "inf", "--percentile-metrics", "ttft,itl",
             "--metric-percentiles", "50,99", "--save-result", "--result-dir", scratch,
             "--result-filename", "vllm.json", "--num-warmups", "0"],
            cwd=Path(scratch),
        )  # fmt: skip
        data = json.loads((Path(scratch) / "vllm.json").read_text())
    return {
        "ttft_p50": data["p50_ttft_ms"] / 1000,
        "ttft_p99": data["p99_ttft_ms"] / 1000,
        "itl_p50": data["p50_itl_ms"] / 1000,
        "itl_p99": data["p99_itl_ms"] / 1000,
    }


TOOLS: dict[str, Callable[[str, str, int, int, Path], dict[str, float]]] = {
    "solon-events bench": ours(1),
    "solon-events bench --workers 2": ours(2),
    "GuideLLM": guidellm,
    "vllm bench serve": vllm,
}


def install_peers() -> None:
    """Make the peers' virtual environments (pip from PyPI), each of its own."""
    for name, package in (("guidellm", "guidellm"), ("vllm", "vllm")):
        venv = PEERS / name
        if not (venv / "bin" / "python").exists():
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        done = subprocess.run(
            [str(venv / "bin" / "pip"), "install", "-q", package], capture_output=True, text=True
        )
        said = "installed" if done.returncode == 0 else f"failed: {done.stderr.strip()[-300:]}"
        print(f"{package}: {said}")


_TOKENIZER = """
import sys
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast
tok = Tokenizer(models.BPE(unk_token="<unk>"))
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
words = "alpha bravo charlie delta echo foxtrot golf hotel tell me a story time year way".split()
trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<unk>", "<s>", "</s>"],
                              initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
tok.train_from_iterator([" ".join(words)] * 50, trainer)
PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>",
                        eos_token="</s>").save_pretrained(sys.argv[1])
"""


def _tokenizer(where: Path) -> Path:
    """A small tokenizer trained here, in the first peer environment that can."""
    for name in ("guidellm", "vllm"):
        python = PEERS / name / "bin" / "python"
        if python.exists():
            done = subprocess.run([str(python), "-c", _TOKENIZER, str(where)], capture_output=True)
            if done.returncode == 0:
                return where
    return where


def _ms(value: float | None) -> str:
    return "-" if value is None or math.isnan(value) else f"{value * 1000:.1f}"


KEYS = ("ttft_p50", "ttft_p99", "itl_p50", "itl_p99")


def _row(label: str, concurrency: int, cells: list[str], marks: str = "") -> str:
    return f"{concurrency:>5}  {label:<32}" + "".join(f"{c:>28}" for c in cells) + marks


def main(quick: bool = False, tools: list[str] | None = None) -> dict[str, Any]:
    levels = QUICK_LEVELS if quick else LEVELS
    chosen = {name: TOOLS[name] for name in (tools or list(TOOLS))}
    figures: dict[str, Any] = {"script": {}, "tools": {}}
    print(
        f"scripted server: first event p50 {P50 * 1000:g} ms, p99 {P99 * 1000:g} ms; "
        f"{DELTAS} deltas, gaps p50 {GAP_P50 * 1000:g} ms, p99 {GAP_P99 * 1000:g} ms"
    )
    print("a tool's cell: what it measured, ms (its error against the script / against what")
    print("the server wrote, ms)")
    print(f"machine: {machine.summary(machine.describe())}; load average {_load()}")
    print(f"{'conc':>5}  {'':<32}" + "".join(f"{k.replace('_', ' '):>28}" for k in KEYS))
    with tempfile.TemporaryDirectory() as scratch:
        tok = _tokenizer(Path(scratch) / "tokenizer")
        for concurrency, requests in levels:
            seed = f"truth-{concurrency}"
            model = model_name(seed)
            script = truth(seed, requests)
            figures["script"][concurrency] = script
            print(_row("script (the drawn truth)", concurrency, [_ms(script[k]) for k in KEYS]))
            for number, (name, run) in enumerate(chosen.items()):
                timings = Path(scratch) / f"timings-{concurrency}-{number}.jsonl"
                try:
                    with timed_server(timings) as url:
                        got = run(url, model, concurrency, requests, tok)
                except (Unavailable, subprocess.TimeoutExpired, OSError, KeyError) as error:
                    print(_row(name, concurrency, []) + f"could not run: {error}")
                    figures["tools"].setdefault(name, {})[concurrency] = {"error": str(error)}
                    continue
                server = server_account(timings, model)
                cells = [
                    f"{_ms(got[k])} ({(got[k] - script[k]) * 1000:+.1f} / "
                    f"{(got[k] - server[k]) * 1000:+.1f})"
                    for k in KEYS
                ]
                marks = " *" if got.get("per_request_itl") else ""
                marks += " (warned)" if got.get("warned") else ""
                print(_row(name, concurrency, cells, marks))
                figures["tools"].setdefault(name, {})[concurrency] = {
                    "measured": {k: got[k] for k in KEYS},
                    "server": server,
                    "error_vs_script_ms": {k: (got[k] - script[k]) * 1000 for k in KEYS},
                    "error_vs_server_ms": {k: (got[k] - server[k]) * 1000 for k in KEYS},
                }
    print("* ITL of each request's mean gap, not of every gap")
    print(f"load average at the end: {_load()}")
    return figures


def _load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_truth", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="concurrency 1 and 100 only")
    parser.add_argument("--install-peers", action="store_true", help="make the peers' venvs")
    parser.add_argument("--tool", action="append", choices=list(TOOLS), help="only these")
    arguments = parser.parse_args()
    if arguments.install_peers:
        install_peers()
    main(arguments.quick, arguments.tool)
