"""Noise-rate estimation for manifold-valued LFs from observable LF-LF distances only.

Three estimators, all functions of :class:`ManifoldStats` (never of the true label):

``triplet_estimate`` (paper section 5, "triplet" / the law-of-cosines invariant)
    With independent isotropic noise the geodesic triangle (y, lambda_a, lambda_b) is
    right-angled on average:

    - hyperbolic: ``E cosh d(la, lb) = A_a A_b`` with ``A_a = E cosh d(la, y)``;
    - sphere: the same with ``cos``;
    - Euclidean: ``E ||la - lb||^2 = s_a + s_b`` with ``s_a = E ||la - y||^2``.

    With m >= 3 LFs, ``log C_ab = log A_a + log A_b`` (or ``C_ab = s_a + s_b``) over all
    observed pairs is a linear least-squares problem; with three LFs it reduces to
    ``A_a = sqrt(C_ab C_ac / C_bc)`` (the paper prints ``C_bc`` squared: a typo).
    ``A_a`` is mapped to the family's parameter by the exact inverse of
    ``noise.expected_invariant``.

``pair_sq_dist_estimate`` (lower variance)
    ``cosh d`` is heavy-tailed when the noise is large (its variance grows like
    ``exp(2 sigma^2)``). By isotropy the law of ``d(la, lb)`` depends only on the two
    LFs' parameters, so ``E d^2(la, lb) = g(p_a, p_b)`` with ``g`` the exact two-parameter
    map ``noise.pair_expected_sq_dist`` (a deterministic 3-D Gauss quadrature through
    the law of cosines). The parameters solve the weighted nonlinear least-squares fit
    of ``g`` to the observed mean squared pairwise distances (weights
    ``n_ab / Var d^2_ab``), started from the triplet estimate. ``d^2`` has Gaussian-like
    tails, so the estimate has far smaller variance.

``uws_estimate``
    The UWS baseline (Shin et al. 2022): squared distances treated as additive, see
    :func:`snorkel_structured.estimators.uws.uws_expected_sq_dist`. Biased on curved
    spaces; kept for honest comparisons.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import optimize

from snorkel_structured.estimators._manifold_stats import ManifoldStats
from snorkel_structured.estimators.uws import uws_expected_sq_dist
from snorkel_structured.exceptions import IdentifiabilityWarning

__all__ = [
    "ManifoldEstimate",
    "pair_sq_dist_estimate",
    "triplet_estimate",
    "uws_estimate",
]


@dataclass(frozen=True)
class ManifoldEstimate:
    """Per-LF estimates of a manifold noise model.

    Attributes
    ----------
    noise_scale : ndarray of shape (n_lfs,)
        The family's parameter (``sigma2`` for the wrapped normal, ``theta`` for the
        Riemannian Gaussian).
    expected_sq_dist : ndarray of shape (n_lfs,)
        ``E d^2(lambda_a, y)`` implied by ``noise_scale``.
    expected_invariant : ndarray of shape (n_lfs,)
        ``E cosh d`` / ``E cos d`` / ``E d^2`` implied by ``noise_scale``.
    pairs_used : ndarray of shape (n_pairs, 2)
        LF pairs that entered the fit.
    """

    noise_scale: np.ndarray
    expected_sq_dist: np.ndarray
    expected_invariant: np.ndarray
    pairs_used: np.ndarray


def _estimate(noise: Any, scale: np.ndarray, pairs: np.ndarray) -> ManifoldEstimate:
    """The estimate for fitted noise parameters: scale and the two moments it implies."""
    return ManifoldEstimate(
        noise_scale=scale,
        expected_sq_dist=np.asarray(noise.expected_sq_dist(scale), dtype=np.float64),
        expected_invariant=np.asarray(
            noise.expected_invariant(scale), dtype=np.float64
        ),
        pairs_used=pairs,
    )


def _usable_pairs(stats: ManifoldStats, min_overlap: int, extra_ok=None) -> np.ndarray:
    m = stats.n_lfs
    ia, ib = np.triu_indices(m, 1)
    ok = stats.pair_count[ia, ib] >= min_overlap
    low = ~ok & (stats.pair_count[ia, ib] > 0)
    if low.any():
        warnings.warn(
            f"{int(low.sum())} LF pair(s) co-voted on fewer than min_overlap={min_overlap} "
            f"rows (e.g. LFs {int(ia[low][0])} and {int(ib[low][0])}: "
            f"{int(stats.pair_count[ia[low][0], ib[low][0]])} rows); they are ignored.",
            IdentifiabilityWarning,
            stacklevel=3,
        )
    if extra_ok is not None:
        ok &= extra_ok(ia, ib)
    pairs = np.stack([ia[ok], ib[ok]], axis=1)
    design = np.zeros((len(pairs), m))
    design[np.arange(len(pairs)), pairs[:, 0]] = 1.0
    design[np.arange(len(pairs)), pairs[:, 1]] = 1.0
    if len(pairs) == 0 or np.linalg.matrix_rank(design) < m:
        partners = (
            np.bincount(pairs.ravel(), minlength=m) if len(pairs) else np.zeros(m)
        )
        worst = int(np.argmin(partners))
        raise ValueError(
            "Too few overlapping rows: the LF-LF pairs with at least "
            f"min_overlap={min_overlap} co-voted rows do not identify every LF (LF "
            f"{worst} has {int(partners[worst])} usable partner(s); pair counts "
            f"{stats.pair_count[ia, ib].tolist()} for pairs "
            f"{list(zip(ia.tolist(), ib.tolist(), strict=True))}). Every LF needs to co-vote with "
            "two others that co-vote with each other; add data or LFs, or lower "
            "min_overlap."
        )
    return pairs


def _range(noise: Any, forward: Any) -> tuple[float, float, float, float]:
    """(scale_small, scale_large, forward at small, forward at large)."""
    lo, hi = noise.scale_bounds
    small, large = 1e-8, (hi if np.isfinite(hi) else 1e8)
    with np.errstate(all="ignore"):
        f_small = float(forward(small))
        f_large = float(forward(large))
    f_small = f_small if np.isfinite(f_small) else np.inf
    f_large = f_large if np.isfinite(f_large) else np.inf
    return small, large, f_small, f_large


def _finish(noise, invariant, pairs, what="invariant"):
    """Clip estimates into the family's range (with a warning) and map to parameters."""
    invariant = np.asarray(invariant, dtype=np.float64)
    forward = (
        noise.expected_invariant if what == "invariant" else noise.expected_sq_dist
    )
    small, large, f_small, f_large = _range(noise, forward)
    lo_v, hi_v = min(f_small, f_large), max(f_small, f_large)
    bad = ~((invariant > lo_v) & (invariant < hi_v))
    if bad.any():
        a = int(np.flatnonzero(bad)[0])
        warnings.warn(
            f"The estimated {what} of LF {a} ({invariant[a]!r}) is outside the range "
            f"({lo_v!r}, {hi_v!r}) of {noise!r}; it is clipped to the nearest admissible "
            "value. The LF may be (nearly) noiseless or pure noise, or the data too few.",
            IdentifiabilityWarning,
            stacklevel=3,
        )
    edge_lo = lo_v + 1e-9 * max(1.0, abs(lo_v))
    edge_hi = hi_v - 1e-9 * max(1.0, abs(hi_v)) if np.isfinite(hi_v) else np.inf
    invariant = np.clip(invariant, edge_lo, edge_hi)
    at_lo, at_hi = invariant <= edge_lo, invariant >= edge_hi
    inc = f_small <= f_large
    scale = np.full(invariant.shape, np.nan)
    scale[at_lo] = small if inc else large
    scale[at_hi] = large if inc else small
    inner = np.isnan(scale)
    if what == "invariant":
        scale[inner] = noise.scale_from_invariant(invariant[inner])
    else:
        scale[inner] = noise.scale_from_expected_sq_dist(invariant[inner])
    return _estimate(noise, scale, pairs)


