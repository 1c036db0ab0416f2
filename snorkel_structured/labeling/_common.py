"""Helpers shared by the finite and manifold labeling functions."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

__all__ = ["MISSING_PARENTHESES", "SpaceLFDecorator", "describe_row", "short_repr"]

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


class SpaceLFDecorator:
    """What the finite and manifold LF decorators share (Snorkel's decorator pattern).

    Subclasses name themselves, say which attribute tells a space from a function (for
    the missing-parentheses guard), check the space, and build their LF class.
    """

    decorator_name: ClassVar[str]
    space_attribute: ClassVar[str]
    example_space: ClassVar[str]

    def __init__(
        self,
        space: Any = None,
        name: str | None = None,
        resources: Mapping[str, Any] | None = None,
        pre: Sequence[Any] | None = None,
    ) -> None:
        if callable(space) and not hasattr(space, self.space_attribute):
            raise ValueError(MISSING_PARENTHESES.format(decorator=self.decorator_name))
        if space is None:
            raise TypeError(
                f"{self.decorator_name} needs the label space: "
                f"@{self.decorator_name}(space={self.example_space})."
            )
        self._check_space(space)
        self.space = space
        self.name = name
        self.resources = resources
        self.pre = pre

    def _check_space(self, space: Any) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _make_lf(self, **kwargs: Any) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def __call__(self, f: Callable[..., Any]) -> Any:
        """Wrap ``f`` into this decorator's labeling-function class."""
        return self._make_lf(
            name=self.name or f.__name__,
            f=f,
            space=self.space,
            resources=self.resources,
            pre=self.pre,
        )
