"""Structured labeling functions for finite label spaces, as Snorkel LabelingFunctions.

A structured LF returns an *item* of a finite label space (a ranking, a tree node, a
class) or ``None`` to abstain. The decorator wraps it into a real
``snorkel.labeling.LabelingFunction`` that emits the item's index (``None`` -> -1), so
Snorkel's ``PandasLFApplier``, ``DaskLFApplier``, ``PandasParallelLFApplier`` and
``LFAnalysis`` work unchanged on the result.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from snorkel.labeling import LabelingFunction

from snorkel_structured._validation import ABSTAIN
from snorkel_structured.labeling._common import (
    SpaceLFDecorator,
    describe_row,
    fill_doc,
    short_repr,
)

__all__ = ["StructuredLabelingFunction", "structured_labeling_function"]


def _holds_bool(value: Any) -> bool:
    """Whether ``value`` is a bool or a tuple or list holding one (at any depth)."""
    if isinstance(value, (bool, np.bool_)):
        return True
    return isinstance(value, (tuple, list)) and any(_holds_bool(v) for v in value)


def _check_finite_space(space: Any) -> None:
    if not (
        hasattr(space, "index")
        and hasattr(space, "items")
        and hasattr(space, "__len__")
    ):
        raise TypeError(
            "space must be a finite label space (FiniteMetricSpace, Permutations, "
            f"Discrete, GraphSpace); got {type(space).__name__}. For points on a "
            "manifold use manifold_labeling_function."
        )


@fill_doc()
class StructuredLabelingFunction(LabelingFunction):
    """A Snorkel ``LabelingFunction`` whose function returns an item of a finite space.

    Calling it runs Snorkel's preprocessors, then ``f``, then encodes the returned item
    as its index in ``space`` (``None`` becomes ``ABSTAIN == -1``). Because it *is* a
    ``snorkel.labeling.LabelingFunction``, every Snorkel applier and ``LFAnalysis``
    accepts it.

    Parameters
    ----------
    %(lf_name)s
    f : callable
        ``f(x, **resources)`` returning an item of ``space`` or ``None``.
    space : FiniteMetricSpace
        The label space (``Permutations``, ``GraphSpace``, ``Discrete``, ...).
    %(lf_resources_pre)s

    Attributes
    ----------
    name : str
    space : FiniteMetricSpace

    Raises
    ------
    ValueError
        When ``f`` returns something that is not an item of ``space`` (the message
        names the LF, the row and the value), including a bool (or a tuple holding
        one) standing for an item that is not a bool: ``True == 1`` would otherwise
        find item 1. Snorkel's appliers would otherwise cast floats to int and treat
        negative numbers as abstains without a word.

    See Also
    --------
    structured_labeling_function : the decorator that builds these.
    """

    def __init__(
        self,
        name: str,
        f: Callable[..., Any],
        *,
        space: Any,
        resources: Mapping[str, Any] | None = None,
        pre: Sequence[Any] | None = None,
    ) -> None:
        _check_finite_space(space)
        super().__init__(
            name=name,
            f=f,
            resources=resources,
            pre=list(pre) if pre is not None else None,
        )
        self.space = space

    def __call__(self, x: Any) -> int:
        """Label data point ``x``: the index of the returned item, or -1 to abstain."""
        item = super().__call__(x)
        if item is None:
            return ABSTAIN
        try:
            index = int(self.space.index(item))
        except (ValueError, TypeError, KeyError):
            hint = ""
            if isinstance(item, (int, float)) and item == ABSTAIN:
                hint = " Return None (not -1) to abstain."
            raise self._not_an_item(x, item, hint) from None
        # True == 1 hashes alike, so index() maps True to item 1 and (True, False, 2)
        # to (1, 0, 2); a bool is an item only of a space whose item holds one too
        # (as the ranking LF refuses bools as item ids).
        if _holds_bool(item) and not _holds_bool(self.space.item(index)):
            raise self._not_an_item(
                x,
                item,
                " A bool is not an item of this space (True would be read as 1); return the item itself.",
            )
        return index

    def _not_an_item(self, x: Any, item: Any, hint: str) -> ValueError:
        return ValueError(
            f"Labeling function {self.name!r} returned {short_repr(item)} for "
            f"{describe_row(x)}, which is not an item of {self.space!r}. Return an "
            f"item of the space (e.g. {short_repr(self.space.item(0))}) or None to "
            f"abstain.{hint}"
        )

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__} {self.name}, Space: {self.space!r}, "
            f"Preprocessors: {self._pre}"
        )


@fill_doc(lf="StructuredLabelingFunction", decorator="structured_labeling_function")
class structured_labeling_function(SpaceLFDecorator):
    """Decorator turning a function that returns label-space items into a Snorkel LF.

    Mirrors ``snorkel.labeling.labeling_function``, with the label space as an extra
    keyword. The decorated function takes a data point (a pandas row for
    ``PandasLFApplier``) and returns an item of ``space`` or ``None`` to abstain.

    Parameters
    ----------
    space : FiniteMetricSpace
        The label space whose items the function returns.
    %(decorator_options)s

    %(decorator_returns)s

    See Also
    --------
    manifold_labeling_function : the same for points on a manifold.

    Examples
    --------
    >>> import pandas as pd
    >>> import snorkel_structured as ss
    >>> from snorkel.labeling import PandasLFApplier
    >>> space = ss.Permutations(n_items=3)
    >>> @ss.structured_labeling_function(space=space)
    ... def by_score(x):
    ...     if not x["ok"]:
    ...         return None
    ...     return space.from_scores(x["scores"])  # highest score first
    >>> df = pd.DataFrame({"scores": [[3, 1, 2], [1, 2, 3]], "ok": [True, False]})
    >>> PandasLFApplier([by_score]).apply(df, progress_bar=False).tolist()
    [[1], [-1]]
    >>> space.item(1)
    (0, 2, 1)
    """

    decorator_name = "structured_labeling_function"
    space_attribute = "index"
    example_space = "ss.Permutations(n_items=4)"

    def _check_space(self, space: Any) -> None:
        _check_finite_space(space)

    def _make_lf(self, **kwargs: Any) -> StructuredLabelingFunction:
        return StructuredLabelingFunction(**kwargs)
