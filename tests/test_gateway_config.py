"""The gateway's configuration file: the shape the issue fixes, read as it is written, and
errors that name the file, the line and the key."""

from __future__ import annotations

import itertools
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from solon_events import Router
from solon_events.client.router_state import MemoryRouterState
from solon_events.serve.config import (
    ConfigError,
    DeploymentConfig,
    ModelConfig,
    load_config,
    parse_config,
)
from solon_events.serve.models import ModelTable, build_table

DOCS = Path(__file__).resolve().parents[1] / "docs" / "guides" / "routing.rst"


def first_toml_block(text: str) -> str:
    """The first ``.. code-block:: toml`` of an rst text, unindented."""
    lines = text.split(".. code-block:: toml", 1)[1].splitlines()[2:]
    block = [line for line in itertools.takewhile(lambda x: not x or x[0] == " ", lines)]
    return textwrap.dedent("\n".join(block)).strip() + "\n"


ISSUE_EXAMPLE = first_toml_block(DOCS.read_text(encoding="utf-8"))
"""The issue's example, as the docs' page on the configuration shows it."""


def test_the_issues_example_reads_as_written(tmp_path: Path) -> None:
    assert ISSUE_EXAMPLE.startswith('redis = "redis://127.0.0.1:6379/0"')
    assert ISSUE_EXAMPLE.count("[[models.fast.deployments]]") == 2
    path = tmp_path / "gateway.toml"
    path.write_text(ISSUE_EXAMPLE)
    config = load_config(path)
    assert config.redis == "redis://127.0.0.1:6379/0"
    assert config.path == str(path)
    assert config.models == {
        "fast": ModelConfig(
            name="fast",
            strategy="weighted",
            deployments=(
                DeploymentConfig(
                    upstream="openai:http://127.0.0.1:8000/v1/chat/completions",
                    model="gpt-4o-mini",
                    api_key_env="OPENAI_API_KEY",
                    weight=3,
                ),
                DeploymentConfig(
                    upstream="anthropic:http://127.0.0.1:8001/v1/messages",
                    model="claude-haiku-4-5",
                    api_key_env="ANTHROPIC_API_KEY",
                    weight=1,
                ),
            ),
        )
    }
    first = config.models["fast"].deployments[0]
    assert (first.dialect, first.url) == ("openai", "http://127.0.0.1:8000/v1/chat/completions")


def test_the_models_are_routers_with_keys_from_the_environment() -> None:
    config = parse_config(ISSUE_EXAMPLE.replace('redis = "redis://127.0.0.1:6379/0"', ""))
    environ = {"OPENAI_API_KEY": "sk-openai-secret", "ANTHROPIC_API_KEY": "sk-ant-secret"}
    with build_table(config, environ=environ) as table:
        router = table.get("fast")
        assert isinstance(router, Router)
        assert router.name == "fast" and router.strategy == "weighted"
        assert router.weights == (3.0, 1.0)
        assert [m.max_retries for m in router.leaves()] == [0, 0]
        assert isinstance(table.state, MemoryRouterState)
        assert table.get("slow") is None
        assert "secret" not in repr(router) + repr(table)
        # a reload keeps the deployments (their pools, the state) that did not change
        renamed = parse_config(
            ISSUE_EXAMPLE.replace("[models.fast]", "[models.quick]")
            .replace("models.fast.", "models.quick.")
            .replace('redis = "redis://127.0.0.1:6379/0"', "")
        )
        with build_table(renamed, environ=environ, previous=table) as reloaded:
            assert reloaded.get("fast") is None
            kept = reloaded.get("quick")
            assert kept is not None and kept.leaves() == router.leaves()
            assert reloaded.state is table.state


