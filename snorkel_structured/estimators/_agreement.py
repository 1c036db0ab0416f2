"""Whether LFs agree with each other more than independent votes would.

Every estimator of LF accuracy without labels reads it from how the LFs agree. When
each pair's votes are as far apart as the same votes shuffled independently, nothing
in them ties the LFs to a common truth: either they are noise, or the truth is not
something each of them copies (a composite of their own signals).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.stats import norm

from snorkel_structured._validation import ABSTAIN

__all__ = ["excess_agreement_z"]

# The check reads the (v, r) distance rows of the v voted labels; above this many
# cells (32 MiB) it is skipped.
_MAX_CELLS = 2**22


def _frequencies(codes: np.ndarray, W: np.ndarray, v: int) -> np.ndarray:
    """Per column b of ``W`` (u, p), the ``W``-weighted counts of ``codes`` (u, p) or
    (u, 1) over the v voted labels: (p, v)."""
    offsets = v * np.arange(W.shape[1])
    flat = (codes + offsets).ravel()
    return np.bincount(flat, W.ravel(), offsets.size * v).reshape(-1, v)


def excess_agreement_z(
    patterns: np.ndarray,
    counts: np.ndarray,
    sq_rows: Any,
    n_labels: int,
    *,
    stop_when_passed: bool = False,
) -> tuple[float, float] | None:
    """The largest excess agreement over LF pairs, in standard errors, and the
    threshold it must reach for one pair to agree beyond chance (family-wise 5%).

    For LFs a and b, over the rows where both vote: the mean distance between their
    votes, against its expectation ``f_a^T D f_b`` when the votes are independent
    with the same frequencies (``f_a``, ``f_b``), scaled by the standard error
    ``sqrt((f_a^T D^2 f_b - (f_a^T D f_b)^2) / n_ab)`` of that mean under
    independence. Positive: the pair agrees more than chance. The threshold is
    Bonferroni's one-sided normal quantile over the pairs tested.

    Parameters
    ----------
    patterns : ndarray of int of shape (n_patterns, n_lfs)
        Unique vote patterns (``-1`` abstains).
    counts : ndarray of shape (n_patterns,)
        Rows per pattern.
    sq_rows : callable
        ``sq_rows(labels)`` returns the squared distances from ``labels`` to every
        label, shape (len(labels), n_labels).
    n_labels : int
        Number of labels r of the space.
    stop_when_passed : bool, default=False
        Stop at the first LF a whose pairs (a, b > a) hold a z above the threshold
        for every pair of LFs (which is at least the returned one): whether some
        pair agrees beyond chance is then settled, and z_max is that LF's largest,
        a lower bound of all pairs'.

    Returns
    -------
    (z_max, threshold) or None
        None when no pair votes together on at least two rows, or when the voted
        labels' distance rows would exceed 2^22 cells (e.g. 832 voted labels of
        ``Permutations(7)``).
    """
    P = np.asarray(patterns, dtype=np.int64)
    c = np.asarray(counts, dtype=np.float64)
    voted = np.unique(P[P != ABSTAIN])
    if voted.size == 0 or voted.size * n_labels > _MAX_CELLS or P.shape[1] < 2:
        return None
    D2 = np.maximum(np.asarray(sq_rows(voted))[:, voted], 0.0)
    D = np.sqrt(D2)
    code = np.searchsorted(voted, np.where(P == ABSTAIN, voted[0], P))
    v, m = voted.size, P.shape[1]
    votes = P != ABSTAIN
    zs: list[float] = []
    settled = norm.isf(0.05 / (m * (m - 1) / 2))  # the threshold if every pair counts
    for a in range(m - 1):  # every pair (a, b > a) at once: (u, m - a - 1) arrays
        W = c[:, None] * (votes[:, [a]] & votes[:, a + 1 :])  # rows where both vote
        n_ab = W.sum(axis=0)
        f_a, f_b = (
            _frequencies(code[:, [a]], W, v),
            _frequencies(code[:, a + 1 :], W, v),
        )
        observed = np.einsum("ub,ub->b", D[code[:, [a]], code[:, a + 1 :]], W)
        ok = n_ab >= 2
        n, f_a, f_b, observed = n_ab[ok], f_a[ok], f_b[ok], observed[ok]
        expected = np.einsum("bv,vw,bw->b", f_a, D, f_b) / n**2
        var = np.einsum("bv,vw,bw->b", f_a, D2, f_b) / n**2 - expected**2
        # var 0: a constant distance, no agreement to measure
        keep = var > 0
        zs.extend(
            (expected[keep] - observed[keep] / n[keep]) / np.sqrt(var[keep] / n[keep])
        )
        if stop_when_passed and zs and max(zs) >= settled:
            break
    if not zs:
        return None
    return float(max(zs)), float(norm.isf(0.05 / len(zs)))
