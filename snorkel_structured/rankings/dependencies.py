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
is significant, and repeats until no pair is flagged. Flagged pairs join LFs into
clusters (connected components); a cluster counts as one source, each LF's weight
scaled by its share of that source (:func:`source_shares`).

Only agreements at least ``MIN_Z_AGREE`` standard errors above 0 enter the fit (the
log of an agreement indistinguishable from 0 is not estimated), and an LF in no such
pair is left out of it: it cannot be judged, the others still can.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from snorkel_structured._validation import ABSTAIN
from snorkel_structured.rankings.estimate import pair_signs

__all__ = [
    "MIN_RATIO",
    "MIN_Z",
    "PairAgreement",
    "clusters_of",
    "clusters_shown",
    "detect_dependent_pairs",
    "frustrated_triangles",
    "label_pair_agreement",
    "overagreeing_triplets",
    "rank_one_error_rates",
    "source_correlations",
    "source_shares",
]

# A pair is dependent when it disagrees at most half as often as two independent LFs
# of the fitted accuracies would (the practical threshold of StructuredLabelModel's
# test), and the gap is MIN_Z standard errors wide.
MIN_RATIO = 2.0
MIN_Z = 4.0
# Agreements that enter the fit are this many standard errors above 0.
MIN_Z_AGREE = 2.0
# Patterns per block when label_pair_agreement expands votes into item pairs.
_BLOCK_PATTERNS = 4096
# Left-out rank-one fits solved together (each holds a (pairs, n_lfs) design).
_FIT_BLOCK = 64


class _Agreements(Protocol):
    """What the test reads: :class:`~snorkel_structured.rankings.estimate.RankingStats`
    or :class:`PairAgreement`."""

    @property
    def agreement(self) -> np.ndarray: ...

    @property
    def both(self) -> np.ndarray: ...

    @property
    def n_items(self) -> int: ...


@dataclass(frozen=True)
class PairAgreement:
    """LFs' pairwise agreement over item pairs, as the dependency test reads it.

    Attributes
    ----------
    agreement : ndarray of shape (n_lfs, n_lfs)
        Mean of ``s_a s_b`` over the item pairs both LFs order (NaN: none).
    both : ndarray of shape (n_lfs, n_lfs)
        How many item pairs both order (summed over rows).
    n_items : int
    """

    agreement: np.ndarray
    both: np.ndarray
    n_items: int


def label_pair_agreement(
    orderings: np.ndarray, patterns: np.ndarray, counts: np.ndarray
) -> PairAgreement:
    """:class:`PairAgreement` of votes that are labels of an enumerated ranking space.

    Parameters
    ----------
    orderings : ndarray of int of shape (n_labels, n_items)
        Label j is the ordering ``orderings[j]`` (items first to last).
    patterns : ndarray of int of shape (n_patterns, n_lfs)
        Vote patterns (label indices, -1 abstain).
    counts : ndarray of shape (n_patterns,)
        Rows per pattern.
    """
    orderings = np.asarray(orderings)
    n_items = orderings.shape[1]
    sign = pair_signs(orderings).astype(np.float64)  # (n_labels, n_pairs)
    P = np.asarray(patterns)
    root = np.sqrt(np.asarray(counts, dtype=np.float64))
    m = P.shape[1]
    agree, both = np.zeros((m, m)), np.zeros((m, m))
    for start in range(0, P.shape[0], _BLOCK_PATTERNS):
        block = P[start : start + _BLOCK_PATTERNS]
        voted = (block != ABSTAIN) * root[start : start + _BLOCK_PATTERNS, None]
        X = sign[np.maximum(block, 0)] * voted[:, :, None]  # (u, m, n_pairs)
        X = X.transpose(1, 0, 2).reshape(m, -1)
        agree += X @ X.T
        both += (voted.T @ voted) * sign.shape[1]  # a full ordering orders every pair
    with np.errstate(invalid="ignore", divide="ignore"):
        agreement = np.where(both > 0, agree / both, np.nan)
    return PairAgreement(agreement, both, n_items)


