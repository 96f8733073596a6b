"""Tests of solon_events.tools.docstrings: descriptions read by docstring-parser."""

from __future__ import annotations

from typing import Any

import pytest

from solon_events.tools import Tool, tool
from solon_events.tools.docstrings import parse_docstring


def props(t: Tool[..., Any]) -> dict[str, Any]:
    """The properties of a tool's parameter schema."""
    properties: dict[str, Any] = t.parameters["properties"]
    return properties


def test_google_docstring() -> None:
    @tool
    def weather(city: str, days: int = 1, unit: str = "C") -> str:
        """Get the weather forecast.

        Uses the national service; results are cached.

        Args:
            city: The city to look up,
                spelled in English.
            days (int): How many days ahead.
            unit (str, optional): Temperature unit.

        Returns:
            The forecast as text.

        Raises:
            ValueError: never.
        """
        return ""

    assert weather.description == (
        "Get the weather forecast.\n\nUses the national service; results are cached."
    )
    assert props(weather)["city"]["description"] == "The city to look up, spelled in English."
    assert props(weather)["days"]["description"] == "How many days ahead."
    assert props(weather)["unit"]["description"] == "Temperature unit."


@pytest.mark.parametrize("header", ["Args", "Arguments", "Parameters"])
def test_google_section_names(header: str) -> None:
    def f(a: int, b: int) -> None:
        pass

    f.__doc__ = f"Add.\n\n{header}:\n    a: first\n    b: second\n"
    t = tool(f)
    assert t.description == "Add."
    assert [props(t)[n]["description"] for n in ("a", "b")] == ["first", "second"]


def test_rest_docstring() -> None:
    @tool
    def search(query: str, limit: int = 10) -> list[str]:
        """Search the index.

        :param query: What to look for,
            in plain words.
        :type query: str
        :param int limit: At most this many hits.
        :returns: The hits.
        :rtype: list[str]
        """
        return []

    assert search.description == "Search the index."
    assert props(search)["query"]["description"] == "What to look for, in plain words."
    assert props(search)["limit"]["description"] == "At most this many hits."


def test_numpy_docstring() -> None:
    @tool
    def scale(x: float, y: float, factor: float = 2.0) -> float:
        """Scale a vector.

        Both coordinates are multiplied.

        Parameters
        ----------
        x, y : float
            The coordinates.
        factor : float, optional
            The multiplier,
            applied to both.

        Returns
        -------
        float
            Nothing useful.
        """
        return x

    assert scale.description == "Scale a vector.\n\nBoth coordinates are multiplied."
    assert props(scale)["x"]["description"] == "The coordinates."
    assert props(scale)["y"]["description"] == "The coordinates."
    assert props(scale)["factor"]["description"] == "The multiplier, applied to both."


def test_no_docstring_gives_empty_description() -> None:
    @tool
    def f(a: int) -> None:
        pass

    assert f.description == ""
    assert props(f)["a"] == {"type": "integer"}


def test_summary_only_docstring() -> None:
    @tool
    def f(a: int) -> None:
        """Do the thing."""

    assert f.description == "Do the thing."
    assert "description" not in props(f)["a"]


def test_docstring_that_starts_with_a_section() -> None:
    @tool
    def f(a: int) -> None:
        """
        Args:
            a: the a
        """

    assert f.description == ""
    assert props(f)["a"]["description"] == "the a"


def test_description_override_keeps_parameter_docs() -> None:
    @tool(description="Custom.")
    def f(a: int) -> None:
        """Original.

        Args:
            a: the a
        """

    assert f.description == "Custom."
    assert props(f)["a"]["description"] == "the a"


@pytest.mark.parametrize("header", ["Keyword Args", "Other Parameters"])
def test_google_keyword_sections(header: str) -> None:
    doc = f"Search.\n\n    Args:\n        query: what\n    {header}:\n        limit: at most\n"
    assert parse_docstring(doc) == ("Search.", {"query": "what", "limit": "at most"})


def test_star_names_and_blank_lines_in_descriptions() -> None:
    doc = """Run.

    Args:
        *items: the items,

            all of them
        **options: settings
    """
    assert parse_docstring(doc).params == {"items": "the items, all of them", "options": "settings"}


def test_a_docstring_the_library_cannot_read_keeps_its_text() -> None:
    doc = "Odd.\n\n    :param: nothing named\n"
    assert parse_docstring(doc).description.startswith("Odd.")
