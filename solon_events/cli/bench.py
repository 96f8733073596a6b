"""``solon-events bench``: a benchmark run against a model endpoint (see
:mod:`solon_events.bench`), with a progress display while it runs, the report's table at
its end, and the results as JSON with ``--json``."""

from __future__ import annotations

import argparse
import os
import random
import sys
from collections.abc import Callable
from typing import Any

import orjson
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..bench import BenchResult, Endpoint, Lengths, Load, Slo, benchmark
from ..bench.prompts import BenchPrompt, read_dataset, synthetic_prompts
from .common import add_command, add_dialect_and_key_options, number_type

__all__ = ["add_bench_parser", "bench"]

DEFAULT_REQUESTS = 100
"""Requests per load point when neither ``--requests`` nor ``--duration`` is given."""


def _numbers(kind: Callable[[str], float]) -> Callable[[str], list[float]]:
    def parse(text: str) -> list[float]:
        try:
            values = [kind(part) for part in text.split(",") if part.strip()]
        except ValueError:
            values = []
        if not values or any(v <= 0 for v in values):
            raise argparse.ArgumentTypeError(f"expected numbers above 0, apart by commas: {text!r}")
        return values

    return parse


_POSITIVE_INT = number_type(int, "expected a number above 0")
_POSITIVE_FLOAT = number_type(float, "expected a number above 0")


