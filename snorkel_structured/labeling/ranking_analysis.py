"""LF analysis for ranking votes: coverage, overlaps, conflicts and accuracy in item pairs.

``RankingLFAnalysis`` is the ``LFAnalysis`` of the ranking LFs
(:mod:`snorkel_structured.labeling.rankings`), as ``StructuredLFAnalysis``
(:mod:`snorkel_structured.labeling.analysis`) is for finite label spaces and
manifolds. A ranking vote orders some of a row's item pairs, so each statistic counts
(row, item pair) instances of the votes' pairwise form, built chunk by chunk of rows
so that memory stays bounded however long the lists.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from snorkel_structured._validation import check_scalar
from snorkel_structured.labeling.analysis import lf_names, warn_silent
from snorkel_structured.rankings._votes import (
    check_orderings,
    check_votes,
    n_pairs,
    vote_positions,
)

__all__ = ["RankingLFAnalysis"]

# Entries (LF, pair, row) of the pairwise form built at once by RankingLFAnalysis:
# about 4M, so a chunk's few float32 temporaries take ~16 MB each whatever the input.
_CHUNK_ENTRIES = 1 << 22
# Sums of at most this many values in {-1, 0, 1} are exact in float32.
_EXACT_FLOAT32 = 1 << 24


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
        When an LF never voted in ``V`` (zero coverage), naming it; when no LF voted,
        saying so.

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
        if lfs is not None and not isinstance(lfs, str):
            lfs = list(lfs)  # read twice: names, then declared sizes
        self.lf_names = lf_names(lfs, m, "V")
        for name, lf in zip(self.lf_names, lfs or [], strict=False):
            declared = getattr(lf, "n_items", None)
            if declared is not None and declared != n_items:
                raise ValueError(
                    f"Labeling function {name!r} ranks n_items={declared} "
                    f"items but V has {n_items} per row."
                )
        if chunk_size is None:
            chunk_size = max(1, _CHUNK_ENTRIES // (m * n_pairs(n_items)))
        self.chunk_size = check_scalar(chunk_size, "chunk_size", kind="int", low=1)
        self._lengths = (self.V >= 0).sum(axis=2)  # (n_rows, n_lfs) list lengths
        self._votes = self._lengths > 0
        self._counts: dict[str, np.ndarray] | None = None
        warn_silent(
            self._votes,
            name="V",
            lf_names=self.lf_names if lfs is not None else None,
            stacklevel=2,
        )

    # -- counts over (row, pair) instances, chunk by chunk ------------------------------
    def _pair_counts(self, Y: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Per-LF counts (n_lfs,) of ordered, overlapped, conflicted (and correct) pairs;
        the pass without ``Y`` (cached) also sums ``agree`` (s_a s_b) and ``both``
        (|s_a s_b|) over instances, (n_lfs, n_lfs) each, for :meth:`pair_agreement`.

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
        agree, both = np.zeros((m, m)), np.zeros((m, m))
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
            if Y is None:  # the cached pass: pair_agreement reads it
                agree += S @ S.T  # exact: at most 2**24 instances per chunk
                both += A @ A.T
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
        if Y is None:
            self._counts = dict(counts, agree=agree, both=both)
            return self._counts
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

    def pair_agreement(self) -> pd.DataFrame:
        """How alike each two LFs order the pairs they both order, as a DataFrame.

        Entry ``(a, b)`` is the mean of ``s_a s_b`` over the (row, pair) instances
        both LFs order, with ``s = +1`` for "i before j" and ``-1`` for "j before i":
        ``2 x (fraction ordered alike) - 1``, 0 for LFs that agree no more than
        random orderings, 1 on the diagonal. NaN where the two LFs order no common
        pair. The label models read LF accuracies from this table: independent LFs
        give ``mu_a mu_b`` off the diagonal, and a pair far above that shares a
        source (:class:`~snorkel_structured.RankingLabelModel`'s
        ``dependencies_``, ``overagreeing_triplets_``).

        Returns
        -------
        agreement : pandas.DataFrame of shape (n_lfs, n_lfs)
            Indexed and labeled by LF name.
        """
        c = self._pair_counts()
        table = self._ratio(c["agree"], c["both"])
        return pd.DataFrame(table, index=self.lf_names, columns=self.lf_names)

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
