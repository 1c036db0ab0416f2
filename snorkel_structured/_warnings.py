"""The library's own warnings, capturable per thread without touching global state.

``warnings.catch_warnings`` swaps the process-wide filter list and ``showwarning``:
two threads fitting at once then record each other's warnings, and a thread leaving
its block restores a state that another thread had changed (which can leave the
process's warning display broken). The library therefore raises its warnings through
:func:`warn`, which first offers each warning to the innermost :func:`captured` block
of the current thread (a context variable: one stack per thread and asyncio task).
A captured warning is stored there and goes no further; the others go to
``warnings.warn`` as usual, so users' own filters keep working.
"""

from __future__ import annotations

import contextlib
import contextvars
import warnings
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["CapturedWarning", "captured", "warn"]


@dataclass(frozen=True)
class CapturedWarning:
    """One warning stored by :func:`captured`: its ``message`` (str) and ``category``."""

    message: str
    category: type[Warning]


@dataclass(frozen=True)
class _Capture:
    categories: tuple[type[Warning], ...]
    store: list[CapturedWarning]


_captures: contextvars.ContextVar[tuple[_Capture, ...]] = contextvars.ContextVar(
    "snorkel_structured_warning_captures", default=()
)


def warn(
    message: str, category: type[Warning] = UserWarning, stacklevel: int = 1
) -> None:
    """``warnings.warn`` for the library's warnings, unless a :func:`captured` takes it.

    ``stacklevel`` counts as in ``warnings.warn`` from the caller's frame.
    """
    for capture in reversed(_captures.get()):
        if issubclass(category, capture.categories):
            capture.store.append(CapturedWarning(str(message), category))
            return
    warnings.warn(message, category, stacklevel=stacklevel + 1)


@contextlib.contextmanager
def captured(
    *categories: type[Warning],
) -> Iterator[list[CapturedWarning]]:
    """Capture the library's warnings of ``categories`` (default: all) in this thread.

    Yields the list the captured warnings are appended to, in order. Warnings of other
    categories, other threads' warnings and warnings from other libraries are not
    touched.
    """
    store: list[CapturedWarning] = []
    token = _captures.set(
        _captures.get() + (_Capture(tuple(categories) or (Warning,), store),)
    )
    try:
        yield store
    finally:
        _captures.reset(token)
