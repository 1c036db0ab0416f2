"""Exceptions and warnings raised by snorkel_structured.

``NotFittedError`` subclasses scikit-learn's, and importing scikit-learn takes about a
second; the class is therefore built on first access (PEP 562 module ``__getattr__``),
so that importing this module (every module of the library does) stays cheap.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

__all__ = [
    "ConvergenceWarning",
    "IdentifiabilityWarning",
    "IllConditionedWarning",
    "NotFittedError",
]

_NOT_FITTED_DOC = """Raised when a method that needs fitted state is called before ``fit``.

    A subclass of scikit-learn's ``NotFittedError`` (itself a ``ValueError`` and an
    ``AttributeError``), so ``except sklearn.exceptions.NotFittedError`` catches it.
    """
# Two threads reaching the class at once must get the same class (except clauses and
# isinstance compare classes by identity).
_LOCK = threading.Lock()


def _build_not_fitted_error() -> type:
    from sklearn.exceptions import NotFittedError as _SklearnNotFittedError

    class NotFittedError(_SklearnNotFittedError):
        __doc__ = _NOT_FITTED_DOC

    # Pickle finds the class as snorkel_structured.exceptions.NotFittedError.
    NotFittedError.__qualname__ = "NotFittedError"
    return NotFittedError


def __getattr__(name: str) -> Any:
    if name != "NotFittedError":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    with _LOCK:
        cls = globals().get("NotFittedError")
        if cls is None:
            cls = globals()["NotFittedError"] = _build_not_fitted_error()
    return cls


if TYPE_CHECKING:
    from sklearn.exceptions import NotFittedError as _SklearnNotFittedError

    class NotFittedError(_SklearnNotFittedError):
        """Raised when a method that needs fitted state is called before ``fit``."""


class ConvergenceWarning(UserWarning):
    """An iterative solver stopped before reaching its tolerance."""


class IdentifiabilityWarning(UserWarning):
    """The data do not determine the parameters (e.g. a labeling function is pure noise)."""


class IllConditionedWarning(UserWarning):
    """A matrix the result depends on is ill-conditioned (e.g. a noise matrix Q to invert)."""
