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

Declared dependencies and labeled rows (all three estimators)
    ``dependencies`` lists LF pairs whose errors are not independent: their pairwise
    statistics do not obey the invariant (a dependent pair's ``E d^2(la, lb)`` is
    smaller than ``e_a + e_b``), so those pairs are left out. An LF that is no longer
    identified by the remaining pairs (it needs an odd cycle, e.g. a triangle, of
    mutually independent LFs in its component of the pair graph, or labeled rows) is
    estimated with its dependent pairs put back, with an ``IdentifiabilityWarning``.
    ``dev`` (:class:`LabeledManifoldStats`) adds one equation per LF, the observed
    invariant (or ``d^2``) to the true label, and the whole system is then solved by
    weighted least squares with inverse-variance weights, so labeled and unlabeled
    rows count by how much they tell.

``uws_estimate``
    The UWS baseline (Shin et al. 2022): squared distances treated as additive, see
    :func:`snorkel_structured.estimators.uws.uws_expected_sq_dist`. Biased on curved
    spaces; kept for honest comparisons.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy import optimize

from snorkel_structured import _warnings
from snorkel_structured.estimators._manifold_stats import (
    MIN_MEAN_COS_SE,
    LabeledManifoldStats,
    ManifoldStats,
)
from snorkel_structured.estimators.uws import uws_expected_sq_dist
from snorkel_structured.exceptions import IdentifiabilityWarning

# On curved spaces the invariant (cos d, cosh d) still resolves noise far below the
# 1e-8 end ``_range`` puts on an unbounded parameter: 1 - cos d ~ sigma2 is known to
# about 1e-4 at sigma2 = 1e-12. ``_finish`` inverts estimates down to this factor past
# that end before it clips them: geocoding LFs a few hundred metres off are sigma2
# ~ 1e-9 on the Earth, and were clipped to 1e-8 with a warning.
CURVED_NOISELESS_REACH = 1e-4

