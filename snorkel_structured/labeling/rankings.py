"""Labeling functions whose votes are rankings of a row's items, their appliers and analysis.

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
integer per vote. :class:`RankingLFAnalysis` is their ``LFAnalysis``: coverage,
overlaps, conflicts and accuracy counted over item pairs.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from snorkel.labeling.apply.core import ApplierMetadata

from snorkel_structured._validation import check_scalar, warn_silent_lfs
from snorkel_structured.labeling._appliers import (
    ArrayLabelingFunction,
    ArrayLFApplier,
    pandas_to_dask,
    with_meta,
)
from snorkel_structured.labeling._common import LFDecorator, fill_doc, short_repr
from snorkel_structured.rankings._votes import (
    check_orderings,
    check_votes,
    n_pairs,
    pairwise_votes,
    vote_positions,
)

__all__ = [
    "RankingDaskApplier",
    "RankingLFAnalysis",
    "RankingLabelingFunction",
    "RankingPandasApplier",
    "RankingPandasParallelApplier",
    "ranking_labeling_function",
]

# Entries (LF, pair, row) of the pairwise form built at once by RankingLFAnalysis:
# about 4M, so a chunk's few float32 temporaries take ~16 MB each whatever the input.
_CHUNK_ENTRIES = 1 << 22
# Sums of at most this many values in {-1, 0, 1} are exact in float32.
_EXACT_FLOAT32 = 1 << 24


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


def _pair_signs(pos: np.ndarray) -> np.ndarray:
    """``sign(pos[..., j, :] - pos[..., i, :])`` over the pairs of ``pair_index``.

    ``pos`` (float, shape (..., n_items, n_rows)) holds integer positions, items on
    the second-to-last axis; the result has shape (..., n_pairs, n_rows). The pairs
    of item ``i`` are contiguous in ``numpy.triu_indices`` order, so one block
    difference per item replaces two gathers of every pair.
    """
    n_items = pos.shape[-2]
    out = np.empty(pos.shape[:-2] + (n_pairs(n_items), pos.shape[-1]), dtype=pos.dtype)
    offset = 0
    for i in range(n_items - 1):
        width = n_items - 1 - i
        np.subtract(
            pos[..., i + 1 :, :],
            pos[..., i : i + 1, :],
            out=out[..., offset : offset + width, :],
        )
        offset += width
    return np.clip(out, -1, 1, out=out)  # integer differences: clip is the sign


def _row_dots(M: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``M @ w`` for a short, wide ``M``, one dot product per row.

    A matrix-vector product of a few very long rows is slow in multithreaded BLAS;
    one vector dot per row is not.
    """
    return np.array([np.dot(row, w) for row in M], dtype=np.float64)


