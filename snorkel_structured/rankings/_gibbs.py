"""Gibbs sampling of rankings under exp(-sum_{i before j} C[j, i]), by adjacent swaps.

The posterior of the truth given weighted votes is such a distribution, with
``C[i, j]`` the summed weight of the votes that put item i before item j. Swapping
two neighbours a, b (a first) changes the energy by ``C[a, b] - C[b, a]``, so the
heat-bath move swaps them with probability ``1 / (1 + exp(C[a, b] - C[b, a]))``:
only the pair margins ``g = C[i, j] - C[j, i]``, i < j, matter. Swaps at positions
(0, 1), (2, 3), ... touch disjoint slots and run at once, then (1, 2), (3, 4), ...:
one sweep is two vectorized half-sweeps over all rows.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

__all__ = ["gibbs_sweeps", "pair_margins"]


def pair_margins(St: np.ndarray, weights: np.ndarray, n_pairs: int) -> np.ndarray:
    """Margins ``g[r, p] = C[r, i, j] - C[r, j, i]`` of each pair p = (i, j), i < j.

    Parameters
    ----------
    St : ndarray of float of shape (n_rows * n_pairs, n_lfs)
        Pairwise votes, rows then pairs (``numpy.triu_indices`` order) on the first
        axis: ``S.transpose(0, 2, 1).reshape(-1, n_lfs)``.
    weights : ndarray of shape (n_lfs,)
    n_pairs : int

    Returns
    -------
    g : ndarray of shape (n_rows, n_pairs)
        The summed weight of the LFs putting i first minus that of those putting j
        first.
    """
    return (St @ np.asarray(weights, dtype=St.dtype)).reshape(-1, n_pairs)


def _pair_lookup(n_items: int) -> tuple[np.ndarray, np.ndarray]:
    """For a flat index a * n + b: the pair index of {a, b} and +1 if a < b else -1."""
    i, j = np.triu_indices(n_items, 1)
    index = np.zeros(n_items * n_items, dtype=np.int64)
    sign = np.zeros(n_items * n_items, dtype=np.float32)
    index[i * n_items + j] = index[j * n_items + i] = np.arange(i.size)
    sign[i * n_items + j], sign[j * n_items + i] = 1.0, -1.0
    return index, sign


def gibbs_sweeps(
    g: np.ndarray, Y: np.ndarray, n_sweeps: int, rng: np.random.Generator
) -> np.ndarray:
    """Run ``n_sweeps`` sweeps of adjacent-swap heat-bath moves on orderings ``Y`` in place.

    Parameters
    ----------
    g : ndarray of shape (n_rows, n_pairs)
        Margins from :func:`pair_margins`.
    Y : ndarray of int64 of shape (n_rows, n_items)
        Current orderings (best first); updated in place and returned.
    n_sweeps : int
    rng : numpy.random.Generator
    """
    n_items = Y.shape[1]
    index, sign = _pair_lookup(n_items)
    starts = (np.arange(0, n_items - 1, 2), np.arange(1, n_items - 1, 2))
    for _ in range(n_sweeps):
        for t in starts:
            if t.size == 0:
                continue
            a, b = Y[:, t], Y[:, t + 1]
            flat = a * n_items + b
            margin = sign[flat] * np.take_along_axis(g, index[flat], axis=1)
            swap = rng.random(a.shape) < expit(-margin)
            Y[:, t] = np.where(swap, b, a)
            Y[:, t + 1] = np.where(swap, a, b)
    return Y
