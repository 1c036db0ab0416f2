"""The symmetric group S_n as a label space (rankings)."""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Hashable, Iterable
from typing import Any

import numpy as np

from snorkel_structured.spaces.finite import FiniteMetricSpace

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
    """All permutations of ``n_items`` items (rankings), under a permutation metric.

    Items are tuples ``(p[0], ..., p[n-1])`` of the integers ``0 .. n-1`` in
    lexicographic order, so index 0 is the identity. Read a tuple as a ranking: position
    ``k`` holds item ``p[k]``.

    Parameters
    ----------
    n_items : int
        Number of ranked items, 2 to 8 (8 gives 40,320 labels).
    metric : {"kendall_tau", "spearman_footrule", "cayley", "hamming"}, default="kendall_tau"
        - ``kendall_tau``: number of discordant pairs (adjacent transpositions);
        - ``spearman_footrule``: ``sum_k |p[k] - q[k]|``;
        - ``cayley``: least number of transpositions, ``n - cycles(p^-1 q)``;
        - ``hamming``: number of positions where ``p`` and ``q`` differ.

    Notes
    -----
    Distances are computed in vectorized blocks: Kendall tau, the footrule and Hamming
    as inner products of feature vectors (pair signs, threshold indicators, one-hot
    positions), Cayley by composing permutations and counting cycles. The full
    ``distance_matrix`` is built on first access; :meth:`dist` never needs it.

    Examples
    --------
    >>> import snorkel_structured as ss
    >>> space = ss.Permutations(n_items=3, metric="kendall_tau")
    >>> len(space), space.item(0)
    (6, (0, 1, 2))
    >>> float(space.dist(space.index((0, 1, 2)), space.index((2, 1, 0))))
    3.0
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

    # -- distances --------------------------------------------------------------
    def _features(self, P: np.ndarray) -> np.ndarray:
        n = self.n_items
        if self.metric == "kendall_tau":
            i, j = np.triu_indices(n, 1)
            return np.sign(P[:, i] - P[:, j]).astype(np.float64)
        if self.metric == "spearman_footrule":
            # |a - b| = sum_t (1[a > t] - 1[b > t])^2
            return (
                (P[:, :, None] > np.arange(n - 1))
                .reshape(len(P), -1)
                .astype(np.float64)
            )
        # hamming: one-hot of (position, value)
        return (P[:, :, None] == np.arange(n)).reshape(len(P), -1).astype(np.float64)

    def _block(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        """Distances between the rows of two permutation arrays: (na, nb)."""
        n = self.n_items
        if self.metric == "cayley":
            # code(a^-1 b) = sum_k a^-1[b[k]] n^k = sum_j a^-1[j] n^(b^-1[j]): one matmul
            # (exact in float64, codes < 8^8), then a lookup of n - cycles by code.
            inv_A, inv_B = np.argsort(A, axis=1), np.argsort(B, axis=1)
            codes = inv_A.astype(np.float64) @ (float(n) ** inv_B).T
            return self._cayley_table[codes.astype(np.int64)].astype(np.float64)
        FA, FB = self._features(A), self._features(B)
        inner = FA @ FB.T
        if self.metric == "kendall_tau":
            return (FA.shape[1] - inner) / 2.0
        if self.metric == "spearman_footrule":
            return FA.sum(1)[:, None] + FB.sum(1)[None, :] - 2.0 * inner
        return n - inner

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
        r = len(self)
        step = max(1, _BLOCK_ELEMENTS // r)
        D = np.empty((r, r))
        for start in range(0, r, step):  # blocks of rows, each fully vectorized
            D[start : start + step] = self._block(
                self.permutations[start : start + step], self.permutations
            )
        return np.rint(D)

    def dist(self, i: Any, j: Any) -> np.ndarray:
        """Distance between label indices ``i`` and ``j`` (broadcast), without the matrix."""
        if "distance_matrix" in self.__dict__:
            return super().dist(i, j)
        i, j = np.broadcast_arrays(np.asarray(i), np.asarray(j))
        A, B = self.permutations[i.ravel()], self.permutations[j.ravel()]
        n = self.n_items
        if self.metric == "cayley":
            comp = np.take_along_axis(np.argsort(A, axis=1), B, axis=1)
            out = n - _cycle_counts(comp)
        elif self.metric == "kendall_tau":
            FA, FB = self._features(A), self._features(B)
            out = (FA.shape[1] - (FA * FB).sum(1)) / 2.0
        else:
            out = np.abs(self._features(A) - self._features(B)).sum(1)
            if self.metric == "hamming":
                out = out / 2.0
        return np.asarray(out, dtype=np.float64).reshape(i.shape)

    def _key(self) -> tuple[Any, ...]:
        return (self.n_items, self.metric)

    def __repr__(self) -> str:
        return f"Permutations(n_items={self.n_items}, metric={self.metric!r})"
