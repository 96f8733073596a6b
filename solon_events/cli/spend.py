"""``solon-events spend LOG``: a spend log summed by key, model and day (see
:mod:`solon_events.client.spend_log`), as a table or as JSON."""

from __future__ import annotations

import argparse
from decimal import Decimal
from typing import Any

import orjson
from rich.console import Console
from rich.table import Table

from ..client.metering import SpendRecord
from ..client.spend_log import SPEND_STREAM, SpendTotal, read_spend, spend_totals

__all__ = ["add_spend_parser", "spend"]


def add_spend_parser(commands: Any) -> None:
    """Add the ``spend`` command to ``solon-events``'s subcommands."""
    from .common import add_command

    parser = add_command(
        commands,
        "spend",
        "sum a gateway's spend log by key, model and day",
        "Read a spend log (one record per attempt: a JSON-lines file, or a "
        "redis:// URL and its stream) and sum it by key, model and UTC day: attempts, "
        "input, output and total tokens, cost in USD, and how many were estimated (the "
        "provider sent no count), unpriced or answered from a cache.",
    )
    parser.add_argument(
        "logs",
        nargs="+",
        metavar="LOG",
        help="a JSON-lines spend log, or redis://HOST:PORT/DB (several: summed together)",
    )
    parser.add_argument("--stream", default=SPEND_STREAM, help="the Redis stream of a redis:// LOG")
    parser.add_argument("--key", help="only this key's records")
    parser.add_argument("--model", help="only this model's records")
    parser.add_argument("--json", action="store_true", help="the sums as JSON, for programs")


def spend(args: argparse.Namespace, console: Console) -> int:
    """Run ``solon-events spend``; returns the exit status."""
    from .common import CommandError

    records: list[SpendRecord] = []
    for log in args.logs:
        try:
            records.extend(read_spend(log, stream=args.stream))
        except OSError as error:
            raise CommandError(f"cannot read {log}: {error.strerror or error}") from None
    if args.key is not None:
        records = [r for r in records if (r.key or "-") == args.key]
    if args.model is not None:
        records = [r for r in records if r.model == args.model]
    totals = spend_totals(records)
    if args.json:
        document = {"totals": [total.to_json() for total in totals], "all": _all(totals)}
        console.out(orjson.dumps(document, option=orjson.OPT_INDENT_2).decode(), highlight=False)
        return 0
    console.print(_table(totals))
    return 0


def _all(totals: list[SpendTotal]) -> dict[str, Any]:
    whole = SpendTotal("*", "*", "*")
    for total in totals:
        for name in ("attempts", "input_tokens", "output_tokens", "total_tokens", "cost_usd",
                     "estimated", "unpriced", "cached"):  # fmt: skip
            setattr(whole, name, getattr(whole, name) + getattr(total, name))
    return whole.to_json()


def _usd(amount: Decimal) -> str:
    return f"{amount:.6f}".rstrip("0").rstrip(".") if amount else "0"


def _table(totals: list[SpendTotal]) -> Table:
    table = Table(title="spend by key, model and day", title_justify="left")
    for name in ("key", "model", "day"):
        table.add_column(name)
    for name in ("attempts", "input", "output", "total", "USD", "estimated", "unpriced"):
        table.add_column(name, justify="right")
    for t in totals:
        table.add_row(
            t.key,
            t.model,
            t.day,
            str(t.attempts),
            str(t.input_tokens),
            str(t.output_tokens),
            str(t.total_tokens),
            _usd(t.cost_usd),
            str(t.estimated),
            str(t.unpriced),
        )
    whole = _all(totals)
    table.add_section()
    table.add_row(
        "all",
        "",
        "",
        str(whole["attempts"]),
        str(whole["input_tokens"]),
        str(whole["output_tokens"]),
        str(whole["total_tokens"]),
        _usd(Decimal(whole["cost_usd"])),
        str(whole["estimated"]),
        str(whole["unpriced"]),
    )
    return table