__all__ = [
    "ManifoldEstimate",
    "unidentified_lfs",
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
    log_sq_dist_var : ndarray of shape (n_lfs,)
        Estimated sampling variance of ``log expected_sq_dist`` (delta method through
        the least-squares solution; ``inf`` where an LF sits at the edge of the range
        or could not be assessed). Used to shrink combination weights.
    log_sq_dist_side_var : ndarray of shape (n_lfs, 2) or None
        The same variance on each side of the estimate: below it (the LF better than
        estimated) and above it. Near the family's noiseless end the two differ
        widely; shrinkage reads the side it moves an LF towards.
    past_noiseless : ndarray of bool of shape (n_lfs,) or None
        LFs whose solved invariant lay past the family's noiseless end (e.g. a mean
        cos d the other pairs put above 1), clipped to it: a bound, not an estimate
        of how precise the LF is. (The label model's robust fit adds the LFs it
        raises to its inliers' floor.)
    """

    noise_scale: np.ndarray
    expected_sq_dist: np.ndarray
    expected_invariant: np.ndarray
    pairs_used: np.ndarray
    log_sq_dist_var: np.ndarray | None = None
    log_sq_dist_side_var: np.ndarray | None = None
    past_noiseless: np.ndarray | None = None


def _estimate(
    noise: Any,
    scale: np.ndarray,
    pairs: np.ndarray,
    log_var: Any = None,
    side_var: Any = None,
) -> ManifoldEstimate:
    """The estimate for fitted noise parameters: scale and the two moments it implies."""
    return ManifoldEstimate(
        noise_scale=scale,
        expected_sq_dist=np.asarray(noise.expected_sq_dist(scale), dtype=np.float64),
        expected_invariant=np.asarray(
            noise.expected_invariant(scale), dtype=np.float64
        ),
        pairs_used=pairs,
        log_sq_dist_var=(
            np.full(scale.shape, np.inf)
            if log_var is None
            else np.asarray(log_var, dtype=np.float64)
        ),
        log_sq_dist_side_var=side_var,
    )


def _design(pairs: np.ndarray, m: int, dev_lfs: np.ndarray | None = None) -> np.ndarray:
    """Rows ``e_a + e_b`` per pair, then one row ``e_a`` per LF with labeled rows."""
    D = np.zeros((len(pairs), m))
    D[np.arange(len(pairs)), pairs[:, 0]] = 1.0
    D[np.arange(len(pairs)), pairs[:, 1]] = 1.0
    if dev_lfs is not None and len(dev_lfs):
        E = np.zeros((len(dev_lfs), m))
        E[np.arange(len(dev_lfs)), dev_lfs] = 1.0
        D = np.vstack([D, E])
    return D


def unidentified_lfs(
    pairs: np.ndarray, n_lfs: int, dev_lfs: np.ndarray | None = None
) -> np.ndarray:
    """Boolean (n_lfs,): LFs the equations ``pairs`` (and labeled rows) do not pin down.

    An LF is identified when every null vector of the design matrix vanishes on it:
    its component of the pair graph has an odd cycle (e.g. a triangle of mutually
    independent LFs) or an LF with labeled rows.
    """
    D = _design(np.asarray(pairs, dtype=int).reshape(-1, 2), n_lfs, dev_lfs)
    if D.shape[0] == 0:
        return np.ones(n_lfs, dtype=bool)
    _, sv, vt = np.linalg.svd(D)
    rank = int((sv > 1e-9 * max(1.0, sv.max())).sum())
    null = vt[rank:]
    return (np.abs(null) > 1e-8).any(axis=0)


def _dependent_mask(pairs: np.ndarray, dependencies: Any) -> np.ndarray:
    """True for rows of ``pairs`` that are declared dependent (either order)."""
    if dependencies is None or len(dependencies) == 0 or len(pairs) == 0:
        return np.zeros(len(pairs), dtype=bool)
    dep = np.sort(np.asarray(dependencies, dtype=int).reshape(-1, 2), axis=1)
    p = np.sort(pairs, axis=1)
    return (p[:, None, :] == dep[None, :, :]).all(axis=-1).any(axis=1)


def _warn_unidentified(bad: np.ndarray) -> None:
    lfs = np.flatnonzero(bad).tolist()
    _warnings.warn(
        f"After leaving out the declared dependent pairs, LF(s) {lfs} are in no odd "
        "cycle (e.g. a triangle) of mutually independent LFs and have no labeled rows, "
        "so the data cannot identify them; they are estimated with their dependent "
        "pairs put back (biased towards too small an error). Add an independent LF or "
        "labeled rows (X_dev, Y_dev).",
        IdentifiabilityWarning,
        stacklevel=3,
    )


def _usable_pairs(
    stats: ManifoldStats, min_overlap: int, extra_ok=None, dev_lfs=None
) -> np.ndarray:
    m = stats.n_lfs
    ia, ib = np.triu_indices(m, 1)
    ok = stats.pair_count[ia, ib] >= min_overlap
    low = ~ok & (stats.pair_count[ia, ib] > 0)
    if low.any():
        _warnings.warn(
            f"{int(low.sum())} LF pair(s) co-voted on fewer than min_overlap={min_overlap} "
            f"rows (e.g. LFs {int(ia[low][0])} and {int(ib[low][0])}: "
            f"{int(stats.pair_count[ia[low][0], ib[low][0]])} rows); they are ignored.",
            IdentifiabilityWarning,
            stacklevel=3,
        )
    dropped = ""
    if extra_ok is not None:
        enough = ok.copy()
        ok &= extra_ok(ia, ib)
        if (enough & ~ok).any():
            lost = np.bincount(np.r_[ia[enough & ~ok], ib[enough & ~ok]], minlength=m)
            dropped = (
                f" {int((enough & ~ok).sum())} pair(s) with enough rows were left out "
                "because their mean cos d is not above 0 by "
                f"{MIN_MEAN_COS_SE:g} standard errors (LF {int(np.argmax(lost))} is "
                f"in {int(lost.max())} of them): a very noisy LF on too few rows, or "
                "one whose votes are on average more than 90 degrees from the "
                "others' (e.g. one voting the antipode, outside the isotropic "
                "model). Add rows, drop that LF, or use estimator='pair_sq_dist', "
                "which fits it at the family's maximum noise with a warning."
            )
    pairs = np.stack([ia[ok], ib[ok]], axis=1)
    design = _design(pairs, m, dev_lfs)
    if len(design) == 0 or np.linalg.matrix_rank(design) < m:
        partners = (
            np.bincount(pairs.ravel(), minlength=m) if len(pairs) else np.zeros(m)
        )
        # the LFs left unidentified (not those fixed otherwise, e.g. one fitted at
        # the family's maximum noise, which needs no partner)
        lost = np.flatnonzero(unidentified_lfs(pairs, m, dev_lfs))
        raise ValueError(
            "Too few overlapping rows: the LF-LF pairs with at least "
            f"min_overlap={min_overlap} co-voted rows do not identify every LF (LF(s) "
            f"{lost.tolist()} with {partners[lost].astype(int).tolist()} usable "
            "partner(s); pair counts "
            f"{stats.pair_count[ia, ib].tolist()} for pairs "
            f"{list(zip(ia.tolist(), ib.tolist(), strict=True))}). Every LF needs to co-vote with "
            "two others that co-vote with each other; add data or LFs, or lower "
            "min_overlap." + dropped
        )
    return pairs


def _unit(noise: Any, invariant: np.ndarray) -> float:
    """The data's unit of the noise scale: 1 where the space fixes one (curvature),
    the median positive estimate on Euclidean space, whose model has no unit of its
    own (targets in metres or in kilometres must get the same weights)."""
    from snorkel_structured.spaces.manifolds import Euclidean

    positive = np.abs(invariant[np.isfinite(invariant) & (invariant > 0)])
    if not isinstance(getattr(noise, "space", None), Euclidean) or positive.size == 0:
        return 1.0
    return float(np.median(positive))


def _range(
    noise: Any, forward: Any, unit: float = 1.0
) -> tuple[float, float, float, float]:
    """(scale_small, scale_large, forward at small, forward at large): the family's
    bounds, and 1e-8 and 1e8 ``unit`` where it has none."""
    lo, hi = noise.scale_bounds
    small, large = 1e-8 * unit, (hi if np.isfinite(hi) else 1e8 * unit)
    with np.errstate(all="ignore"):
        f_small = float(forward(small))
        f_large = float(forward(large))
    f_small = f_small if np.isfinite(f_small) else np.inf
    f_large = f_large if np.isfinite(f_large) else np.inf
    return small, large, f_small, f_large


def _curved(noise: Any) -> bool:
    """Whether the noise lives on a curved space (its scale has a unit of its own)."""
    from snorkel_structured.spaces.manifolds import Euclidean

    return not isinstance(getattr(noise, "space", None), Euclidean)


def _noiseless_reach(noise, forward, small, large):
    """``(end, scale, forward(scale))`` ``CURVED_NOISELESS_REACH`` past the noiseless
    end (``"small"`` or ``"large"``) of the range of ``_range``, on curved spaces where
    that end is not a bound of the family; None on Euclidean space (its ends are
    relative to the data's unit already)."""
    if not _curved(noise):
        return None
    lo, hi = noise.scale_bounds
    with np.errstate(all="ignore"):
        e_small, e_large = noise.expected_sq_dist(np.array([small, large]))
        if e_small <= e_large and small > lo:
            end, far = "small", small * CURVED_NOISELESS_REACH
        elif e_large < e_small and large < hi:
            end, far = "large", large / CURVED_NOISELESS_REACH
        else:  # pragma: no cover - WrappedNormal and RiemannianGaussian have no bound there
            return None
        f_far = float(forward(far))
    return (end, far, f_far) if np.isfinite(f_far) else None


def _finish(noise, invariant, pairs, what="invariant"):
    """Clip estimates into the family's range (with a warning) and map to parameters.

    On curved spaces an estimate past the noiseless end of ``_range`` is first
    compared with the range reaching ``CURVED_NOISELESS_REACH`` further (see there).
    The estimate records the LFs past the noiseless end (``past_noiseless``).
    """
    invariant = np.asarray(invariant, dtype=np.float64)
    forward = (
        noise.expected_invariant if what == "invariant" else noise.expected_sq_dist
    )
    # a noiseless LF's value: E d^2 0, cos d and cosh d 1
    clean = (
        0.0 if what == "expected_sq_dist" or noise.invariant_name == "sq_dist" else 1.0
    )
    small, large, f_small, f_large = _range(noise, forward, _unit(noise, invariant))
    lo_v, hi_v = min(f_small, f_large), max(f_small, f_large)
    bad = ~((invariant > lo_v) & (invariant < hi_v))
    reach = _noiseless_reach(noise, forward, small, large) if bad.any() else None
    if reach is not None:
        end, far, f_far = reach
        # Only when some LF lies between that end and a noiseless LF's value, i.e.
        # the data resolve noise below the end: an estimate past a noiseless LF
        # (sampling error on few rows) goes to the end as it always did.
        f_end = f_small if end == "small" else f_large
        lo_x, hi_x = sorted((f_end, clean))
        if not ((invariant > lo_x) & (invariant < hi_x)).any():
            reach = None
    if reach is not None:
        end, far, f_far = reach
        if end == "small":
            small, f_small = far, f_far
        else:
            large, f_large = far, f_far
        lo_v, hi_v = min(f_small, f_large), max(f_small, f_large)
        bad = ~((invariant > lo_v) & (invariant < hi_v))
    # past the noiseless end (the one nearer ``clean``): beyond it, on the side away
    # from the other end
    f_clean, f_noisy = (
        (f_small, f_large)
        if abs(f_small - clean) <= abs(f_large - clean)
        else (f_large, f_small)
    )
    past = bad & (np.sign(invariant - f_clean) * np.sign(f_clean - f_noisy) >= 0)
    if bad.any():
        lfs = np.flatnonzero(bad).tolist()
        _warnings.warn(
            f"The estimated {what} of LF(s) {lfs} ({invariant[bad].tolist()!r}) is "
            f"outside the range ({lo_v!r}, {hi_v!r}) of {noise!r}; it is clipped to "
            "the nearest admissible value. The LF may be (nearly) noiseless or pure "
            "noise, or the data too few.",
            IdentifiabilityWarning,
            stacklevel=3,
        )
    # Values within 1e-9 of an end take that end's scale. Not at an extended noiseless
    # end: there the whole range left (1 - cos d ~ 1e-12) is narrower than that.
    margin_lo, margin_hi = 1e-9 * max(1.0, abs(lo_v)), 1e-9 * max(1.0, abs(hi_v))
    if reach is not None:
        if reach[2] == lo_v:
            margin_lo = 0.0
        else:
            margin_hi = 0.0
    edge_lo = lo_v + margin_lo
    edge_hi = hi_v - margin_hi if np.isfinite(hi_v) else np.inf
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
    return replace(_estimate(noise, scale, pairs), past_noiseless=past)


def _log_sq_dist_var(noise, z, z_var, log_space, lo_v, hi_v):
    """Delta-method variance of log E d^2 from the variance of the solved invariant,
    (n_lfs,), and on each side of the estimate, (n_lfs, 2): below, above.

    A symmetric difference over one standard deviation of ``z`` (the solved log
    invariant, or ``E d^2`` itself on Euclidean space), each end clipped into the
    family's range: an LF near the edge of the range gets the (large) variance of its
    one-sided uncertainty, not the zero slope of the clip. Each side's variance is
    the squared distance from the estimate to that side's end.
    """
    sd = np.sqrt(np.maximum(z_var, 0.0))
    out = np.where(np.isfinite(sd), 0.0, np.inf)
    sides = np.stack([out, out], axis=1)
    ok = np.isfinite(sd) & (sd > 0)
    if not ok.any():
        return out, sides
    upper = hi_v - 1e-9 * max(1.0, abs(hi_v)) if np.isfinite(hi_v) else np.inf
    lower = lo_v + 1e-9 * max(1.0, abs(lo_v))
    at = []  # log E d^2 at z + sd, z - sd and z
    for zz in (z[ok] + sd[ok], z[ok] - sd[ok], z[ok]):
        v = np.clip(np.exp(zz) if log_space else zz, lower, upper)
        with _warnings.captured(), np.errstate(all="ignore"):
            try:
                at.append(np.log(noise.expected_sq_dist(noise.scale_from_invariant(v))))
            except ValueError:
                return np.where(ok, np.inf, out), np.where(ok[:, None], np.inf, sides)
    out[ok] = (0.5 * (at[0] - at[1])) ** 2
    low, high = np.minimum(at[0], at[1]), np.maximum(at[0], at[1])
    sides[ok, 0] = np.maximum(at[2] - low, 0.0) ** 2
    sides[ok, 1] = np.maximum(high - at[2], 0.0) ** 2
    return out, sides


def _solve(design, y, var, weighted):
    """(Weighted) least squares with the sandwich covariance of the solution."""
    var = np.where(np.isfinite(var) & (var > 0), var, np.nan)
    fallback = np.nanmedian(var) if np.isfinite(var).any() else 1.0
    var = np.where(np.isnan(var), fallback, var)
    w = 1.0 / var if weighted else np.ones_like(var)
    sw = np.sqrt(w)
    A = design * sw[:, None]
    sol = np.linalg.lstsq(A, y * sw, rcond=None)[0]
    pinv = np.linalg.pinv(A)  # (m, rows): sol = pinv @ (sw * y)
    cov = (pinv * (sw * var * sw)[None, :]) @ pinv.T
    return sol, np.diag(cov)


def _weak_pairs_message(C, se, weak, no_signal, lost) -> str:
    """The error when leaving out the pairs of weak mean cos d leaves LFs unidentified."""
    ia, ib = np.nonzero(np.triu(weak, 1))
    listing = ", ".join(
        f"LFs {a} and {b}: {C[a, b]:.3g} (standard error {se[a, b]:.2g})"
        for a, b in zip(ia[:5].tolist(), ib[:5].tolist(), strict=True)
    ) + (", ..." if len(ia) > 5 else "")
    aside = "The pairs left"
    if no_signal.any():
        aside = (
            f"That leaves LF(s) {np.flatnonzero(no_signal).tolist()} with no pair (no "
            "sign of tracking the label), and the pairs left"
        )
    return (
        "The LFs cannot be identified from these rows: the mean cos d of "
        f"{len(ia)} LF pair(s) is not above 0 by {MIN_MEAN_COS_SE:g} standard errors "
        f"({listing}), so its log (the model's invariant) is not estimated and the "
        f"pair is left out. {aside} do not identify LF(s) "
        f"{np.flatnonzero(lost).tolist()}: each LF needs a triangle of LFs whose "
        f"pairs are kept. A mean cos d above 0 but within {MIN_MEAN_COS_SE:g} "
        "standard errors of it is a very noisy LF on too few rows to tell it from "
        "noise: add rows (the standard "
        "errors fall as 1/sqrt(rows)) or LFs. One below 0 is an LF voting far from "
        "the label (e.g. the antipode): drop it. Or use estimator='pair_sq_dist', "
        "which fits such an LF at the family's maximum noise."
    )


def triplet_estimate(
    stats: ManifoldStats,
    noise: Any,
    *,
    min_overlap: int = 10,
    dependencies: Any = None,
    dev: LabeledManifoldStats | None = None,
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
    dependencies : array-like of shape (n_dependencies, 2), optional
        LF pairs declared dependent; they are left out of the system (see the module
        docstring).
    dev : LabeledManifoldStats, optional
        Sums over labeled rows; adds one equation per LF and switches to
        inverse-variance weighted least squares.

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
        (e.g. ``E cos d`` not above 0 by ``MIN_MEAN_COS_SE`` standard errors on the
        sphere: the pair is left out; ``A_a < 1`` on hyperbolic space), when an LF has
        no pair left (it is fitted at the family's maximum noise), or when an LF is
        identified only through a declared dependent pair.
    """
    C = stats.pair_invariant_mean
    V = stats.pair_invariant_var
    kind = noise.invariant_name
    m = stats.n_lfs
    dev_lfs = np.zeros(0, dtype=int)
    if dev is not None:
        dev_lfs = np.flatnonzero(dev.count >= 2)
    if kind == "sq_dist":
        pairs = _usable_pairs(stats, min_overlap, dev_lfs=dev_lfs)
        cab = C[pairs[:, 0], pairs[:, 1]]
        y = cab
        var = V[pairs[:, 0], pairs[:, 1]] / stats.pair_count[pairs[:, 0], pairs[:, 1]]
        log_space = False
        no_signal = np.zeros(m, dtype=bool)
    else:
        if len(dev_lfs):
            # an LF's labeled rows identify it only where their mean invariant has
            # an estimable log (the pairs' rule below)
            dev_mean = dev.invariant_mean[dev_lfs]
            dev_se = np.sqrt(dev.invariant_var[dev_lfs] / dev.count[dev_lfs])
            dev_lfs = dev_lfs[
                dev_mean > (MIN_MEAN_COS_SE * dev_se if kind == "cos" else 0)
            ]
        seen = (stats.pair_count >= min_overlap) & ~np.eye(m, dtype=bool)
        # The log of a mean cos d within MIN_MEAN_COS_SE standard errors of 0 is not
        # estimated (anywhere below about -3): in the least squares one such pair
        # of a junk LF put a 0.3-noise LF at noiseless and the answers at 0.29 rad.
        # (Mean cosh d on H^d is at least 1, with heavy tails: only its sign counts.)
        se = np.sqrt(V / np.maximum(stats.pair_count, 1)) if kind == "cos" else 0.0
        signal = seen & (C > MIN_MEAN_COS_SE * se)
        weak = seen & ~signal
        # An LF with no such pair shows no sign of tracking the label (e.g. junk
        # votes, uniform on the sphere): the model's answer for it is the edge of
        # its range, the family's maximum noise (as estimator="pair_sq_dist" fits
        # it), not a reason to leave the other LFs unidentified.
        # (An LF with labeled rows is identified by them.)
        no_signal = seen.any(axis=1) & ~signal.any(axis=1)
        no_signal[dev_lfs] = False
        fixed = np.union1d(dev_lfs, np.flatnonzero(no_signal))
        if weak.any():
            # Left out, the weak pairs may leave the others in no triangle: the rows
            # are enough, but not to tell a noisy LF from noise (Sphere(2), 50 rows,
            # noise 0.2 / 0.5 / 1: mean cos d 0.11 +- 0.085 for the noisiest LF).
            # Say so, not "too few overlapping rows", and warn of nothing that the
            # failed fit would not do.
            ia, ib = np.nonzero(np.triu(seen, 1))
            lost = unidentified_lfs(
                np.stack([ia, ib], axis=1)[signal[ia, ib]], m, fixed
            )
            if (
                lost.any()
                and not unidentified_lfs(np.stack([ia, ib], axis=1), m, fixed).any()
            ):
                raise ValueError(_weak_pairs_message(C, se, weak, no_signal, lost))
        pairs = _usable_pairs(
            stats,
            min_overlap,
            lambda ia, ib: signal[ia, ib],
            dev_lfs=fixed,
        )
        if weak.any():
            a, b = (int(v) for v in np.argwhere(weak)[0])
            _warnings.warn(
                f"The mean cos d of LFs {a} and {b} is {C[a, b]!r}, not above 0 by "
                f"{MIN_MEAN_COS_SE:g} standard errors: its log (the model's invariant) "
                "is not estimated; that pair is ignored.",
                IdentifiabilityWarning,
                stacklevel=2,
            )
        if no_signal.any():
            _warnings.warn(
                f"LF(s) {np.flatnonzero(no_signal).tolist()}: the mean cos d with "
                "every other LF is about 0 or below, so under the model the LF "
                "carries no information about the label; it is fitted at the "
                "family's maximum noise (weight about 0). Check or drop it.",
                IdentifiabilityWarning,
                stacklevel=2,
            )
        cab = C[pairs[:, 0], pairs[:, 1]]
        y = np.log(cab)
        var = V[pairs[:, 0], pairs[:, 1]] / (
            stats.pair_count[pairs[:, 0], pairs[:, 1]] * cab**2
        )
        log_space = True
    dev_y = np.zeros(0)
    dev_var = np.zeros(0)
    if len(dev_lfs):
        mean = dev.invariant_mean[dev_lfs]
        v = dev.invariant_var[dev_lfs] / dev.count[dev_lfs]
        if log_space:  # dev_lfs already hold only means above 0
            dev_y, dev_var = np.log(mean), v / mean**2
        else:
            dev_y, dev_var = mean, v
        # an LF exact on every labeled row has zero plug-in variance: floor it
        dev_var = np.maximum(dev_var, 1e-12)
    weighted = len(dev_lfs) > 0
    dep = _dependent_mask(pairs, dependencies)
    reduced = pairs[~dep]
    bad = unidentified_lfs(reduced, m, dev_lfs) & ~no_signal
    design = _design(reduced, m, dev_lfs)
    yy = np.r_[y[~dep], dev_y]
    vv = np.r_[var[~dep], dev_var]
    if len(yy):
        sol, sol_var = _solve(design, yy, vv, weighted)
    else:
        sol, sol_var = np.zeros(m), np.full(m, np.inf)
    if bad.any():
        _warn_unidentified(bad)
        full_sol, full_var = _solve(
            _design(pairs, m, dev_lfs), np.r_[y, dev_y], np.r_[var, dev_var], weighted
        )
        sol = np.where(bad, full_sol, sol)
        sol_var = np.where(bad, full_var, sol_var)
    invariant = np.exp(sol) if log_space else sol
    forward = noise.expected_invariant
    _, _, f_small, f_large = _range(noise, forward, _unit(noise, invariant))
    lo_v, hi_v = min(f_small, f_large), max(f_small, f_large)
    if no_signal.any():  # just inside the maximum-noise end (cos d falls with noise)
        invariant[no_signal] = f_large + 1e-9 * max(1.0, abs(f_large))
        sol[no_signal] = np.log(invariant[no_signal])
        # at the edge: no spread that shrinkage could read as "unknown"
        sol_var = np.where(no_signal, 0.0, sol_var)
    est = _finish(noise, invariant, reduced if not bad.any() else pairs)
    log_var, side_var = _log_sq_dist_var(noise, sol, sol_var, log_space, lo_v, hi_v)
    return replace(est, log_sq_dist_var=log_var, log_sq_dist_side_var=side_var)


def uws_estimate(
    stats: ManifoldStats,
    noise: Any,
    *,
    min_overlap: int = 10,
    dependencies: Any = None,
) -> ManifoldEstimate:
    """UWS baseline: additive squared distances, median over triplets.

    Parameters and returns as :func:`triplet_estimate`; pairs with fewer than
    ``min_overlap`` co-voted rows count as unobserved, and so do declared dependent
    pairs (an LF left in no triplet then falls back to all pairs, with a warning).
    Labeled rows are not used by this baseline.
    """
    pairs = _usable_pairs(stats, min_overlap)
    M = np.full((stats.n_lfs, stats.n_lfs), np.nan)
    M[pairs[:, 0], pairs[:, 1]] = stats.pair_sq_dist_mean[pairs[:, 0], pairs[:, 1]]
    M[pairs[:, 1], pairs[:, 0]] = M[pairs[:, 0], pairs[:, 1]]
    dep = _dependent_mask(pairs, dependencies)
    M_red = M.copy()
    M_red[pairs[dep, 0], pairs[dep, 1]] = np.nan
    M_red[pairs[dep, 1], pairs[dep, 0]] = np.nan
    s = uws_expected_sq_dist(M_red)
    if dep.any() and np.isnan(s).any():
        _warn_unidentified(np.isnan(s))
        s = np.where(np.isnan(s), uws_expected_sq_dist(M), s)
    if np.isnan(s).any():
        a = int(np.flatnonzero(np.isnan(s))[0])
        raise ValueError(
            f"Too few overlapping rows: LF {a} is in no fully observed triplet of LFs, "
            "which UWS needs. Add data or LFs, or lower min_overlap."
        )
    return _finish(noise, s, pairs[~dep], what="expected_sq_dist")


def pair_sq_dist_estimate(
    stats: ManifoldStats,
    noise: Any,
    *,
    min_overlap: int = 10,
    init: ManifoldEstimate | None = None,
    dependencies: Any = None,
    dev: LabeledManifoldStats | None = None,
) -> ManifoldEstimate:
    """Lower-variance estimator: fit the exact two-parameter map of E d^2(la, lb).

    Minimizes ``sum_ab n_ab / v_ab (M_ab - g(p_a, p_b))^2`` over the log-parameters,
    with ``M_ab`` the mean squared distance of the pair over co-voted rows, ``v_ab`` its
    plug-in variance of ``d^2`` and ``g = noise.pair_expected_sq_dist`` (exact Gauss
    quadrature through the law of cosines). Started from ``init`` (default: the
    triplet estimate, or UWS if that fails). Deterministic.

    Parameters
    ----------
    stats, noise, min_overlap, dependencies, dev
        As in :func:`triplet_estimate`; with ``dev`` each LF's mean ``d^2`` to the true
        label adds the term ``n_a / v_a (M_a - E d^2(p_a))^2``.
    init : ManifoldEstimate, optional
        Starting point.

    Returns
    -------
    estimate : ManifoldEstimate
        ``log_sq_dist_var`` is that of the starting triplet estimate.
    """
    dev_lfs = np.zeros(0, dtype=int) if dev is None else np.flatnonzero(dev.count >= 2)
    pairs = _usable_pairs(stats, min_overlap, dev_lfs=dev_lfs)
    if init is None:
        with _warnings.captured(IdentifiabilityWarning):
            try:
                init = triplet_estimate(
                    stats,
                    noise,
                    min_overlap=min_overlap,
                    dependencies=dependencies,
                    dev=dev,
                )
            except ValueError:
                init = uws_estimate(
                    stats, noise, min_overlap=min_overlap, dependencies=dependencies
                )
    dep = _dependent_mask(pairs, dependencies)
    bad = unidentified_lfs(pairs[~dep], stats.n_lfs, dev_lfs)
    used = pairs[~dep]
    scale, edge = _pair_fit(stats, noise, used, init, dev, dev_lfs)
    if bad.any():
        _warn_unidentified(bad)
        scale_all, edge_all = _pair_fit(stats, noise, pairs, init, dev, dev_lfs)
        scale, edge = np.where(bad, scale_all, scale), np.where(bad, edge_all, edge)
    noisy = edge == 1
    if noisy.any() and not noisy.all():
        # An LF fitted at the family's maximum noise is one the model cannot explain
        # (e.g. it votes the antipode: farther from the others than any isotropic LF
        # can be). Its pairs then pull the other LFs' fit (on Sphere(2) a 0.05 LF
        # went to 1e-8); refit the others without them when they stay identified.
        rest = used[~(noisy[used[:, 0]] | noisy[used[:, 1]])]
        if len(rest) and not unidentified_lfs(rest, stats.n_lfs, dev_lfs)[~noisy].any():
            scale2, edge2 = _pair_fit(stats, noise, rest, init, dev, dev_lfs)
            scale = np.where(noisy, scale, scale2)
            edge = np.where(noisy, edge, edge2)
    _warn_edges(noise, scale, edge)
    return _estimate(
        noise, scale, used, init.log_sq_dist_var, init.log_sq_dist_side_var
    )


def _warn_edges(noise, scale, edge):
    """Warn about LFs the pair fit put at an end of the family's range.

    One warning per end, naming the first LF there; the maximum-noise end first.
    """
    for a in [int(np.flatnonzero(edge == e)[0]) for e in (1, -1) if (edge == e).any()]:
        hint = (
            "That is the family's maximum noise: under the model the LF carries no "
            "information about the label (its votes are no closer to the truth than "
            "chance); an LF that is systematically wrong, e.g. one voting the antipode, "
            "ends here. Check or drop it."
            if edge[a] == 1
            else "That is (nearly) noiseless; the data do not pin it down."
        )
        _warnings.warn(
            f"The pairwise squared-distance fit put LF {a}'s {noise.parameter_name} at "
            f"the edge of its range ({scale[a]!r}). {hint}",
            IdentifiabilityWarning,
            stacklevel=3,
        )


def _pair_fit(stats, noise, pairs, init, dev, dev_lfs, reach=1.0):
    """Weighted least squares of the pair map; (scale, edge) with edge in {-1, 0, 1}.

    ``reach`` moves the noiseless end of the range that factor further (see
    ``CURVED_NOISELESS_REACH``); a fit that ends at that end on a curved space is
    redone so.
    """
    ia, ib = pairs[:, 0], pairs[:, 1]
    target = stats.pair_sq_dist_mean[ia, ib]
    var = np.maximum(
        stats.pair_sq_dist_var[ia, ib], 1e-12 * np.maximum(target, 1e-12) ** 2
    )
    wsqrt = np.sqrt(stats.pair_count[ia, ib] / var)
    if len(dev_lfs):
        dev_target = dev.sq_dist_mean[dev_lfs]
        dev_var = np.maximum(
            dev.sq_dist_var[dev_lfs], 1e-12 * np.maximum(dev_target, 1e-12) ** 2
        )
        dev_wsqrt = np.sqrt(dev.count[dev_lfs] / dev_var)
    lo, hi = noise.scale_bounds
    unit = _unit(noise, target)
    s_lo, s_hi = max(lo, 1e-8 * unit), (hi if np.isfinite(hi) else 1e8 * unit)
    if reach != 1.0:  # the noiseless end, never a bound of the family here
        with np.errstate(all="ignore"):
            e_lo, e_hi = noise.expected_sq_dist(np.array([s_lo, s_hi]))
        if e_lo <= e_hi:
            s_lo = s_lo * reach
        else:
            s_hi = s_hi / reach
    t_lo, t_hi = np.log(s_lo), np.log(s_hi)
    x0 = np.clip(np.log(init.noise_scale), t_lo + 1e-6, t_hi - 1e-6)
    h = 1e-6
    n_p = len(ia)
    cache: dict[bytes, tuple] = {}

    # The Riemannian Gaussian gives the derivatives of the pair map and of E d^2 with
    # the values (exponential-family identity); other families use differences below.
    analytic = getattr(noise, "_pair_expected_sq_dist_and_grad", None)
    analytic_dev = getattr(noise, "_expected_sq_dist_and_grad", None)

    def moments(t):
        # resid and jac are called at the same point: evaluate the maps once there
        key = t.tobytes()
        if key not in cache:
            cache.clear()
            s = np.exp(t)
            e, de = np.zeros(0), None
            if len(dev_lfs) and analytic_dev is not None:
                e, de = analytic_dev(s[dev_lfs])
            elif len(dev_lfs):
                e = noise.expected_sq_dist(s[dev_lfs])
            if analytic is not None:
                pair, da, db = analytic(s[ia], s[ib])
            else:
                pair, da, db = noise.pair_expected_sq_dist(s[ia], s[ib]), None, None
            cache[key] = (pair, e, da, db, de)
        return cache[key]

    def resid(t):
        pair, e = moments(t)[:2]
        r = wsqrt * (pair - target)
        if len(dev_lfs):
            r = np.r_[r, dev_wsqrt * (e - dev_target)]
        return r

    def jac(t):
        # Forward differences in log(scale), stepping inwards where a step forward
        # would leave the admissible range (an LF fitted at its maximum noise sits on
        # the upper bound; the scale just past it is rejected by the family).
        step = np.where(t + h > t_hi, -h, h)
        s, (base, e, da, db, de) = np.exp(t), moments(t)
        if da is None:
            both = noise.pair_expected_sq_dist(
                np.r_[s[ia] * np.exp(step[ia]), s[ia]],
                np.r_[s[ib], s[ib] * np.exp(step[ib])],
            )
            da, db = (both[:n_p] - base) / step[ia], (both[n_p:] - base) / step[ib]
        J = np.zeros((n_p + len(dev_lfs), len(t)))
        J[np.arange(n_p), ia] += wsqrt * da
        J[np.arange(n_p), ib] += wsqrt * db
        if len(dev_lfs):
            if de is None:
                hd = step[dev_lfs]
                de = (noise.expected_sq_dist(s[dev_lfs] * np.exp(hd)) - e) / hd
            J[n_p + np.arange(len(dev_lfs)), dev_lfs] = dev_wsqrt * de
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
    # exp(log(hi)) can round one ulp past hi: keep the result inside the family's range
    scale = np.clip(np.exp(res.x), s_lo, s_hi)
    # +1 at the end of the range with the most noise, -1 at the noiseless end
    ends = np.array([t_lo, t_hi])
    noisy_end = ends[np.argmax(noise.expected_sq_dist(np.exp(ends)))]
    at_bound = (res.x <= t_lo + 1e-6) | (res.x >= t_hi - 1e-6)
    edge = np.where(at_bound, np.where(np.abs(res.x - noisy_end) <= 1e-6, 1, -1), 0)
    s_end = s_lo if np.argmin(noise.expected_sq_dist(np.exp(ends))) == 0 else s_hi
    if (
        reach == 1.0
        and (edge == -1).any()
        and _curved(noise)
        and np.min(target) < 2.0 * noise.expected_sq_dist(s_end)
    ):
        # d^2 (no cancellation) resolves far less noise than the 1e-8 end: when a
        # pair's votes are closer than two LFs at that end allow, the precise LFs
        # are fitted, not put at the edge (redone only then, so other fits keep
        # their bounds and iterates, and a fit at the edge by sampling error on few
        # rows stays where it was)
        return _pair_fit(
            stats, noise, pairs, init, dev, dev_lfs, reach=CURVED_NOISELESS_REACH
        )
    return scale, edge
