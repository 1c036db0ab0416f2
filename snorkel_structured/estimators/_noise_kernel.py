"""The finite noise model's kernel: exp(-theta d^p(v, y)) / Z(theta, y) per label.

Rows of the squared distances (from the (r, r) matrix, or computed on demand for a
large space), the distinct distances of each row with their multiplicities (all that
the partition function and the moments of d^p depend on), theta solved from a target
E[d^p], and the (n_lfs, r + 1, k) tables of log P(vote | label), outlier mixture
included. EM over vote patterns (:mod:`._em_core`) is built on these.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from snorkel_structured.noise.finite import THETA_CAP, dissimilarity_unit
from snorkel_structured.spaces.finite import DENSE_MAX_LABELS, FiniteMetricSpace

# Spaces up to this many labels use their full (r, r) squared-distance matrix; larger
# ones (e.g. Permutations(8), r = 40,320) only ever compute rows S[idx, :] on demand.
_DENSE_MAX = DENSE_MAX_LABELS


class _SqDists:
    """Rows ``S[idx, :]`` of the squared distances, from a matrix or a space.

    A small space (or an (r, r) array) is used as a matrix. A large space computes
    rows on demand with ``space.dist`` (never the (r, r) matrix) and caches them.
    """

    def __init__(self, S_or_space: Any, power: float = 2.0) -> None:
        # The noise family exp(-theta d^p): p = 2 is the paper's, p = 1 on rankings
        # is the Mallows model. EM only ever sees d^p (``rows``); ``sq_rows`` keeps d^2
        # for reporting E[d^2].
        self.power = float(power)
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
        # Each label's distinct d^p and their log multiplicities (``_row_dists``),
        # kept here so that every problem on these distances shares them.
        self._dists: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    @functools.cached_property
    def unit(self) -> float:
        """The smallest positive d^power: theta = 1 / unit is a soft majority vote."""
        # A large space is measured on row 0 (the unit only has to scale with the
        # distances).
        known = self.S if self.S is not None else self.sq_rows([0])
        return dissimilarity_unit(known, self.power)

    @property
    def theta_max(self) -> float:
        """The cap on theta (:func:`~snorkel_structured.noise.finite.theta_cap`)."""
        return THETA_CAP / self.unit

    @property
    def dense(self) -> bool:
        return self.S is not None

    def rows(self, idx: Any) -> np.ndarray:
        """Rows of d^p (the dissimilarity the noise model uses), (len(idx), r)."""
        sq = self.sq_rows(idx)
        return sq if self.power == 2.0 else np.maximum(sq, 0.0) ** (self.power / 2.0)

    def dists(self, T: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(vals, logmult) of the rows of d^p of the labels T, (k, q) each: each
        row's distinct values and their log multiplicities, padded with (0, -inf)."""
        missing = [t for t in dict.fromkeys(T.tolist()) if t not in self._dists]
        if missing:
            v, lm = _row_dists(self.rows(np.array(missing)))
            for i, t in enumerate(missing):
                keep = np.isfinite(lm[i])
                self._dists[t] = (v[i, keep], lm[i, keep])
        got = [self._dists[t] for t in T.tolist()]
        q = max(v.size for v, _ in got)
        vals = np.zeros((T.size, q))
        logmult = np.full((T.size, q), -np.inf)
        for j, (v, lm) in enumerate(got):
            vals[j, : v.size], logmult[j, : v.size] = v, lm
        return vals, logmult

    def sq_rows(self, idx: Any) -> np.ndarray:
        """Rows of the squared distances d^2, (len(idx), r)."""
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
    Each row's values ascend, as ``np.unique`` gives them; padding is (0, -inf).
    """
    k, r = rows.shape
    if k == 0 or r == 0:
        return np.zeros((k, 1)), np.full((k, 1), -np.inf)
    s = np.sort(rows, axis=1)
    first = np.ones((k, r), dtype=bool)  # first of a run of equal values
    first[:, 1:] = s[:, 1:] != s[:, :-1]
    pos = np.cumsum(first, axis=1) - 1  # index of each value among its row's distinct
    q = int(pos[:, -1].max()) + 1
    row = np.repeat(np.arange(k), r)
    counts = np.bincount(row * q + pos.ravel(), minlength=k * q).reshape(k, q)
    vals = np.zeros((k, q))
    vals[row[first.ravel()], pos[first]] = s[first]
    with np.errstate(divide="ignore"):
        logmult = np.log(counts.astype(np.float64))
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
    theta_max: float,
    xtol: float = 1e-11,
    max_iter: int = 100,
) -> np.ndarray:
    """theta_t with sum_j weights[t, j] E_theta[d^2 | row j] = target_t (weights sum to 1).

    Safeguarded Newton on [0, theta_max], vectorized over targets, warm-started at
    ``theta0``: the mean is strictly decreasing in theta (derivative -variance).
    ``vals``/``logmult`` are (k, q) row distributions; ``weights`` is (t, k).
    """
    t = target.shape[0]
    lo, hi = np.zeros(t), np.full(t, theta_max)
    if vals.shape[0] > 1 and (vals == vals[0]).all() and (logmult == logmult[0]).all():
        # Every label sees the same distances (a homogeneous space: permutations,
        # classes): the weighted mean over labels is any one label's.
        vals, logmult = vals[:1], logmult[:1]
        weights = weights.sum(axis=1, keepdims=True)
    if vals.shape[0] == 1:
        fast = _newton_one_row(
            vals[0], logmult[0], weights[:, 0], target, theta0, theta_max, xtol
        )
        if fast is not None:
            return fast

    def f(th: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        _, m1, var = _dist_moments(
            th[:, None, None], vals[None], logmult[None]
        )  # (t, k)
        return (w * m1).sum(1), (w * var).sum(1)

    x = np.clip(theta0, 0.0, theta_max).astype(np.float64)
    # The bounds and the warm start in one pass (each pass costs a few array calls).
    g3, var3 = f(np.concatenate([lo, hi, x]), np.concatenate([weights] * 3))
    f_lo, f_hi = g3[:t], g3[t : 2 * t]
    g_x, var_x = g3[2 * t :], var3[2 * t :]
    x = np.where(target >= f_lo, 0.0, np.where(target <= f_hi, theta_max, x))
    active = (target < f_lo) & (target > f_hi)
    for _ in range(max_iter):
        if not active.any():
            break
        idx = np.flatnonzero(active)
        xa = x[idx]
        g, var = g_x[idx], var_x[idx]
        g = g - target[idx]  # decreasing in theta: g > 0 means theta is too small
        a_lo = np.where(g > 0, xa, lo[idx])
        a_hi = np.where(g <= 0, xa, hi[idx])
        step = g / np.maximum(var, 1e-300)
        newton = xa + step
        # A converged Newton step lands on the bracket's own end (rounding): take it
        # rather than bisecting away from the root.
        small = np.abs(step) <= xtol * (1.0 + np.abs(xa))
        inside = (newton > a_lo) & (newton < a_hi)
        nxt = np.where(
            small,
            np.clip(newton, a_lo, a_hi),
            np.where(inside, newton, 0.5 * (a_lo + a_hi)),
        )
        done = (
            small
            | (np.abs(nxt - xa) <= xtol * (1.0 + np.abs(nxt)))
            | (a_hi - a_lo <= xtol)
        )
        lo[idx], hi[idx], x[idx] = a_lo, a_hi, nxt
        active[idx[done]] = False
        if active.any():
            idx = np.flatnonzero(active)
            g_x[idx], var_x[idx] = f(x[idx], weights[idx])
    return x


def _newton_one_row(
    vals: np.ndarray,
    logmult: np.ndarray,
    weights: np.ndarray,
    target: np.ndarray,
    theta0: np.ndarray,
    theta_max: float,
    xtol: float,
    max_iter: int = 4,
) -> np.ndarray | None:
    """:func:`_solve_theta` for one row of distances by plain Newton from the warm
    start, or None when it does not settle inside (0, theta_max) within
    ``max_iter`` steps (the safeguarded solver then takes over).

    An EM step's warm start is a few Newton steps from the root (3.7 moment
    evaluations per solve on average, measured on S4-S7, trees and classes); the
    bracketing costs more array calls than the moments themselves on a few targets.
    Without a shift: the distance 0 (a label's own) has a term >= 1 in the
    normalizer, so no sum underflows; the moments are one product.
    """
    if not (vals[0] == 0.0 and np.isfinite(logmult[0])):
        return None
    V = np.stack([vals, vals * vals], axis=1)  # (q, 2)
    ones = np.ones_like(vals)
    x = np.asarray(theta0, dtype=np.float64)
    if not ((x > 0.0) & (x < theta_max)).all():
        return None
    for _ in range(max_iter):
        e = np.exp(logmult - x[:, None] * vals)  # (t, q)
        z = e @ ones
        m = (e @ V) / z[:, None]
        var = weights * np.maximum(m[:, 1] - m[:, 0] * m[:, 0], 0.0)
        if not (var > 0.0).all():
            return None
        step = (weights * m[:, 0] - target) / var
        x = x + step
        if not ((x > 0.0) & (x < theta_max)).all():
            return None
        if (np.abs(step) <= xtol * (1.0 + np.abs(x))).all():
            return x
    return None


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


def _mix_outliers(
    W: np.ndarray, eps: np.ndarray | None, log_h: np.ndarray | None
) -> np.ndarray:
    """log((1 - eps_a) P_theta(v | y) + eps_a h_a(v)) from the (m, r + 1, k) table of
    log P_theta; row 0 (abstain) stays 0. ``h_a`` is the LF's own vote distribution:
    an outlier vote is unrelated to Y, drawn as the LF votes overall."""
    if eps is None:
        return W
    out = W.copy()
    noise = W[:, 1:, :] + np.log1p(-eps)[:, None, None]
    # Only votes the LF ever cast have an outlier part (h_a = 0 elsewhere). Summed in
    # probabilities (W <= 0, and where exp(W) underflows the outlier part is positive
    # and dominates): logaddexp costs several times as much.
    outlier = (eps[:, None] * np.exp(log_h))[:, :, None]  # (m, r, 1)
    with np.errstate(under="ignore", divide="ignore"):
        mixed = np.log(np.exp(noise) + outlier)
    out[:, 1:, :] = np.where(outlier > 0, mixed, noise)
    return out


def support_log_table(
    S: Any,
    theta: Any,
    support: Any,
    *,
    power: float = 2.0,
    eps: Any = None,
    log_h: Any = None,
) -> np.ndarray:
    """log P(lambda_a = v | Y = support_j) for the labels of a support only.

    Parameters
    ----------
    S : ndarray of shape (r, r) or FiniteMetricSpace
        Squared distances or the space (a large space computes only ``k`` rows).
    theta : array-like of shape (n_lfs,) or (n_lfs, r)
    support : array-like of int of shape (k,)
    power : {1, 2}, default=2
        The noise family exp(-theta d^power).
    eps, log_h : array-like of shape (n_lfs,) and (n_lfs, r), optional
        Outlier rates and each LF's log vote distribution (the outlier component).

    Returns
    -------
    table : ndarray of shape (n_lfs, r + 1, k)
        ``table[a, v + 1, j]`` for votes v in [0, r); ``table[a, 0, :] = 0`` (abstain),
        so a vote matrix shifted by one indexes it directly.
    """
    sq = _SqDists(S, power)
    T = np.asarray(support, dtype=np.int64)
    th = np.asarray(theta, dtype=np.float64)
    th = th[:, T] if th.ndim == 2 else th
    ST = sq.rows(T)
    vals, logmult = _row_dists(ST)
    W = _log_table(ST, vals, logmult, th)
    if eps is None:
        return W
    return _mix_outliers(W, np.asarray(eps, dtype=np.float64), np.asarray(log_h))
