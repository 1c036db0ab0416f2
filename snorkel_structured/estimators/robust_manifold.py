"""Outlier-robust manifold noise: per-vote responsibilities and robust Frechet means.

Model (per LF ``a``, independently given the true label ``y``)::

    lambda_a | y  ~  (1 - eps_a) K_a(. | y)  +  eps_a U(.)

``K_a`` is the label model's isotropic noise family around ``y`` (scale ``e_a =
E d^2(lambda_a, y)`` of the inlier part) and ``U`` a background law unrelated to
``y``: the uniform law on the sphere; on Euclidean and hyperbolic space (which have no
uniform law) a heavy-tailed law around the population of labels: an isotropic
multivariate Student t with ``BACKGROUND_DOF`` degrees of freedom (wrapped onto H^d
through normal coordinates), centred on the labels, its scale estimated by EM from
the outlying votes and never below the labels' spread. Heavy tails and a fitted scale
because what "unrelated to the label" means is unknown: a Gaussian background as wide
as the labels makes a vote far outside them (say a garbage value 10 label-spreads out)
likelier under a wide Gaussian *inlier* law than under the background, and EM then
swaps the roles of the two components. The population of labels itself (centre and
spread, ``RobustFit.prior``) is kept apart: it is the prior vote of the references.

Responsibilities. Whether vote ``lambda_ia`` is an inlier is judged against the
*leave-group-out* reference ``c_ia``: the weighted Frechet mean of the row's other votes
(excluding ``a`` and every LF declared dependent on ``a``), so a vote cannot vouch for
itself. With independent errors ``c_ia`` is off ``y`` by about
``v_ia = sum_b w_b^2 e_b / (sum_b w_b)^2``, so in normal coordinates at ``c_ia`` the
inlier law is approximately a Gaussian of variance ``(e_a + v_ia) / dim`` per
coordinate, and the responsibility is

    r_ia = (1 - eps_a) N / ((1 - eps_a) N + eps_a u),

with ``u`` the background density in the same coordinates. A vote that is the only one
on its row keeps the prior ``1 - eps_a``.

Robust pseudolabel. Iterate ``r`` and the references (all rows at once) to a fixed
point, then take the Frechet mean with weights ``w_a r_ia``: an iteratively reweighted
Frechet mean that drops an LF on the rows where it is far from the others. The
iteration starts from each vote's agreement with its best partner (not from "every
vote is an inlier", which two far outliers on a row of four can mask).

Estimation (``robust_em``). EM in which the latent is "is this vote an inlier": the
E-step is the responsibilities above; the M-step sets ``eps_a`` to the mean
non-inlier probability and re-estimates the inlier scales with the label model's own
moment estimator (triplet or pair fit) on *responsibility-weighted* pair statistics
(a pair's row counts ``r_ia r_ib``), so the invariants are those of inlier-inlier
pairs. Labeled rows enter with exact responsibilities (the true ``y`` is known).
It starts from the plain estimate, except for LFs whose plain ``E d^2`` (inflated by
the outliers) exceeds half the background's spread: those start from low quantiles of
the pair distances (``quantile_sq_dist``), or the first E-step already has the roles
swapped. A fit that still ends with every ``eps_a`` at ``MAX_OUTLIER_RATE`` is
``RobustFit.degenerate``; the label model does not choose it.

Model choice (``heldout_loglik``). The held-out predictive pseudo-likelihood
``sum_a log p(lambda_ia | other votes of row i)`` under each fitted model: the plain
model's Gaussian density, or the robust mixture, both around the same kind of
leave-group-out reference.

Everything here needs the raw rows (not only additive statistics).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import integrate, optimize, special, stats

from snorkel_structured import _warnings
from snorkel_structured.estimators._manifold_stats import (
    LabeledManifoldStats,
    ManifoldStats,
)
from snorkel_structured.exceptions import IdentifiabilityWarning
from snorkel_structured.spaces.manifolds import Euclidean, Hyperbolic, Sphere

__all__ = [
    "BACKGROUND_DOF",
    "MAX_OUTLIER_RATE",
    "OutlierBackground",
    "RobustFit",
    "fit_background",
    "heldout_loglik",
    "inlier_floor",
    "outlier_screen",
    "quantile_sq_dist",
    "robust_em",
    "robust_frechet_mean",
    "robust_responsibilities",
    "split_group_weights",
]

_ROW_CHUNK = 20_000  # rows per block: bounds the (rows, n_lfs, n_lfs, ambient) arrays
# Above this "outlier" and "inlier" swap roles: not identifiable. A fit with every LF
# at the cap is degenerate (``RobustFit.degenerate``).
MAX_OUTLIER_RATE = 0.5
_EPS_MAX = MAX_OUTLIER_RATE
_EPS_MIN = 1e-6
# The narrowest inlier law the votes resolve, as a fraction of E d^2 under the
# background (the spread of the labels). LFs that are exactly right on most rows
# (discrete-valued labels, e.g. UTC offsets in whole hours) otherwise drive their inlier
# E d^2 to 0: infinite densities, all-or-nothing responsibilities and arbitrary
# weights among the "noiseless" LFs.
_RESOLUTION = 1e-4
# Degrees of freedom of the Student t background (1: Cauchy). Any finite value gives
# polynomial tails, so that a far vote always prefers the background to a Gaussian
# inlier law; 1 is the most forgiving of far garbage.
BACKGROUND_DOF = 1.0


def _floor(expected_sq_dist: Any) -> np.ndarray:
    """E d^2 kept away from 0 (an LF estimated noiseless would get infinite weight)."""
    return np.maximum(np.asarray(expected_sq_dist, dtype=np.float64), 1e-12)


def split_group_weights(
    weights: np.ndarray, voted: np.ndarray, groups: np.ndarray
) -> np.ndarray:
    """Per-row weights in which a group of dependent LFs counts once.

    Each group's total weight on a row is the largest weight among its voting members,
    shared among them in proportion to their weights (copies of one LF add nothing).

    Parameters
    ----------
    weights : ndarray of shape (..., n_lfs)
    voted : ndarray of bool, shape (..., n_lfs)
    groups : ndarray of shape (n_lfs,)

    Returns
    -------
    weights : ndarray of shape (..., n_lfs)
    """
    w = np.where(voted, weights, 0.0)
    n_groups = int(groups.max()) + 1 if groups.size else 0
    if n_groups == groups.size:  # no dependencies
        return w
    out = w.copy()
    for g in range(n_groups):  # a loop over groups (few), not rows
        members = groups == g
        if members.sum() < 2:
            continue
        wg = w[..., members]
        total = wg.sum(axis=-1, keepdims=True)
        top = wg.max(axis=-1, keepdims=True)
        out[..., members] = wg * np.where(total > 0, top / np.maximum(total, 1e-300), 0)
    return out


@dataclass(frozen=True)
class OutlierBackground:
    """The law ``U`` of an outlying vote.

    Attributes
    ----------
    kind : {"uniform", "student_t", "gaussian"}
        Uniform on the sphere; isotropic Student t with ``BACKGROUND_DOF`` degrees of
        freedom (in normal coordinates at ``center`` on H^d) otherwise. ``"gaussian"``
        (isotropic Gaussian / wrapped normal) is what models fitted before the
        Student t background stored; it is still read.
    center : ndarray of shape (ambient_dim,) or None
    sigma2 : float
        Per-coordinate variance of the population of labels (unused when uniform):
        the scale of the background, and the spread of the prior vote the
        leave-group-out references add.
    """

    kind: str
    center: np.ndarray | None
    sigma2: float


def fit_background(
    space: Any, X: np.ndarray, expected_sq_dist: np.ndarray | None = None
) -> OutlierBackground:
    """The law of an outlying vote ("unrelated to the label") for ``space``.

    On the sphere, the uniform law. Euclidean and hyperbolic space have none, so an
    outlying vote is modelled as a heavy-tailed draw around the population of labels:
    an isotropic Student t (``BACKGROUND_DOF`` degrees of freedom; in normal
    coordinates at the centre on H^d) with the centre and spread of the rows'
    inverse-variance Frechet means (the plain pseudolabels), the spread corrected for
    the pseudolabels' own error ``1 / sum_a (1 / e_a)``.

    Parameters
    ----------
    space : Euclidean, Sphere or Hyperbolic
    X : ndarray of shape (n_samples, n_lfs, ambient_dim)
        LF outputs, NaN for abstains.
    expected_sq_dist : ndarray of shape (n_lfs,), optional
        Plain estimates of ``E d^2``; default equal (no error correction).
    """
    if isinstance(space, Sphere):
        return OutlierBackground("uniform", None, np.nan)
    voted = ~np.isnan(X[..., 0])
    if expected_sq_dist is None:
        w, err = np.ones(X.shape[1]), np.zeros(X.shape[0])
    else:
        w = 1.0 / np.asarray(expected_sq_dist, dtype=np.float64)
        with np.errstate(divide="ignore"):
            err = 1.0 / (voted * w).sum(axis=1)
    with _warnings.captured():
        pseudo = space.frechet_mean(X, w, tol=1e-6)
    ok = ~np.isnan(pseudo[:, 0])
    pseudo, err = pseudo[ok], err[ok]
    center = space.frechet_mean(pseudo[None], tol=1e-8)[0]
    spread = float(np.mean(space.squared_dist(pseudo, center)))
    # never below a tenth of the raw spread: the correction is a first-order one
    sigma2 = max(spread - float(np.mean(err)), 0.1 * spread) / space.dim
    return OutlierBackground("student_t", center, max(sigma2, 1e-12))


def inlier_floor(space: Any, background: OutlierBackground) -> float:
    """Smallest inlier ``E d^2`` the robust model uses: a fraction of the background's.

    ``_RESOLUTION`` times ``E d^2`` between two independent draws' centre and a draw
    of the background: ``dim * sigma2`` (the labels' spread) for the Student t and
    Gaussian backgrounds,
    ``E d^2`` of a uniform point from a fixed one on the sphere (1-D quadrature of the
    radial density ``sin^(dim-1) r`` over ``[0, pi]``).

    Parameters
    ----------
    space : Euclidean, Sphere or Hyperbolic
    background : OutlierBackground

    Returns
    -------
    floor : float
    """
    return _RESOLUTION * _background_spread(space, background)


def _background_spread(space: Any, background: OutlierBackground) -> float:
    """``E d^2`` from a fixed point (the centre) to a draw of the background (labels)."""
    if background.kind == "uniform":
        d = space.dim
        num = integrate.quad(lambda r: r * r * np.sin(r) ** (d - 1), 0.0, np.pi)[0]
        den = integrate.quad(lambda r: np.sin(r) ** (d - 1), 0.0, np.pi)[0]
        return float(num / den)
    return float(space.dim * background.sigma2)


# Quantile of the pair squared distances that starts the EM (see ``quantile_sq_dist``):
# low enough that it stays among inlier-inlier pairs while they are more than half of
# the pairs (each LF's eps below about 0.5).
_START_QUANTILE = 0.25
# Fewest co-voting rows for a pair to enter the robust start.
_START_MIN_PAIRS = 10
# An LF whose plain E d^2 exceeds this fraction of the background's spread starts the
# EM from the robust start (``robust_em``).
_START_SWAP = 0.5


def quantile_sq_dist(space: Any, X: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Per-LF inlier ``E d^2`` from low quantiles of the pair distances; (n_lfs,).

    Independent isotropic noise of per-coordinate variance ``e_a / dim`` makes
    ``d^2(lambda_a, lambda_b)`` about ``(e_a + e_b) / dim`` times a chi-square with
    ``dim`` degrees of freedom (exact on Euclidean space, to first order in the noise
    on curved ones). Its ``_START_QUANTILE`` quantile over the rows where both voted,
    divided by the chi-square's, estimates ``s_ab = e_a + e_b`` while most pairs are
    inlier-inlier pairs: outlying votes, however far, move a low quantile only a
    little, where they inflate the mean without bound. Non-negative least squares
    over the pairs of different dependency groups gives ``e``; NaN for an LF in no
    such pair (the caller keeps its plain value).

    Parameters
    ----------
    space : Euclidean, Sphere or Hyperbolic
    X : ndarray of shape (n_samples, n_lfs, ambient_dim)
        Checked LF outputs (NaN = abstain).
    groups : ndarray of shape (n_lfs,)
        Dependency group of each LF.

    Returns
    -------
    e : ndarray of shape (n_lfs,)
    """
    m = X.shape[1]
    voted = ~np.isnan(X[..., 0])
    rows, s = [], []
    scale = space.dim / stats.chi2.ppf(_START_QUANTILE, space.dim)
    for a in range(m):  # a loop over LF pairs (few), each vectorized over rows
        for b in range(a + 1, m):
            if groups[a] == groups[b]:
                continue
            both = voted[:, a] & voted[:, b]
            if both.sum() < _START_MIN_PAIRS:
                continue
            d2 = space.squared_dist(X[both, a], X[both, b])
            d2 = d2[np.isfinite(d2)]
            if d2.size < _START_MIN_PAIRS:
                continue
            row = np.zeros(m)
            row[[a, b]] = 1.0
            rows.append(row)
            s.append(scale * float(np.quantile(d2, _START_QUANTILE)))
    e = np.full(m, np.nan)
    if not rows:
        return e
    A = np.array(rows)
    seen = A.any(axis=0)
    # an LF seen in pairs but not identified by them (fewer than three LFs linked)
    # still gets a value here; the min with the plain estimate keeps it sane
    sol = optimize.nnls(A[:, seen], np.array(s))[0]
    e[seen] = sol
    return e


def _log_jacobian(space: Any, r: np.ndarray) -> np.ndarray:
    """(dim - 1) log J(r): volume factor between normal coordinates and the manifold."""
    d = space.dim
    if d == 1 or isinstance(space, Euclidean):
        return np.zeros_like(r)
    small = r < 1e-4
    rs = np.where(small, 1.0, r)
    if isinstance(space, Sphere):
        # clamp near the antipode, where the one-sheet approximation breaks down
        j = np.where(small, 1.0 - r * r / 6.0, np.maximum(np.sin(rs) / rs, 1e-6))
    else:
        with np.errstate(over="ignore"):
            # log(sinh r / r) = r + log1p(-e^{-2r}) - log 2 - log r, stable for large r
            lj = rs + np.log(-np.expm1(-2.0 * rs)) - np.log(2.0) - np.log(rs)
        return (d - 1) * np.where(small, r * r / 6.0, lj)
    return (d - 1) * np.log(j)


def _log_background(
    space: Any, bg: OutlierBackground, points: np.ndarray, ref: np.ndarray
) -> np.ndarray:
    """log U(points) in normal coordinates at ``ref``, shape (...)."""
    d = space.dim
    r = space.dist(points, ref)
    if bg.kind == "uniform":
        log_area = (
            np.log(2.0) + 0.5 * (d + 1) * np.log(np.pi) - special.gammaln(0.5 * (d + 1))
        )
        return -log_area + _log_jacobian(space, r)
    rho2 = space.squared_dist(points, bg.center)
    if bg.kind == "gaussian":
        out = -rho2 / (2.0 * bg.sigma2) - 0.5 * d * np.log(2.0 * np.pi * bg.sigma2)
    else:  # multivariate Student t
        nu = BACKGROUND_DOF
        out = (
            special.gammaln(0.5 * (nu + d))
            - special.gammaln(0.5 * nu)
            - 0.5 * d * np.log(nu * np.pi * bg.sigma2)
            - 0.5 * (nu + d) * np.log1p(rho2 / (nu * bg.sigma2))
        )
    if isinstance(space, Hyperbolic):
        out = out - _log_jacobian(space, np.sqrt(rho2))
    return out + _log_jacobian(space, r)


def _background_scale(
    space: Any, bg: OutlierBackground, X: np.ndarray, weight: np.ndarray
) -> OutlierBackground:
    """M-step of the Student t background's scale from the outlying votes.

    One fixed-point step of the t scale's maximum likelihood (the EM of the t as a
    Gaussian scale mixture): ``sigma2 = sum w u rho^2 / (dim sum w)`` with
    ``u = (nu + dim) / (nu + rho^2 / sigma2)``, ``rho`` the distance of a vote to the
    centre and ``w`` its outlier probability. (``robust_em`` keeps the result at
    least at the labels' spread, so the background stays at least as wide as the
    labels.) Other kinds are returned unchanged.

    Parameters
    ----------
    space : Euclidean or Hyperbolic
    bg : OutlierBackground
        The current background (its ``sigma2`` enters ``u``).
    X : ndarray of shape (n_samples, n_lfs, ambient_dim)
    weight : ndarray of shape (n_samples, n_lfs)
        Outlier probability of each vote (0 for abstains).
    """
    if bg.kind != "student_t":
        return bg
    ok = (weight > 0) & ~np.isnan(X[..., 0])
    if not ok.any():
        return bg
    rho2 = space.squared_dist(X[ok], bg.center)
    w = weight[ok]
    fin = np.isfinite(rho2)
    rho2, w = rho2[fin], w[fin]
    if not w.sum() > 0:
        return bg
    nu, d = BACKGROUND_DOF, space.dim
    u = (nu + d) / (nu + rho2 / bg.sigma2)
    sigma2 = float(np.sum(w * u * rho2) / (d * np.sum(w)))
    return OutlierBackground(bg.kind, bg.center, sigma2)


def _log_inlier(space: Any, r2: np.ndarray, tau2: np.ndarray) -> np.ndarray:
    return -r2 / (2.0 * tau2) - 0.5 * space.dim * np.log(2.0 * np.pi * tau2)


def _loo_references(
    space: Any,
    X: np.ndarray,
    weights: np.ndarray,
    e: np.ndarray,
    groups: np.ndarray,
    prior: OutlierBackground | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Leave-group-out weighted means and their error variances, all rows at once.

    With a Student t or Gaussian ``prior`` (the population of labels on Euclidean and
    hyperbolic space) its centre enters as one more vote with ``E d^2 = dim sigma2``
    (the labels' spread):
    the predictive law of a vote given the others then accounts for where labels lie,
    so the plain model is not penalized for ignoring it.

    The leave-group-out mean of row ``i`` for LF ``a`` is computed in the tangent
    space at the row's full weighted Frechet mean ``z_i``:
    ``exp_z(sum_b w_b log_z(lambda_b) / sum_b w_b)`` over the LFs ``b`` outside ``a``'s
    group (one Newton step from ``z_i``; exact on Euclidean space). One Frechet mean
    per row instead of one per (row, LF).

    Returns ``ref`` (n, m, D) (NaN where no other LF voted) and ``v`` (n, m), the
    variance ``sum_b w_b^2 e_b / (sum_b w_b)^2`` of that reference around ``y``.
    """
    n, m, D = X.shape
    voted = ~np.isnan(X[..., 0])
    weights = np.where(voted, np.nan_to_num(weights, posinf=1e300), 0.0)
    keep = groups[None, :] != groups[:, None]  # (a, b): b may vouch for a
    ref = np.empty((n, m, D))
    v = np.empty((n, m))
    for start in range(0, n, _ROW_CHUNK):
        sl = slice(start, start + _ROW_CHUNK)
        Xc, vc = X[sl], voted[sl]
        wc = np.where(vc, weights[sl], 0.0)
        with _warnings.captured():
            z = space.frechet_mean(Xc, split_group_weights(wc, vc, groups), tol=1e-7)
        z_ok = ~np.isnan(z[:, 0])
        filler = np.zeros(D) if isinstance(space, Euclidean) else space.origin
        z = np.where(z_ok[:, None], z, filler)
        pts = np.where(vc[..., None], Xc, z[:, None, :])
        T = space.log(pts, z[:, None, :])  # (k, m, D)
        W = wc[:, None, :] * keep[None]  # (k, a, b)
        W = split_group_weights(W, np.broadcast_to(vc[:, None, :], W.shape), groups)
        tot = W.sum(axis=-1)
        has = tot > 0
        num = np.einsum("kab,kbd->kad", W, T)
        var_num = (W * W * e).sum(axis=-1)
        if prior is not None and prior.kind != "uniform":
            e_bg = space.dim * prior.sigma2
            t_bg = space.log(np.broadcast_to(prior.center, z.shape), z)
            num = num + t_bg[:, None, :] / e_bg
            var_num = var_num + 1.0 / e_bg
            tot = tot + 1.0 / e_bg
        with np.errstate(invalid="ignore", divide="ignore"):
            mean_t = num / tot[..., None]
            v[sl] = var_num / (tot * tot)
        if isinstance(space, Hyperbolic):
            # exp refuses points beyond the float resolution (max_radius): no
            # reference that far out
            reach = space.dist(space.origin, z)[:, None] + space.norm(
                mean_t, z[:, None, :]
            )
            has &= reach < space.max_radius
        mean_t = np.where(has[..., None], mean_t, 0.0)
        r = space.exp(mean_t, z[:, None, :])
        has &= np.isfinite(r).all(axis=-1)
        ref[sl] = np.where(has[..., None], r, np.nan)
        v[sl] = np.where(has, v[sl], np.nan)
    return ref, v


def _responsibilities(space, X, ref, v, e, eps, bg):
    """Inlier probability of every vote given its reference; (n, m)."""
    voted = ~np.isnan(X[..., 0])
    has_ref = voted & ~np.isnan(ref[..., 0])
    # dummies on the manifold where there is nothing to compare (masked out below)
    filler = np.zeros(X.shape[-1]) if isinstance(space, Euclidean) else space.origin
    safe_x = np.where(has_ref[..., None], X, filler)
    safe_ref = np.where(has_ref[..., None], ref, filler)
    r2 = space.squared_dist(safe_x, safe_ref)
    tau2 = (e[None, :] + np.where(has_ref, v, 0.0)) / space.dim
    li = np.log1p(-eps)[None, :] + _log_inlier(space, r2, tau2)
    lo = np.log(eps)[None, :] + _log_background(space, bg, safe_x, safe_ref)
    # overflowing distances (far out on hyperbolic space) say nothing either way
    has_ref = has_ref & np.isfinite(li) & np.isfinite(lo)
    with np.errstate(invalid="ignore"):
        resp = np.exp(li - np.logaddexp(li, lo))
    resp = np.where(has_ref, resp, (1.0 - eps)[None, :])
    return np.where(voted, resp, 0.0), has_ref, li, lo


def _pair_responsibilities(space, X, e, eps, bg, groups):
    """Starting responsibilities: how well each vote agrees with its best partner; (n, m).

    The fixed point of responsibilities and references started from "every vote is an
    inlier" is masked by outliers: on a row with two far outliers out of four votes
    the inliers' references are dragged away, the inliers look outlying, and the row
    can settle with an outlier as its only "inlier". Here each vote is judged against
    every other vote ``b`` of another dependency group alone (reference ``lambda_b``,
    reference variance ``e_b``), and keeps its largest responsibility: a vote that
    agrees with at least one other vote starts as an inlier, one that agrees with none
    starts as an outlier. A vote with no partner gets the prior ``1 - eps_a``.
    """
    n, m, _ = X.shape
    voted = ~np.isnan(X[..., 0])
    best = np.full((n, m), -np.inf)
    for b in range(m):  # a loop over LFs (few), each vectorized over rows and LFs
        partner = voted[:, b][:, None] & voted & (groups != groups[b])[None, :]
        if not partner.any():
            continue
        ref = np.where(partner[..., None], X[:, b][:, None, :], np.nan)
        v = np.broadcast_to(e[b], partner.shape)
        r_b, has_ref, _, _ = _responsibilities(space, X, ref, v, e, eps, bg)
        best = np.where(has_ref, np.maximum(best, r_b), best)
    r0 = np.where(np.isfinite(best), best, (1.0 - eps)[None, :])
    return np.where(voted, r0, 0.0)


def robust_responsibilities(
    space: Any,
    X: np.ndarray,
    *,
    expected_sq_dist: np.ndarray,
    outlier_rate: np.ndarray,
    background: OutlierBackground,
    weights: np.ndarray,
    groups: np.ndarray,
    prior: OutlierBackground | None = None,
    max_iter: int = 30,
    tol: float = 1e-4,
) -> np.ndarray:
    """Fixed point of responsibilities and leave-group-out references, all rows at once.

    Parameters
    ----------
    space : Euclidean, Sphere or Hyperbolic
    X : ndarray of shape (n_samples, n_lfs, ambient_dim)
        Checked LF outputs (NaN = abstain).
    expected_sq_dist : ndarray of shape (n_lfs,)
        Inlier ``E d^2(lambda_a, y)``.
    outlier_rate : ndarray of shape (n_lfs,)
    background : OutlierBackground
        The law of an outlying vote.
    weights : ndarray of shape (n_lfs,)
        Combination weights of the votes (before responsibilities).
    groups : ndarray of shape (n_lfs,)
        Dependency group of each LF (connected components of the declared pairs,
        ``label_model._dependency_groups.dependency_groups``).
    prior : OutlierBackground, optional
        The population of labels, whose centre the leave-group-out references add as
        a vote (``RobustFit.prior``); default ``background`` (models fitted before
        the background's scale was estimated, when the two were one).
    max_iter : int, default=30
    tol : float, default=1e-4
        Stop when no responsibility moves by more than ``tol``.

    Returns
    -------
    resp : ndarray of shape (n_samples, n_lfs)
        Probability that each vote is an inlier (0 for abstains).
    """
    e = _floor(expected_sq_dist)
    eps = np.clip(np.asarray(outlier_rate, dtype=np.float64), _EPS_MIN, 1 - _EPS_MIN)
    prior = background if prior is None else prior
    # The references add the prior vote with weight 1 / E d^2 (an inverse variance):
    # the votes' weights must be on that scale too. ``weights`` (e.g. ``weights_``,
    # summing to 1) are rescaled to the votes' total precision sum_a 1 / e_a;
    # otherwise the prior vote outweighs them and every reference is pulled to the
    # centre of the labels, where a label-like outlier looks like an inlier.
    w = np.asarray(weights, dtype=np.float64)
    w = w * (np.sum(1.0 / e) / np.sum(w))
    r = _pair_responsibilities(space, X, e, eps, background, groups)
    for it in range(max_iter):
        ref, v = _loo_references(space, X, w[None, :] * r, e, groups, prior)
        r_new = _responsibilities(space, X, ref, v, e, eps, background)[0]
        done = np.max(np.abs(r_new - r), initial=0.0) < tol
        r = r_new if it == 0 else 0.5 * (r + r_new)  # damped, as in robust_em
        if done:
            break
    return r


def robust_frechet_mean(
    space: Any,
    X: np.ndarray,
    *,
    expected_sq_dist: np.ndarray,
    outlier_rate: np.ndarray,
    background: OutlierBackground,
    weights: np.ndarray,
    groups: np.ndarray,
    prior: OutlierBackground | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Robust weighted Frechet mean: weights ``w_a r_ia`` at the responsibilities' fixed point.

    Parameters are those of :func:`robust_responsibilities`.

    Returns
    -------
    mean : ndarray of shape (n_samples, ambient_dim)
        NaN where every LF abstained.
    resp : ndarray of shape (n_samples, n_lfs)
    """
    r = robust_responsibilities(
        space,
        X,
        expected_sq_dist=expected_sq_dist,
        outlier_rate=outlier_rate,
        background=background,
        weights=weights,
        groups=groups,
        prior=prior,
    )
    voted = ~np.isnan(X[..., 0])
    # a row whose every vote looks like an outlier still gets a pseudolabel
    w = weights[None, :] * np.maximum(r, 1e-12)
    return space.frechet_mean(X, split_group_weights(w, voted, groups)), r


def _dev_responsibilities(space, Xd, Yd, e, eps, bg):
    """Exact inlier probabilities on labeled rows (the reference is the true label)."""
    voted = ~np.isnan(Xd[..., 0])
    ref = np.broadcast_to(Yd[:, None, :], Xd.shape)
    return _responsibilities(space, Xd, ref, np.zeros(voted.shape), e, eps, bg)[0]


@dataclass(frozen=True)
class RobustFit:
    """Result of :func:`robust_em`.

    Attributes
    ----------
    estimate : ManifoldEstimate
        Inlier noise estimate (scales, ``E d^2`` of the inlier part).
    outlier_rate : ndarray of shape (n_lfs,)
    background : OutlierBackground
        The law of an outlying vote, its scale estimated from the outlying votes.
    n_iter : int
    converged : bool
    prior : OutlierBackground
        The population of labels (the background as given): the prior vote of the
        leave-group-out references.
    """

    estimate: Any
    outlier_rate: np.ndarray
    background: OutlierBackground
    n_iter: int
    converged: bool
    prior: OutlierBackground

    @property
    def degenerate(self) -> bool:
        """Every LF's outlier rate at the cap ``_EPS_MAX``: the components swapped."""
        return bool(np.all(self.outlier_rate >= _EPS_MAX * (1.0 - 1e-9)))


def robust_em(
    space: Any,
    X: np.ndarray,
    estimate: Callable[[ManifoldStats, LabeledManifoldStats | None], Any],
    init: Any,
    *,
    groups: np.ndarray,
    dev: tuple[np.ndarray, np.ndarray] | None = None,
    background: OutlierBackground | None = None,
    max_iter: int = 30,
    tol: float = 1e-3,
) -> RobustFit:
    """EM for the outlier mixture: responsibilities, then moment estimates of inliers.

    Parameters
    ----------
    space : Euclidean, Sphere or Hyperbolic
    X : ndarray of shape (n_samples, n_lfs, ambient_dim)
        Checked LF outputs.
    estimate : callable ``(stats, dev_stats) -> ManifoldEstimate``
        The label model's moment estimator (triplet or pair fit, with its
        dependencies), applied to responsibility-weighted statistics.
    init : ManifoldEstimate
        Starting point (the plain estimate).
    groups : ndarray of shape (n_lfs,)
    dev : (X_dev, Y_dev), optional
        Checked labeled rows: exact responsibilities, pooled into the estimates.
    background : OutlierBackground, optional
        Default :func:`fit_background` of ``X``.
    max_iter : int, default=30
    tol : float, default=1e-3
        On the change of ``eps`` and of ``log E d^2`` between iterations.

    Returns
    -------
    fit : RobustFit
    """
    if background is None:
        background = fit_background(space, X, init.expected_sq_dist)
    prior = bg = background
    est = init
    # The plain estimate reads every outlying vote as noise. With outliers far wider
    # than the labels (say N(0, 10^2) votes, labels of spread 1) its E d^2 exceeds the
    # background's spread: the "inlier" law is then the wider of the two components
    # and EM settles on the swapped solution (far votes as inliers, every eps at the
    # cap). Those LFs start instead from inlier scales the outliers cannot inflate.
    # The others keep the plain start: on discrete-valued labels a low quantile reads
    # an LF that is often one unit off as "exact, with many outliers", another local
    # optimum of the mixture that predicts worse.
    e = _floor(est.expected_sq_dist)
    swapped = e > _START_SWAP * _background_spread(space, bg)
    if swapped.any():
        e = np.where(swapped, np.fmin(e, quantile_sq_dist(space, X, groups)), e)
    e = np.maximum(e, inlier_floor(space, bg))
    m = X.shape[1]
    eps = np.full(m, 0.05)
    converged = False
    it = 0
    r = _pair_responsibilities(space, X, e, eps, bg, groups)
    for it in range(1, max_iter + 1):  # noqa: B007
        # references weighted by the previous responsibilities: an outlier on the row
        # must not make the others look far
        ref, v = _loo_references(space, X, r / e, e, groups, prior)
        r_new, has_ref, _, _ = _responsibilities(space, X, ref, v, e, eps, bg)
        # damped: the references lag the responsibilities by one step, and the
        # undamped map can settle into a two-cycle; the fixed point is unchanged
        r = r_new if it == 1 else 0.5 * (r + r_new)
        # rows where a vote has no reference carry no information on eps
        num = ((1.0 - r) * has_ref).sum(axis=0)
        den = has_ref.sum(axis=0).astype(np.float64)
        dev_stats = None
        if dev is not None:
            Xd, Yd = dev
            rd = _dev_responsibilities(space, Xd, Yd, e, eps, bg)
            vd = ~np.isnan(Xd[..., 0])
            num = num + ((1.0 - rd) * vd).sum(axis=0)
            den = den + vd.sum(axis=0)
            dev_stats = LabeledManifoldStats._from_checked(Xd, Yd, space, rd)
        eps_new = np.clip(num / np.maximum(den, 1.0), _EPS_MIN, _EPS_MAX)
        # the background's scale from the votes it explains, never below the labels'
        # spread: outliers much wider than the labels (garbage values) are then
        # scored by a background as wide as they are, not as wide as the labels
        # (which reads every inlier in the labels' range as a possible outlier)
        fitted = _background_scale(space, bg, X, (1.0 - r) * has_ref)
        bg = OutlierBackground(bg.kind, bg.center, max(fitted.sigma2, prior.sigma2))
        stats = ManifoldStats._from_checked(X, space, row_weights=r)
        with _warnings.captured(IdentifiabilityWarning):
            est = estimate(stats, dev_stats)
        e_new = _floor(est.expected_sq_dist)
        delta = max(
            np.max(np.abs(eps_new - eps)),
            np.max(np.abs(np.log(e_new) - np.log(e))),
        )
        e, eps = e_new, eps_new
        if delta < tol:
            converged = True
            break
    return RobustFit(est, eps, bg, it, converged, prior)


def heldout_loglik(
    space: Any,
    X: np.ndarray,
    *,
    expected_sq_dist: np.ndarray,
    outlier_rate: np.ndarray | None,
    background: OutlierBackground,
    groups: np.ndarray,
    prior: OutlierBackground | None = None,
) -> np.ndarray:
    """Per-row predictive pseudo-log-likelihood ``sum_a log p(lambda_ia | other votes)``.

    Parameters
    ----------
    space, X, expected_sq_dist, background, groups, prior
        As in :func:`robust_responsibilities`.
    outlier_rate : ndarray of shape (n_lfs,) or None
        ``None`` scores the plain model (Gaussian inlier law only).

    Returns
    -------
    loglik : ndarray of shape (n_samples,)
        0 for rows with fewer than two votes.
    """
    e = _floor(expected_sq_dist)
    voted = ~np.isnan(X[..., 0])
    prior = background if prior is None else prior
    if outlier_rate is None:
        ref, v = _loo_references(space, X, voted / e, e, groups, prior)
        eps = np.full(e.shape, _EPS_MIN)
        _, has_ref, li, _ = _responsibilities(space, X, ref, v, e, eps, background)
        ll = li - np.log1p(-eps)[None, :]
    else:
        eps = np.clip(np.asarray(outlier_rate, dtype=np.float64), _EPS_MIN, _EPS_MAX)
        ll = np.zeros(voted.shape)
        has_ref = np.zeros(voted.shape, dtype=bool)
        # The other votes' responsibilities must not look at the vote being scored
        # (it would vouch for itself): one fixed point per dependency group, with
        # that group's votes removed. A loop over groups, not rows.
        for g in np.unique(groups):
            members = groups == g
            X_minus = X.copy()
            X_minus[:, members] = np.nan
            r = robust_responsibilities(
                space,
                X_minus,
                expected_sq_dist=e,
                outlier_rate=eps,
                background=background,
                weights=1.0 / e,
                groups=groups,
                prior=prior,
            )
            ref, v = _loo_references(space, X, r / e, e, groups, prior)
            _, h, li, lo = _responsibilities(space, X, ref, v, e, eps, background)
            ll[:, members] = np.logaddexp(li, lo)[:, members]
            has_ref[:, members] = h[:, members]
    return np.where(has_ref, ll, 0.0).sum(axis=1)


def outlier_screen(
    space: Any,
    X: np.ndarray,
    *,
    expected_sq_dist: np.ndarray,
    background: OutlierBackground,
    groups: np.ndarray,
    level: float = 1e-3,
) -> tuple[int, int, float]:
    """Are there more improbable votes than the plain model allows?

    Under the plain model a vote's squared distance to its leave-group-out reference,
    over ``tau^2 = (e_a + v_ia) / dim``, is about chi-square with ``dim`` degrees of
    freedom, so a fraction ``level`` of votes falls beyond its ``1 - level`` quantile.
    Returns ``(observed, n_votes, p_value)`` with the binomial upper-tail p-value of
    the observed count. Cheap (one pass); the label model runs the held-out
    comparison only when this p-value is small.
    """
    e = _floor(expected_sq_dist)
    voted = ~np.isnan(X[..., 0])
    ref, v = _loo_references(space, X, voted / e, e, groups, background)
    has_ref = voted & ~np.isnan(ref[..., 0])
    filler = np.zeros(X.shape[-1]) if isinstance(space, Euclidean) else space.origin
    r2 = space.squared_dist(
        np.where(has_ref[..., None], X, filler),
        np.where(has_ref[..., None], ref, filler),
    )
    tau2 = (e[None, :] + np.where(has_ref, v, 0.0)) / space.dim
    far = has_ref & (r2 / tau2 > stats.chi2.isf(level, space.dim))
    n_votes, observed = int(has_ref.sum()), int(far.sum())
    p_value = float(stats.binom.sf(observed - 1, max(n_votes, 1), level))
    return observed, n_votes, p_value
