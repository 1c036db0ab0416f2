"""Maximum likelihood for the finite noise model: EM over unique vote patterns.

The model is a finite mixture: Y ~ prior (on a support T of labels), and given Y = y the
labeling functions vote independently with P(lambda_a = v | y) = exp(-theta_a S[y, v]) /
Z_a(theta_a, y) (or theta_{a y}: the label-dependent model); abstains are independent of
everything and drop out of the likelihood. Every quantity EM needs is a sum over the
unique vote patterns of a :class:`~snorkel_structured.estimators.VoteStats`, weighted by
their counts, so an iteration costs O(n_patterns * |T| * n_lfs) whatever the number of rows.

E-step: responsibilities R[i, j] = P(Y = T_j | pattern i). M-step: the prior is the
count-weighted mean of R; theta_a solves the 1-D monotone moment equation

    sum_j N_aj E_theta[d^2(lambda_a, T_j) | Y = T_j] = sum_i c_i [a voted] sum_j R_ij S[T_j, v_ia]

(the score equation of the exponential family; N_aj = sum_i c_i [a voted] R_ij), solved by
:func:`~snorkel_structured.noise.finite.theta_from_expected_sq_dist`. EM is accelerated
with SQUAREM (Varadhan and Roland, 2008) with a monotonicity safeguard.

Starting points: the tensor estimate when it is identifiable; otherwise (or when the
tensor estimator is unavailable) a greedy search over supports: the best single-center
model (vectorized over every label), then labels added one at a time where the
directional derivative of the likelihood is largest (the vertex-direction method for
mixtures), a few seeded random restarts, and the best likelihood wins.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.special import logsumexp

from snorkel_structured._validation import ABSTAIN, check_seed
from snorkel_structured.estimators._stats import VoteStats
from snorkel_structured.exceptions import ConvergenceWarning
from snorkel_structured.noise.finite import (
    expected_sq_dist,
    log_conditional_probs,
    theta_from_expected_sq_dist,
)

__all__ = ["MLEEstimate", "em_refine", "mle_estimate"]

_THETA_MAX = 50.0


@dataclass(frozen=True, eq=False)
class MLEEstimate:
    """Result of :func:`mle_estimate`.

    Attributes
    ----------
    prior : ndarray of shape (r,)
        Estimated P(Y = y), zero outside ``support``.
    theta : ndarray of shape (n_lfs,) or (n_lfs, r)
        Canonical parameters (per LF, or per LF and true label).
    expected_sq_dist : ndarray of shape (n_lfs,)
        E[d^2(lambda_a, Y)] under the fitted model.
    support : ndarray of int of shape (k,)
        Labels the prior may put mass on.
    log_likelihood : float
        Total log-likelihood of the votes (sum over rows).
    n_iter : int
    converged : bool
    init : str
        Which starting point won ("tensor", "given", "profile" or "restart <i>").
    warnings : list of str
    """

    prior: np.ndarray
    theta: np.ndarray
    expected_sq_dist: np.ndarray
    support: np.ndarray
    log_likelihood: float
    n_iter: int
    converged: bool
    init: str = ""
    warnings: list[str] = field(default_factory=list)


class _Problem:
    """Pattern-level arrays shared by every EM run on one VoteStats."""

    def __init__(self, stats: VoteStats, S: np.ndarray) -> None:
        self.S = np.asarray(S, dtype=np.float64)
        self.r = self.S.shape[0]
        self.P = np.asarray(stats.patterns)
        self.c = np.asarray(stats.counts, dtype=np.float64)
        self.m = self.P.shape[1]
        self.n = float(self.c.sum())
        self.voted = self.P != ABSTAIN
        self.cv = self.c[:, None] * self.voted  # (u, m) count where a voted
        self.n_voted = self.cv.sum(0)  # (m,)
        srt = np.sort(self.S, axis=1)
        self.homogeneous = bool(np.allclose(srt, srt[:1]))
        # vote histogram per LF, (m, r)
        self.hist = np.zeros((self.m, self.r))
        for a in range(self.m):  # one bincount per LF
            keep = self.voted[:, a]
            self.hist[a] = np.bincount(
                self.P[keep, a], weights=self.c[keep], minlength=self.r
            )

    # -- core pieces -------------------------------------------------------------
    def log_cond(self, theta: np.ndarray, T: np.ndarray) -> np.ndarray:
        """(m, k, r + 1): log P(lambda_a = v | T_j), last column 0 (abstain)."""
        th = theta[:, T] if theta.ndim == 2 else theta
        lc = log_conditional_probs(self.S[T], th)
        return np.concatenate([lc, np.zeros(lc.shape[:2] + (1,))], axis=2)

    def log_lik_given(self, lc_pad: np.ndarray) -> np.ndarray:
        """(u, k): log P(pattern i | Y = T_j); abstain indexes the zero column."""
        out = np.zeros((self.P.shape[0], lc_pad.shape[1]))
        for a in range(self.m):  # one row gather per LF, (u, k) contiguous
            out += np.take(np.ascontiguousarray(lc_pad[a].T), self.P[:, a], axis=0)
        return out

    def e_step(self, log_w: np.ndarray, theta: np.ndarray, T: np.ndarray) -> tuple[np.ndarray, float]:
        G = self.log_lik_given(self.log_cond(theta, T)) + log_w[None, :]
        norm = logsumexp(G, axis=1, keepdims=True)
        R = np.exp(G - norm)
        return R, float(self.c @ norm[:, 0])

    def m_step(
        self, R: np.ndarray, theta: np.ndarray, T: np.ndarray, label_dependent: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        """New (weights over T, theta)."""
        w = self.c @ R / self.n
        k = T.size
        N = self.cv.T @ R  # (m, k) posterior label mass among rows where a voted
        ST = np.ascontiguousarray(self.S[T].T)  # (r, k); abstain (-1) picks a row, cv = 0
        num = np.empty((self.m, k))  # posterior-weighted sum of observed d^2
        for a in range(self.m):  # one row gather per LF
            num[a] = self.cv[:, a] @ (R * np.take(ST, self.P[:, a], axis=0))
        has = self.n_voted > 0
        if label_dependent:
            new = theta.copy()
            ok = N > 1e-12 * max(self.n, 1.0)
            full = np.full((self.m, self.r), np.nan)
            full[:, T] = np.where(ok, num / np.where(ok, N, 1.0), np.nan)
            # labels off the support or never seen: the LF's pooled target
            pooled = num.sum(1) / np.maximum(N.sum(1), 1e-300)
            full = np.where(np.isnan(full), pooled[:, None], full)
            sol = theta_from_expected_sq_dist(self.S, full, theta_max=_THETA_MAX)
            new[has] = sol[has]
            return w, new
        target = num.sum(1) / np.maximum(N.sum(1), 1e-300)
        new = theta.copy()
        if self.homogeneous:  # E[d^2 | y] does not depend on y: one row, one solve
            new[has] = _solve_warm(self.S[:1], target[has], theta[has])
        else:
            for a in np.flatnonzero(has):  # label weights differ per LF
                weights = np.zeros(self.r)
                weights[T] = N[a]
                new[a] = theta_from_expected_sq_dist(
                    self.S, target[a : a + 1], weights, theta_max=_THETA_MAX
                )[0]
        return w, new

    def loglik(self, log_w: np.ndarray, theta: np.ndarray, T: np.ndarray) -> float:
        return self.e_step(log_w, theta, T)[1]


def _solve_warm(S_rows: np.ndarray, target: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """theta_from_expected_sq_dist bracketed near the previous theta (EM moves little).

    Targets whose root falls outside the narrow bracket (clipped to its ends) are solved
    again on the full range.
    """
    lo = float(np.clip(theta.min() * 0.8 - 0.05, 0.0, _THETA_MAX))
    hi = float(np.clip(theta.max() * 1.25 + 0.05, 0.0, _THETA_MAX))
    sol = theta_from_expected_sq_dist(S_rows, target, theta_min=lo, theta_max=hi, xtol=1e-10)
    edge = ((sol <= lo) & (lo > 0.0)) | ((sol >= hi) & (hi < _THETA_MAX))
    if edge.any():
        sol[edge] = theta_from_expected_sq_dist(S_rows, target[edge], theta_max=_THETA_MAX)
    return sol


def _run_em(
    prob: _Problem,
    T: np.ndarray,
    w: np.ndarray,
    theta: np.ndarray,
    *,
    fixed_w: bool,
    label_dependent: bool,
    max_iter: int,
    tol: float,
    fixed_theta: bool = False,
) -> tuple[np.ndarray, np.ndarray, float, int, bool]:
    """SQUAREM-accelerated EM; returns (w, theta, loglik, n_iter, converged)."""

    def pack(w_: np.ndarray, th: np.ndarray) -> np.ndarray:
        return np.concatenate([np.log(np.maximum(w_, 1e-300)), th.ravel()])

    def unpack(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lw = x[: T.size]
        lw = lw - logsumexp(lw)
        th = np.clip(x[T.size :].reshape(theta.shape), 0.0, _THETA_MAX)
        return np.exp(lw), th

    def step(w_: np.ndarray, th: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        R, ll = prob.e_step(np.log(np.maximum(w_, 1e-300)), th, T)
        if fixed_theta:
            return (w_ if fixed_w else prob.c @ R / prob.n), th, ll
        w_new, th_new = prob.m_step(R, th, T, label_dependent)
        return (w_ if fixed_w else w_new), th_new, ll

    scale = max(prob.n, 1.0)
    ll_old = -np.inf
    converged = False
    it = 0
    while it < max_iter:
        w1, th1, ll0 = step(w, theta)
        it += 1
        if np.isfinite(ll_old) and abs(ll0 - ll_old) <= tol * scale:
            converged = True
            break
        w2, th2, ll1 = step(w1, th1)
        it += 1
        x0, x1, x2 = pack(w, theta), pack(w1, th1), pack(w2, th2)
        r_ = x1 - x0
        v_ = x2 - 2 * x1 + x0
        nv = np.linalg.norm(v_)
        best = (w2, th2)
        if nv > 0:
            alpha = -np.linalg.norm(r_) / nv
            alpha = min(alpha, -1.0)
            xs = x0 - 2 * alpha * r_ + alpha * alpha * v_
            ws, ths = unpack(xs)
            try:
                ws, ths, lls = step(ws, ths)  # stabilizing EM step
                it += 1
                if lls >= ll1 - 1e-9 * scale:
                    best = (ws, ths)
            except (FloatingPointError, ValueError):
                pass
        w, theta = best
        if abs(ll1 - ll0) <= tol * scale:
            ll_old = ll1
            converged = True
            break
        ll_old = ll1
    ll = prob.loglik(np.log(np.maximum(w, 1e-300)), theta, T)
    return w, theta, ll, it, converged


def _profile_single_center(prob: _Problem) -> tuple[int, np.ndarray, np.ndarray]:
    """Best one-label model, vectorized over every label: (label, theta (m,), loglik (r,))."""
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_d2 = (prob.hist @ prob.S) / np.maximum(prob.n_voted, 1e-300)[:, None]  # (m, r)
    th = theta_from_expected_sq_dist(prob.S, mean_d2, theta_max=_THETA_MAX)  # per (a, y)
    # log-likelihood of "every row has label y": sum_a sum_v hist[a, v] log P(v | y)
    logits = -th[:, :, None] * prob.S[None, :, :]
    lc = logits - logsumexp(logits, axis=2, keepdims=True)  # (m, y, v)
    ll = np.einsum("av,ayv->y", prob.hist, lc)
    best = int(np.argmax(ll))
    return best, th[:, best], ll


def _grow(
    prob: _Problem,
    T: np.ndarray,
    w: np.ndarray,
    theta: np.ndarray,
) -> int | None:
    """The label off T along which the likelihood rises fastest (vertex direction)."""
    lc_all = prob.log_cond(theta, np.arange(prob.r))  # (m, r, r + 1)
    G = prob.log_lik_given(lc_all)  # (u, r)
    mix = logsumexp(G[:, T] + np.log(np.maximum(w, 1e-300))[None, :], axis=1)
    D = prob.c @ np.exp(G - mix[:, None])  # (r,)
    D[T] = -np.inf
    if not np.isfinite(D).any():
        return None
    return int(np.argmax(D))


def _swap(
    prob: _Problem,
    T: np.ndarray,
    w: np.ndarray,
    theta: np.ndarray,
    ll: float,
    *,
    fixed_w: bool,
    max_iter: int,
    tol: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Local search over supports: move one label of T elsewhere while that helps.

    Every single move (T_j -> c, weights and theta held) is scored at once from the
    (n_patterns, r) table of log P(pattern | y); the best is refitted by EM and kept
    when the likelihood rises.
    """
    if T.size >= prob.r:
        return T, w, theta, ll
    for _ in range(4 * T.size):
        G = prob.log_lik_given(prob.log_cond(theta, np.arange(prob.r)))  # (u, r)
        A = G[:, T] + np.log(np.maximum(w, 1e-300))[None, :]
        best_gain, best_move = 1e-9 * max(prob.n, 1.0), None
        for j in range(T.size):  # k vectorized scans over all r candidates
            rest = logsumexp(np.delete(A, j, axis=1), axis=1) if T.size > 1 else np.full(G.shape[0], -np.inf)
            cand = np.logaddexp(rest[:, None], np.log(max(w[j], 1e-300)) + G)
            score = prob.c @ cand
            score[T] = -np.inf
            c = int(np.argmax(score))
            gain = score[c] - ll
            if gain > best_gain:
                best_gain, best_move = gain, (j, c)
        if best_move is None:
            break
        T2 = T.copy()
        T2[best_move[0]] = best_move[1]
        w2, th2, ll2, _, _ = _run_em(prob, T2, w.copy(), theta.copy(), fixed_w=fixed_w,
                                     label_dependent=False, max_iter=max_iter, tol=tol)
        if ll2 <= ll:
            break
        T, w, theta, ll = T2, w2, th2, ll2
    return T, w, theta, ll


