"""Helpers shared by the finite, manifold and ranking labeling functions."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, TypeVar

__all__ = [
    "DOCS",
    "MISSING_PARENTHESES",
    "LFDecorator",
    "SpaceLFDecorator",
    "describe_row",
    "fill_doc",
    "short_repr",
]

_T = TypeVar("_T")

MISSING_PARENTHESES = (
    "Looks like this decorator is missing parentheses: write "
    "{usage} above your function, not @{decorator}."
)


# Docstring text that several labeling classes share, by name: a line "%(name)s" of a
# docstring decorated with fill_doc stands for it (see fill_doc).
DOCS = {
    # parameters of the LF classes
    "lf_name": """\
name : str
    Name of the LF (unique within an applier).""",
    "lf_resources_pre": """\
resources : mapping, optional
    Keyword arguments passed to ``f``.
pre : list of snorkel preprocessors, optional
    Run on each data point before ``f``.""",
    # parameters, returns and raises of the LF decorators
    "decorator_options": """\
name : str, optional
    Name of the LF; defaults to the function's name.
resources : mapping, optional
    Keyword arguments passed to the function on every call.
pre : list of snorkel preprocessors, optional
    Run on each data point before the function.""",
    "decorator_returns": """\
Returns
-------
decorator : callable
    Applied to a function, returns a :class:`%(lf)s`.

Raises
------
ValueError
    When used without parentheses (``@%(decorator)s``).""",
    # parameters and returns of the appliers' apply
    "pandas_df": """\
df : pandas.DataFrame
    One data point per row; each LF receives the row as a ``Series``.""",
    "pandas_faults": """\
fault_tolerant : bool, default=False
    Record an abstain (and count a fault for the LF) when an LF raises or
    returns an invalid %(vote)s, instead of raising.
return_meta : bool, default=False
    Also return Snorkel's ``ApplierMetadata`` with per-LF fault counts.""",
    "pandas_meta": """\
meta : ApplierMetadata
    Only when ``return_meta=True``: ``meta.faults`` maps LF name to count.""",
    "dask_df": """\
df : dask.dataframe.DataFrame
    One data point per row.""",
    "dask_options": """\
scheduler : str or distributed.Client, default="processes"
    Passed to ``dask.compute`` (``"synchronous"``, ``"threads"``,
    ``"processes"`` or a ``Client``).
fault_tolerant : bool, default=False
    Abstain and count a fault instead of raising when an LF fails.
return_meta : bool, default=False
    Also return ``ApplierMetadata`` with per-LF fault counts.""",
    "dask_meta": """\
meta : ApplierMetadata
    Only when ``return_meta=True``.""",
}

_PLACEHOLDER = re.compile(r"%\((\w+)\)s")


def fill_doc(**values: str) -> Callable[[_T], _T]:
    """Decorator filling in the ``%(name)s`` placeholders of a docstring.

    A placeholder alone on its line stands for the entry ``name`` of :data:`DOCS`,
    indented as the line; any other placeholder, in the docstring or in those
    entries, is replaced by ``values[name]``. An unknown name raises ``KeyError`` (at
    import).
    """

    def fill(text: str) -> str:
        lines: list[str] = []
        for line in text.split("\n"):
            entry = _PLACEHOLDER.fullmatch(line.strip())
            if entry and entry[1] in DOCS:
                indent = line[: len(line) - len(line.lstrip())]
                lines.extend(
                    indent + part if part else part
                    for part in fill(DOCS[entry[1]]).split("\n")
                )
            else:
                lines.append(_PLACEHOLDER.sub(lambda m: values[m[1]], line))
        return "\n".join(lines)

    def decorate(obj: _T) -> _T:
        obj.__doc__ = fill(obj.__doc__ or "")
        return obj

    return decorate


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


class LFDecorator:
    """What the LF decorators share (Snorkel's decorator pattern).

    The decorator stores the LF's options; applied to a function, it builds the LF.
    Subclasses name themselves, build their LF class in ``_make_lf`` and pass their own
    options (a label space, a number of items) through ``_lf_options``.
    """

    decorator_name: ClassVar[str]

    def __init__(
        self,
        name: str | None = None,
        resources: Mapping[str, Any] | None = None,
        pre: Sequence[Any] | None = None,
    ) -> None:
        self.name = name
        self.resources = resources
        self.pre = pre

    def _missing_parentheses(self, usage: str) -> ValueError:
        """The error for ``@decorator`` written without its call, ``usage``."""
        return ValueError(
            MISSING_PARENTHESES.format(usage=usage, decorator=self.decorator_name)
        )

    def _lf_options(self) -> dict[str, Any]:
        """Keyword arguments of the LF class beyond name, f, resources and pre."""
        return {}

    def _make_lf(self, **kwargs: Any) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def __call__(self, f: Callable[..., Any]) -> Any:
        """Wrap ``f`` into this decorator's labeling-function class."""
        return self._make_lf(
            name=self.name or f.__name__,
            f=f,
            resources=self.resources,
            pre=self.pre,
            **self._lf_options(),
        )


class SpaceLFDecorator(LFDecorator):
    """What the finite and manifold LF decorators share: a label space (``space=``).

    Subclasses also say which attribute tells a space from a function (for the
    missing-parentheses guard) and check the space.
    """

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
            raise self._missing_parentheses(f"@{self.decorator_name}(space=...)")
        if space is None:
            raise TypeError(
                f"{self.decorator_name} needs the label space: "
                f"@{self.decorator_name}(space={self.example_space})."
            )
        self._check_space(space)
        super().__init__(name, resources, pre)
        self.space = space

    def _check_space(self, space: Any) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _lf_options(self) -> dict[str, Any]:
        return {"space": self.space}
