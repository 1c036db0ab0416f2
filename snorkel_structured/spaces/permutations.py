"""The symmetric group S_n as a label space (rankings)."""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Hashable, Iterable
from typing import Any

import numpy as np

from snorkel_structured.spaces.finite import DENSE_MAX_LABELS, FiniteMetricSpace

__all__ = ["Permutations", "PERMUTATION_METRICS"]

PERMUTATION_METRICS = ("kendall_tau", "spearman_footrule", "cayley", "hamming")
_MAX_ITEMS = 8
# Pairs are processed in blocks so that intermediate arrays stay below ~64 MB.
_BLOCK_ELEMENTS = 8_000_000


def _cycle_counts(P: np.ndarray) -> np.ndarray:
    """Number of cycles of each permutation in ``P`` (..., n)."""
    n = P.shape[-1]
    ident = np.arange(n, dtype=P.dtype)
    cur = np.broadcast_to(ident, P.shape).copy()
    orbit_min = cur.copy()
    for _ in range(n - 1):  # n - 1 steps visit every element of every orbit
        cur = np.take_along_axis(P, cur, axis=-1)
        np.minimum(orbit_min, cur, out=orbit_min)
    return (orbit_min == ident).sum(axis=-1)


class Permutations(FiniteMetricSpace):
    """All orderings of ``n_items`` items (rankings), under a permutation metric.

    Items are tuples ``(p[0], ..., p[n-1])`` of the integers ``0 .. n-1`` in
    lexicographic order, so index 0 is the identity. A tuple is an **ordering**,
    best first: position ``k`` holds item ``p[k]``. Write ``pos_p(i)`` for the
    position of item ``i`` in ``p`` (the inverse permutation). Build orderings from
    per-item scores with :meth:`from_scores`.

    Parameters
    ----------
    n_items : int
        Number of ranked items, 2 to 8 (8 gives 40,320 labels).
    metric : {"kendall_tau", "spearman_footrule", "cayley", "hamming"}, default="kendall_tau"
        - ``kendall_tau``: number of item pairs ``{i, j}`` that ``p`` and ``q`` put in
          opposite order (the least number of swaps of adjacent positions);
        - ``spearman_footrule``: ``sum_i |pos_p(i) - pos_q(i)|`` over items ``i``;
        - ``cayley``: least number of transpositions taking ``p`` to ``q``,
          ``n - cycles(p^-1 q)``;
        - ``hamming``: number of positions ``k`` with ``p[k] != q[k]``.

    Attributes
    ----------
    permutations : ndarray of int64 of shape (n_labels, n_items), read-only
        Row ``y`` is the ordering with label index ``y``.

    Notes
    -----
    Kendall tau and the footrule compare where each *item* sits, so they are
    computed from the position arrays ``pos_p``; Hamming and Cayley give the same
    value under either reading of a tuple. Distances are computed in vectorized
    blocks: Kendall tau, the footrule and Hamming as inner products of feature
    vectors (signs of position differences of item pairs, indicators
    ``pos_p(i) > t``, one-hot (position, item)), Cayley by composing permutations
    and looking up ``n - cycles`` in a table. The full ``distance_matrix`` is built on first access;
    :meth:`dist` never needs it.

    Examples
    --------
    >>> import snorkel_structured as ss
    >>> space = ss.Permutations(n_items=3, metric="kendall_tau")
    >>> len(space), space.item(0)
    (6, (0, 1, 2))

    ``(0, 2, 1)`` and ``(1, 2, 0)`` are exact reverses of each other, so all three
    item pairs are in opposite order:

    >>> float(space.dist(space.index((0, 2, 1)), space.index((1, 2, 0))))
    3.0
    >>> space.from_scores([0.1, 0.7, 0.4])  # item 1 scores best, then 2, then 0
    (1, 2, 0)
    """

    def __init__(self, n_items: int, metric: str = "kendall_tau") -> None:
        if (
            not isinstance(n_items, (int, np.integer))
            or isinstance(n_items, bool)
            or not 2 <= n_items <= _MAX_ITEMS
        ):
            raise ValueError(
                f"n_items must be an int from 2 to {_MAX_ITEMS}; got {n_items!r}. Larger "
                "symmetric groups have too many labels to enumerate."
            )
        if metric not in PERMUTATION_METRICS:
            raise ValueError(
                f"metric must be one of {PERMUTATION_METRICS}; got {metric!r}."
            )
        self.n_items = int(n_items)
        self.metric = metric
        perms = np.array(
            list(itertools.permutations(range(self.n_items))), dtype=np.int64
        )
        perms.setflags(write=False)
        self.permutations = perms
        self._set_items(tuple(map(tuple, perms.tolist())))

    # -- items ------------------------------------------------------------------
    def _normalize_item(self, item: Any) -> Hashable:
        # Exact integers only: (1.5, 0, 2, 3) must not be truncated into a valid ranking.
        values = tuple(item)
        if not all(
            isinstance(x, (int, np.integer))
            or (isinstance(x, (float, np.floating)) and float(x).is_integer())
            for x in values
        ):
            raise TypeError(
                f"{item!r} is not a ranking of integers."
            )  # index() reports it
        return tuple(int(x) for x in values)

    def rank(self, perms: Any) -> np.ndarray:
        """Lexicographic indices of permutations given as an int array (..., n_items)."""
        P = np.asarray(perms)
        n = self.n_items
        if P.shape[-1:] != (n,) or P.dtype.kind not in "iu":
            raise ValueError(
                f"perms must be an integer array of shape (..., {n}); got shape "
                f"{P.shape} and dtype {P.dtype}."
            )
        if not (np.sort(P, axis=-1) == np.arange(n)).all():
            raise ValueError(f"every row of perms must be a permutation of 0..{n - 1}.")
        later_smaller = (P[..., :, None] > P[..., None, :]) & np.triu(
            np.ones((n, n), dtype=bool), 1
        )
        lehmer = later_smaller.sum(axis=-1)
        weights = np.array(
            [math.factorial(n - 1 - k) for k in range(n)], dtype=np.int64
        )
        return lehmer @ weights

    def encode(self, items: Iterable[Hashable | None]) -> np.ndarray:
        """Indices of rankings; a 2-D int array of rankings is ranked vectorized.

        ``None`` (in a list) becomes -1 (abstain).
        """
        if isinstance(items, np.ndarray) and items.ndim == 2:
            return self.rank(items).astype(np.int64)
        return super().encode(items)

    # -- orderings from scores ---------------------------------------------------
    def from_scores(
        self, scores: Any, descending: bool = True
    ) -> tuple[int, ...] | np.ndarray:
        """The ordering of the items by per-item scores, best first.

        Parameters
        ----------
        scores : array-like of float of shape (n_items,) or (n_rows, n_items)
            ``scores[..., i]`` is the score of item ``i``. NaN is not allowed (abstain
            before calling, e.g. return ``None`` from the labeling function).
        descending : bool, default=True
            True: the highest score comes first. False: the lowest score comes first
            (e.g. for costs or finishing times).

        Returns
        -------
        ordering : tuple of int of length n_items, or ndarray of int64 of shape (n_rows,)
            For 1-D ``scores``, the ordering itself (an item of the space: what a
            labeling function returns). For 2-D ``scores``, the label index of each
            row's ordering (what ``encode`` returns; ``decode`` gives the tuples).

        Raises
        ------
        ValueError
            If ``scores`` is not 1-D or 2-D with ``n_items`` entries per row, or holds
            NaN.
        TypeError
            If ``scores`` is not numeric or ``descending`` is not a bool.

        Notes
        -----
        Position ``k`` of the result holds the item with the (k+1)-th best score.
        Ties are broken by item index: of two items with equal scores the lower index
        comes first, in both directions (a stable sort).

        See Also
        --------
        encode : label indices of ordering tuples.
        decode : ordering tuples of label indices.

        Examples
        --------
        >>> import snorkel_structured as ss
        >>> space = ss.Permutations(n_items=4)
        >>> space.from_scores([0.2, 0.9, 0.5, 0.9])  # items 1 and 3 tie: 1 first
        (1, 3, 2, 0)
        >>> space.from_scores([0.2, 0.9, 0.5, 0.9], descending=False)
        (0, 2, 1, 3)
        >>> labels = space.from_scores([[0.2, 0.9, 0.5, 0.1], [4, 3, 2, 1]])
        >>> space.decode(labels)
        [(1, 2, 0, 3), (0, 1, 2, 3)]
        """
        if not isinstance(descending, (bool, np.bool_)):
            raise TypeError(f"descending must be a bool; got {descending!r}.")
        try:
            values = np.asarray(scores, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError(
                "scores must be numeric, one score per item; got a "
                f"{type(scores).__name__} that does not convert to float ({exc})."
            ) from None
        n = self.n_items
        if values.ndim not in (1, 2) or values.shape[-1] != n:
            raise ValueError(
                f"scores must have shape ({n},) or (n_rows, {n}), one score per item; "
                f"got shape {values.shape}."
            )
        nan = np.isnan(values)
        if nan.any():
            where = np.argwhere(nan)[0]
            at = f"item {where[-1]}" + (
                f" of row {where[0]}" if values.ndim == 2 else ""
            )
            raise ValueError(
                f"scores must not contain NaN; got NaN for {at}. Abstain (return "
                "None) on such rows, or fill the missing scores first."
            )
        # Negating keeps the sort stable, so ties keep item order in both directions.
        key = -values if descending else values
        order = np.argsort(key, axis=-1, kind="stable")
        if values.ndim == 1:
            return tuple(int(i) for i in order)
        return self.rank(order.astype(np.int64))

    # -- distances --------------------------------------------------------------
    @functools.cached_property
    def _positions(self) -> np.ndarray:
        """``pos[y, i]``: position of item ``i`` in ordering ``y`` (inverse permutation)."""
        # int8 (positions < 8): the pairwise paths of dist() move 8x fewer bytes.
        pos = np.argsort(self.permutations, axis=1).astype(np.int8)
        pos.setflags(write=False)
        return pos

    def _features(self, labels: np.ndarray) -> np.ndarray:
        """Feature rows (float64) of ``labels`` for the inner-product metrics.

        Kendall: ``sign(pos(i) - pos(j))`` for item pairs ``i < j``; the footrule:
        ``1[pos(i) > t]`` for ``t < n - 1``, since ``|a - b| = sum_t (1[a > t] -
        1[b > t])^2``; Hamming: one-hot of (position, item).
        """
        n = self.n_items
        if self.metric == "hamming":
            P = self.permutations[labels]
            return (P[:, :, None] == np.arange(n)).reshape(len(P), -1).astype(float)
        pos = self._positions[labels]
        if self.metric == "kendall_tau":
            i, j = np.triu_indices(n, 1)
            return np.sign(pos[:, i] - pos[:, j]).astype(np.float64)
        return (pos[:, :, None] > np.arange(n - 1)).reshape(len(pos), -1).astype(float)

    def _distance_rows(self, rows: np.ndarray) -> np.ndarray:
        """``D[rows, :]`` without the matrix, in row blocks of ~_BLOCK_ELEMENTS entries.

        Every intermediate is an integer below 2^53, so the float64 results are exact.
        """
        r, n = len(self), self.n_items
        out = np.empty((len(rows), r))
        step = max(1, _BLOCK_ELEMENTS // r)
        if self.metric == "cayley":
            # code(p^-1 q) = sum_k pos_p[q[k]] n^k = sum_i pos_p[i] n^(pos_q[i]): one
            # matmul (exact in float64, codes < 8^8), then a lookup of n - cycles.
            weights = (float(n) ** self._positions).T
            for start in range(0, len(rows), step):
                codes = self._positions[rows[start : start + step]] @ weights
                out[start : start + step] = self._cayley_table[codes.astype(np.int64)]
            return out
        F = self._features(np.arange(r))
        norms = F.sum(axis=1)
        for start in range(0, len(rows), step):  # each block fully vectorized
            block = rows[start : start + step]
            inner = F[block] @ F.T
            if self.metric == "kendall_tau":  # n_pairs - 2 * discordant = inner
                out[start : start + step] = (F.shape[1] - inner) / 2.0
            elif self.metric == "spearman_footrule":
                out[start : start + step] = norms[block, None] + norms - 2.0 * inner
            else:  # hamming: positions that agree = inner
                out[start : start + step] = n - inner
        return out

    @functools.cached_property
    def _cayley_table(self) -> np.ndarray:
        """n - cycles(p), indexed by the base-n code sum_k p[k] n^k."""
        n = self.n_items
        table = np.zeros(n**n, dtype=np.int8)
        table[self.permutations @ (n ** np.arange(n))] = n - _cycle_counts(
            self.permutations
        )
        return table

    def _compute_distance_matrix(self) -> np.ndarray:
        return self._distance_rows(np.arange(len(self)))

    def squared_distance_rows(self, indices: Any) -> np.ndarray:
        """Rows ``S[indices, :]`` of the squared distances, shape (len(indices), r).

        Small spaces (or ones whose matrix is already built) slice the matrix; larger
        ones (S7, S8) compute the rows in blocks of matrix products and never build
        the matrix.
        """
        idx = np.asarray(indices, dtype=np.int64).ravel()
        if len(self) <= DENSE_MAX_LABELS or "distance_matrix" in self.__dict__:
            return super().squared_distance_rows(idx)
        rows = self._distance_rows(idx)
        return np.square(rows, out=rows)

    def dist(self, i: Any, j: Any) -> np.ndarray:
        """Distance between label indices ``i`` and ``j`` (broadcast), without the matrix."""
        if "distance_matrix" in self.__dict__:
            return super().dist(i, j)
        i, j = np.broadcast_arrays(np.asarray(i), np.asarray(j))
        a, b = i.ravel(), j.ravel()
        n = self.n_items
        if self.metric == "cayley":
            # p^-1 q as an array, comp[k] = pos_p[q[k]]; n - cycles looked up by code
            comp = np.take_along_axis(self._positions[a], self.permutations[b], axis=1)
            out = self._cayley_table[comp.astype(np.int64) @ (n ** np.arange(n))]
        elif self.metric == "hamming":
            out = (self.permutations[a] != self.permutations[b]).sum(axis=1)
        else:
            pos_a, pos_b = self._positions[a], self._positions[b]
            if self.metric == "spearman_footrule":
                out = np.abs(pos_a - pos_b).sum(axis=1)
            else:  # kendall_tau: item pairs whose position differences change sign
                u, v = np.triu_indices(n, 1)
                da = pos_a[:, u] - pos_a[:, v]
                db = pos_b[:, u] - pos_b[:, v]
                out = (da * db < 0).sum(axis=1)
        return np.asarray(out, dtype=np.float64).reshape(i.shape)

    def _key(self) -> tuple[Any, ...]:
        return (self.n_items, self.metric)

    def __repr__(self) -> str:
        return f"Permutations(n_items={self.n_items}, metric={self.metric!r})"
