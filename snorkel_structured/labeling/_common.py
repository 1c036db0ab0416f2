"""Helpers shared by the finite and manifold labeling functions."""

from __future__ import annotations

from typing import Any

__all__ = ["MISSING_PARENTHESES", "describe_row", "short_repr"]

MISSING_PARENTHESES = (
    "Looks like this decorator is missing parentheses: write "
    "@{decorator}(space=...) above your function, not @{decorator}."
)


def describe_row(x: Any) -> str:
    """Name the data point ``x`` in an error message: its pandas index if it has one."""
    name = getattr(x, "name", None)  # a pandas Series row carries its index as .name
    if name is None:
        return "a data point"
    return f"row {name!r}"


def short_repr(value: Any, limit: int = 80) -> str:
    """``repr`` cut to ``limit`` characters, for error messages."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
