"""Choosing the support of the prior: which labels the mixture puts mass on.

The greedy search (a profile of one-center models, then labels added along the
likelihood's steepest vertex direction, then single swaps) gives a starting support;
:func:`prune_full_prior` fits the prior over every candidate label at once and keeps
the nested supports, ordered by that fit's mass, whose BIC is best.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from snorkel_structured._numeric import logsumexp
from snorkel_structured.estimators._em_core import EMFit, _Problem, _run_em
from snorkel_structured.estimators._noise_kernel import _dist_moments, _solve_theta

# EM tolerance (log-likelihood per row) of the fits that only rank supports; the
# chosen support is refitted at the caller's tolerance.
_SEARCH_TOL = 1e-6


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
    th = _solve_theta(
        vals,
        logmult,
        one,
        mean_d2.ravel(),
        np.full(prob.m * c, 1.0 / prob.sq.unit),
        theta_max=prob.sq.theta_max,
    ).reshape(prob.m, c)
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
    and kept when the likelihood rises by more than the search's EM tolerance
    (``_SEARCH_TOL`` per row). Smaller gains are within what the fits' own
    convergence leaves: on ``Permutations(7)`` (3,000 rows) they moved labels of
    negligible mass back and forth, 57 refits for at most 4e-5 nats each.
    """
    if T.size >= prob.r:
        return T, w, theta, ll
    min_gain = max(tol, _SEARCH_TOL) * max(prob.n, 1.0)
    for _ in range(4 * T.size):
        G = _candidate_table(prob, theta, C)  # (u, c)
        A = _candidate_table(prob, theta, T) + np.log(np.maximum(w, 1e-300))[None, :]
        in_T = np.isin(C, T)
        best_gain, best_move = min_gain, None
        # In probabilities, shifted by each row's largest term: one log per entry
        # instead of a logaddexp (several times the cost, and the search's hot spot
        # on large spaces).
        shift = np.maximum(A.max(axis=1), G.max(axis=1))[:, None]
        EA, EG = np.exp(A - shift), np.exp(G - shift)
        base = prob.c @ shift[:, 0]
        for j in range(T.size):  # k vectorized scans over all candidates
            rest = np.delete(EA, j, axis=1).sum(axis=1)
            with np.errstate(divide="ignore"):
                cand = np.log(rest[:, None] + max(w[j], 1e-300) * EG)
            score = prob.c @ cand + base
            score[in_T] = -np.inf
            c = int(np.argmax(score))
            gain = score[c] - ll
            if gain > best_gain:
                best_gain, best_move = gain, (j, int(C[c]))
        if best_move is None:
            break
        T2 = T.copy()
        T2[best_move[0]] = best_move[1]
        fit = _run_em(
            prob,
            T2,
            w.copy(),
            theta.copy(),
            fixed_w=fixed_w,
            label_dependent=False,
            max_iter=max_iter,
            tol=tol,
        )
        if fit.ll - ll <= min_gain:
            break
        T, w, theta, ll = T2, fit.w, fit.theta, fit.ll
    return T, w, theta, ll


def _bic_penalty(prob: _Problem) -> float:
    """BIC cost of one more support label: a weight and a location, (2 / 2) log n."""
    return float(np.log(max(prob.n, 2.0)))


def informative_theta(theta: np.ndarray, unit: float) -> np.ndarray:
    """``theta``, or 1 per LF in the distances' unit (the next E-step a soft majority
    vote) when every LF's is 0: there the votes say nothing about Y, so EM stays put.
    The best single center of a tree whose truth spreads over three leaves is its
    root, at theta 0; every support grown from it stayed at theta 0 and gave one
    answer for every row."""
    return theta if np.any(theta > 0) else np.full(theta.shape, 1.0 / unit)


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
        tol=max(tol, _SEARCH_TOL),
    )
    fit = _run_em(prob, T, w, theta, **inner)
    w, theta, ll = fit.w, fit.theta, fit.ll
    k_max = C.size if n_components is None else min(C.size, 2 * n_components)
    penalty = _bic_penalty(prob)
    while T.size < k_max:
        c = _grow(prob, T, w, theta, C)
        if c is None:
            break
        T2 = np.append(T, c)
        w2 = np.append(w * (1 - 1 / T2.size), 1 / T2.size)
        fit = _run_em(prob, T2, w2, informative_theta(theta, prob.sq.unit), **inner)
        if n_components is None and fit.ll - ll < penalty:
            break
        T, w, theta, ll = T2, fit.w, fit.theta, fit.ll
    if n_components is not None and T.size > n_components:
        keep = np.sort(np.argsort(-w, kind="stable")[:n_components])
        T, w = T[keep], w[keep] / w[keep].sum()
        fit = _run_em(prob, T, w, theta, **inner)
        w, theta, ll = fit.w, fit.theta, fit.ll
    return T, w, theta, ll


