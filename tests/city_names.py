"""The pydantic type of a city's name that the tool tests share: it must be capitalised."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator

__all__ = ["CityName"]


def _capitalised(value: str) -> str:
    if not value[:1].isupper():
        raise ValueError("the city's name must be capitalised")
    return value


CityName = Annotated[str, AfterValidator(_capitalised)]
"""A ``str`` that fails validation unless it starts with a capital letter."""
