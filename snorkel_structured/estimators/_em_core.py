"""EM machinery for the finite noise model: pattern-level arrays, E- and M-steps, SQUAREM.

The model is a finite mixture: Y ~ prior (on a support T of labels), and given Y = y the
labeling functions vote independently with P(lambda_a = v | y) = exp(-theta_a S[y, v]) /
Z_a(theta_a, y) (or theta_{a y}: the label-dependent model). Every quantity EM needs is a
sum over the unique vote patterns of a :class:`~snorkel_structured.estimators.VoteStats`,
weighted by their counts, so an iteration costs O(n_patterns * |T| * n_lfs) whatever the
number of rows.

E-step: responsibilities R[i, j] = P(Y = T_j | pattern i). M-step: the prior is the
count-weighted mean of R; theta_a solves the 1-D monotone moment equation

    sum_j N_aj E_theta[d^2(lambda_a, T_j) | Y = T_j] = sum_i c_i [a voted] sum_j R_ij S[T_j, v_ia]

(the score equation of the exponential family; N_aj = sum_i c_i [a voted] R_ij). The
votes are held as a sparse one-hot matrix, so the E-step is one sparse product with the
(m (r + 1), k) table of log P(v | T_j) and the M-step's statistics one product with its
transpose. Only the rows S[T, :] of the support are used, and the partition functions
and moments of each row come from its distinct values and their multiplicities (at most
29 for a Kendall row of S8, two for the 0/1 metric), so a space of 40,320 labels never
builds an (r, r) array: rows are computed with ``space.dist`` when ``S`` is a large
space. theta is found by a vectorized, warm-started, safeguarded Newton solve. EM is
accelerated with SQUAREM (Varadhan and Roland, 2008) with a monotonicity safeguard.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.special import logsumexp

from snorkel_structured._validation import ABSTAIN
from snorkel_structured.estimators._stats import VoteStats
from snorkel_structured.spaces.finite import DENSE_MAX_LABELS, FiniteMetricSpace

_THETA_MAX = 50.0
# Spaces up to this many labels use their full (r, r) squared-distance matrix; larger
# ones (e.g. Permutations(8), r = 40,320) only ever compute rows S[idx, :] on demand.
_DENSE_MAX = DENSE_MAX_LABELS
# The tensor start needs (r, r) pair tables and an embedding of S: small spaces only.
_TENSOR_START_MAX = 1000
# Candidate labels scored by the support search (all labels when r is at most this;
# otherwise the most-voted labels): bounds the (n_patterns, n_candidates) tables.
_MAX_CANDIDATES = 64


class _SqDists:
    """Rows ``S[idx, :]`` of the squared distances, from a matrix or a space.

    A small space (or an (r, r) array) is used as a matrix. A large space computes
    rows on demand with ``space.dist`` (never the (r, r) matrix) and caches them.
    """

    def __init__(self, S_or_space: Any) -> None:
        self.space = None
        if isinstance(S_or_space, FiniteMetricSpace):
            self.r = len(S_or_space)
            if self.r <= _DENSE_MAX or "distance_matrix" in S_or_space.__dict__:
                self.S: np.ndarray | None = S_or_space.squared_distance_matrix
            else:
                self.S = None
                self.space = S_or_space
        else:
            self.S = np.asarray(S_or_space, dtype=np.float64)
            self.r = self.S.shape[0]
        self._cache: dict[int, np.ndarray] = {}

    @property
    def dense(self) -> bool:
        return self.S is not None

    def rows(self, idx: Any) -> np.ndarray:
        idx = np.asarray(idx, dtype=np.int64).ravel()
        if self.S is not None:
            return np.asarray(self.S[idx], dtype=np.float64)
        assert self.space is not None
        missing = np.array(
            [i for i in dict.fromkeys(idx.tolist()) if i not in self._cache],
            dtype=np.int64,
        )
        if missing.size:
            for i, row in zip(
                missing.tolist(), self.space.squared_distance_rows(missing), strict=True
            ):
                self._cache[i] = row
        if idx.size == 0:
            return np.empty((0, self.r))
        return np.stack([self._cache[i] for i in idx.tolist()])


def _row_dists(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct values of each row and log multiplicities, padded: (k, q) each.

    The partition function and moments of exp(-theta S[y, .]) depend on row y only
    through these (a permutation space has at most 29 distinct squared Kendall
    distances per row, a 0/1 space two), so solving for theta never touches r columns.
    """
    k = rows.shape[0]
    uniq = [np.unique(row, return_counts=True) for row in rows]  # k small rows
    q = max(u.size for u, _ in uniq) if k else 1
    vals = np.zeros((k, q))
    logmult = np.full((k, q), -np.inf)
    for j, (u, cnt) in enumerate(uniq):
        vals[j, : u.size] = u
        logmult[j, : u.size] = np.log(cnt)
    return vals, logmult