class RankingLFAnalysis:
    """Per-LF summaries of ranking votes, counted over item pairs.

    A ranking vote orders some of a row's item pairs: with a top-k list, every pair
    with at least one listed item (see :mod:`snorkel_structured.rankings`). The
    analysis counts *instances*, one per (row, item pair), in the pairwise form of the
    votes, built chunk by chunk of rows so that memory stays bounded.

    Parameters
    ----------
    V : array-like of int of shape (n_rows, n_lfs, n_items)
        Orderings of item ids, best first, padded with -1 (the output of
        :class:`RankingPandasApplier`).
    lfs : list of labeling functions, optional
        Used for their names (the summary's index); when they declare ``n_items`` it
        must match ``V``.
    chunk_size : int, optional
        Rows per chunk of the pairwise form; by default about 4 million (LF, pair,
        row) entries per chunk. Chunks never exceed ``2**24 / n_pairs`` rows.

    Attributes
    ----------
    V : ndarray of int64
        The validated votes (the input itself when already an int64 array).
    n_items : int
    lf_names : list of str
        LF names, or ``"lf_0", "lf_1", ...`` when ``lfs`` is not given.

    Raises
    ------
    ValueError
        If ``V`` is not a valid vote array (ids out of range, repeats, -1 before an
        id, no rows), or ``lfs`` does not match it.

    Warns
    -----
    IdentifiabilityWarning
        When an LF never voted in ``V`` (zero coverage), naming it.

    See Also
    --------
    StructuredLFAnalysis : the same for finite label spaces and manifolds.
    snorkel.labeling.LFAnalysis : Snorkel's analysis for categorical labels.

    Notes
    -----
    For LF ``a``, with ``n_a`` the number of (row, pair) instances it orders:
    ``Pair coverage`` is ``n_a / (n_rows n_pairs)``; ``Pair overlaps`` the fraction
    of its ``n_a`` instances that at least one other LF also orders; ``Pair
    conflicts`` the fraction that at least one other LF orders the opposite way; and,
    against true orderings, ``Pair accuracy`` the fraction that agrees with the
    truth. Fractions over ``n_a`` are NaN for an LF that orders nothing.

    Examples
    --------
    >>> import numpy as np
    >>> from snorkel_structured.labeling import RankingLFAnalysis
    >>> V = np.array([[[0, 1, 2], [2, -1, -1]],
    ...               [[1, 0, 2], [-1, -1, -1]]])
    >>> a = RankingLFAnalysis(V)
    >>> a.pair_coverage().tolist()  # lf_1 orders (0, 2) and (1, 2) of row 0
    [1.0, 0.3333333333333333]
    >>> a.pair_conflicts().tolist()  # both pairs conflict with lf_0
    [0.3333333333333333, 1.0]
    """

    def __init__(
        self,
        V: Any,
        lfs: Sequence[Any] | None = None,
        *,
        chunk_size: int | None = None,
    ) -> None:
        self.V = check_votes(V)
        n_rows, m, n_items = self.V.shape
        if n_rows == 0:
            raise ValueError("V has no rows; apply the LFs to a non-empty DataFrame.")
        self.n_items = n_items
        if lfs is not None:
            lfs = list(lfs)
            if len(lfs) != m:
                raise ValueError(
                    f"lfs has {len(lfs)} labeling functions but V has {m}; pass the "
                    "LFs in the order they were applied."
                )
            for lf in lfs:
                declared = getattr(lf, "n_items", None)
                if declared is not None and declared != n_items:
                    raise ValueError(
                        f"Labeling function {lf.name!r} ranks n_items={declared} "
                        f"items but V has {n_items} per row."
                    )
            self.lf_names = [lf.name for lf in lfs]
        else:
            self.lf_names = [f"lf_{j}" for j in range(m)]
        if chunk_size is None:
            chunk_size = max(1, _CHUNK_ENTRIES // (m * n_pairs(n_items)))
        self.chunk_size = check_scalar(chunk_size, "chunk_size", kind="int", low=1)
        self._lengths = (self.V >= 0).sum(axis=2)  # (n_rows, n_lfs) list lengths
        self._votes = self._lengths > 0
        self._counts: dict[str, np.ndarray] | None = None
        warn_silent_lfs(
            self._votes.sum(axis=0),
            n_samples=n_rows,
            name="V",
            lf_names=self.lf_names if lfs is not None else None,
            stacklevel=2,
        )

    # -- counts over (row, pair) instances, chunk by chunk ------------------------------
    def _pair_counts(self, Y: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Per-LF counts (n_lfs,) of ordered, overlapped, conflicted (and correct) pairs.

        Each chunk's pairwise form is held as float32 of shape (n_lfs, n_pairs * rows)
        so that the per-LF counts are dot products (BLAS), exact while a chunk has at
        most 2**24 instances per LF.
        """
        if Y is None and self._counts is not None:
            return self._counts
        n_rows, m, n_items = self.V.shape
        P = n_pairs(n_items)
        rows = max(1, min(self.chunk_size, _EXACT_FLOAT32 // P))
        dtype = np.float32 if rows * P <= _EXACT_FLOAT32 else np.float64
        sums = np.zeros((4, m))  # ordered, overlapped, conflicted, correct
        for start in range(0, n_rows, rows):
            pos = vote_positions(self.V[start : start + rows])  # (c, m, n_items)
            pos = np.ascontiguousarray(pos.transpose(1, 2, 0), dtype=dtype)
            S = _pair_signs(pos).reshape(m, -1)  # (m, P * c)
            del pos
            A = np.abs(S)  # 1 where the LF orders the pair
            n_ordered = A.sum(axis=0)  # LFs ordering each (row, pair)
            net = S.sum(axis=0)  # (LFs putting i first) - (LFs putting j first)
            some_after = ((n_ordered - net) > 0.5).astype(dtype)  # j before i
            some_before = ((n_ordered + net) > 0.5).astype(dtype)  # i before j
            n_a = A.sum(axis=1, dtype=np.float64)
            sums[0] += n_a
            sums[1] += _row_dots(A, (n_ordered > 1.5).astype(dtype))
            # [S > 0] = (A + S) / 2 conflicts where some LF puts j first, and
            # [S < 0] = (A - S) / 2 where some LF puts i first.
            sums[2] += (
                _row_dots(A, some_after + some_before)
                + _row_dots(S, some_after - some_before)
            ) / 2
            if Y is not None:
                y_pos = vote_positions(Y[start : start + rows])  # (c, n_items)
                y_pos = np.ascontiguousarray(y_pos.T, dtype=dtype)
                truth = _pair_signs(y_pos).ravel()  # a full ordering: never 0
                # on an ordered pair, [S == truth] = (1 + S truth) / 2
                sums[3] += (n_a + _row_dots(S, truth)) / 2
        ordered, overlapped, conflicted, correct = np.rint(sums).astype(np.int64)
        counts = {
            "ordered": ordered,
            "overlapped": overlapped,
            "conflicted": conflicted,
        }
        if self._counts is None:
            self._counts = dict(counts)
        if Y is not None:
            counts["correct"] = correct
        return counts

    @staticmethod
    def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(den > 0, num / np.maximum(den, 1), np.nan)

    def _check_gold(self, Y: Any) -> np.ndarray:
        Y = check_orderings(Y, self.n_items)
        if Y.shape[0] != self.V.shape[0]:
            raise ValueError(
                f"Y must have {self.V.shape[0]} rows, one per row of V; got "
                f"{Y.shape[0]}."
            )
        return Y

    # -- per-LF statistics --------------------------------------------------------------
    def lf_coverages(self) -> np.ndarray:
        """Fraction of rows each LF votes on (lists at least one item), shape (n_lfs,)."""
        return self._votes.mean(axis=0)

    def mean_list_lengths(self) -> np.ndarray:
        """Mean number of items each LF lists, over the rows it votes on (n_lfs,).

        NaN for an LF that never votes.
        """
        return self._ratio(self._lengths.sum(axis=0), self._votes.sum(axis=0))

    def pair_coverage(self) -> np.ndarray:
        """Fraction of all (row, pair) instances each LF orders, shape (n_lfs,)."""
        n_rows, _, n_items = self.V.shape
        return self._pair_counts()["ordered"] / (n_rows * n_pairs(n_items))

    def pair_overlaps(self) -> np.ndarray:
        """Fraction of the instances each LF orders that another LF orders too (n_lfs,).

        NaN for an LF that orders no pair.
        """
        c = self._pair_counts()
        return self._ratio(c["overlapped"], c["ordered"])

    def pair_conflicts(self) -> np.ndarray:
        """Fraction of the instances each LF orders that another LF orders oppositely.

        Returns
        -------
        conflicts : ndarray of shape (n_lfs,)
            NaN for an LF that orders no pair.
        """
        c = self._pair_counts()
        return self._ratio(c["conflicted"], c["ordered"])

    def pair_accuracy(self, Y: Any) -> np.ndarray:
        """Fraction of the pairs each LF orders that agree with true orderings ``Y``.

        Parameters
        ----------
        Y : array-like of int of shape (n_rows, n_items)
            Each row's true full ordering (item ids, best first).

        Returns
        -------
        accuracy : ndarray of shape (n_lfs,)
            NaN for an LF that orders no pair.
        """
        c = self._pair_counts(self._check_gold(Y))
        return self._ratio(c["correct"], c["ordered"])

    def lf_summary(self, Y: Any = None) -> pd.DataFrame:
        """Per-LF statistics as a DataFrame indexed by LF name.

        Parameters
        ----------
        Y : array-like of int of shape (n_rows, n_items), optional
            True full orderings of a development set's items; adds accuracy columns.

        Returns
        -------
        summary : pandas.DataFrame
            Columns ``j``, ``Mean list length`` (over the rows the LF votes on),
            ``Coverage`` (fraction of rows), ``Pair coverage``, ``Pair overlaps``,
            ``Pair conflicts`` (see the class notes); with ``Y``: ``Pairs correct``,
            ``Pairs incorrect`` (counts of ordered (row, pair) instances) and
            ``Pair accuracy``.
        """
        names = self.lf_names
        n_rows, m, n_items = self.V.shape
        c = self._pair_counts(None if Y is None else self._check_gold(Y))
        d: dict[str, Any] = {
            "j": np.arange(m),
            "Mean list length": self.mean_list_lengths(),
            "Coverage": self.lf_coverages(),
            "Pair coverage": c["ordered"] / (n_rows * n_pairs(n_items)),
            "Pair overlaps": self._ratio(c["overlapped"], c["ordered"]),
            "Pair conflicts": self._ratio(c["conflicted"], c["ordered"]),
        }
        if Y is not None:
            d["Pairs correct"] = c["correct"]
            d["Pairs incorrect"] = c["ordered"] - c["correct"]
            d["Pair accuracy"] = self._ratio(c["correct"], c["ordered"])
        return pd.DataFrame(d, index=pd.Index(names, name=None))