def triplet_estimate(
    stats: ManifoldStats, noise: Any, *, min_overlap: int = 10
) -> ManifoldEstimate:
    """Law-of-cosines invariant, least squares over every observed LF pair.

    Parameters
    ----------
    stats : ManifoldStats
        Pairwise sums of the LF outputs (``ManifoldStats.from_outputs``).
    noise : WrappedNormal or RiemannianGaussian
        Family that maps the invariant to its parameter; ``noise.space`` must equal
        ``stats.space``.
    min_overlap : int, default=10
        Pairs that co-voted on fewer rows are ignored (with a warning).

    Returns
    -------
    estimate : ManifoldEstimate

    Raises
    ------
    ValueError
        If the usable pairs do not identify every LF.

    Warns
    -----
    IdentifiabilityWarning
        When a pair's invariant or an LF's estimate is outside the model's range
        (e.g. ``E cos d <= 0`` on the sphere, ``A_a < 1`` on hyperbolic space).
    """
    C = stats.pair_invariant_mean
    kind = noise.invariant_name
    if kind == "sq_dist":
        pairs = _usable_pairs(stats, min_overlap)
        y = C[pairs[:, 0], pairs[:, 1]]
        log_space = False
    else:
        nonpos = (
            (stats.pair_count >= min_overlap)
            & ~(C > 0)
            & ~np.eye(stats.n_lfs, dtype=bool)
        )
        if nonpos.any():
            a, b = (int(v) for v in np.argwhere(nonpos)[0])
            warnings.warn(
                f"The mean cos d of LFs {a} and {b} is {C[a, b]!r} <= 0, outside the "
                "model's range (the invariant is positive); that pair is ignored.",
                IdentifiabilityWarning,
                stacklevel=2,
            )
        pairs = _usable_pairs(stats, min_overlap, lambda ia, ib: C[ia, ib] > 0)
        y = np.log(C[pairs[:, 0], pairs[:, 1]])
        log_space = True
    m = stats.n_lfs
    design = np.zeros((len(pairs), m))
    design[np.arange(len(pairs)), pairs[:, 0]] = 1.0
    design[np.arange(len(pairs)), pairs[:, 1]] = 1.0
    sol = np.linalg.lstsq(design, y, rcond=None)[0]
    invariant = np.exp(sol) if log_space else sol
    return _finish(noise, invariant, pairs)