# Labels with less prior mass than this after the full-prior fit are never kept: at
# most 1 row in 1,000, far below what any criterion below could tell from zero.
_NEGLIGIBLE_MASS = 1e-3
# The scan over nested supports stops after this many sizes without a better BIC.
_PATIENCE = 3
_CONTESTED_MASS = 0.05


# EM steps each start of the full-prior fit gets before only the best one goes on.
_SHORT_RUN_STEPS = 12


def _best_of_short_runs(
    prob: _Problem,
    T: np.ndarray,
    starts: list[tuple[np.ndarray, np.ndarray]],
    opts: dict,
) -> EMFit:
    """The best of several EM starts, each run a few steps before the best goes on.

    The "short runs" strategy of Biernacki, Celeux and Govaert (2003, Comput. Stat.
    Data Anal. 41): the start whose likelihood leads after ``_SHORT_RUN_STEPS`` steps
    is the one continued to convergence, instead of running every start to the end.
    Over hundreds of candidate labels a full run costs 40-50 steps.
    """
    short = dict(opts, max_iter=min(_SHORT_RUN_STEPS, opts["max_iter"]))
    runs = [_run_em(prob, T, w0, th0.copy(), **short) for w0, th0 in starts]
    best = max(runs, key=lambda f: f.ll)
    if best.converged:
        return best
    rest = _run_em(
        prob,
        T,
        best.w,
        best.theta.copy(),
        **dict(opts, max_iter=opts["max_iter"] - best.n_iter),
    )
    return replace(rest, n_iter=best.n_iter + rest.n_iter)


def prune_full_prior(
    prob: _Problem,
    starts: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
    C: np.ndarray,
    *,
    max_iter: int,
    tol: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, bool]:
    """Fit the prior over every candidate label, then keep what BIC supports.

    A greedy search adds one label at a time and stops at the first label whose gain
    is below the penalty, so two centers a step apart can hide each other (the
    mixture of the two looks like one broad center until both are in). Fitting the
    prior over all candidates at once avoids that: each label's mass is what the
    data give it. Then the nested supports made of the k heaviest labels, k = 1, 2,
    ..., are refitted and scored by BIC (a weight and a location per label), so
    labels whose mass only soaks up sampling noise are dropped.

    Parameters
    ----------
    prob : _Problem
    starts : list of (T, w, theta)
        Fits whose prior is spread (smoothed) over C as starting points of the full fit;
        a uniform prior with theta = 1 / unit (a soft majority vote) is always tried too.
    C : ndarray of int
        Candidate labels.

    Returns
    -------
    (T, w, theta, loglik, uncertain)
        The chosen support, its fit, and whether another size scores within 1 of it
        in BIC (log-likelihood units) while the labels between the two sizes hold at
        least 5% of the prior.
    """
    # A start may hold labels outside the candidates (the tensor start is not limited
    # to the most-voted labels): they join the candidates.
    C = np.union1d(C, np.concatenate([T for T, _, _ in starts]) if starts else C)
    full_starts = [(np.full(C.size, 1.0 / C.size), np.full(prob.m, 1.0 / prob.sq.unit))]
    for T, w, theta in starts:
        w_c = np.full(C.size, 0.1 / C.size)
        w_c[np.searchsorted(C, T)] += 0.9 * w
        full_starts.append((w_c, theta))
    # The full and nested fits only rank labels and support sizes: a looser tolerance
    # (as the greedy search's) does; the chosen support is refitted at ``tol`` below.
    opts = dict(
        fixed_w=False,
        label_dependent=False,
        max_iter=min(max_iter, 200),
        tol=max(tol, _SEARCH_TOL),
    )
    full = _best_of_short_runs(prob, C, full_starts, opts)
    order = np.argsort(-full.w, kind="stable")
    n_keep = max(1, int((full.w >= _NEGLIGIBLE_MASS).sum()))
    penalty = _bic_penalty(prob)
    scores: list[float] = []
    fits = []
    for k in range(1, n_keep + 1):
        T = np.sort(C[order[:k]])
        w0 = full.w[np.searchsorted(C, T)]
        fit = _run_em(prob, T, w0 / w0.sum(), full.theta.copy(), **opts)
        scores.append(fit.ll - k * penalty)
        fits.append((T, fit))
        if k - 1 - int(np.argmax(scores)) >= _PATIENCE:
            break
    best = int(np.argmax(scores))
    # Uncertain: another size within 1 in BIC, and the labels that differ between the
    # two carry real mass (at least 5%), so the choice changes predictions.
    gap = scores[best] - np.asarray(scores)
    close = np.flatnonzero((gap < 1.0) & (np.arange(len(scores)) != best))
    w_sorted = full.w[order]
    uncertain = any(
        w_sorted[min(best, j) + 1 : max(best, j) + 1].sum() >= _CONTESTED_MASS
        for j in close
    )
    T, fit = fits[best]
    opts.update(max_iter=max_iter, tol=tol)
    fit = _run_em(prob, T, fit.w, fit.theta.copy(), **opts)
    return T, fit.w, fit.theta, fit.ll, uncertain
