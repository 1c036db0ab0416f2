"""The Mallows model with Kendall's tau, for full and top-k orderings.

P(vote | y) = exp(-theta d(vote, y)) / Z, where d counts the item pairs the vote
orders in the opposite order to the center y. Drawing a vote item by item (the
sequential representation of Fligner and Verducci, 1986): the j-th item is the one
at offset V_j among the n - j + 1 items not yet drawn, in y's order, with
P(V_j = v) proportional to exp(-theta v), v = 0..n-j. V_j counts the remaining items
that y puts before the drawn one, so d = sum_j V_j over the k drawn items, and a
top-k vote has the closed-form normalizer

    Z_k(theta) = prod_{j=1..k} (1 - q^(n-j+1)) / (1 - q),   q = exp(-theta),

which does not depend on y. A posterior over y given several LFs' votes is therefore
proportional to exp(-sum_a theta_a d_a) for both full and top-k votes: its MAP is
the weighted Kemeny ranking.

The pairs a top-k vote orders are the k (k - 1) / 2 among its listed items and the
k (n - k) between a listed and an unlisted item: sum_j (n - j) in all.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from snorkel_structured._validation import check_seed

__all__ = [
    "expected_disagreements",
    "log_normalizer",
    "ordered_pairs",
    "sample_mallows",
    "theta_from_disagreements",
]

# theta above this is "exact" (q < 2e-22): rates and normalizers are 0 / 1 there.
THETA_MAX = 50.0


def ordered_pairs(n_items: int, k: Any) -> np.ndarray:
    """Pairs a top-k vote over ``n_items`` orders: ``k (k - 1) / 2 + k (n - k)``."""
    k = np.minimum(np.asarray(k, dtype=np.float64), n_items - 1)
    return k * (2 * n_items - k - 1) / 2


def _truncated_geometric_mean(q: np.ndarray, size: np.ndarray) -> np.ndarray:
    """E[V] for P(V = v) proportional to q^v on v = 0..size-1 (size >= 1)."""
    q = np.clip(q, 0.0, 1.0)
    out = np.empty(np.broadcast(q, size).shape)
    q, size = np.broadcast_to(q, out.shape), np.broadcast_to(size, out.shape)
    near_one = q > 1 - 1e-6
    # q -> 1: the uniform mean (size - 1) / 2, plus its first-order correction.
    s = size[near_one]
    out[near_one] = (s - 1) / 2 - (1 - q[near_one]) * (s * s - 1) / 12
    qq, s = q[~near_one], size[~near_one]
    with np.errstate(under="ignore"):
        qs = qq**s
        out[~near_one] = qq / (1 - qq) - s * qs / (1 - qs)
    return out


def expected_disagreements(theta: Any, n_items: int, k: Any) -> np.ndarray:
    """E[d(vote, y)] under a top-k Mallows vote (sum over the k draws of E[V_j]).

    Parameters
    ----------
    theta : float or ndarray
        Dispersion (>= 0); broadcast against ``k``.
    n_items : int
    k : int or ndarray of int
        Items the vote lists (``n_items`` or ``n_items - 1`` for a full ordering).

    Returns
    -------
    ndarray of float64
        Expected number of the vote's ordered pairs that disagree with y.
    """
    theta, k = np.broadcast_arrays(
        np.asarray(theta, dtype=np.float64),
        np.minimum(np.asarray(k, dtype=np.int64), n_items - 1),
    )
    q = np.exp(-np.minimum(theta, THETA_MAX))
    j = np.arange(1, n_items)  # draws 1..n-1 (the n-th adds no pair)
    sizes = n_items - j + 1
    per_draw = _truncated_geometric_mean(q[..., None], sizes)  # (..., n - 1)
    cum = np.concatenate(
        [np.zeros(per_draw.shape[:-1] + (1,)), np.cumsum(per_draw, axis=-1)], axis=-1
    )
    return np.take_along_axis(cum, k[..., None], axis=-1)[..., 0]


def log_normalizer(theta: Any, n_items: int, k: Any) -> np.ndarray:
    """log Z_k(theta) of a top-k Mallows vote (see the module docstring)."""
    theta, k = np.broadcast_arrays(
        np.asarray(theta, dtype=np.float64),
        np.minimum(np.asarray(k, dtype=np.int64), n_items - 1),
    )
    j = np.arange(1, n_items)
    sizes = n_items - j + 1
    t = np.maximum(theta, 1e-12)[..., None]
    # log((1 - q^s) / (1 - q)) with q = exp(-t), stable for small and large t.
    terms = np.log(-np.expm1(-t * sizes)) - np.log(-np.expm1(-t))
    zero = theta[..., None] <= 1e-12
    terms = np.where(zero, np.log(sizes), terms)
    cum = np.concatenate(
        [np.zeros(terms.shape[:-1] + (1,)), np.cumsum(terms, axis=-1)], axis=-1
    )
    return np.take_along_axis(cum, k[..., None], axis=-1)[..., 0]


def theta_from_disagreements(disagreements: Any, n_items: int, k_counts: Any) -> Any:
    """The theta whose expected disagreements over a set of votes match an observed total.

    Solves ``sum_k k_counts[k] * expected_disagreements(theta, n_items, k) =
    disagreements`` (the M-step of the Mallows model: its likelihood is an
    exponential family in theta with sufficient statistic d), by bisection on
    log(theta), for several LFs at once.

    Parameters
    ----------
    disagreements : float or ndarray of shape (n_lfs,)
        Observed (or expected) total number of disagreeing ordered pairs.
    n_items : int
    k_counts : ndarray of shape (n_items + 1,) or (n_lfs, n_items + 1)
        How many votes list k items, k = 0..n_items.

    Returns
    -------
    float or ndarray of shape (n_lfs,)
        theta in [0, THETA_MAX]; 0 when the votes disagree as often as chance or
        more, THETA_MAX when they never disagree.
    """
    scalar = np.ndim(disagreements) == 0
    target = np.clip(
        np.atleast_1d(np.asarray(disagreements, dtype=np.float64)), 0, None
    )
    counts = np.atleast_2d(np.asarray(k_counts, dtype=np.float64))
    ks = np.arange(counts.shape[1])

    def total(theta: np.ndarray) -> np.ndarray:
        return np.einsum(
            "ak,ak->a", counts, expected_disagreements(theta[:, None], n_items, ks)
        )

    lo = np.full(target.shape, 1e-8)
    hi = np.full(target.shape, THETA_MAX)
    for _ in range(60):  # (log 50 - log 1e-8) / 2^60: far below float precision
        mid = np.sqrt(lo * hi)
        above = total(mid) > target
        lo = np.where(above, mid, lo)
        hi = np.where(above, hi, mid)
    theta = np.sqrt(lo * hi)
    theta = np.where(target >= total(np.zeros_like(target)), 0.0, theta)
    theta = np.where(target <= total(np.full_like(target, THETA_MAX)), THETA_MAX, theta)
    return float(theta[0]) if scalar else theta


def sample_mallows(
    center: Any, theta: Any, k: Any = None, seed: Any = None
) -> np.ndarray:
    """Draw top-k Mallows votes around given centers (sequential representation).

    Parameters
    ----------
    center : array-like of int of shape (n_rows, n_items)
        Each row's true ordering, best first.
    theta : float or array-like of shape (n_rows,)
        Dispersion; 0 gives uniform random orderings.
    k : int or array-like of shape (n_rows,), optional
        Items each vote lists (default: all). Slots after the k-th are -1.
    seed : None, int or numpy.random.Generator

    Returns
    -------
    V : ndarray of int64 of shape (n_rows, n_items)
        Orderings padded with -1.
    """
    rng = check_seed(seed)
    remaining = np.array(center, dtype=np.int64, copy=True)
    if remaining.ndim != 2:
        raise ValueError(
            f"center must be (n_rows, n_items); got shape {remaining.shape}."
        )
    n_rows, n_items = remaining.shape
    theta = np.broadcast_to(np.asarray(theta, dtype=np.float64), (n_rows,))
    if np.any(~np.isfinite(theta)) or np.any(theta < 0):
        raise ValueError("theta must be finite and non-negative.")
    k = np.broadcast_to(
        np.asarray(n_items if k is None else k, dtype=np.int64), (n_rows,)
    )
    if np.any(k < 0) or np.any(k > n_items):
        raise ValueError(f"k must be in 0..{n_items}.")
    q = np.exp(-np.minimum(theta, THETA_MAX))
    out = np.full((n_rows, n_items), -1, dtype=np.int64)
    rows = np.arange(n_rows)
    for j in range(n_items):
        size = n_items - j
        # Inverse CDF of P(V = v) ~ q^v on 0..size-1.
        u = rng.random(n_rows)
        with np.errstate(divide="ignore", invalid="ignore", under="ignore"):
            total = np.where(q < 1, 1 - q**size, size)
            v = np.where(
                q < 1,
                np.floor(np.log1p(-u * total) / np.log(np.where(q < 1, q, 0.5))),
                np.floor(u * size),
            )
        v = np.clip(np.nan_to_num(v), 0, size - 1).astype(np.int64)
        picked = remaining[rows, v]
        out[:, j] = np.where(j < k, picked, -1)
        keep = np.ones(remaining.shape, dtype=bool)
        keep[rows, v] = False
        remaining = remaining[keep].reshape(n_rows, size - 1)
    return out
