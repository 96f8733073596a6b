"""The configuration's keys, spend log, prices and limits sections: the issue's shape read
as it is written (as the guide shows it), and errors that name the line and the key."""

from __future__ import annotations

import hashlib
import itertools
import textwrap
from pathlib import Path

import pytest

from solon_events.client.limits import Limits
from solon_events.event_model.pricing import ModelPrice
from solon_events.serve.access import build_access
from solon_events.serve.config import ConfigError, parse_config
from solon_events.serve.limits_config import KeyConfig, SpendLogConfig

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "guides" / "limits.rst"
MODELS = """
[models.fast]
[[models.fast.deployments]]
upstream = "openai:http://127.0.0.1:8000/v1/chat/completions"
model = "gpt-4o-mini"
"""
DIGEST = hashlib.sha256(b"test").hexdigest()  # 9f86d08...


def toml_blocks(text: str) -> list[str]:
    """The ``.. code-block:: toml`` blocks of an rst text, unindented."""
    blocks = []
    for part in text.split(".. code-block:: toml")[1:]:
        lines = part.splitlines()[2:]
        block = list(itertools.takewhile(lambda x: not x or x[0] == " ", lines))
        blocks.append(textwrap.dedent("\n".join(block)).strip() + "\n")
    return blocks


def test_the_issues_key_section_reads_as_written() -> None:
    keys, others = toml_blocks(GUIDE.read_text(encoding="utf-8"))[:2]
    assert keys.startswith('[keys.team-a]\nkey_sha256 = "9f86d08..."')
    text = MODELS + keys.replace("9f86d08...", DIGEST) + others.replace('"my-model"', "echo")
    config = parse_config(text.replace('redis_stream = "solon-events:spend"', ""), "g.toml")
    assert config.keys["team-a"] == KeyConfig(
        name="team-a",
        key_sha256=DIGEST,
        models=("fast",),
        rpm=60,
        tpm=100_000,
        max_parallel=8,
        budget_usd=25.0,
        budget_tokens=2_000_000,
        window="month",
        output_allowance=4096,
        overrun="finish",
    )
    assert config.keys["team-a"].limits == Limits(
        rpm=60, tpm=100_000, max_parallel=8, budget_usd=25.0, budget_tokens=2_000_000
    )
    assert config.spend_log == SpendLogConfig(path="spend.jsonl", otel=True)
    assert config.prices["echo"].price == ModelPrice(input=0.15, output=0.6, cache_read=0.075)
    assert (config.limits.lease, config.limits.unavailable) == (60.0, "allow")


@pytest.mark.parametrize(
    ("section", "line", "key", "reason"),
    [
        ('[keys.a]\nkey_sha256 = "sk-the-key-itself"', 8, "keys.a.key_sha256", "SHA-256 digest"),
        ('[keys.a]\nmodels = ["fast"]', 7, "keys.a", "key_sha256 is required"),
        (f'[keys.a]\nkey_sha256 = "{DIGEST}"\nmodels = ["slow"]', 9, "keys.a.models", "'slow'"),
        (f'[keys.a]\nkey_sha256 = "{DIGEST}"\nrpm = -1', 9, "keys.a.rpm", "whole number"),
        (f'[keys.a]\nkey_sha256 = "{DIGEST}"\nwindow = "week"', 9, "keys.a.window", "one of"),
        (f'[keys.a]\nkey_sha256 = "{DIGEST}"\nbudget = 5', 9, "keys.a.budget", "unknown key"),
        (
            f'[keys.a]\nkey_sha256 = "{DIGEST}"\n[keys.b]\nkey_sha256 = "{DIGEST.upper()}"',
            10,
            "keys.b.key_sha256",
            "the same key as keys.a",
        ),
        ('[spend_log]\nredis_stream = "s"', 8, "spend_log.redis_stream", "top-level redis"),
        ("[prices.m]\ninput = 1", 7, "prices.m", "output is required"),
        ("[limits]\nlease = 0", 8, "limits.lease", "above 0"),
    ],
)
def test_a_wrong_section_is_named_with_its_line(
    section: str, line: int, key: str, reason: str
) -> None:
    with pytest.raises(ConfigError) as error:
        parse_config(MODELS + "\n" + section + "\n", "g.toml")
    assert (error.value.line, error.value.key) == (line, key)
    assert reason in error.value.reason


def test_the_keys_share_one_store_and_a_reload_keeps_it(tmp_path: Path) -> None:
    text = MODELS + f'[keys.a]\nkey_sha256 = "{DIGEST}"\nrpm = 5\n'
    log = f'[spend_log]\npath = "{tmp_path / "spend.jsonl"}"\n'
    first = build_access(parse_config(text + log))
    key = first.keys.find("test")
    assert key is not None and key.name == "a" and key.limiter.name == "key:a"
    assert first.keys.find("TEST") is None and first.keys.find(None) is None
    again = build_access(parse_config(text + log), previous=first)
    assert again.store is first.store and again.spend_log is first.spend_log
    moved = build_access(parse_config(text), previous=again)
    assert moved.store is first.store and moved.spend_log is None
    first.close()
