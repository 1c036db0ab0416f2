"""UWS baseline on a finite metric space: mean pairwise squared distances, and the
UWS label model built on them (``StructuredLabelModel(estimator="uws")``)."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from snorkel_structured import _warnings
from snorkel_structured._validation import ABSTAIN, check_distance_matrix
from snorkel_structured.estimators._stats import VoteStats
from snorkel_structured.estimators.em import em_refine
from snorkel_structured.estimators.uws import uws_expected_sq_dist
from snorkel_structured.exceptions import IdentifiabilityWarning
from snorkel_structured.noise.finite import theta_from_expected_sq_dist

__all__ = ["mean_pair_sq_dist", "uws_estimate", "uws_fit"]


def uws_estimate(stats: VoteStats, S: Any) -> np.ndarray:
    """UWS estimate of E[d^2(lambda_a, Y)] per LF from vote counts (Shin et al. 2022).

    Forms M_ab = mean of S[lambda_a, lambda_b] over rows where both voted (from the
    pair counts) and hands it to :func:`uws_expected_sq_dist` (median over triplets of
    (M_ab + M_ac - M_bc) / 2).

    Parameters
    ----------
    stats : VoteStats
    S : ndarray of shape (r, r)
        Squared distances of the label space.

    Returns
    -------
    expected_sq_dist : ndarray of shape (n_lfs,)

    Examples
    --------
    >>> from snorkel_structured.synthetic import make_ranking_data
    >>> from snorkel_structured.estimators import VoteStats, uws_estimate
    >>> data = make_ranking_data(10_000, seed=0)
    >>> stats = VoteStats.from_label_matrix(data.L, n_labels=len(data.space))
    >>> uws_estimate(stats, data.space.squared_distance_matrix).shape
    (3,)
    """
    if not isinstance(stats, VoteStats):
        raise TypeError(f"stats must be a VoteStats; got {type(stats).__name__}.")
    S = check_distance_matrix(S, "S (squared distance matrix)", squared=True)
    if S.shape[0] != stats.n_labels:
        raise ValueError(
            f"S must be ({stats.n_labels}, {stats.n_labels}) to match stats.n_labels; "
            "got "
            f"shape {S.shape}."
        )
    return uws_expected_sq_dist(mean_pair_sq_dist(stats, S))


def mean_pair_sq_dist(stats: VoteStats, S: np.ndarray, exclude: Any = ()) -> np.ndarray:
    """M[a, b]: mean of S[lambda_a, lambda_b] over the rows where both LFs voted, (m, m).

    NaN for a pair that never votes together and for the pairs in ``exclude``
    (dependent LFs, whose mean distance is not the sum of their errors); 0 on the
    diagonal. One pass over the vote patterns per pair.
    """
    P, c = np.asarray(stats.patterns), np.asarray(stats.counts)
    m = stats.n_lfs
    M = np.full((m, m), np.nan)
    for a, b in itertools.combinations(range(m), 2):
        keep = (P[:, a] != ABSTAIN) & (P[:, b] != ABSTAIN)
        w = c[keep]
        if w.sum() > 0:
            M[a, b] = M[b, a] = (w @ S[P[keep, a], P[keep, b]]) / w.sum()
    np.fill_diagonal(M, 0.0)
    for a, b in exclude:
        M[a, b] = M[b, a] = np.nan
    return M


def uws_fit(
    stats: VoteStats,
    S: np.ndarray,
    *,
    prior: np.ndarray | None,
    support: np.ndarray | None,
    dependencies: Any,
    max_iter: int,
    tol: float,
) -> tuple[np.ndarray, np.ndarray, float]:
    """The UWS label model: theta from the UWS estimate of E[d^2], then the prior.

    theta inverts each LF's estimated E[d^2] under the model (at the given prior,
    else the uniform one); the prior is then fitted by EM with theta held, over
    ``support`` (default all labels), unless it is given.

    Returns
    -------
    prior : ndarray of shape (r,)
    theta : ndarray of shape (n_lfs,)
    log_likelihood : float
        NaN when the prior is given.

    Warns
    -----
    IdentifiabilityWarning
        For LFs with no usable triplet (treated as the most accurate possible).
    """
    r = S.shape[0]
    e = uws_expected_sq_dist(mean_pair_sq_dist(stats, S, dependencies))
    bad = ~np.isfinite(e) | (e < 0)
    if bad.any():
        _warnings.warn(
            f"UWS could not estimate E[d^2] for LFs {np.flatnonzero(bad).tolist()} "
            "(no fully observed triplet, or additivity badly violated); treated as "
            "the most accurate possible.",
            IdentifiabilityWarning,
            stacklevel=3,
        )
        e = np.where(np.isfinite(e), np.maximum(e, 0.0), 0.0)
    base = prior if prior is not None else np.full(r, 1.0 / r)
    theta = theta_from_expected_sq_dist(S, e, base)
    if prior is not None:
        return prior, theta, float("nan")
    T = np.arange(r) if support is None else support
    p0 = np.zeros(r)
    p0[T] = 1.0 / T.size
    est = em_refine(
        stats,
        S,
        theta=theta,
        prior=p0,
        support=T,
        fixed_theta=True,
        max_iter=max_iter,
        tol=tol,
    )
    return est.prior, theta, est.log_likelihood
