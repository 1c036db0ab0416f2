"""Rank-fusion baselines on ranking votes: Borda, reciprocal rank fusion, Copeland.

Each method takes a vote array ``V`` of shape (n_rows, n_lfs, n_items) (LF orderings
of row-local item ids, best first, padded with -1 after a top-k list; all -1 is an
abstain; see :mod:`snorkel_structured.rankings._votes`) and returns one full ordering
per row, int64 of shape (n_rows, n_items), best first. Items with equal scores are
ordered by their id (lower first), so the output is deterministic. An optional
``weights`` array of shape (n_lfs,) scales each LF's contribution (finite,
non-negative, at least one positive; ``None`` gives every LF weight 1). Abstaining LFs
contribute nothing, and neither does an LF of weight 0; a row on which every LF
abstains (or only weight-0 LFs vote) is returned in id order. Weights so large that
the fused scores would overflow float64 are refused: the orderings do not change when
every weight is multiplied by the same positive number, so divide them by their
largest.

Scores are float sums over the LFs, accumulated in LF order. So that sums that are
equal in exact arithmetic but differ by floating-point rounding (weights 0.1, 0.2,
0.3, say) still tie, scores are rounded to ``1e-9`` of the largest score a row can
reach before they are ordered, and Copeland counts a pair as a tie when its weighted
margin is within ``1e-9`` of the total weight.

:func:`pairwise_majority_matrix` gives the weighted pairwise counts
``C[r, i, j]`` (LF weight ordering ``i`` before ``j``) that Copeland and Kemeny
decoding read.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from snorkel_structured._validation import check_lf_weights, check_scalar
from snorkel_structured.rankings._votes import check_votes, vote_positions

__all__ = [
    "borda",
    "copeland",
    "pairwise_majority_matrix",
    "reciprocal_rank_fusion",
]

# Relative resolution below which two fused scores (or a pairwise margin) tie.
_TIE_RTOL = 1e-9
# Elements of one (rows, n_items, n_items) block of the pairwise computations.
_BLOCK_ELEMENTS = 1 << 22
# The largest score a row may reach (the total weight times the most points a vote
# gives, n_items - 1 for Borda): below the float64 maximum (1.8e308), with room for
# rounding. As every term is non-negative, no partial sum over the LFs then
# overflows, and neither do the pairwise margins (at most the total weight).
_MAX_TOTAL = 1e308


def _check_weights(weights: Any, n_lfs: int, n_items: int) -> np.ndarray:
    """Validate LF weights: finite, non-negative with a positive entry, shape
    (n_lfs,), small enough that scores over ``n_items`` cannot overflow; None gives
    ones."""
    if weights is None:
        return np.ones(n_lfs, dtype=np.float64)
    w = check_lf_weights(weights, n_lfs, "in id order")
    with np.errstate(over="ignore"):
        top = float(w.sum()) * max(n_items - 1, 1)
    if not top <= _MAX_TOTAL:
        raise ValueError(
            f"weights are too large (the largest is {float(w.max()):.3g}): the fused "
            f"scores, up to sum(weights) * {max(n_items - 1, 1)}, would exceed "
            f"{_MAX_TOTAL:g} and could overflow float64. Rescale them, e.g. weights / max(weights): multiplying every "
            "weight by the same positive number changes no fused ordering (and "
            "scales the pairwise counts by that number)."
        )
    return w


def _prepare(V: Any, weights: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validated votes, item positions (unlisted items at k) and weights."""
    arr = check_votes(V)
    w = _check_weights(weights, arr.shape[1], arr.shape[2])
    return arr, vote_positions(arr), w


def _order(score: np.ndarray, top: float) -> np.ndarray:
    """Orderings by decreasing score, ties (to ``_TIE_RTOL * top``) by lower item id."""
    if top > 0:
        score = np.rint(score / (_TIE_RTOL * top))
    return np.argsort(-score, axis=1, kind="stable").astype(np.int64)