def _dist_moments(
    theta: np.ndarray, vals: np.ndarray, logmult: np.ndarray
) -> tuple[np.ndarray, ...]:
    """log Z, E[d^2] and Var[d^2] under exp(-theta d^2) for broadcast (theta, row) pairs.

    ``theta`` has shape (..., 1) against ``vals``/``logmult`` of shape (..., q).
    """
    logits = logmult - theta * vals
    mx = logits.max(axis=-1, keepdims=True)
    e = np.exp(logits - mx)
    z = e.sum(axis=-1)
    m1 = (e * vals).sum(axis=-1) / z
    m2 = (e * vals * vals).sum(axis=-1) / z
    return np.log(z) + mx[..., 0], m1, np.maximum(m2 - m1 * m1, 0.0)


def _solve_theta(
    vals: np.ndarray,
    logmult: np.ndarray,
    weights: np.ndarray,
    target: np.ndarray,
    theta0: np.ndarray,
    *,
    xtol: float = 1e-11,
    max_iter: int = 100,
) -> np.ndarray:
    """theta_t with sum_j weights[t, j] E_theta[d^2 | row j] = target_t (weights sum to 1).

    Safeguarded Newton on [0, _THETA_MAX], vectorized over targets, warm-started at
    ``theta0``: the mean is strictly decreasing in theta (derivative -variance).
    ``vals``/``logmult`` are (k, q) row distributions; ``weights`` is (t, k).
    """
    t = target.shape[0]
    lo, hi = np.zeros(t), np.full(t, _THETA_MAX)

    def f(th: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        _, m1, var = _dist_moments(
            th[:, None, None], vals[None], logmult[None]
        )  # (t, k)
        return (w * m1).sum(1), (w * var).sum(1)

    f_lo, _ = f(lo, weights)
    f_hi, _ = f(hi, weights)
    x = np.clip(theta0, 0.0, _THETA_MAX).astype(np.float64)
    x = np.where(target >= f_lo, 0.0, np.where(target <= f_hi, _THETA_MAX, x))
    active = (target < f_lo) & (target > f_hi)
    for _ in range(max_iter):
        if not active.any():
            break
        idx = np.flatnonzero(active)
        xa = x[idx]
        g, var = f(xa, weights[idx])
        g = g - target[idx]  # decreasing in theta: g > 0 means theta is too small
        a_lo = np.where(g > 0, xa, lo[idx])
        a_hi = np.where(g <= 0, xa, hi[idx])
        newton = xa + g / np.maximum(var, 1e-300)
        inside = (newton > a_lo) & (newton < a_hi)
        nxt = np.where(inside, newton, 0.5 * (a_lo + a_hi))
        done = (np.abs(nxt - xa) <= xtol * (1.0 + np.abs(nxt))) | (a_hi - a_lo <= xtol)
        lo[idx], hi[idx], x[idx] = a_lo, a_hi, nxt
        active[idx[done]] = False
    return x


def _log_table(
    ST: np.ndarray, vals: np.ndarray, logmult: np.ndarray, theta: np.ndarray
) -> np.ndarray:
    """(m, r + 1, k): log P(lambda_a = v | T_j) at [a, v + 1, j]; abstain row 0 is 0."""
    k, r = ST.shape
    m = theta.shape[0]
    th = np.broadcast_to(theta[:, None] if theta.ndim == 1 else theta, (m, k))
    logz, _, _ = _dist_moments(th[:, :, None], vals[None], logmult[None])  # (m, k)
    W = np.zeros((m, r + 1, k))
    W[:, 1:, :] = -th[:, None, :] * ST.T[None, :, :] - logz[:, None, :]
    return W


def support_log_table(S: Any, theta: Any, support: Any) -> np.ndarray:
    """log P(lambda_a = v | Y = support_j) for the labels of a support only.

    Parameters
    ----------
    S : ndarray of shape (r, r) or FiniteMetricSpace
        Squared distances or the space (a large space computes only ``k`` rows).
    theta : array-like of shape (n_lfs,) or (n_lfs, r)
    support : array-like of int of shape (k,)

    Returns
    -------
    table : ndarray of shape (n_lfs, r + 1, k)
        ``table[a, v + 1, j]`` for votes v in [0, r); ``table[a, 0, :] = 0`` (abstain),
        so a vote matrix shifted by one indexes it directly.
    """
    sq = _SqDists(S)
    T = np.asarray(support, dtype=np.int64)
    th = np.asarray(theta, dtype=np.float64)
    th = th[:, T] if th.ndim == 2 else th
    ST = sq.rows(T)
    vals, logmult = _row_dists(ST)
    return _log_table(ST, vals, logmult, th)


class _Problem:
    """Pattern-level arrays shared by every EM run on one VoteStats.

    The votes are a sparse one-hot matrix X (n_patterns, n_lfs * (r + 1)) with one
    entry per vote (abstains have none), so log P(pattern | y) for the labels of a
    support is one sparse product X @ W, and the M-step's sufficient statistics
    (posterior mass of each (LF, vote, label)) are one product X^T @ (counts * R).
    """

    def __init__(self, stats: VoteStats, sq: _SqDists) -> None:
        self.sq = sq
        self.r = sq.r
        self.P = np.asarray(stats.patterns)
        self.c = np.asarray(stats.counts, dtype=np.float64)
        self.u, self.m = self.P.shape
        self.n = float(self.c.sum())
        self.voted = self.P != ABSTAIN
        self.cv = self.c[:, None] * self.voted  # (u, m) count where a voted
        self.n_voted = self.cv.sum(0)  # (m,)
        rows_i, cols_a = np.nonzero(self.voted)
        cols = cols_a * (self.r + 1) + self.P[rows_i, cols_a] + 1
        shape = (self.u, self.m * (self.r + 1))
        self.X = sp.csr_matrix((np.ones(rows_i.size), (rows_i, cols)), shape=shape)
        self.XcT = sp.csr_matrix((self.c[rows_i], (cols, rows_i)), shape=shape[::-1])
        # vote histogram per LF, (m, r)
        self.hist = np.asarray(self.XcT.sum(axis=1)).reshape(self.m, self.r + 1)[:, 1:]
        self._dists: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    # -- rows of S and their value distributions -----------------------------------
    def rows(self, T: np.ndarray) -> np.ndarray:
        return self.sq.rows(T)

    def dists(self, T: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(vals, logmult) of the rows of T, (k, q) each (cached per label)."""
        missing = [int(t) for t in T if int(t) not in self._dists]
        if missing:
            v, lm = _row_dists(self.rows(np.array(missing)))
            for i, t in enumerate(missing):
                keep = np.isfinite(lm[i])
                self._dists[t] = (v[i, keep], lm[i, keep])
        q = max(self._dists[int(t)][0].size for t in T)
        vals = np.zeros((T.size, q))
        logmult = np.full((T.size, q), -np.inf)
        for j, t in enumerate(T):
            v, lm = self._dists[int(t)]
            vals[j, : v.size], logmult[j, : v.size] = v, lm
        return vals, logmult

    def candidates(self) -> np.ndarray:
        """Labels the support search scores: all, or the most-voted in a large space."""
        if self.r <= _MAX_CANDIDATES:
            return np.arange(self.r)
        votes = self.hist.sum(0)
        top = np.argsort(-votes, kind="stable")[:_MAX_CANDIDATES]
        return np.sort(top[votes[top] > 0]) if (votes[top] > 0).any() else np.sort(top)

    # -- core pieces -------------------------------------------------------------
    def log_table(self, theta: np.ndarray, T: np.ndarray) -> np.ndarray:
        """W of shape (m * (r + 1), k): log P(lambda_a = v | T_j) at row a * (r + 1) + v + 1.

        Rows for abstain (v = -1) are 0. ``theta`` is (m,) or (m, k) (per label of T).
        """
        vals, logmult = self.dists(T)
        return _log_table(self.rows(T), vals, logmult, theta).reshape(-1, T.size)

    def log_lik_given(self, W: np.ndarray) -> np.ndarray:
        """(u, k): log P(pattern i | Y = T_j)."""
        return np.asarray(self.X @ W)

    def e_step(
        self, log_w: np.ndarray, theta: np.ndarray, T: np.ndarray
    ) -> tuple[np.ndarray, float]:
        G = self.log_lik_given(self.log_table(theta, T)) + log_w[None, :]
        mx = G.max(axis=1, keepdims=True)
        E = np.exp(G - mx)
        z = E.sum(axis=1, keepdims=True)
        R = E / z
        return R, float(self.c @ (mx[:, 0] + np.log(z[:, 0])))

    def m_step(
        self, R: np.ndarray, theta: np.ndarray, T: np.ndarray, label_dependent: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        """New (weights over T, theta); theta is (m,) or (m, k) (label-dependent)."""
        w = self.c @ R / self.n
        k = T.size
        H = np.asarray(self.XcT @ R).reshape(self.m, self.r + 1, k)[
            :, 1:, :
        ]  # (m, r, k)
        N = H.sum(axis=1)  # (m, k) posterior label mass among rows where a voted
        num = np.einsum(
            "avj,jv->aj", H, self.rows(T)
        )  # posterior-weighted observed d^2
        vals, logmult = self.dists(T)
        has = self.n_voted > 0
        new = theta.copy()
        if label_dependent:
            ok = N > 1e-12 * max(self.n, 1.0)
            pooled = num.sum(1) / np.maximum(N.sum(1), 1e-300)
            target = np.where(ok, num / np.where(ok, N, 1.0), pooled[:, None])  # (m, k)
            eye = np.broadcast_to(np.eye(k)[None], (self.m, k, k)).reshape(-1, k)
            sol = _solve_theta(
                vals, logmult, eye, target.ravel(), theta.ravel()
            ).reshape(self.m, k)
            new[has] = sol[has]
            return w, new
        tot = N.sum(1)
        target = num.sum(1) / np.maximum(tot, 1e-300)
        wts = N / np.maximum(tot, 1e-300)[:, None]
        new[has] = _solve_theta(vals, logmult, wts[has], target[has], theta[has])
        return w, new

    def loglik(self, log_w: np.ndarray, theta: np.ndarray, T: np.ndarray) -> float:
        return self.e_step(log_w, theta, T)[1]

    def expected_sq_dist(
        self, theta: np.ndarray, T: np.ndarray, w: np.ndarray
    ) -> np.ndarray:
        """E[d^2(lambda_a, Y)] per LF with Y ~ w on T: (m,)."""
        vals, logmult = self.dists(T)
        th = np.broadcast_to(
            theta[:, None] if theta.ndim == 1 else theta, (self.m, T.size)
        )
        _, m1, _ = _dist_moments(th[:, :, None], vals[None], logmult[None])
        return m1 @ w


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
    """SQUAREM-accelerated EM; returns (w, theta, loglik, n_iter, converged).

    ``theta`` is (m,) or, label-dependent, (m, k) over the labels of T.
    """

    def pack(w_: np.ndarray, th: np.ndarray) -> np.ndarray:
        return np.concatenate([np.log(np.maximum(w_, 1e-300)), th.ravel()])

    def unpack(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lw = x[: T.size]
        lw = lw - logsumexp(lw)
        th = np.clip(x[T.size :].reshape(theta.shape), 0.0, _THETA_MAX)
        return np.exp(lw), th

    w_given = w  # a fixed prior is returned bit for bit (SQUAREM renormalizes)

    def step(w_: np.ndarray, th: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        R, ll = prob.e_step(np.log(np.maximum(w_, 1e-300)), th, T)
        if fixed_theta:
            return (w_given if fixed_w else prob.c @ R / prob.n), th, ll
        w_new, th_new = prob.m_step(R, th, T, label_dependent)
        return (w_given if fixed_w else w_new), th_new, ll

    scale = max(prob.n, 1.0)
    ll_old = -np.inf
    converged = False
    it = 0
    while it < max_iter:
        w1, th1, ll0 = step(w, theta)
        it += 1
        if np.isfinite(ll_old) and abs(ll0 - ll_old) <= tol * scale:
            w, theta = w1, th1
            converged = True
            break
        w2, th2, ll1 = step(w1, th1)
        it += 1
        x0, x1, x2 = pack(w, theta), pack(w1, th1), pack(w2, th2)
        r_ = x1 - x0
        v_ = x2 - 2 * x1 + x0
        nv = np.linalg.norm(v_)
        best = (w2, th2)
        ll_best = ll1
        if nv > 0:
            alpha = -np.linalg.norm(r_) / nv
            alpha = min(alpha, -1.0)
            xs = x0 - 2 * alpha * r_ + alpha * alpha * v_
            ws, ths = unpack(xs)
            try:
                ws, ths, lls = step(ws, ths)  # stabilizing EM step
                it += 1
                if lls >= ll1 - 1e-9 * scale:
                    best, ll_best = (ws, ths), lls
            except (FloatingPointError, ValueError):
                pass
        w, theta = best
        if abs(ll_best - ll0) <= tol * scale or abs(ll1 - ll0) <= tol * scale:
            ll_old = ll_best
            converged = True
            break
        ll_old = ll_best
    ll = prob.loglik(np.log(np.maximum(w, 1e-300)), theta, T)
    return w, theta, ll, it, converged