def _search(
    prob: _Problem,
    start: int,
    theta0: np.ndarray,
    *,
    n_components: int | None,
    max_iter: int,
    tol: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Greedy support search from one label: (T, w, theta, loglik)."""
    T = np.array([start])
    w = np.ones(1)
    theta = theta0.copy()
    inner = dict(fixed_w=False, label_dependent=False, max_iter=min(max_iter, 200), tol=max(tol, 1e-6))
    w, theta, ll, _, _ = _run_em(prob, T, w, theta, **inner)
    k_max = prob.r if n_components is None else min(prob.r, 2 * n_components)
    penalty = np.log(max(prob.n, 2.0))  # BIC: a weight and a location per label
    while T.size < k_max:
        c = _grow(prob, T, w, theta)
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


def _tensor_start(stats: VoteStats, S: np.ndarray, n_components: int | None, seed: Any) -> Any:
    """The tensor estimate, or None when the tensor estimator is missing or fails."""
    try:
        from snorkel_structured.estimators.tensor import tensor_estimate
    except ImportError:
        return None
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est = tensor_estimate(stats, S, n_components=n_components, seed=seed)
        est_warnings = [str(w.message) for w in caught]
        return est, est_warnings
    except Exception as exc:  # noqa: BLE001 - any failure means: use the fallback
        return None, [f"tensor estimator failed ({type(exc).__name__}: {exc}); used the fallback start."]


def em_refine(
    stats: VoteStats,
    S: np.ndarray,
    *,
    theta: Any,
    prior: Any,
    support: Any = None,
    fixed_prior: bool = False,
    fixed_theta: bool = False,
    label_dependent: bool = False,
    max_iter: int = 500,
    tol: float = 1e-8,
) -> MLEEstimate:
    """EM from a given start (no search): the likelihood refinement step alone.

    Parameters
    ----------
    stats : VoteStats
    S : ndarray of shape (r, r)
        Squared distances.
    theta : array-like of shape (n_lfs,) or (n_lfs, r)
        Starting parameters; shape (n_lfs,) with ``label_dependent=True`` is broadcast.
    prior : array-like of shape (r,)
        Starting prior (kept when ``fixed_prior``).
    support : array-like of int, optional
        Labels the prior may use; default the labels where ``prior`` > 0.
    fixed_prior : bool, default=False
    fixed_theta : bool, default=False
        Keep theta and estimate only the prior (e.g. the UWS label model).
    label_dependent : bool, default=False
    max_iter : int, default=500
    tol : float, default=1e-8
        Stop when the log-likelihood per row changes by less than ``tol``.

    Returns
    -------
    MLEEstimate
    """
    prob = _Problem(stats, S)
    p = np.asarray(prior, dtype=np.float64)
    T = np.flatnonzero(p > 0) if support is None else np.asarray(support, dtype=np.int64)
    w = p[T] / p[T].sum()
    th = np.asarray(theta, dtype=np.float64).copy()
    if label_dependent and th.ndim == 1 and not fixed_theta:
        w, th, _, n1, _ = _run_em(prob, T, w, th, fixed_w=fixed_prior, label_dependent=False,
                                  max_iter=max_iter, tol=tol)
        th = np.repeat(th[:, None], prob.r, axis=1)
    else:
        n1 = 0
    w, th, ll, it, conv = _run_em(prob, T, w, th, fixed_w=fixed_prior,
                                  label_dependent=label_dependent, max_iter=max_iter, tol=tol,
                                  fixed_theta=fixed_theta)
    msgs = []
    if not conv:
        msgs.append(f"EM stopped at max_iter={max_iter}; raise max_iter or tol.")
        warnings.warn(msgs[-1], ConvergenceWarning, stacklevel=2)
    return _result(prob, T, w, th, ll, n1 + it, conv, "given", msgs)


def _result(prob: _Problem, T: np.ndarray, w: np.ndarray, th: np.ndarray, ll: float,
            it: int, conv: bool, init: str, msgs: list[str]) -> MLEEstimate:
    prior = np.zeros(prob.r)
    prior[T] = w
    e = expected_sq_dist(prob.S, th, prior)
    return MLEEstimate(prior, th, e, np.sort(T), ll, it, conv, init, msgs)


def mle_estimate(
    stats: VoteStats,
    S: np.ndarray,
    *,
    n_components: int | None = None,
    support: Any = None,
    prior: Any = None,
    label_dependent: bool = False,
    init: Any = "auto",
    n_restarts: int = 2,
    max_iter: int = 500,
    tol: float = 1e-8,
    seed: Any = None,
) -> MLEEstimate:
    """Maximum-likelihood prior and theta of the finite noise model (EM over patterns).

    Parameters
    ----------
    stats : VoteStats
        Vote-pattern counts of the label matrix.
    S : ndarray of shape (r, r)
        Squared distances of the label space.
    n_components : int, optional
        Number of labels with prior mass. Default: the tensor estimate's support, or a
        greedy search that adds labels while BIC improves.
    support : array-like of int, optional
        Labels the prior may use (overrides the search); ``np.arange(r)`` = whole space.
    prior : array-like of shape (r,), optional
        A fixed prior (e.g. a known class balance); only theta is estimated.
    label_dependent : bool, default=False
        Estimate theta per LF and true label, shape (n_lfs, r).
    init : "auto", "tensor", "search" or an object with ``prior`` and ``theta``
        Starting point: "auto" uses the tensor estimate when it is available and
        identifiable, else the search.
    n_restarts : int, default=2
        Seeded random restarts of the search (used when the search runs).
    max_iter : int, default=500
        EM iterations (each SQUAREM cycle counts three).
    tol : float, default=1e-8
        Convergence tolerance on the log-likelihood per row.
    seed : None, int or numpy.random.Generator

    Returns
    -------
    MLEEstimate

    Warns
    -----
    ConvergenceWarning
        When EM stops at ``max_iter``.

    Examples
    --------
    >>> import numpy as np
    >>> from snorkel_structured.synthetic import make_ranking_data
    >>> from snorkel_structured.estimators import VoteStats
    >>> from snorkel_structured.estimators.em import mle_estimate
    >>> data = make_ranking_data(20000, seed=0)
    >>> stats = VoteStats.from_label_matrix(data.L, n_labels=24)
    >>> est = mle_estimate(stats, data.space.squared_distance_matrix, n_components=2, seed=0)
    >>> bool(np.abs(est.expected_sq_dist - data.expected_sq_dist).max() < 0.05)
    True
    """
    rng = check_seed(seed)
    prob = _Problem(stats, S)
    r = prob.r
    msgs: list[str] = []
    starts: list[tuple[str, np.ndarray, np.ndarray, np.ndarray]] = []  # (name, T, w, theta)
    fixed = prior is not None
    if fixed:
        p = np.asarray(prior, dtype=np.float64)
        T = np.flatnonzero(p > 0)
        _, th0, _ = _profile_single_center(prob)
        starts.append(("given", T, p[T] / p[T].sum(), np.full(prob.m, 1.0)))
    elif support is not None:
        T = np.unique(np.asarray(support, dtype=np.int64))
        best, th0, _ = _profile_single_center(prob)
        starts.append(("given", T, np.full(T.size, 1.0 / T.size), th0))
    elif not isinstance(init, str):
        p = np.asarray(init.prior, dtype=np.float64)
        T = np.flatnonzero(p > 0)
        starts.append(("given", T, p[T] / p[T].sum(), np.asarray(init.theta, dtype=np.float64).reshape(prob.m, -1)[:, 0]))
    else:
        tensor_ok = False
        if init in ("auto", "tensor"):
            got = _tensor_start(stats, S, n_components, rng.spawn(1)[0])
            if got is not None:
                est, est_msgs = got
                msgs.extend(est_msgs)
                if est is not None:
                    p = np.asarray(est.prior, dtype=np.float64)
                    T = np.flatnonzero(p > 0)
                    ok = bool(getattr(est, "identifiable", True)) and T.size > 0 and np.isfinite(est.theta).all()
                    if ok:
                        th = np.clip(np.asarray(est.theta, dtype=np.float64), 0.0, _THETA_MAX)
                        starts.append(("tensor", T, p[T] / p[T].sum(), th))
                        tensor_ok = True
        if not tensor_ok or init == "search":
            best, th0, _ = _profile_single_center(prob)
            seeds = [best] + list(rng.choice(r, size=min(n_restarts, r), replace=False))
            for i, s0 in enumerate(seeds):
                T, w, th, _ = _search(prob, int(s0), th0, n_components=n_components,
                                      max_iter=max_iter, tol=tol)
                starts.append(("profile" if i == 0 else f"restart {i}", T, w, th))
    best_fit = None
    for name, T, w, th in starts:
        th = np.asarray(th, dtype=np.float64).copy()
        w_, th_, ll, it, conv = _run_em(prob, T, w, th, fixed_w=fixed, label_dependent=False,
                                        max_iter=max_iter, tol=tol)
        if name != "given" or (support is None and not fixed):
            T, w_, th_, ll = _swap(prob, T, w_, th_, ll, fixed_w=fixed, max_iter=max_iter, tol=tol)
        if best_fit is None or ll > best_fit[3]:
            best_fit = (name, T, w_, ll, th_, it, conv)
    assert best_fit is not None
    name, T, w, ll, th, it, conv = best_fit
    if label_dependent:
        th = np.repeat(th[:, None], r, axis=1)
        w, th, ll, it2, conv = _run_em(prob, T, w, th, fixed_w=fixed, label_dependent=True,
                                       max_iter=max_iter, tol=tol)
        it += it2
    if not conv:
        msg = (f"EM stopped at max_iter={max_iter} before the log-likelihood changed by less "
               f"than tol={tol} per row; raise max_iter or tol.")
        msgs.append(msg)
        warnings.warn(msg, ConvergenceWarning, stacklevel=2)
    return _result(prob, T, w, th, ll, it, conv, name, msgs)