def _weighted_sum(points: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``sum_a w[a] * points[:, a]``, accumulated in LF order (reproducible sums)."""
    total = np.zeros((points.shape[0], points.shape[2]), dtype=np.float64)
    for a in range(points.shape[1]):
        if w[a] != 0:
            total += w[a] * points[:, a]
    return total


def borda(V: Any, weights: Any = None) -> np.ndarray:
    """Borda count of top-k lists: points by position, shared among unlisted items.

    Over ``n`` items, an item a vote lists at position ``p`` (0 = first) gets
    ``n - 1 - p`` points. The ``n - k`` items a top-k vote does not list share the
    points positions ``k..n-1`` would have got: ``(n - 1 - k) / 2`` each. A full
    list gives the classic Borda count; an abstain gives nothing. Items are ordered
    by their weighted total of points.

    Parameters
    ----------
    V : array-like of int of shape (n_rows, n_lfs, n_items)
        Orderings of row-local item ids, best first, padded with -1.
    weights : array-like of float of shape (n_lfs,), optional
        Non-negative weight of each LF's points (default 1 each).

    Returns
    -------
    order : ndarray of int64 of shape (n_rows, n_items)
        Full orderings, best first; equal totals ordered by lower item id.

    Raises
    ------
    ValueError
        If ``V`` is not a valid vote array, or ``weights`` has the wrong shape, a
        negative or non-finite entry, no positive entry, or entries so large that
        the scores would overflow.

    Examples
    --------
    >>> V = [[[0, 1, 2], [2, -1, -1]]]  # a full list and a top-1 list
    >>> borda(V)  # points: item 0: 2 + 0.5, item 1: 1 + 0.5, item 2: 0 + 2
    array([[0, 2, 1]])
    """
    arr, pos, w = _prepare(V, weights)
    n = arr.shape[2]
    listed = arr >= 0
    k = listed.sum(axis=2, keepdims=True)
    points = np.where(pos < k, n - 1.0 - pos, (n - 1.0 - k) / 2.0)
    points[np.broadcast_to(k == 0, points.shape)] = 0.0
    return _order(_weighted_sum(points, w), float(w.sum()) * (n - 1))


def reciprocal_rank_fusion(V: Any, k: float = 60, weights: Any = None) -> np.ndarray:
    """Reciprocal rank fusion: each vote gives ``w / (k + rank)`` to its listed items.

    ``rank`` is the item's 1-based position in the vote. Items a vote does not list
    (and every item of an abstain) get nothing from it. Items are ordered by their
    total.

    Parameters
    ----------
    V : array-like of int of shape (n_rows, n_lfs, n_items)
        Orderings of row-local item ids, best first, padded with -1.
    k : float, default=60
        The rank offset (Cormack et al., 2009); larger values flatten the weight of
        the top positions. Must be non-negative.
    weights : array-like of float of shape (n_lfs,), optional
        Non-negative weight of each LF (default 1 each).

    Returns
    -------
    order : ndarray of int64 of shape (n_rows, n_items)
        Full orderings, best first; equal totals ordered by lower item id.

    Raises
    ------
    ValueError
        If ``V`` or ``weights`` is invalid, or ``k`` is negative or not finite.

    Examples
    --------
    >>> reciprocal_rank_fusion([[[1, 0, -1], [2, -1, -1]]], k=0)
    array([[1, 2, 0]])
    """
    k = check_scalar(k, "k", kind="float", low=0.0)
    arr, pos, w = _prepare(V, weights)
    listed = pos < (arr >= 0).sum(axis=2, keepdims=True)  # unlisted items sit at k
    points = np.where(listed, 1.0 / (k + 1.0 + pos), 0.0)
    top = float(w.sum()) / (k + 1.0)
    return _order(_weighted_sum(points, w), top)


def _row_blocks(n_rows: int, n_items: int) -> Iterator[slice]:
    """Row slices whose (rows, n_items, n_items) blocks stay under _BLOCK_ELEMENTS."""
    step = max(1, _BLOCK_ELEMENTS // max(n_items * n_items, 1))
    for start in range(0, n_rows, step):
        yield slice(start, min(start + step, n_rows))


def _majority_block(pos: np.ndarray, w: np.ndarray) -> np.ndarray:
    """C (rows, n, n): weight of the LFs that put i strictly before j (pos block)."""
    n_rows, n_lfs, n = pos.shape
    C = np.zeros((n_rows, n, n), dtype=np.float64)
    for a in range(n_lfs):
        if w[a] != 0:
            p = pos[:, a]
            C += w[a] * (p[:, :, None] < p[:, None, :])
    return C


def pairwise_majority_matrix(V: Any, weights: Any = None) -> np.ndarray:
    """Weighted pairwise preference counts of each row's votes.

    ``C[r, i, j]`` is the total weight of the LFs whose vote on row ``r`` puts item
    ``i`` before item ``j``: both listed with ``i`` first, or ``i`` listed and ``j``
    not. Pairs a vote leaves unordered (two unlisted items, or an abstain) add to
    neither ``C[r, i, j]`` nor ``C[r, j, i]``. The diagonal is 0. This is the
    weighted tournament that Copeland scores and Kemeny decoding maximizes
    agreement with.

    Parameters
    ----------
    V : array-like of int of shape (n_rows, n_lfs, n_items)
        Orderings of row-local item ids, best first, padded with -1.
    weights : array-like of float of shape (n_lfs,), optional
        Non-negative weight of each LF (default 1 each: then ``C`` counts LFs).

    Returns
    -------
    C : ndarray of float64 of shape (n_rows, n_items, n_items)

    Raises
    ------
    ValueError
        If ``V`` or ``weights`` is invalid.

    Examples
    --------
    >>> pairwise_majority_matrix([[[0, 1, 2], [2, -1, -1]]])[0]
    array([[0., 1., 1.],
           [0., 0., 1.],
           [1., 1., 0.]])
    """
    arr, pos, w = _prepare(V, weights)
    n_rows, _, n = arr.shape
    C = np.empty((n_rows, n, n), dtype=np.float64)
    for rows in _row_blocks(n_rows, n):
        C[rows] = _majority_block(pos[rows], w)
    return C


def copeland(V: Any, weights: Any = None) -> np.ndarray:
    """Copeland's method: order items by the pairwise majorities they win.

    Item ``i`` beats ``j`` when the LFs putting ``i`` before ``j`` outweigh those
    putting ``j`` before ``i`` (see :func:`pairwise_majority_matrix`, or the signed
    pairwise form of :func:`~snorkel_structured.rankings.pairwise_votes`: ``i`` beats
    ``j`` when ``sum_a w_a S[r, a, (i, j)] > 0``). An item's score is the number of
    other items it beats, plus 0.5 per tie (equal weights either way, including
    pairs no LF orders). Items are ordered by score.

    Parameters
    ----------
    V : array-like of int of shape (n_rows, n_lfs, n_items)
        Orderings of row-local item ids, best first, padded with -1.
    weights : array-like of float of shape (n_lfs,), optional
        Non-negative weight of each LF (default 1 each: a plain majority).

    Returns
    -------
    order : ndarray of int64 of shape (n_rows, n_items)
        Full orderings, best first; equal scores ordered by lower item id.

    Raises
    ------
    ValueError
        If ``V`` or ``weights`` is invalid.

    Examples
    --------
    >>> copeland([[[0, 1, 2], [2, -1, -1], [2, 0, 1]]])
    array([[2, 0, 1]])
    """
    arr, pos, w = _prepare(V, weights)
    n_rows, _, n = arr.shape
    tol = _TIE_RTOL * float(w.sum())
    # Twice the Copeland score (2 per win, 1 per tie): exact integers.
    score = np.empty((n_rows, n), dtype=np.int64)
    for rows in _row_blocks(n_rows, n):
        C = _majority_block(pos[rows], w)
        margin = C - np.swapaxes(C, 1, 2)
        twice = np.where(margin > tol, 2, np.where(margin >= -tol, 1, 0))
        score[rows] = twice.sum(axis=2) - 1  # the diagonal counted as a tie
    return _order(score.astype(np.float64), 0.0)
