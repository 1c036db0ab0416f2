"""UWS baseline on a finite metric space: mean pairwise squared distances."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from snorkel_structured._validation import check_distance_matrix
from snorkel_structured.estimators._stats import VoteStats
from snorkel_structured.estimators.uws import uws_expected_sq_dist

__all__ = ["uws_estimate"]


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
    m = stats.n_lfs
    M = np.full((m, m), np.nan)
    for a, b in itertools.combinations(range(m), 2):  # one bincount per pair of LFs
        C = stats.pair_counts(a, b)
        n = C.sum()
        if n > 0:
            M[a, b] = M[b, a] = float((C * S).sum() / n)
    np.fill_diagonal(M, 0.0)
    return uws_expected_sq_dist(M)