def test_a_key_variable_that_is_not_set_is_an_error_naming_it() -> None:
    config = parse_config(ISSUE_EXAMPLE, "gateway.toml")
    with pytest.raises(ConfigError) as caught:
        build_table(config, environ={"OPENAI_API_KEY": "sk-1"})
    assert str(caught.value) == (
        "gateway.toml: models.fast.deployments[1].api_key_env: "
        "the environment variable ANTHROPIC_API_KEY is not set"
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            ("weight = 1\n", "weight = -1\n"),
            "gateway.toml:13: models.fast.deployments[1].weight: "
            "must be a number greater than 0, not -1",
        ),
        (
            ('"weighted"', '"random"'),
            "gateway.toml:3: models.fast.strategy: must be one of weighted, least-busy, "
            "latency, fallback, hedge, not 'random'",
        ),
        (
            ("weight = 3", "wieght = 3"),
            "gateway.toml:8: models.fast.deployments[0].wieght: unknown key (known here: "
            "api_key_env, model, upstream, weight)",
        ),
        (
            ('model = "claude-haiku-4-5"\n', ""),
            "gateway.toml:9: models.fast.deployments[1]: model is required",
        ),
        (
            ("anthropic:http", "claude:http"),
            "gateway.toml:10: models.fast.deployments[1].upstream: must be DIALECT:URL with a "
            "dialect of openai, openai-responses, anthropic, gemini, ollama, bedrock, cohere, "
            "google-interactions and an http(s) URL, not "
            "'claude:http://127.0.0.1:8001/v1/messages'",
        ),
        (
            ('"redis://127.0.0.1:6379/0"', '"127.0.0.1:6379"'),
            "gateway.toml:1: redis: must be a redis://HOST:PORT/DB URL",
        ),
        (
            ('strategy = "weighted"', 'strategy = "weighted"\nstrategy = "latency"'),
            "gateway.toml:4: not valid TOML: Cannot overwrite a value",
        ),
    ],
)
def test_errors_name_the_file_the_line_and_the_key(change: tuple[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(ISSUE_EXAMPLE.replace(*change), "gateway.toml")
    assert str(caught.value) == message


def test_a_key_written_in_the_file_is_refused_without_being_repeated() -> None:
    text = ISSUE_EXAMPLE.replace('"OPENAI_API_KEY"', '"sk-proj-abc123 secret"')
    with pytest.raises(ConfigError) as caught:
        parse_config(text, "gateway.toml")
    assert caught.value.key == "models.fast.deployments[0].api_key_env"
    assert caught.value.line == 7
    assert "keys are never written in the file" in str(caught.value)
    assert "abc123" not in str(caught.value)


def test_files_that_cannot_be_used(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"missing\.toml: cannot be read"):
        load_config(tmp_path / "missing.toml")
    with pytest.raises(ConfigError, match="models: must name at least one model"):
        parse_config("[models]\n")
    with pytest.raises(ConfigError, match="models is required"):
        parse_config('redis = "redis://h:1/0"\n')
    with pytest.raises(ConfigError, match=r"deployments: must be one or more \[\[models"):
        parse_config("[models.fast]\ndeployments = []\n")


names = st.from_regex(r"[a-z][a-z0-9-]{0,8}", fullmatch=True)


@given(
    models=st.lists(names, min_size=1, max_size=4, unique=True),
    counts=st.lists(st.integers(1, 3), min_size=4, max_size=4),
    data=st.data(),
)
def test_the_line_of_a_bad_weight_is_found_wherever_it_is(
    models: list[str], counts: list[int], data: st.DataObject
) -> None:
    """Whatever the models and deployments, a bad weight's error names its line and key."""
    lines: list[str] = []
    places: list[tuple[str, int, int]] = []  # model, deployment, the weight's line
    for name, count in zip(models, counts):
        lines += [f"[models.{name}]", 'strategy = "fallback"', ""]
        for index in range(count):
            lines += [
                f"[[models.{name}.deployments]]",
                'upstream = "openai:http://127.0.0.1:1/v1/chat/completions"',
                f'model = "m{index}"  # weight = 1',
                "weight = 1",
                "",
            ]
            places.append((name, index, len(lines) - 1))
    name, index, line = data.draw(st.sampled_from(places))
    lines[line - 1] = "weight = 0"
    with pytest.raises(ConfigError) as caught:
        parse_config("\n".join(lines), "g.toml")
    assert caught.value.line == line
    assert caught.value.key == f"models.{name}.deployments[{index}].weight"


def test_a_table_of_one_model_answers_every_name(make_model: object) -> None:
    from solon_events import ChatModel

    model = ChatModel("http://127.0.0.1:9/v1/chat/completions", "gpt-x")
    with ModelTable.of(model) as table:
        assert table.get("anything") is model and table.get("gpt-x") is model
        assert table.answer_name("anything") == "gpt-x"
    assert model.closed


def test_a_retired_table_closes_what_it_alone_used_once_its_requests_ended() -> None:
    from solon_events import ChatModel

    kept = ChatModel("http://127.0.0.1:9/v1/chat/completions", "kept")
    dropped = ChatModel("http://127.0.0.1:9/v1/messages", "dropped")
    old = ModelTable({"a": kept, "b": dropped})
    new = ModelTable({"a": kept})
    old.enter()
    old.retire(keep=new)
    assert not dropped.closed and old.in_flight == 1  # a request still runs on it
    old.leave()
    assert dropped.closed and not kept.closed
    new.close()
    assert kept.closed
