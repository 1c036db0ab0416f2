"""Manifolds: each pair's law-of-cosines residual, predicted from the other pairs.

Independent isotropic noise around the same Y gives an exact identity per pair:
``E d^2(lambda_a, lambda_b) = e_a + e_b`` in Euclidean space, and ``E cos d = A_a A_b``
(sphere), ``E cosh d = A_a A_b`` (hyperbolic) by the spherical and hyperbolic laws of
cosines. For each pair the per-LF terms are fitted by weighted least squares on all
*other* pairs (in logs for the products); the statistic is the pair's residual. No
label model is needed.

Everything is a function of additive per-pair sums (:class:`ManifoldPairStats`):
counts, sums of the invariant, and the cross sums between pairs that give the
covariance of the pair means (delta method), so the test costs O(n_pairs^2) once the
statistics are collected in one pass over the rows.

With 4 LFs the other pairs' fit leaves one degree of freedom, shared by a pair and its
complement: ``h_ab + h_cd - (h_ac + h_bd + h_ad + h_bc) / 2`` is the residual of both
(a, b) and (c, d), so the test cannot tell which of the two is dependent, and flags
both. (Flagging only the one of smaller standard error named a copy's complement on
about a third of the datasets: power 0.60-0.68.) Five or more LFs separate them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from snorkel_structured._validation import check_manifold_outputs
from snorkel_structured.estimators._manifold_stats import (
    MIN_MEAN_COS_SE,
    pair_invariant_and_sq_dist,
)
from snorkel_structured.estimators.dependencies._calibration import (
    gaussian_max_t_step,
)
from snorkel_structured.spaces.manifolds import Euclidean, Hyperbolic, Sphere

__all__ = ["ManifoldPairStats", "manifold_kind", "manifold_test"]

_CHUNK = 1 << 14  # rows per chunk: bounds the (chunk, n_pairs) temporaries


def manifold_kind(space: Any) -> str:
    """The kind of a supported manifold: euclidean, sphere or hyperbolic.

    Raises
    ------
    TypeError
        For any other space (products of manifolds have no pairwise identity).
    """
    if isinstance(space, Euclidean):
        return "euclidean"
    if isinstance(space, Sphere):
        return "sphere"
    if isinstance(space, Hyperbolic):
        return "hyperbolic"
    raise TypeError(
        "space must be a finite label space (ss.Permutations, ss.Discrete, "
        "ss.GraphSpace, ...) or one of ss.Euclidean, ss.Sphere, ss.Hyperbolic; got "
        f"{type(space).__name__}. Product manifolds have no pairwise identity the "
        "test can use."
    )


@dataclass(frozen=True, eq=False)
class ManifoldPairStats:
    """Additive per-pair sums of the law-of-cosines invariant, with cross sums.

    For every pair t = (a, b), a < b (in ``numpy.triu_indices`` order), and every
    row where both LFs vote, the invariant ``g`` is ``d^2`` (Euclidean), ``cos d``
    (sphere) or ``cosh d`` (hyperbolic). Build with :meth:`from_outputs`; chunks add
    with ``+`` (``sum(chunks)`` works).

    Parameters
    ----------
    kind : {"euclidean", "sphere", "hyperbolic"}
    n_samples : int
        Rows seen.
    n_lfs : int
    cross_bb : ndarray of shape (n_pairs, n_pairs)
        Rows where both pairs s and t co-vote (diagonal: the pair's co-voting rows).
    cross_gb : ndarray of shape (n_pairs, n_pairs)
        Sum of pair s's invariant over rows where pairs s and t co-vote (diagonal:
        the pair's invariant sum).
    cross_gg : ndarray of shape (n_pairs, n_pairs)
        Sum of the product of the two pairs' invariants over those rows.
    """

    kind: str
    n_samples: int
    n_lfs: int
    cross_bb: np.ndarray
    cross_gb: np.ndarray
    cross_gg: np.ndarray

    def __post_init__(self) -> None:
        for arr in (self.cross_bb, self.cross_gb, self.cross_gg):
            arr.setflags(write=False)

    @classmethod
    def from_outputs(cls, X: Any, space: Any, *, name: str = "X") -> ManifoldPairStats:
        """Collect the statistics of LF outputs in one pass over the rows.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_lfs, ambient_dim)
            A row of NaN is an abstain; validated with ``check_manifold_outputs``.
        space : Euclidean, Sphere or Hyperbolic
        name : str, default="X"
            Name of ``X`` in error messages.

        Returns
        -------
        stats : ManifoldPairStats
        """
        kind = manifold_kind(space)
        X = check_manifold_outputs(X, space, name=name)
        n, m, _ = X.shape
        ia, ib = np.triu_indices(m, 1)
        bb = np.zeros((ia.size, ia.size))
        gb = np.zeros((ia.size, ia.size))
        gg = np.zeros((ia.size, ia.size))
        voted = ~np.isnan(X[..., 0])
        for start in range(0, n, _CHUNK):  # vectorized within a chunk
            Xc, vc = X[start : start + _CHUNK], voted[start : start + _CHUNK]
            both = (vc[:, ia] & vc[:, ib]).astype(np.float64)
            with np.errstate(invalid="ignore"):
                g, _ = pair_invariant_and_sq_dist(space, Xc[:, ia], Xc[:, ib])
            g = np.where(both > 0, g, 0.0)
            bb += both.T @ both
            gb += g.T @ both
            gg += g.T @ g
        return cls(kind, int(n), int(m), bb, gb, gg)

    def __add__(self, other: object) -> ManifoldPairStats:
        if not isinstance(other, ManifoldPairStats):
            return NotImplemented
        if (other.kind, other.n_lfs) != (self.kind, self.n_lfs):
            raise ValueError(
                "Cannot add ManifoldPairStats of different problems: "
                f"({self.kind}, n_lfs={self.n_lfs}) vs ({other.kind}, "
                f"n_lfs={other.n_lfs})."
            )
        return ManifoldPairStats(
            self.kind,
            self.n_samples + other.n_samples,
            self.n_lfs,
            self.cross_bb + other.cross_bb,
            self.cross_gb + other.cross_gb,
            self.cross_gg + other.cross_gg,
        )

    def __radd__(self, other: object) -> ManifoldPairStats:
        if isinstance(other, int) and other == 0:  # so that sum(chunks) works
            return self
        return self.__add__(other)

    def moments(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Co-voting rows, mean invariant and covariance of the means, per pair.

        Returns
        -------
        n_both : ndarray of shape (n_pairs,)
        mean : ndarray of shape (n_pairs,)
            NaN where a pair never co-votes.
        cov : ndarray of shape (n_pairs, n_pairs)
            Covariance of the pair means (delta method): for pairs s, t,
            ``sum_i 1_s 1_t (g_s - mean_s)(g_t - mean_t) / (n_s n_t)``.
        """
        n_both = np.diag(self.cross_bb).copy()
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(n_both > 0, np.diag(self.cross_gb) / n_both, np.nan)
        mu = np.nan_to_num(mean)
        # sum over co-voting rows of (g_s - mu_s)(g_t - mu_t)
        centred = (
            self.cross_gg
            - mu[None, :] * self.cross_gb
            - mu[:, None] * self.cross_gb.T
            + np.outer(mu, mu) * self.cross_bb
        )
        with np.errstate(invalid="ignore", divide="ignore"):
            denom = np.outer(n_both, n_both)
            cov = np.where(denom > 0, centred / np.where(denom > 0, denom, 1.0), 0.0)
        return n_both, mean, cov


