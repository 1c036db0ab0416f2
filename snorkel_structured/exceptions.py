"""Exceptions and warnings raised by snorkel_structured."""

from __future__ import annotations

from sklearn.exceptions import NotFittedError as _SklearnNotFittedError

__all__ = [
    "ConvergenceWarning",
    "IdentifiabilityWarning",
    "IllConditionedWarning",
    "NotFittedError",
]


class NotFittedError(_SklearnNotFittedError):
    """Raised when a method that needs fitted state is called before ``fit``.

    A subclass of scikit-learn's ``NotFittedError`` (itself a ``ValueError`` and an
    ``AttributeError``), so ``except sklearn.exceptions.NotFittedError`` catches it.
    """


class ConvergenceWarning(UserWarning):
    """An iterative solver stopped before reaching its tolerance."""


class IdentifiabilityWarning(UserWarning):
    """The data do not determine the parameters (e.g. a labeling function is pure noise)."""


class IllConditionedWarning(UserWarning):
    """A matrix the result depends on is ill-conditioned (e.g. a noise matrix Q to invert)."""
