"""Labeling functions whose votes are rankings of a row's items, and their appliers.

A ranking LF returns an ordering of a data point's items, given as row-local item ids
``0..n_items-1``, best first. It may stop early (a *top-k list*: the items it does not
list come after all listed ones, unordered among themselves), and it abstains with
``None`` or an empty list. Appliers run a list of such LFs over a pandas or Dask
DataFrame and return the vote array of :mod:`snorkel_structured.rankings`: int64 of
shape ``(n_rows, n_lfs, n_items)``, each vote padded with -1 after its last listed item
(an abstain is all -1). Nothing here enumerates the n! rankings, so ``n_items`` can be
in the hundreds.

Like the manifold LFs (:mod:`snorkel_structured.labeling.manifold`), these follow the
call pattern of Snorkel's ``LabelingFunction`` (preprocessors, resources, fault
tolerance, ``ApplierMetadata``) without being one, since Snorkel's appliers collect one
integer per vote. Their ``LFAnalysis``, :class:`RankingLFAnalysis` (coverage, overlaps,
conflicts and accuracy counted over item pairs), lives in
:mod:`snorkel_structured.labeling.ranking_analysis` and is importable from here too.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from snorkel.labeling.apply.core import ApplierMetadata

from snorkel_structured._validation import check_scalar
from snorkel_structured.labeling._appliers import (
    ArrayLabelingFunction,
    ArrayLFApplier,
    pandas_to_dask,
    with_meta,
)
from snorkel_structured.labeling._common import LFDecorator, fill_doc, short_repr
from snorkel_structured.labeling.ranking_analysis import RankingLFAnalysis
from snorkel_structured.rankings._votes import pairwise_votes

__all__ = [
    "RankingDaskApplier",
    "RankingLFAnalysis",
    "RankingLabelingFunction",
    "RankingPandasApplier",
    "RankingPandasParallelApplier",
    "ranking_labeling_function",
]


def _check_n_items(n_items: Any) -> int:
    return check_scalar(n_items, "n_items", kind="int", low=2)


def _is_integer_id(v: Any) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_))


@fill_doc()
class RankingLabelingFunction(ArrayLabelingFunction):
    """A labeling function that votes an ordering of a row's items (or abstains).

    Calling it runs the preprocessors, then ``f``, then checks the output: a sequence
    (list, tuple, 1-D integer array) of distinct item ids in ``0..n_items-1``, best
    first. It may be shorter than ``n_items`` (a top-k list). ``None`` or an empty
    sequence is an abstain. Anything else raises an error naming the LF, the row and
    the value.

    Parameters
    ----------
    %(lf_name)s
    f : callable
        ``f(x, **resources)`` returning a sequence of item ids or ``None``.
    n_items : int, optional
        Number of items per row (at least 2). When omitted, the applier's ``n_items``
        bounds the ids; calling the LF directly then checks only that the ids are
        distinct non-negative integers.
    %(lf_resources_pre)s

    Attributes
    ----------
    name : str
    n_items : int or None

    Raises
    ------
    ValueError
        On calling, when the output is not a sequence of integers (a set, a string, a
        scalar, floats, a nested list), repeats an item, or holds an id outside
        ``0..n_items-1``.

    See Also
    --------
    ranking_labeling_function : the decorator that builds these.
    RankingPandasApplier, RankingDaskApplier : apply a list of them to a DataFrame.
    """

    _apply_with = (
        "ranking LFs with RankingPandasApplier(lfs).apply(df, n_items=...) (or "
        "RankingDaskApplier), which returns an (n_rows, n_lfs, n_items) array of item "
        "ids padded with -1"
    )

    def __init__(
        self,
        name: str,
        f: Callable[..., Any],
        *,
        n_items: int | None = None,
        resources: Mapping[str, Any] | None = None,
        pre: Sequence[Any] | None = None,
    ) -> None:
        super().__init__(name, f, resources, pre)
        self.n_items = None if n_items is None else _check_n_items(n_items)

    def _votes(self) -> str:
        return "rankings (lists of item ids)"

    def _repr_detail(self) -> str:
        return f"n_items: {self.n_items}"

    def _error(
        self, x: Any, value: Any, problem: str, n_items: int | None
    ) -> ValueError:
        ids = "0..n_items-1" if n_items is None else f"0..{n_items - 1}"
        return self._output_error(
            x,
            value,
            problem,
            f"Return a list of distinct item ids in {ids}, best first (a top-k list "
            "may stop early), or None (or []) to abstain.",
        )

    def _vote(self, x: Any, n_items: int | None) -> np.ndarray | None:
        """Run the LF on ``x`` and check its ordering against ``n_items`` ids."""
        value = self._run(x)
        if value is None:
            return None
        if isinstance(value, (str, bytes, set, frozenset, Mapping)) or not isinstance(
            value, (Sequence, np.ndarray, pd.Series, pd.Index)
        ):
            problem = f"expected a list of item ids, got a {type(value).__name__}"
            if isinstance(value, (set, frozenset)):
                problem += " (a set has no order)"
            raise self._error(x, value, problem, n_items)
        if isinstance(value, (np.ndarray, pd.Series, pd.Index)):
            arr = np.asarray(value)
            if arr.ndim != 1:
                raise self._error(
                    x, value, f"expected a flat list, got shape {arr.shape}", n_items
                )
            if arr.size and arr.dtype.kind not in "iu":
                raise self._error(
                    x,
                    value,
                    f"item ids must be integers, got dtype {arr.dtype}",
                    n_items,
                )
        else:
            for v in value:
                if not _is_integer_id(v):
                    raise self._error(
                        x,
                        value,
                        f"item ids must be integers, got {short_repr(v, 30)}",
                        n_items,
                    )
            arr = np.array(value, dtype=object)
        if arr.size == 0:
            return None
        low, high = arr.min(), arr.max()
        if low < 0:
            hint = " (do not pad with -1)" if low == -1 else ""
            raise self._error(
                x, value, f"item id {int(low)} is negative{hint}", n_items
            )
        if (n_items is not None and high >= n_items) or high > np.iinfo(np.int64).max:
            raise self._error(
                x,
                value,
                f"item id {int(high)} is out of range (n_items = {n_items})",
                n_items,
            )
        ids = arr.astype(np.int64)
        uniq, counts = np.unique(ids, return_counts=True)
        if uniq.size < ids.size:
            raise self._error(
                x, value, f"item {int(uniq[counts > 1][0])} is listed twice", n_items
            )
        return ids

    def __call__(self, x: Any) -> np.ndarray | None:
        """Label data point ``x``.

        Returns
        -------
        ordering : ndarray of int64 of shape (k,) or None
            The listed item ids, best first, or ``None`` when the LF abstains (it
            returned ``None`` or an empty sequence).
        """
        return self._vote(x, self.n_items)


@fill_doc(lf="RankingLabelingFunction", decorator="ranking_labeling_function")
class ranking_labeling_function(LFDecorator):
    """Decorator turning a function that returns orderings into a ranking LF.

    The ranking counterpart of ``snorkel.labeling.labeling_function``: the decorated
    function takes a data point (a pandas row) and returns the row's item ids, best
    first (``0..n_items-1``; a top-k list may stop early), or ``None`` (or ``[]``) to
    abstain.

    Parameters
    ----------
    %(decorator_options)s
    n_items : int, optional
        Number of items per row; otherwise given to the applier.

    %(decorator_returns)s

    See Also
    --------
    manifold_labeling_function, structured_labeling_function

    Examples
    --------
    >>> import pandas as pd
    >>> from snorkel_structured.labeling import (
    ...     RankingPandasApplier, ranking_labeling_function)
    >>> @ranking_labeling_function(n_items=3)
    ... def by_price(x):
    ...     prices = x["prices"]
    ...     return sorted(range(3), key=lambda i: prices[i])  # cheapest first
    >>> @ranking_labeling_function()
    ... def favourite(x):
    ...     return [x["favourite"]] if x["favourite"] >= 0 else None  # top-1
    >>> df = pd.DataFrame({"prices": [[3, 1, 2], [1, 2, 3]], "favourite": [2, -1]})
    >>> RankingPandasApplier([by_price, favourite]).apply(df)
    array([[[ 1,  2,  0],
            [ 2, -1, -1]],
    <BLANKLINE>
           [[ 0,  1,  2],
            [-1, -1, -1]]])
    """

    decorator_name = "ranking_labeling_function"

    def __init__(
        self,
        name: str | None = None,
        resources: Mapping[str, Any] | None = None,
        pre: Sequence[Any] | None = None,
        n_items: int | None = None,
    ) -> None:
        if callable(name):
            raise self._missing_parentheses(
                "@ranking_labeling_function() (or "
                "@ranking_labeling_function(n_items=...))"
            )
        super().__init__(name, resources, pre)
        self.n_items = None if n_items is None else _check_n_items(n_items)

    def _lf_options(self) -> dict[str, Any]:
        return {"n_items": self.n_items}

    def _make_lf(self, **kwargs: Any) -> RankingLabelingFunction:
        return RankingLabelingFunction(**kwargs)


def _finish(
    V: np.ndarray, faults: dict[str, int], return_meta: bool, pairwise: bool
) -> np.ndarray | tuple[np.ndarray, ApplierMetadata]:
    return with_meta(pairwise_votes(V) if pairwise else V, faults, return_meta)


class _BaseRankingApplier(ArrayLFApplier[RankingLabelingFunction]):
    """Checks and stores a list of ranking LFs that agree on ``n_items``."""

    _family = "Ranking"
    _lf_type = RankingLabelingFunction
    _lf_decorator = "@ranking_labeling_function()"
    _dtype = np.int64
    _fill_value = -1

    def _check_lfs(self, lfs: list[RankingLabelingFunction]) -> None:
        declared = [lf for lf in lfs if lf.n_items is not None]
        for lf in declared[1:]:
            if lf.n_items != declared[0].n_items:
                raise ValueError(
                    "All labeling functions must rank the same number of items; "
                    f"{declared[0].name!r} has n_items={declared[0].n_items} but "
                    f"{lf.name!r} has n_items={lf.n_items}."
                )
        self.n_items: int | None = declared[0].n_items if declared else None

    def _resolve_width(self, n_items: int | None) -> int:
        if n_items is None:
            if self.n_items is None:
                raise ValueError(
                    "n_items is unknown: pass apply(..., n_items=...) or declare it "
                    "on the labeling functions, @ranking_labeling_function(n_items=...)."
                )
            return self.n_items
        n_items = _check_n_items(n_items)
        if self.n_items is not None and n_items != self.n_items:
            raise ValueError(
                f"n_items={n_items} does not match the labeling functions' "
                f"n_items={self.n_items}."
            )
        return n_items


class RankingPandasApplier(_BaseRankingApplier):
    """Apply ranking labeling functions to a pandas DataFrame, row by row.

    Parameters
    ----------
    lfs : list of RankingLabelingFunction
        LFs with unique names and, where declared, the same ``n_items``.

    Attributes
    ----------
    n_items : int or None
        The number of items the LFs declare (``None`` if none does).

    See Also
    --------
    RankingDaskApplier : the same over a Dask DataFrame.
    snorkel_structured.rankings.pairwise_votes : the pairwise form of the result.
    """

    @fill_doc(vote="ordering")
    def apply(
        self,
        df: pd.DataFrame,
        n_items: int | None = None,
        progress_bar: bool = False,
        fault_tolerant: bool = False,
        return_meta: bool = False,
        pairwise: bool = False,
    ) -> np.ndarray | tuple[np.ndarray, ApplierMetadata]:
        """Label the rows of ``df``.

        Parameters
        ----------
        %(pandas_df)s
        n_items : int, optional
            Number of items per row (at least 2); defaults to the LFs' ``n_items``
            and must match it when both are given.
        progress_bar : bool, default=False
            Show a tqdm progress bar.
        %(pandas_faults)s
        pairwise : bool, default=False
            Return the pairwise form ``S`` (int8 of shape (n_rows, n_lfs, n_pairs),
            see :func:`~snorkel_structured.rankings.pairwise_votes`) instead of ``V``.

        Returns
        -------
        V : ndarray of int64 of shape (n_rows, n_lfs, n_items)
            Each LF's ordering of each row's items, best first, padded with -1; all
            -1 where the LF abstained (or faulted).
        %(pandas_meta)s
        """
        V, faults = self._label_pandas(df, n_items, fault_tolerant, progress_bar)
        return _finish(V, faults, return_meta, pairwise)


class RankingDaskApplier(_BaseRankingApplier):
    """Apply ranking labeling functions to a Dask DataFrame, partition by partition.

    Each partition is labeled by an independent task; the votes and fault counts are
    gathered and concatenated in partition order (as :class:`ManifoldDaskApplier`).

    Parameters
    ----------
    lfs : list of RankingLabelingFunction
        LFs with unique names and, where declared, the same ``n_items``.

    See Also
    --------
    RankingPandasApplier : the single-process pandas version.
    RankingPandasParallelApplier : split a pandas DataFrame and use Dask.
    """

    @fill_doc()
    def apply(
        self,
        df: Any,
        n_items: int | None = None,
        scheduler: Any = "processes",
        fault_tolerant: bool = False,
        return_meta: bool = False,
        pairwise: bool = False,
    ) -> np.ndarray | tuple[np.ndarray, ApplierMetadata]:
        """Label the rows of a Dask DataFrame.

        Parameters
        ----------
        %(dask_df)s
        n_items : int, optional
            Number of items per row; defaults to the LFs' ``n_items``.
        %(dask_options)s
        pairwise : bool, default=False
            Return the pairwise form ``S`` instead of ``V``.

        Returns
        -------
        V : ndarray of int64 of shape (n_rows, n_lfs, n_items)
            Orderings padded with -1 (see :meth:`RankingPandasApplier.apply`).
        %(dask_meta)s
        """
        V, faults = self._label_dask(df, n_items, scheduler, fault_tolerant)
        return _finish(V, faults, return_meta, pairwise)


class RankingPandasParallelApplier(RankingDaskApplier):
    """Apply ranking LFs to a pandas DataFrame in parallel by splitting it with Dask.

    See Also
    --------
    RankingDaskApplier
    """

    def apply(  # type: ignore[override]
        self,
        df: pd.DataFrame,
        n_items: int | None = None,
        n_parallel: int = 2,
        scheduler: Any = "processes",
        fault_tolerant: bool = False,
        return_meta: bool = False,
        pairwise: bool = False,
    ) -> np.ndarray | tuple[np.ndarray, ApplierMetadata]:
        """Label ``df`` in ``n_parallel`` Dask partitions (see RankingDaskApplier)."""
        return super().apply(
            pandas_to_dask(df, n_parallel),
            n_items=n_items,
            scheduler=scheduler,
            fault_tolerant=fault_tolerant,
            return_meta=return_meta,
            pairwise=pairwise,
        )