def _lengths(text: str) -> Lengths:
    try:
        return Lengths.parse(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _slo(text: str) -> Slo:
    try:
        return Slo.parse(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _option(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE: {text!r}")
    try:
        return key, orjson.loads(value)
    except orjson.JSONDecodeError:
        return key, value


def add_bench_parser(commands: Any) -> None:
    """Add the ``bench`` command to ``solon-events``'s subcommands."""
    parser = add_command(
        commands,
        "bench",
        "benchmark a model endpoint: latency percentiles, throughput, goodput",
        "Send requests to a model endpoint at a request rate (Poisson, constant "
        "or bursty arrivals) or a fixed concurrency, or a sweep of them, and report each "
        "request's timings summarised: time to the first event, token, reasoning and answer "
        "token, inter-token latency, time per output token, end to end (mean, p50, p90, "
        "p95, p99), requests and output tokens per second, goodput under SLOs, errors by "
        "kind, cost when priced, and what the client itself cost (CPU per frame, event loop "
        "lag; a warning when the client, not the server, set the figures). Prompts come "
        "from a dataset (JSON lines: prompt, text or messages, and output_tokens; or "
        "ShareGPT conversations) or are made up to lengths in tokens.",
    )
    parser.add_argument(
        "--url", help="the endpoint to POST to, e.g. http://127.0.0.1:8000/v1/chat/completions"
    )
    parser.add_argument(
        "--model",
        required=True,
        help="the model's name (with --config: a model name of the gateway's configuration)",
    )
    add_dialect_and_key_options(parser)
    parser.add_argument(
        "--config",
        metavar="FILE.toml",
        help="instead of --url: the gateway's configuration (solon-events serve --config); "
        "--model names one of its [models.NAME], whose deployment is benchmarked directly "
        "(its upstream, model and api_key_env)",
    )
    parser.add_argument(
        "--deployment",
        type=_POSITIVE_INT,
        metavar="N",
        help="with --config: the model's Nth deployment (needed when it has several)",
    )
    load = parser.add_argument_group("load (a comma list is a sweep, one point after the other)")
    arrival = load.add_mutually_exclusive_group()
    arrival.add_argument(
        "--rate", type=_numbers(float), metavar="R[,R...]", help="requests per second (arrivals)"
    )
    arrival.add_argument(
        "--concurrency",
        type=_numbers(int),
        metavar="C[,C...]",
        help="requests in flight at once (default: 1)",
    )
    load.add_argument(
        "--burstiness",
        type=_POSITIVE_FLOAT,
        default=1.0,
        help="with --rate: gamma-distributed gaps of this shape (1: Poisson; below 1 "
        "burstier, above 1 steadier; as vLLM's --burstiness)",
    )
    load.add_argument("--constant", action="store_true", help="with --rate: evenly spaced arrivals")
    load.add_argument(
        "--max-concurrency",
        type=_POSITIVE_INT,
        metavar="N",
        help="with --rate: at most N requests in flight (arrivals beyond it wait)",
    )
    size = load.add_mutually_exclusive_group()
    size.add_argument(
        "--requests",
        type=_POSITIVE_INT,
        metavar="N",
        help=f"requests per load point (default: {DEFAULT_REQUESTS})",
    )
    size.add_argument(
        "--duration", type=_POSITIVE_FLOAT, metavar="SECONDS", help="send for this long per point"
    )
    load.add_argument(
        "--warmup",
        type=int,
        default=0,
        metavar="N",
        help="requests sent first at each point, not counted",
    )
    load.add_argument("--seed", type=int, default=0, help="seed of the arrivals and the prompts")
    load.add_argument(
        "--workers",
        type=_POSITIVE_INT,
        default=1,
        metavar="N",
        help="processes that share the load (their results merged exactly)",
    )
    prompts = parser.add_argument_group("prompts")
    prompts.add_argument("--dataset", metavar="FILE", help="a JSON-lines or ShareGPT file")
    prompts.add_argument(
        "--dataset-format",
        choices=("auto", "jsonl", "sharegpt"),
        default="auto",
        help="how to read --dataset",
    )
    prompts.add_argument(
        "--input-tokens",
        type=_lengths,
        default=Lengths.parse("128"),
        metavar="DIST",
        help="synthetic prompts' length in tokens: N, uniform:LOW:HIGH, normal:MEAN:SD or "
        "lognormal:MEDIAN:SIGMA",
    )
    prompts.add_argument(
        "--output-tokens",
        type=_lengths,
        metavar="DIST",
        help="output tokens asked for (sent as max_tokens), as --input-tokens (default: none "
        "asked; a ShareGPT reply's length with --dataset)",
    )
    prompts.add_argument(
        "--prompt", action="append", default=[], metavar="TEXT", help="a prompt (repeatable)"
    )
    report = parser.add_argument_group("report")
    report.add_argument(
        "--slo",
        "--goodput",
        dest="slos",
        type=_slo,
        action="append",
        default=[],
        metavar="METRIC:MS",
        help="a service-level objective for goodput, in milliseconds (ttft:500, tpot:50, "
        "e2e:2000, ttfe, first_answer; repeatable)",
    )
    report.add_argument(
        "--json", metavar="FILE", help="write the results as JSON to FILE ('-': standard output)"
    )
    report.add_argument(
        "--no-progress", action="store_true", help="no progress display while it runs"
    )
    parser.add_argument(
        "--timeout",
        type=_POSITIVE_FLOAT,
        default=300.0,
        metavar="SECONDS",
        help="a request's wait for its first frame, and between two frames",
    )
    parser.add_argument(
        "--option",
        type=_option,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a provider option sent with every request (a JSON value or a string; "
        "temperature=0, ignore_eos=true; repeatable)",
    )
    parser.add_argument(
        "--uvloop", action="store_true", help="run the client on uvloop (the uvloop extra)"
    )


def _loads(args: argparse.Namespace) -> list[Load]:
    if args.rate is not None:
        return [
            Load(
                rate=rate,
                burstiness=args.burstiness,
                constant=args.constant,
                max_concurrency=args.max_concurrency,
            )
            for rate in args.rate
        ]
    if args.constant or args.burstiness != 1.0 or args.max_concurrency:
        from .common import CommandError

        raise CommandError("--burstiness, --constant and --max-concurrency go with --rate", 2)
    return [Load(concurrency=int(c)) for c in (args.concurrency or [1])]


def _prompts(args: argparse.Namespace, count: int) -> tuple[list[BenchPrompt], str]:
    if args.prompt:
        rng = random.Random(f"prompts:{args.seed}")
        output = args.output_tokens
        given = [BenchPrompt.of(t, output.draw(rng) if output else None) for t in args.prompt]
        return given, f"{len(given)} given"
    if args.dataset:
        found = read_dataset(args.dataset, args.dataset_format, seed=args.seed)
        if args.output_tokens is not None:
            again = synthetic_prompts(len(found), Lengths(), args.output_tokens, args.seed)
            found = [
                BenchPrompt(p.messages, q.output_tokens, p.input_tokens)
                for p, q in zip(found, again)
            ]
        return found, f"{args.dataset} ({len(found)} prompts)"
    made = synthetic_prompts(count, args.input_tokens, args.output_tokens, args.seed)
    output = f", output {args.output_tokens} tokens" if args.output_tokens else ""
    return made, f"synthetic: input {args.input_tokens} tokens{output}"


def _endpoint(args: argparse.Namespace) -> Endpoint:
    """The endpoint ``--url`` names, or the deployment of ``--config``'s model ``--model``."""
    from .common import CommandError, provider_key

    if args.config:
        if args.url:
            raise CommandError("--config names the endpoint: give --url or --config, not both", 2)
        return _configured(args)
    if args.deployment is not None:
        raise CommandError("--deployment goes with --config", 2)
    if not args.url:
        raise CommandError("bench needs --url, or --config and a model name of it", 2)
    dialect, api_key = provider_key(args, args.url)
    return Endpoint(args.url, args.model, dialect, api_key=api_key)


def _configured(args: argparse.Namespace) -> Endpoint:
    """The deployment of ``--config``'s model ``--model`` to benchmark (its key read from
    the environment variable the configuration names)."""
    from ..serve.config import load_config
    from .common import CommandError, warning

    config = load_config(args.config)
    model = config.models.get(args.model)
    if model is None:
        known = ", ".join(config.models)
        raise CommandError(f"{args.config} has no model {args.model!r} (it has: {known})", 2)
    count = len(model.deployments)
    if args.deployment is None and count > 1:
        raise CommandError(
            f"models.{args.model} has {count} deployments: choose one with --deployment N "
            f"(1 to {count}), or benchmark the gateway itself (its URL and this model name)",
            2,
        )
    number = args.deployment or 1
    if number > count:
        raise CommandError(f"models.{args.model} has {count} deployment(s), not {number}", 2)
    deployment = model.deployments[number - 1]
    api_key = os.environ.get(deployment.api_key_env) if deployment.api_key_env else None
    if deployment.api_key_env and not api_key:
        warning(f"{deployment.api_key_env} is not set: the requests are sent without an API key")
    return Endpoint(deployment.url, deployment.model, deployment.dialect, api_key=api_key)


def bench(args: argparse.Namespace, console: Console) -> int:
    """Run ``solon-events bench``; returns the exit status (1 when every request failed)."""
    endpoint = _endpoint(args)
    loads = _loads(args)
    requests = args.requests if args.requests or args.duration else DEFAULT_REQUESTS
    count = (requests or 1000) + args.warmup
    prompts, label = _prompts(args, count)
    to_stdout = args.json == "-"
    screen = Console(stderr=True) if to_stdout else console
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[failed]} failed"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
        disable=args.no_progress,
    )
    tasks = [progress.add_task(load.label, total=requests, failed=0, start=False) for load in loads]

    def on_progress(point: int, completed: int, failed: int) -> None:
        progress.start_task(tasks[point])
        progress.update(tasks[point], completed=completed + failed, failed=failed)

    with progress:
        result = benchmark(
            endpoint,
            prompts,
            loads,
            requests=requests,
            duration=args.duration,
            warmup=args.warmup,
            seed=args.seed,
            slos=args.slos,
            workers=args.workers,
            timeout=args.timeout,
            options=dict(args.option),
            loop="uvloop" if args.uvloop else "asyncio",
            on_progress=on_progress,
            prompts_label=label,
        )
    _report(result, args.json, screen)
    completed = sum(point.summary.completed for point in result.points)
    return 0 if completed else 1


def _report(result: BenchResult, json_path: str | None, screen: Console) -> None:
    screen.print(
        f"[bold]{result.endpoint['model']}[/] at {result.endpoint['url']} "
        f"({result.endpoint['dialect']}), prompts: {result.settings['prompts']}",
        highlight=False,
        soft_wrap=True,
    )
    screen.print(result.table())
    if json_path == "-":
        sys.stdout.buffer.write(orjson.dumps(result.to_json(), option=orjson.OPT_INDENT_2) + b"\n")
        sys.stdout.flush()
    elif json_path:
        result.save(json_path)
        screen.print(f"results written to {json_path}", highlight=False, soft_wrap=True)
