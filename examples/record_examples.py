"""Re-record the example recordings of examples/recordings/ from the embedded provider.

    python examples/record_examples.py

Each recording is a real stream of the embedded provider (solon_events.devserver), paced
so that its arrival times look like a model's, saved by solon_events.recording.record
(what ``solon-events record`` runs).
"""

from __future__ import annotations

from pathlib import Path

from solon_events import ChatModel, tool
from solon_events.devserver import DevServer
from solon_events.recording import record

HERE = Path(__file__).resolve().parent / "recordings"
ROUTES = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages"}


@tool
def get_weather(city: str) -> str:
    """Current weather in a city.

    Args:
        city: The city's name, e.g. Paris.
    """
    return "18°C and sunny"


def main() -> None:
    """Record the three examples."""
    examples = [
        # (file, dialect, scenario, prompt, with tools)
        ("text-openai.jsonl", "openai", "echo", "Streams arrive one small delta at a time.", False),
        ("tool-loop-openai.jsonl", "openai", "weather", "What is the weather in Paris?", True),
        ("thinking-anthropic.jsonl", "anthropic", "think", "Why is the sky blue?", False),
    ]
    with DevServer.run_in_thread(pace=0.04) as server:
        for name, dialect, scenario, prompt, with_tools in examples:
            with ChatModel(server.url + ROUTES[dialect], scenario, dialect=dialect) as model:
                request = model.prompt(prompt)
                if with_tools:
                    request = request.tools(get_weather)
                header = {"prompt": prompt, "url": "http://127.0.0.1:8000" + ROUTES[dialect]}
                response = record(request, HERE / name, header=header)
                print(f"{name}: {response.text!r}")


if __name__ == "__main__":
    main()
