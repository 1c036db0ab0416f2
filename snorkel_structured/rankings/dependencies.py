"""LFs that share a source: pairs that agree far more than their accuracies explain.

If LFs a and b are independent given the truth, the mean of ``s_a s_b`` over the
pairs both order is ``mu_a mu_b`` (see :mod:`~snorkel_structured.rankings.estimate`),
so ``log A_ab = l_a + l_b`` with ``l_a = log mu_a``: the off-diagonal agreements are
rank one in log space. LFs that read the same source (radius and perimeter of a
tumour) agree more. For each pair not yet flagged, the test predicts ``A_ab`` from
a least-squares fit of ``l`` to the *other* such pairs (a pair's own excess would
otherwise pull the fit towards it), flags the pair whose observed disagreement rate
``(1 - A_ab) / 2`` is the smallest fraction of the predicted one
``(1 - mu_a mu_b) / 2``, if that fraction is at most ``1 / MIN_RATIO`` and the gap
is significant, and repeats until no pair is flagged. Flagged pairs join LFs into clusters (connected components); a cluster
counts as one source.
"""

from __future__ import annotations

import numpy as np

from snorkel_structured.rankings.estimate import RankingStats

__all__ = ["MIN_RATIO", "MIN_Z", "detect_dependent_pairs", "clusters_of"]

# A pair is dependent when it disagrees at most half as often as two independent LFs
# of the fitted accuracies would (the practical threshold of StructuredLabelModel's
# test), and the gap is MIN_Z standard errors wide.
MIN_RATIO = 2.0
MIN_Z = 4.0


def _fit_log_rank_one(logA: np.ndarray, usable: np.ndarray) -> np.ndarray | None:
    """Least-squares ``l`` with ``logA[a, b] ~ l_a + l_b`` over usable pairs; None if
    the usable pairs do not determine every ``l_a`` (a rank-deficient design).

    Unweighted on purpose: weighting by the inverse variance of ``log A_ab`` (large
    for agreements near 1) lets a strongly dependent pair pull the fit towards it;
    on the long-list tasks it flagged the wrong pairs.
    """
    m = logA.shape[0]
    a, b = np.nonzero(np.triu(usable, 1))
    X = np.zeros((a.size, m))
    X[np.arange(a.size), a] = 1.0
    X[np.arange(a.size), b] = 1.0
    if a.size < m or np.linalg.matrix_rank(X) < m:
        return None
    return np.linalg.lstsq(X, logA[a, b], rcond=None)[0]


def detect_dependent_pairs(stats: RankingStats) -> list[tuple[int, int]]:
    """Pairs of LFs that share a source (see the module docstring).

    Parameters
    ----------
    stats : RankingStats

    Returns
    -------
    pairs : list of (int, int)
        Flagged pairs ``(a, b)``, ``a < b``, in the order they were flagged.
    """
    A = stats.agreement
    # Rows' worth of instances: pairs within a row are far from independent, so the
    # standard error counts each row that both LFs vote on as about n_items draws.
    n_eff = stats.both / max(stats.n_items - 1, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        logA = np.log(A)
    usable = np.isfinite(logA) & (A > 0) & (n_eff >= 10)
    np.fill_diagonal(usable, False)
    flagged: list[tuple[int, int]] = []
    while True:
        best, best_ratio = None, MIN_RATIO
        for a, b in zip(*np.nonzero(np.triu(usable, 1)), strict=True):
            others = usable.copy()
            others[a, b] = others[b, a] = False
            ell = _fit_log_rank_one(logA, others)
            if ell is None:
                continue  # the other pairs do not determine l_a and l_b
            p0 = (1 - min(np.exp(ell[a] + ell[b]), 1.0)) / 2  # predicted disagreement
            p = (1 - A[a, b]) / 2
            ratio = p0 / max(p, 1e-12)
            z = (p0 - p) / np.sqrt(max(p0 * (1 - p0), 1e-12) / n_eff[a, b])
            if ratio >= best_ratio and z >= MIN_Z:
                best, best_ratio = (int(a), int(b)), ratio
        if best is None:
            return flagged
        usable[best] = usable[best[::-1]] = False
        flagged.append(best)


def clusters_of(pairs: list[tuple[int, int]], n_lfs: int) -> np.ndarray:
    """Cluster label of each LF: connected components of the dependent pairs."""
    label = np.arange(n_lfs)
    for a, b in pairs:
        la, lb = label[a], label[b]
        label[label == max(la, lb)] = min(la, lb)
    _, out = np.unique(label, return_inverse=True)
    return out