def _residual_map(
    usable: np.ndarray, weight: np.ndarray, m: int, excluded: list[int]
) -> tuple[np.ndarray, np.ndarray]:
    """Linear map from the pair statistics h to each pair's residual.

    Row t of ``coef`` gives ``h_t - prediction of h_t`` where the prediction is the
    weighted least-squares fit of ``h_s = theta_a + theta_b`` on the usable pairs
    other than t and the excluded (flagged) ones.

    Returns
    -------
    coef : ndarray of shape (n_pairs, n_pairs)
    ok : ndarray of bool of shape (n_pairs,)
        Pairs whose terms the other pairs identify.
    """
    a_idx, b_idx = np.triu_indices(m, 1)
    n_pairs = a_idx.size
    design = np.zeros((n_pairs, m))
    design[np.arange(n_pairs), a_idx] = 1.0
    design[np.arange(n_pairs), b_idx] = 1.0
    w_all = np.where(usable, weight, 0.0)
    w_all[excluded] = 0.0
    coef = np.zeros((n_pairs, n_pairs))
    ok = np.zeros(n_pairs, dtype=bool)
    for t in np.flatnonzero(usable):  # m (m - 1) / 2 small least-squares problems
        w = w_all.copy()
        w[t] = 0.0
        # Only the LFs in some weighted pair enter the fit: an LF with no usable
        # pair (a sphere LF whose every mean cos is at most 0) cannot be judged,
        # but must not leave every other pair unjudged.
        active = (design[w > 0] > 0).any(axis=0)
        if not active[a_idx[t]] or not active[b_idx[t]]:
            continue
        D = design[:, active]
        Bw = D * w[:, None]
        gram = D.T @ Bw
        # The other pairs must identify every active LF's term.
        if np.linalg.matrix_rank(gram, tol=1e-10 * np.abs(gram).max()) < D.shape[1]:
            continue
        coef[t] = -(D[t] @ np.linalg.solve(gram, Bw.T))
        coef[t, t] += 1.0
        ok[t] = True
    return coef, ok


