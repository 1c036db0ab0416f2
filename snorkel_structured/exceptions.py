"""Exceptions and warnings raised by snorkel_structured."""

from __future__ import annotations

__all__ = [
    "ConvergenceWarning",
    "IdentifiabilityWarning",
    "IllConditionedWarning",
    "NotFittedError",
]


class NotFittedError(ValueError, AttributeError):
    """Raised when a method that needs fitted state is called before ``fit``.

    Subclasses both ``ValueError`` and ``AttributeError`` so that ``except`` clauses
    written for scikit-learn's ``NotFittedError`` keep working.
    """


class ConvergenceWarning(UserWarning):
    """An iterative solver stopped before reaching its tolerance."""


class IdentifiabilityWarning(UserWarning):
    """The data do not determine the parameters (e.g. a labeling function is pure noise)."""


class IllConditionedWarning(UserWarning):
    """A matrix the result depends on is ill-conditioned (e.g. a noise matrix Q to invert)."""