def uws_estimate(
    stats: ManifoldStats, noise: Any, *, min_overlap: int = 10
) -> ManifoldEstimate:
    """UWS baseline: additive squared distances, median over triplets.

    Parameters and returns as :func:`triplet_estimate`; pairs with fewer than
    ``min_overlap`` co-voted rows count as unobserved.
    """
    pairs = _usable_pairs(stats, min_overlap)
    M = np.full((stats.n_lfs, stats.n_lfs), np.nan)
    M[pairs[:, 0], pairs[:, 1]] = stats.pair_sq_dist_mean[pairs[:, 0], pairs[:, 1]]
    M[pairs[:, 1], pairs[:, 0]] = M[pairs[:, 0], pairs[:, 1]]
    s = uws_expected_sq_dist(M)
    if np.isnan(s).any():
        a = int(np.flatnonzero(np.isnan(s))[0])
        raise ValueError(
            f"Too few overlapping rows: LF {a} is in no fully observed triplet of LFs, "
            "which UWS needs. Add data or LFs, or lower min_overlap."
        )
    return _finish(noise, s, pairs, what="expected_sq_dist")


def pair_sq_dist_estimate(
    stats: ManifoldStats,
    noise: Any,
    *,
    min_overlap: int = 10,
    init: ManifoldEstimate | None = None,
) -> ManifoldEstimate:
    """Lower-variance estimator: fit the exact two-parameter map of E d^2(la, lb).

    Minimizes ``sum_ab n_ab / v_ab (M_ab - g(p_a, p_b))^2`` over the log-parameters,
    with ``M_ab`` the mean squared distance of the pair over co-voted rows, ``v_ab`` its
    plug-in variance of ``d^2`` and ``g = noise.pair_expected_sq_dist`` (exact Gauss
    quadrature through the law of cosines). Started from ``init`` (default: the
    triplet estimate, or UWS if that fails). Deterministic.

    Parameters
    ----------
    stats, noise, min_overlap
        As in :func:`triplet_estimate`.
    init : ManifoldEstimate, optional
        Starting point.

    Returns
    -------
    estimate : ManifoldEstimate
    """
    pairs = _usable_pairs(stats, min_overlap)
    if init is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", IdentifiabilityWarning)
            try:
                init = triplet_estimate(stats, noise, min_overlap=min_overlap)
            except ValueError:
                init = uws_estimate(stats, noise, min_overlap=min_overlap)
    ia, ib = pairs[:, 0], pairs[:, 1]
    target = stats.pair_sq_dist_mean[ia, ib]
    var = np.maximum(
        stats.pair_sq_dist_var[ia, ib], 1e-12 * np.maximum(target, 1e-12) ** 2
    )
    wsqrt = np.sqrt(stats.pair_count[ia, ib] / var)
    lo, hi = noise.scale_bounds
    t_lo = np.log(max(lo, 1e-8))
    t_hi = np.log(hi) if np.isfinite(hi) else np.log(1e8)
    x0 = np.clip(np.log(init.noise_scale), t_lo + 1e-6, t_hi - 1e-6)
    h = 1e-6

    def resid(t):
        s = np.exp(t)
        return wsqrt * (noise.pair_expected_sq_dist(s[ia], s[ib]) - target)

    def jac(t):
        s = np.exp(t)
        base = noise.pair_expected_sq_dist(s[ia], s[ib])
        da = (noise.pair_expected_sq_dist(s[ia] * np.exp(h), s[ib]) - base) / h
        db = (noise.pair_expected_sq_dist(s[ia], s[ib] * np.exp(h)) - base) / h
        J = np.zeros((len(ia), len(t)))
        J[np.arange(len(ia)), ia] += wsqrt * da
        J[np.arange(len(ia)), ib] += wsqrt * db
        return J

    res = optimize.least_squares(
        resid,
        x0,
        jac=jac,
        bounds=(t_lo, t_hi),
        xtol=1e-12,
        ftol=1e-12,
        gtol=1e-12,
        method="trf",
    )
    scale = np.exp(res.x)
    at_bound = (res.x <= t_lo + 1e-6) | (res.x >= t_hi - 1e-6)
    if at_bound.any():
        a = int(np.flatnonzero(at_bound)[0])
        warnings.warn(
            f"The pairwise squared-distance fit put LF {a}'s {noise.parameter_name} at "
            f"the edge of its range ({scale[a]!r}); the data do not pin it down.",
            IdentifiabilityWarning,
            stacklevel=2,
        )
    return _estimate(noise, scale, pairs)