def _design(
    usable: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """(a, b, X, active) of the usable pairs: ``active`` marks the LFs in some usable
    pair and X is the (pairs, active LFs) design of ``l_a + l_b``; None if the pairs
    do not determine every active ``l_a`` (a rank-deficient design)."""
    active = usable.any(axis=1)
    a, b = np.nonzero(np.triu(usable, 1))
    col = np.cumsum(active) - 1
    X = np.zeros((a.size, int(active.sum())))
    X[np.arange(a.size), col[a]] = 1.0
    X[np.arange(a.size), col[b]] = 1.0
    if a.size < X.shape[1] or np.linalg.matrix_rank(X) < X.shape[1]:
        return None
    return a, b, X, active


def _fit_log_rank_one(
    logA: np.ndarray, usable: np.ndarray, robust: bool = False
) -> np.ndarray | None:
    """``l`` with ``logA[a, b] ~ l_a + l_b`` over the usable pairs (None if they do
    not determine it; NaN for an LF in no usable pair): least squares, or least
    absolute deviations (``robust``, by iteratively reweighted least squares), which
    a minority of dependent pairs cannot pull."""
    design = _design(usable)
    if design is None:
        return None
    a, b, X, active = design
    y = logA[a, b]
    ell = np.linalg.lstsq(X, y, rcond=None)[0]
    for _ in range(100 if robust else 0):
        root = 1.0 / np.sqrt(np.maximum(np.abs(y - X @ ell), 1e-3))
        new = np.linalg.lstsq(X * root[:, None], y * root, rcond=None)[0]
        done = np.max(np.abs(new - ell)) < 1e-9
        ell = new
        if done:
            break
    out = np.full(usable.shape[0], np.nan)
    out[active] = ell
    return out


def _left_out_predictions(
    logA: np.ndarray, usable: np.ndarray, robust: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For every usable pair (a, b), ``l_a + l_b`` from :func:`_fit_log_rank_one` on
    the other usable pairs (NaN where they do not determine it), all fits at once.

    The fits are weighted least squares on one design, each with one row's weight
    at 0: their normal equations are stacked and solved together (``_FIT_BLOCK``
    fits at a time), and so are the reweighting steps of the robust fits (a fit
    stops when its step is below 1e-9, as :func:`_fit_log_rank_one`'s does).
    Returns (a, b, prediction).
    """
    a, b = np.nonzero(np.triu(usable, 1))
    n_pairs, m = a.size, usable.shape[0]
    pred = np.full(n_pairs, np.nan)
    if n_pairs < 2:
        return a, b, pred
    X = np.zeros((n_pairs, m))
    X[np.arange(n_pairs), a] = 1.0
    X[np.arange(n_pairs), b] = 1.0
    y = logA[a, b]
    for start in range(0, n_pairs, _FIT_BLOCK):
        t = np.arange(start, min(start + _FIT_BLOCK, n_pairs))
        keep = np.ones((t.size, n_pairs), dtype=bool)  # fit t: every pair but t
        keep[np.arange(t.size), t] = False
        active = (keep @ X) > 0  # (fits, m): the LFs in some kept pair
        n_active = active.sum(axis=1)
        # _design's test: enough kept pairs, and full column rank on the active LFs
        # (an inactive LF's column is zero and adds no rank)
        rank = np.linalg.matrix_rank(keep[:, :, None] * X[None])
        ok = np.flatnonzero((n_pairs - 1 >= n_active) & (rank == n_active))
        if ok.size:
            pred[t[ok]] = _weighted_fits(
                X, y, keep[ok], active[ok], a[t[ok]], b[t[ok]], robust
            )
    return a, b, pred


def _weighted_fits(
    X: np.ndarray,
    y: np.ndarray,
    keep: np.ndarray,
    active: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    robust: bool,
) -> np.ndarray:
    """``l_a + l_b`` of the least-squares (or, ``robust``, least-absolute-deviations)
    fits of y ~ X l on the rows each fit keeps; NaN where a or b is inactive."""
    W = keep.astype(np.float64)
    # an identity block on the inactive LFs keeps each system regular (their l is
    # read as NaN below)
    ridge = (~active)[:, :, None] * np.eye(X.shape[1])

    def solve(weights: np.ndarray, rows: np.ndarray) -> np.ndarray:
        G = (X.T[None] * weights[:, None, :]) @ X + ridge[rows]
        return np.linalg.solve(G, ((weights * y) @ X)[:, :, None])[:, :, 0]

    ell = solve(W, np.arange(W.shape[0]))
    running = np.arange(W.shape[0])
    for _ in range(100 if robust else 0):
        resid = np.abs(y - ell[running] @ X.T)
        weights = W[running] / np.maximum(resid, 1e-3)
        new = solve(weights, running)
        done = np.max(np.abs(new - ell[running]), axis=1) < 1e-9
        ell[running] = new
        running = running[~done]
        if not running.size:
            break
    rows = np.arange(W.shape[0])
    both_active = active[rows, a] & active[rows, b]
    return np.where(both_active, ell[rows, a] + ell[rows, b], np.nan)


def _flag(
    A: np.ndarray, logA: np.ndarray, usable: np.ndarray, n_eff: np.ndarray, robust: bool
) -> list[tuple[int, int]]:
    """Pairs flagged one at a time, each judged by a fit that leaves it out."""
    usable = usable.copy()
    flagged: list[tuple[int, int]] = []
    while True:
        a, b, pred = _left_out_predictions(logA, usable, robust)
        with np.errstate(invalid="ignore", over="ignore"):
            p0 = (1 - np.minimum(np.exp(pred), 1.0)) / 2  # predicted disagreement
            p = (1 - A[a, b]) / 2
            ratio = p0 / np.maximum(p, 1e-12)
            z = (p0 - p) / np.sqrt(np.maximum(p0 * (1 - p0), 1e-12) / n_eff[a, b])
        # the other pairs must determine l_a and l_b (NaN fails both tests)
        ok = np.flatnonzero((ratio >= MIN_RATIO) & (z >= MIN_Z))
        if not ok.size:
            return flagged
        # the largest ratio; of equal ones, the last pair (as a scan keeping >= would)
        t = ok[np.flatnonzero(ratio[ok] == ratio[ok].max())[-1]]
        best = (int(a[t]), int(b[t]))
        usable[best] = usable[best[::-1]] = False
        flagged.append(best)


def _residual_variance(logA: np.ndarray, usable: np.ndarray) -> float:
    """Least-squares residual variance of the rank-one fit (per degree of freedom)."""
    design = _design(usable)
    if design is None:
        return np.inf
    a, b, X, _ = design
    ell = np.linalg.lstsq(X, logA[a, b], rcond=None)[0]
    dof = a.size - X.shape[1]
    return float(np.sum((logA[a, b] - X @ ell) ** 2) / dof) if dof > 0 else np.inf


def _agreement_z(stats: _Agreements) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(A, rows' worth of instances, A in standard errors from 0), (m, m) each.

    Pairs within a row are far from independent, so the standard error counts each
    row that both LFs vote on as about n_items draws.
    """
    A = np.asarray(stats.agreement, dtype=np.float64)
    n_eff = np.asarray(stats.both, dtype=np.float64) / max(stats.n_items - 1, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = A * np.sqrt(n_eff / np.maximum(1.0 - A**2, 1e-12))
    return A, n_eff, z


def _usable_log_agreement(
    stats: _Agreements,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(A, log A, usable pairs, rows' worth of instances) of the rank-one fit."""
    A, n_eff, z_agree = _agreement_z(stats)
    with np.errstate(divide="ignore", invalid="ignore"):
        logA = np.log(A)
    # log A_ab is only estimated where A_ab is: an agreement within MIN_Z_AGREE
    # standard errors of 0 has a log anywhere below about -2 (-4.6 at 0.01), and one
    # such pair pulled the fit far enough to miss two LFs agreeing on 99% of pairs.
    usable = np.isfinite(logA) & (z_agree >= MIN_Z_AGREE) & (n_eff >= 10)
    np.fill_diagonal(usable, False)
    return A, logA, usable, n_eff


def detect_dependent_pairs(stats: _Agreements) -> list[tuple[int, int]]:
    """Pairs of LFs that share a source (see the module docstring).

    Two searches run: one judges each pair by a least-squares fit to the others, the
    other by a least-absolute-deviations fit. Least squares misses a cluster of 3
    or more LFs that share a source (their pairs confirm each other); least absolute
    deviations can take the few pairs among accurate LFs for the outliers when many
    weak LFs share a source. The flagged set kept is the one whose remaining pairs
    fit the rank-one model best (smallest residual variance).

    Parameters
    ----------
    stats : RankingStats or PairAgreement

    Returns
    -------
    pairs : list of (int, int)
        Flagged pairs ``(a, b)``, ``a < b``, in the order they were flagged.
    """
    A, logA, usable, n_eff = _usable_log_agreement(stats)
    best, best_var = [], _residual_variance(logA, usable)
    for robust in (False, True):
        flagged = _flag(A, logA, usable, n_eff, robust)
        if not flagged:
            continue
        rest = usable.copy()
        for a, b in flagged:
            rest[a, b] = rest[b, a] = False
        var = _residual_variance(logA, rest)
        if var < best_var:
            best, best_var = flagged, var
    return best


def frustrated_triangles(
    stats: _Agreements, min_z: float = MIN_Z
) -> list[tuple[int, int, int]]:
    """Triplets of LFs whose agreements LFs that err independently cannot show.

    For LFs independent given the truth ``A_ab = mu_a mu_b`` (module docstring), so
    ``A_ab A_bc A_ca = (mu_a mu_b mu_c)^2 >= 0`` whatever the LFs' accuracies: an LF
    worse than chance (``mu < 0``) flips the sign of each of its agreements, never of
    the product. A triplet whose three agreements are each at least ``min_z``
    standard errors from 0 and whose product is negative (one or three of them
    negative) is therefore no sampling accident: the LFs' errors depend on each
    other, e.g. two LFs that read quantities correlated with each other but not with
    the truth (a country's population against its small area, when the truth is
    its density). The rank-one fit then reads such dependence as accuracy.

    Parameters
    ----------
    stats : RankingStats or PairAgreement
    min_z : float, default=MIN_Z
        Standard errors (as the dependency test counts them: each row both LFs
        vote on worth about ``n_items`` draws) each agreement must be from 0.

    Returns
    -------
    list of (int, int, int)
        The triplets ``a < b < c``.
    """
    A, _, z = _agreement_z(stats)
    sign = np.where(np.abs(z) >= min_z, np.sign(A), 0.0)  # NaN: not significant
    np.fill_diagonal(sign, 0.0)
    m = sign.shape[0]
    # One (b, c) table per first LF a, b and c after it: memory quadratic in m.
    later = np.triu(np.ones((m, m), dtype=bool), 1)
    out = []
    for a in range(m):
        neg = (np.outer(sign[a], sign[a]) * sign < 0) & later
        neg[: a + 1] = False
        out.extend((a, int(b), int(c)) for b, c in np.argwhere(neg))
    return out


def overagreeing_triplets(
    stats: _Agreements, clusters: np.ndarray | None = None, min_z: float = MIN_Z
) -> list[tuple[int, int, int]]:
    """Triplets in which one LF agrees with two others more than any accuracy allows.

    For LFs independent given the truth ``A_ab = mu_a mu_b`` (module docstring), so
    ``mu_a^2 = A_ab A_ac / A_bc``: LF a agrees with b and c at most as much as a
    perfect LF would, ``|A_ab A_ac| <= |A_bc|``. A triplet whose three agreements are
    each at least ``min_z`` standard errors from 0, with a positive product (a
    negative one is a :func:`frustrated_triangles` triplet), and where
    ``|A_ab| |A_ac| - |A_bc|`` is at least ``min_z`` standard errors above 0, breaks
    that bound. LF a then shares with b and with c something beyond the truth, or
    the truth itself is a consensus of what the LFs read (the sum of their
    columns): the rank-one fit reads either as accuracy, and agreements alone cannot
    tell the two apart.

    Parameters
    ----------
    stats : RankingStats or PairAgreement
    clusters : ndarray of int of shape (n_lfs,), optional
        Groups of LFs already modeled as sharing a source (:func:`clusters_of`): a
        triplet with two LFs of one group is left out (its excess is that group's).
        Default: every LF alone.
    min_z : float, default=MIN_Z
        Standard errors, as :func:`frustrated_triangles` counts them (each row both
        LFs vote on worth about ``n_items`` draws). The standard error of
        ``|A_ab| |A_ac| - |A_bc|`` treats the three agreements as independent
        (first-order delta method).

    Returns
    -------
    list of (int, int, int)
        ``(a, b, c)`` with ``a`` the LF that agrees too much and ``b < c``.
    """
    A, n_eff, z = _agreement_z(stats)
    m = A.shape[0]
    sig = np.abs(np.nan_to_num(z)) >= min_z
    np.fill_diagonal(sig, False)
    P = np.abs(np.where(sig, A, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        se = np.where(sig, np.sqrt(np.maximum(1.0 - A**2, 1e-12) / n_eff), 0.0)
    sign = np.sign(np.where(sig, A, 0.0))
    group = np.arange(m) if clusters is None else np.asarray(clusters)
    # (b, c) with b < c in different groups, both agreements with each other
    # significant: the candidates for every centre a (one (m, m) table at a time).
    base = sig & np.triu(group[:, None] != group[None, :], 1)
    out = []
    for a in range(m):
        ok = base & np.outer(sig[a], sig[a]) & (group != group[a])[:, None]
        ok &= (group != group[a])[None, :] & (np.outer(sign[a], sign[a]) * sign > 0)
        spread = np.sqrt(
            np.outer(se[a], P[a]) ** 2 + np.outer(P[a], se[a]) ** 2 + se**2
        )
        ok &= np.outer(P[a], P[a]) - P >= min_z * spread
        out.extend((a, int(b), int(c)) for b, c in np.argwhere(ok))
    return out


def clusters_of(pairs: list[tuple[int, int]], n_lfs: int) -> np.ndarray:
    """Cluster label of each LF: connected components of the dependent pairs."""
    label = np.arange(n_lfs)
    for a, b in pairs:
        la, lb = label[a], label[b]
        label[label == max(la, lb)] = min(la, lb)
    _, out = np.unique(label, return_inverse=True)
    return out


def clusters_shown(clusters: np.ndarray) -> list[list[int]]:
    """The clusters of more than one LF, as lists of LF indices (for messages)."""
    clusters = np.asarray(clusters)
    return [
        np.flatnonzero(clusters == g).tolist()
        for g in np.unique(clusters)
        if np.sum(clusters == g) > 1
    ]


def source_shares(
    stats: _Agreements, clusters: np.ndarray, eps: np.ndarray
) -> np.ndarray:
    """Each LF's share of its cluster's source: ``1 / sum_b rho_ab`` over its cluster.

    ``rho_ab`` is the correlation of LFs a and b's errors given the truth. With
    ``e_a = s_a y`` (+1 right, -1 wrong, mean ``mu_a = 1 - 2 eps_a``), the mean of
    ``s_a s_b`` over the pairs both order is ``E[e_a e_b]``, so
    ``rho_ab = (A_ab - mu_a mu_b) / sqrt((1 - mu_a^2) (1 - mu_b^2))``. This is the
    design effect of correlated estimates: s LFs whose errors correlate at rho
    carry as much as ``s / (1 + (s - 1) rho)`` independent ones, and each one's
    share ``1 / (1 + (s - 1) rho)`` is what this returns for them. Copies
    (``rho = 1``) share one source (``1 / s``, a cluster counted once); LFs
    flagged together but erring apart keep more of their own weight (two accurate
    gazetteer counts of a country's cities: ``rho`` 0.58, share 0.63, not 0.5).

    A correlation that cannot be estimated (no pair ordered by both, or an LF
    estimated never wrong) counts as 1, the copy's, and estimates are clipped to
    [0, 1]. An LF alone in its cluster gets 1.

    Parameters
    ----------
    stats : RankingStats or PairAgreement
    clusters : ndarray of int of shape (n_lfs,)
        Cluster of each LF (:func:`clusters_of`).
    eps : ndarray of shape (n_lfs,)
        Each LF's rate of ordering a pair against the truth (the triplet estimate,
        taken from LFs outside its cluster).

    Returns
    -------
    ndarray of shape (n_lfs,), in (0, 1]
    """
    return 1.0 / source_correlations(stats, clusters, eps).sum(axis=1)


def source_correlations(
    stats: _Agreements, clusters: np.ndarray, eps: np.ndarray
) -> np.ndarray:
    """``rho_ab`` of :func:`source_shares` within each cluster, 0 across clusters.

    Returns
    -------
    ndarray of shape (n_lfs, n_lfs)
        Symmetric, in [0, 1], with 1 on the diagonal.
    """
    mu = 1.0 - 2.0 * np.asarray(eps, dtype=np.float64)
    var = 1.0 - mu**2
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (stats.agreement - np.outer(mu, mu)) / np.sqrt(np.outer(var, var))
    rho = np.clip(np.where(np.isfinite(rho), rho, 1.0), 0.0, 1.0)
    np.fill_diagonal(rho, 1.0)
    clusters = np.asarray(clusters)
    return rho * (clusters[:, None] == clusters[None, :])


def rank_one_error_rates(
    stats: _Agreements, pairs: list[tuple[int, int]]
) -> np.ndarray:
    """Each LF's rate of ordering a pair against the truth, from the rank-one fit.

    ``mu_a = exp(l_a)`` with ``l`` fitted to the usable agreements outside the
    flagged ``pairs`` (``A_ab = mu_a mu_b`` for LFs independent given the truth),
    ``eps_a = (1 - mu_a) / 2``. An LF the fit does not determine gets NaN (its
    correlations then count as a copy's in :func:`source_correlations`).

    Returns
    -------
    ndarray of shape (n_lfs,)
    """
    _, logA, usable, _ = _usable_log_agreement(stats)
    for a, b in pairs:
        usable[a, b] = usable[b, a] = False
    ell = _fit_log_rank_one(logA, usable)
    if ell is None:
        return np.full(usable.shape[0], np.nan)
    return (1.0 - np.minimum(np.exp(ell), 1.0)) / 2.0
