"""Choosing the support of the prior: which labels the mixture puts mass on.

The greedy search (a profile of one-center models, then labels added along the
likelihood's steepest vertex direction, then single swaps) gives a starting support;
:func:`prune_full_prior` fits the prior over every candidate label at once and keeps
the nested supports, ordered by that fit's mass, whose BIC is best.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from snorkel_structured.estimators._em_core import (
    _dist_moments,
    _Problem,
    _run_em,
    _solve_theta,
)


def _profile_single_center(prob: _Problem, C: np.ndarray) -> tuple[int, np.ndarray]:
    """Best one-label model among candidates C: (label, theta (m,)).

    For "every row has label y" the MLE of theta_a matches E[d^2 | y] to the mean
    squared distance of LF a's votes to y, and the log-likelihood is
    -n_a (theta_ay mean_ay + log Z(theta_ay, y)): no (r, r) or (m, r, r) table.
    """
    SC = prob.rows(C)  # (c, r)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_d2 = (prob.hist @ SC.T) / np.maximum(prob.n_voted, 1e-300)[
            :, None
        ]  # (m, c)
    mean_d2 = np.nan_to_num(mean_d2)
    vals, logmult = prob.dists(C)
    c = C.size
    one = np.broadcast_to(np.eye(c)[None], (prob.m, c, c)).reshape(-1, c)
    th = _solve_theta(vals, logmult, one, mean_d2.ravel(), np.ones(prob.m * c)).reshape(
        prob.m, c
    )
    logz, _, _ = _dist_moments(th[:, :, None], vals[None], logmult[None])
    ll = -(prob.n_voted[:, None] * (th * mean_d2 + logz)).sum(0)  # (c,)
    best = int(np.argmax(ll))
    return int(C[best]), th[:, best]


def _candidate_table(prob: _Problem, theta: np.ndarray, C: np.ndarray) -> np.ndarray:
    """(u, c): log P(pattern | y) for the candidate labels C under a shared theta."""
    return prob.log_lik_given(prob.log_table(theta, C))


def _grow(
    prob: _Problem,
    T: np.ndarray,
    w: np.ndarray,
    theta: np.ndarray,
    C: np.ndarray,
) -> int | None:
    """The candidate off T along which the likelihood rises fastest (vertex direction)."""
    G = _candidate_table(prob, theta, C)  # (u, c)
    GT = _candidate_table(prob, theta, T)
    mix = logsumexp(GT + np.log(np.maximum(w, 1e-300))[None, :], axis=1)
    D = prob.c @ np.exp(G - mix[:, None])  # (c,)
    D[np.isin(C, T)] = -np.inf
    if not np.isfinite(D).any():
        return None
    return int(C[np.argmax(D)])


def _swap(
    prob: _Problem,
    T: np.ndarray,
    w: np.ndarray,
    theta: np.ndarray,
    ll: float,
    C: np.ndarray,
    *,
    fixed_w: bool,
    max_iter: int,
    tol: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Local search over supports: move one label of T to a candidate while that helps.

    Every single move (T_j -> c, weights and theta held) is scored at once from the
    (n_patterns, n_candidates) table of log P(pattern | y); the best is refitted by EM
    and kept when the likelihood rises.
    """
    if T.size >= prob.r:
        return T, w, theta, ll
    for _ in range(4 * T.size):
        G = _candidate_table(prob, theta, C)  # (u, c)
        A = _candidate_table(prob, theta, T) + np.log(np.maximum(w, 1e-300))[None, :]
        in_T = np.isin(C, T)
        best_gain, best_move = 1e-9 * max(prob.n, 1.0), None
        for j in range(T.size):  # k vectorized scans over all candidates
            rest = (
                logsumexp(np.delete(A, j, axis=1), axis=1)
                if T.size > 1
                else np.full(G.shape[0], -np.inf)
            )
            cand = np.logaddexp(rest[:, None], np.log(max(w[j], 1e-300)) + G)
            score = prob.c @ cand
            score[in_T] = -np.inf
            c = int(np.argmax(score))
            gain = score[c] - ll
            if gain > best_gain:
                best_gain, best_move = gain, (j, int(C[c]))
        if best_move is None:
            break
        T2 = T.copy()
        T2[best_move[0]] = best_move[1]
        w2, th2, ll2, _, _ = _run_em(
            prob,
            T2,
            w.copy(),
            theta.copy(),
            fixed_w=fixed_w,
            label_dependent=False,
            max_iter=max_iter,
            tol=tol,
        )
        if ll2 <= ll:
            break
        T, w, theta, ll = T2, w2, th2, ll2
    return T, w, theta, ll


def _bic_penalty(prob: _Problem) -> float:
    """BIC cost of one more support label: a weight and a location, (2 / 2) log n."""
    return float(np.log(max(prob.n, 2.0)))


def _search(
    prob: _Problem,
    start: int,
    theta0: np.ndarray,
    C: np.ndarray,
    *,
    n_components: int | None,
    max_iter: int,
    tol: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Greedy support search from one label: (T, w, theta, loglik)."""
    T = np.array([start])
    w = np.ones(1)
    theta = theta0.copy()
    inner = dict(
        fixed_w=False,
        label_dependent=False,
        max_iter=min(max_iter, 200),
        tol=max(tol, 1e-6),
    )
    w, theta, ll, _, _ = _run_em(prob, T, w, theta, **inner)
    k_max = C.size if n_components is None else min(C.size, 2 * n_components)
    penalty = _bic_penalty(prob)
    while T.size < k_max:
        c = _grow(prob, T, w, theta, C)
        if c is None:
            break
        T2 = np.append(T, c)
        w2 = np.append(w * (1 - 1 / T2.size), 1 / T2.size)
        w2, th2, ll2, _, _ = _run_em(prob, T2, w2, theta, **inner)
        if n_components is None and ll2 - ll < penalty:
            break
        T, w, theta, ll = T2, w2, th2, ll2
    if n_components is not None and T.size > n_components:
        keep = np.sort(np.argsort(-w, kind="stable")[:n_components])
        T, w = T[keep], w[keep] / w[keep].sum()
        w, theta, ll, _, _ = _run_em(prob, T, w, theta, **inner)
    return T, w, theta, ll
