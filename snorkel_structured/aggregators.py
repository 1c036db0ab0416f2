"""Label aggregators users already use, for finite label spaces.

Each combines the votes of a row into one label without a noise model:

- :func:`majority_vote`: the most frequent vote (plain classes' default);
- :func:`frechet_mean`: ``argmin_y sum_a w_a d^2(y, lambda_a)`` over the whole space
  (the paper's pseudolabel with weights ``w_a = theta_a``);
- :func:`kemeny`: ``argmin_y sum_a w_a d(y, lambda_a)`` (with Kendall tau on permutations,
  exact Kemeny aggregation by enumerating all n! rankings);
- :func:`medoid`: like :func:`frechet_mean` but the answer must be one of the row's votes;
- :func:`borda`: Borda count on rankings (:class:`Permutations` only): each vote gives
  the item at position ``k`` the score ``n_items - 1 - k``; items are ordered by their
  total.

All are vectorized: a row's scores against every candidate are one gather-and-sum, done in
chunks of rows so memory stays at ``chunk_size * r`` floats. Rows where every LF abstains
get -1 (ABSTAIN).

LF weights (all but :func:`majority_vote`) must be finite and non-negative with a
positive entry. A weight of 0 ignores the LF, as if it abstained on every row
(scikit-learn's convention for a zero sample weight): a row on which only weight-0 LFs
vote gets -1, like a row where every LF abstains, and a warning gives the number of
such rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from snorkel_structured import _warnings
from snorkel_structured._validation import (
    ABSTAIN,
    check_label_matrix,
    check_lf_weights,
    check_seed,
)
from snorkel_structured.spaces.finite import FiniteMetricSpace
from snorkel_structured.spaces.permutations import Permutations

__all__ = ["borda", "frechet_mean", "kemeny", "majority_vote", "medoid"]

_CHUNK = 1 << 22  # elements of a (rows x labels) score block


# The largest weighted sum of costs accepted: below the float64 maximum (1.8e308),
# with room for rounding. As every term is non-negative, no partial sum over the LFs
# then overflows.
_MAX_TOTAL = 1e308


def _weights(weights: Any, m: int) -> np.ndarray:
    """``weights`` as a fresh (m,) float64 array: finite, non-negative, one positive."""
    if weights is None:
        return np.ones(m)
    return check_lf_weights(weights, m, "unlabeled (-1)")


def _checked(
    L: Any, space: FiniteMetricSpace, weights: Any
) -> tuple[np.ndarray, np.ndarray]:
    """Validated label matrix and weights."""
    L = check_label_matrix(L, n_labels=len(space))
    return L, _weights(weights, L.shape[1])


def _weighted_votes(L: np.ndarray, w: np.ndarray, largest_cost: float) -> np.ndarray:
    """The votes that count: ``L`` with those of weight-0 LFs set to ABSTAIN.

    Refuses weights whose weighted sums of costs (each at most ``largest_cost``)
    could overflow float64, and warns about rows left unlabeled by zero weights.
    """
    with np.errstate(over="ignore"):
        total = float(w.sum()) * float(largest_cost)
    if not total <= _MAX_TOTAL:
        raise ValueError(
            f"weights are too large (the largest is {float(w.max()):.3g}): the "
            f"weighted sums of costs, up to sum(weights) * {float(largest_cost):g}, "
            f"would exceed {_MAX_TOTAL:g} and could overflow float64. Rescale them, e.g. weights / "
            "max(weights): multiplying every weight by the same positive number "
            "does not change the aggregate."
        )
    zero = w == 0
    if not zero.any():
        return L
    kept = np.where(zero, ABSTAIN, L)
    ignored = (L != ABSTAIN).any(axis=1) & (kept == ABSTAIN).all(axis=1)
    if ignored.any():
        _warnings.warn(
            f"{int(ignored.sum())} of {len(L)} rows are unlabeled (-1) although an "
            "LF voted on them: every LF that voted there has weight 0 (LFs "
            f"{np.flatnonzero(zero).tolist()}), and a weight of 0 ignores an LF. Give "
            "those LFs a positive weight, or drop these rows (-1 predictions) before "
            "training on the labels.",
            UserWarning,
            stacklevel=3,
        )
    return kept


def _argmin_cost(
    L: np.ndarray, cost: np.ndarray, w: np.ndarray, restrict_to_votes: bool
) -> np.ndarray:
    """argmin over labels of sum_a w_a cost[lambda_a, y], rows in chunks."""
    n, m = L.shape
    r = cost.shape[0]
    out = np.full(n, ABSTAIN, dtype=np.int64)
    step = max(1, _CHUNK // r)
    for start in range(0, n, step):  # bounded memory; each chunk fully vectorized
        block = L[start : start + step]
        scores = np.zeros((len(block), r))
        for a in range(m):
            voted = block[:, a] != ABSTAIN
            scores[voted] += w[a] * cost[block[voted, a]]
        if restrict_to_votes:
            allowed = np.zeros((len(block), r), dtype=bool)
            rows = np.repeat(np.arange(len(block)), m)
            votes = block.ravel()
            keep = votes != ABSTAIN
            allowed[rows[keep], votes[keep]] = True
            scores[~allowed] = np.inf
        best = scores.argmin(axis=1)
        any_vote = (block != ABSTAIN).any(axis=1)
        out[start : start + step] = np.where(any_vote, best, ABSTAIN)
    return out


def frechet_mean(L: Any, space: FiniteMetricSpace, weights: Any = None) -> np.ndarray:
    """Weighted Frechet mean of each row's votes: argmin_y sum_a w_a d^2(y, lambda_a).

    Parameters
    ----------
    L : array-like of int of shape (n_samples, n_lfs)
    space : FiniteMetricSpace
    weights : array-like of shape (n_lfs,), optional
        Finite, non-negative LF weights with a positive entry (default equal). A
        weight of 0 ignores the LF, as if it abstained on every row.

    Returns
    -------
    labels : ndarray of int64 of shape (n_samples,); -1 where every LF abstained
        (or only weight-0 LFs voted). Ties go to the lowest label index.

    Raises
    ------
    ValueError
        If ``L`` is not a valid label matrix of ``space``, or ``weights`` is not
        ``n_lfs`` finite non-negative numbers with a positive one, or is so large
        that the weighted sums of costs would overflow (rescale it).

    Warns
    -----
    UserWarning
        When some rows are unlabeled although an LF voted on them (every LF that
        voted has weight 0), with their number.
    """
    L, w = _checked(L, space, weights)
    cost = space.squared_distance_matrix
    return _argmin_cost(_weighted_votes(L, w, cost.max()), cost, w, False)


def kemeny(L: Any, space: FiniteMetricSpace, weights: Any = None) -> np.ndarray:
    """Weighted median label argmin_y sum_a w_a d(y, lambda_a) (exact Kemeny for rankings).

    With ``Permutations(n, "kendall_tau")`` this is Kemeny-Young aggregation, solved
    exactly by scoring all n! candidate rankings. Same parameters and return as
    :func:`frechet_mean`.

    Examples
    --------
    >>> import numpy as np, snorkel_structured as ss
    >>> from snorkel_structured.aggregators import kemeny
    >>> space = ss.Permutations(3)
    >>> votes = space.encode([(0, 1, 2), (0, 2, 1), (1, 0, 2)])
    >>> space.decode(kemeny(votes[None, :], space))
    [(0, 1, 2)]
    """
    L, w = _checked(L, space, weights)
    cost = space.distance_matrix
    return _argmin_cost(_weighted_votes(L, w, cost.max()), cost, w, False)


def medoid(L: Any, space: FiniteMetricSpace, weights: Any = None) -> np.ndarray:
    """The vote of the row closest to the others: argmin over the row's votes of sum w d^2.

    Only the votes of positive-weight LFs are candidates. Same parameters and return
    as :func:`frechet_mean`.
    """
    L, w = _checked(L, space, weights)
    cost = space.squared_distance_matrix
    return _argmin_cost(_weighted_votes(L, w, cost.max()), cost, w, True)


def borda(L: Any, space: Permutations, weights: Any = None) -> np.ndarray:
    """Borda count of each row's ranking votes: items ordered by their summed points.

    Each non-abstaining vote ``lambda_a`` (an ordering, best first) gives the item at
    its position ``k`` the score ``n_items - 1 - k``, times the LF's weight ``w_a``;
    the answer orders the items by decreasing total.

    Parameters
    ----------
    L : array-like of int of shape (n_samples, n_lfs)
        Label indices into ``space``, -1 = abstain.
    space : Permutations
    weights : array-like of shape (n_lfs,), optional
        Finite, non-negative LF weights with a positive entry (default equal: the
        plain Borda count). A weight of 0 ignores the LF, as if it abstained.

    Returns
    -------
    labels : ndarray of int64 of shape (n_samples,)
        Label index of each row's Borda ranking; -1 where every LF abstained (or
        only weight-0 LFs voted).

    Raises
    ------
    TypeError
        If ``space`` is not a :class:`Permutations` space.
    ValueError
        If ``L`` or ``weights`` is invalid, as in :func:`frechet_mean`.

    Notes
    -----
    Ties are broken deterministically by item index: of two items with equal totals
    the lower-numbered item comes first (as :meth:`Permutations.from_scores`). So a
    row with a single vote returns that vote, and two exactly opposite votes return
    the identity ordering ``(0, 1, ..., n_items - 1)``.

    Examples
    --------
    >>> import snorkel_structured as ss
    >>> from snorkel_structured.aggregators import borda
    >>> space = ss.Permutations(3)
    >>> votes = space.encode([(0, 1, 2), (1, 0, 2), (1, 2, 0)])
    >>> space.decode(borda(votes[None, :], space))  # points: 0 -> 3, 1 -> 5, 2 -> 1
    [(1, 0, 2)]
    """
    if not isinstance(space, Permutations):
        raise TypeError(
            f"space must be a Permutations space for the Borda count; got "
            f"{type(space).__name__}. Use kemeny or majority_vote on other spaces."
        )
    L, w = _checked(L, space, weights)
    n_items = space.n_items
    L = _weighted_votes(L, w, n_items - 1)
    # points[y, i]: the score ordering y gives item i, n_items - 1 - position.
    points = n_items - 1 - np.argsort(space.permutations, axis=1).astype(np.float64)
    totals = np.zeros((L.shape[0], n_items))
    for a in range(L.shape[1]):
        voted = L[:, a] != ABSTAIN
        totals[voted] += w[a] * points[L[voted, a]]
    out = np.asarray(space.from_scores(totals), dtype=np.int64).reshape(L.shape[0])
    return np.where((L != ABSTAIN).any(axis=1), out, ABSTAIN)


def majority_vote(
    L: Any, n_labels: int, *, tie_break: str = "lowest", seed: Any = None
) -> np.ndarray:
    """The most frequent vote of each row; -1 where every LF abstained.

    Parameters
    ----------
    L : array-like of int of shape (n_samples, n_lfs)
    n_labels : int
    tie_break : {"lowest", "random"}, default="lowest"
        Among tied labels take the lowest index, or a seeded uniform choice.
    seed : None, int or numpy.random.Generator
    """
    L = check_label_matrix(L, n_labels=n_labels)
    if tie_break not in ("lowest", "random"):
        raise ValueError(f"tie_break must be 'lowest' or 'random'; got {tie_break!r}.")
    n, m = L.shape
    rows = np.repeat(np.arange(n), m)
    votes = L.ravel()
    keep = votes != ABSTAIN
    counts = np.zeros((n, n_labels))
    np.add.at(counts, (rows[keep], votes[keep]), 1.0)
    if tie_break == "random":
        counts += check_seed(seed).random(counts.shape) * 0.5  # breaks ties only
    out = counts.argmax(axis=1)
    return np.where(keep.reshape(n, m).any(axis=1), out, ABSTAIN).astype(np.int64)