def manifold_test(
    stats: ManifoldPairStats, alpha: float, n_sim: int, rng: np.random.Generator
) -> tuple[Any, ...]:
    """Forward selection of dependent pairs with the Gaussian max-T criterion.

    Parameters
    ----------
    stats : ManifoldPairStats
    alpha : float
    n_sim : int
        Gaussian draws of the null maximum.
    rng : numpy.random.Generator

    Returns
    -------
    a_idx, b_idx : ndarray of int of shape (n_pairs,)
    n_both, observed, expected, z : ndarray of shape (n_pairs,)
        Co-voting rows, mean invariant, what the other pairs predict for it, and the
        studentized residual (positive = closer than independence).
    flagged : list of (int, int)
    """
    m = stats.n_lfs
    a_idx, b_idx = np.triu_indices(m, 1)
    n_both, mean, cov_mean = stats.moments()
    var_mean = np.diag(cov_mean)
    log_scale = stats.kind != "euclidean"
    usable = (n_both >= 2) & np.isfinite(mean) & (var_mean > 0)
    if log_scale:
        usable &= np.nan_to_num(mean) > 0
        if stats.kind == "sphere":
            # The delta-method correction var / (2 mean^2) explodes near 0 (pairs
            # with an LF of junk votes came out "too close"); beyond the threshold
            # it is at most 1/8. (Mean cosh d on H^d is at least 1.)
            usable &= np.nan_to_num(mean) > MIN_MEAN_COS_SE * np.sqrt(var_mean)
        safe = np.where(usable, mean, 1.0)
        # log of the mean, with its second-order (delta-method) bias removed
        h = np.where(usable, np.log(safe) + var_mean / (2.0 * safe**2), 0.0)
        jac = np.where(usable, 1.0 / safe, 0.0)
        cov_h = cov_mean * np.outer(jac, jac)
    else:
        h = np.where(usable, mean, 0.0)
        cov_h = cov_mean
    weight = np.where(usable, 1.0 / np.where(usable, np.diag(cov_h), 1.0), 0.0)
    # "Too close": smaller d^2 (Euclidean) / cosh d (hyperbolic), larger cos d (sphere).
    sign = 1.0 if stats.kind == "sphere" else -1.0
    normals = rng.standard_normal((n_sim, a_idx.size))
    flagged: list[int] = []
    while True:
        coef, ok = _residual_map(usable, weight, m, flagged)
        resid = coef @ h
        cov = coef @ cov_h @ coef.T
        se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
        with np.errstate(invalid="ignore", divide="ignore"):
            z = np.where(ok & (se > 0), sign * resid / se, np.nan)
        open_ = ~np.isin(np.arange(a_idx.size), flagged)
        pick = gaussian_max_t_step(z, cov, open_, alpha, normals)
        if pick is None:
            break
        flagged.append(pick)
        if m == 4:
            # A pair and its complement share their residual: both are flagged, and
            # with them out no pair is left with a residual to test. The table keeps
            # the residuals of the fit without them (which the pick read).
            flagged.append(a_idx.size - 1 - pick)
            break
    expected = np.where(ok, h - resid, np.nan)
    if log_scale:
        expected = np.exp(expected)
    pairs = [(int(a_idx[t]), int(b_idx[t])) for t in flagged]
    return a_idx, b_idx, n_both, mean, expected, z, pairs
