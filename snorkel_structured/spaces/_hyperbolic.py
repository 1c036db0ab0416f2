"""Accurate kernels for hyperbolic space in hyperboloid coordinates, and its Frechet mean.

Why a separate kernel layer. A point ``x = (x_0, s)`` of the hyperboloid at distance
``R`` from the origin has coordinates of size ``e^R / 2``. Formulas that go through the
Minkowski product of two such points (``arccosh(-<x, y>_L)``, ``|x - y|_L^2``, the
Minkowski norm of an ambient tangent vector) subtract numbers of size ``e^(2R)`` to get
a result of size 1: at ``R = 20`` they are off by more than 100 %, at ``R = 30`` they
return 0 or NaN. Everything here works on the *spatial* part ``s`` alone
(``x_0 = sqrt(1 + |s|^2)`` is implied, so a stored ``x_0`` that has lost its last bits
does no harm) and splits every quantity into terms of one sign:

- distance: with ``a = |s|``, ``b = |t|`` the radii (``sinh`` of the distances to the
  origin) and ``theta`` the angle between ``s`` and ``t``,
  ``2 cosh d - 2 = 4 sinh^2((R_t - R_s)/2) + a b |s/a - t/b|^2``, where
  ``sinh(R_t - R_s) = (b^2 - a^2) / (b x_0 + a y_0)`` and ``b^2 - a^2 = (t - s).(t + s)``
  come from the difference ``t - s`` (exact for nearby points), and so does
  ``a (s/a - t/b) = s - a t/b = (s - t) + (t/b)(b - a)``;
- the isometry ``L_x^-1`` (the Lorentz boost taking ``x`` to the origin) applied to
  ``p``: its component along ``s/a`` is ``sinh(R_p - R_x) - x_0 b |t/b - s/a|^2 / 2``,
  the rest is the part of ``t - s`` orthogonal to ``s``;
- tangent vectors at ``x`` are carried to the origin by the differential of
  ``L_x^-1``, where the metric is Euclidean: ``u = v_perp + s/a (s/a . v_s) / x_0``
  uses only the spatial part ``v_s`` (the time part is implied by tangency).

Floats themselves limit what can be known: float64 coordinates at distance ``R`` resolve
positions only to about ``eps sinh R`` across the radial direction (about 1e-3 at
``R = 30``). Points beyond ``|s| = 2^45`` (``R`` about 31.9, resolution 0.008) are
refused with a ValueError that says so, instead of returning silent garbage.

The Frechet mean minimizes ``F(x) = 1/2 sum_i w_i d^2(x, p_i)`` (``sum_i w_i = 1``), a
geodesically strongly convex function on hyperbolic space, by Riemannian Newton steps in
the frame of the current iterate (all points moved by ``L_x^-1`` so that ``x`` is the
origin), with an Armijo backtracking line search on ``F``: globally convergent from any
start. It starts from the better of the projected extrinsic mean and the best input
point (the input point of lowest ``F``).
"""

from __future__ import annotations

import numpy as np

from snorkel_structured import _warnings
from snorkel_structured.exceptions import ConvergenceWarning

# Largest spatial norm accepted: there float64 coordinates resolve positions only to
# eps * 2^45 = 2^-7 across the radial direction; farther out, answers are noise.
MAX_SPATIAL_NORM = 2.0**45
MAX_RADIUS = float(np.arcsinh(MAX_SPATIAL_NORM))
_EPS = np.finfo(np.float64).eps
_FLOOR = 64.0  # gradient tolerance floor, in units of eps cosh R
_BLOCK_PAIRS = 1 << 18  # rows x n x (_N_START + 1) per block of the Frechet mean
_N_START = 3  # input points scored as starts of the Frechet mean (the heaviest)


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.einsum("...i,...i->...", a, b)


def _norm(a: np.ndarray) -> np.ndarray:
    return np.sqrt(_dot(a, a))


def check_spatial(norms: np.ndarray, what: str) -> None:
    """Raise if some spatial norm is beyond what float64 coordinates can resolve."""
    with np.errstate(invalid="ignore"):
        bad = ~(norms <= MAX_SPATIAL_NORM) & ~np.isnan(norms)
    if np.any(bad):
        far = float(np.max(np.where(bad, norms, 0.0)))
        if not np.isfinite(far):
            raise ValueError(
                f"{what} has an infinite coordinate (or one so large that its squared "
                "norm overflows float64); points of the hyperboloid must be finite, "
                f"within {MAX_RADIUS:.4g} of the origin. Remove that point or recentre "
                "the data (Hyperbolic.translate)."
            )
        radius = float(np.arcsinh(far))
        raise ValueError(
            f"{what} lies {radius:.4g} from the origin of the hyperboloid; float64 "
            f"coordinates there resolve positions only to about eps * sinh(R) = "
            f"{_EPS * far:.2g} (limit: {MAX_RADIUS:.4g} from the origin), so distances, "
            "means and maps would be noise. Recentre the data: express the points "
            "relative to a point near them (Hyperbolic.translate(points, center, "
            "inverse=True) with a center close to the data), so they lie near the origin."
        )


def _unit(s: np.ndarray, ns: np.ndarray) -> np.ndarray:
    """``s / |s|``, and the first axis where ``s = 0`` (any unit vector works there)."""
    e1 = np.zeros(s.shape[-1])
    e1[0] = 1.0
    pos = ns > 0
    return np.where(pos[..., None], s / np.where(pos, ns, 1.0)[..., None], e1)


def _time(ns: np.ndarray) -> np.ndarray:
    """``x_0 = sqrt(1 + |s|^2)`` from the spatial norm (no overflow below the limit)."""
    return np.sqrt(1.0 + ns * ns)


def _radial_and_diff(s, t, ns, nt):
    """Shared pieces: ``t - s``, ``|t|^2 - |s|^2``, ``sinh(R_t - R_s)``, ``x_0``."""
    x0, y0 = _time(ns), _time(nt)
    diff = t - s
    dsq = _dot(diff, t + s)  # |t|^2 - |s|^2, from the difference
    den = nt * x0 + ns * y0
    sig = dsq / np.where(den > 0, den, 1.0)  # sinh(R_t - R_s)
    return diff, dsq, sig, x0


def _chord_from_parts(s, t, ns, nt, diff, dsq, sig):
    radial = 2.0 * sig * sig / (1.0 + np.sqrt(1.0 + sig * sig))  # 4 sinh^2(./2)
    # angular term |s||t| |s/|s| - t/|t||^2 = (n_small / n_big) |e|^2 with
    # e = big - |big| small/|small| = (t - s) - (small/|small|)(|t|^2 - |s|^2)/(|s|+|t|):
    # dividing by the outer point's norm keeps it accurate when one point is near 0
    small_is_t = nt <= ns
    n_small = np.where(small_is_t, nt, ns)
    n_big = np.where(small_is_t, ns, nt)
    small = np.where(small_is_t[..., None], t, s)
    tot = ns + nt
    coef = dsq / (np.where(tot > 0, tot, 1.0) * np.where(n_small > 0, n_small, 1.0))
    e = diff - small * coef[..., None]
    ratio = n_small / np.where(n_big > 0, n_big, 1.0)
    return radial + ratio * _dot(e, e)


def chord_sq(s: np.ndarray, t: np.ndarray) -> np.ndarray:
    """``2 cosh d - 2`` between the points with spatial parts ``s`` and ``t``; (...).

    Sum of two non-negative terms (radial and angular), each computed from the
    difference ``t - s``: relative error about ``eps sinh R`` for the float inputs.
    """
    ns, nt = _norm(s), _norm(t)
    diff, dsq, sig, _ = _radial_and_diff(s, t, ns, nt)
    return _chord_from_parts(s, t, ns, nt, diff, dsq, sig)


def dist_from_chord_sq(q: np.ndarray) -> np.ndarray:
    """``d = 2 asinh(sqrt(q) / 2)`` from ``q = 2 cosh d - 2``."""
    return 2.0 * np.arcsinh(0.5 * np.sqrt(q))


def _boost_from_parts(s, t, ns, nt, diff, dsq, sig, x0):
    su = _unit(s, ns)
    tot = ns + nt
    # e = t - |t| s/|s| = |t| (t/|t| - s/|s|), from the difference
    e = diff - su * (dsq / np.where(tot > 0, tot, 1.0))[..., None]
    ang = _dot(e, e) / np.where(nt > 0, nt, 1.0)
    par = sig - 0.5 * x0 * ang  # component along s/|s|
    perp = diff - su * _dot(su, diff)[..., None]
    return perp + su * par[..., None]


def boost_inverse(s: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Spatial part of ``L_x^-1 p`` (x, p with spatial parts s, t), shape (..., dim).

    ``L_x`` is the Lorentz boost taking the origin to ``x``; ``L_x^-1 = L_{x'}`` with
    ``x' = (x_0, -s)``, so ``boost_inverse(-s, t)`` applies ``L_x``.
    """
    s, t = np.broadcast_arrays(s, t)
    ns, nt = _norm(s), _norm(t)
    diff, dsq, sig, x0 = _radial_and_diff(s, t, ns, nt)
    return _boost_from_parts(s, t, ns, nt, diff, dsq, sig, x0)


def pull_tangent(s: np.ndarray, v_s: np.ndarray) -> np.ndarray:
    """Tangent vector at x (spatial part ``v_s``) carried to the origin by ``dL_x^-1``."""
    ns = _norm(s)
    su = _unit(s, ns)
    along = _dot(su, v_s)
    perp = v_s - su * along[..., None]
    return perp + su * (along / _time(ns))[..., None]


def push_tangent(s: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Tangent vector ``u`` at the origin (shape (..., dim)) carried to x; ambient."""
    x0 = _time(_norm(s))
    su_dot = _dot(s, u)
    return np.concatenate(
        [su_dot[..., None], u + s * (su_dot / (1.0 + x0))[..., None]], axis=-1
    )


def exp_origin_spatial(u: np.ndarray) -> np.ndarray:
    """Spatial part of ``exp_o(u)`` = ``sinh|u| u / |u|``; refuses overflowing radii."""
    r = _norm(u)
    with np.errstate(invalid="ignore"):
        too_long = r > MAX_RADIUS
    if np.any(too_long):
        longest = float(np.max(np.where(too_long, r, 0.0)))
        raise ValueError(
            f"tangent_vec has length {longest:.4g}, more than Hyperbolic.max_radius = "
            f"{MAX_RADIUS:.4g}: exp along it goes through coordinates of size "
            f"e^{min(longest, 1e300):.4g} / 2, which float64 cannot resolve (cosh "
            "overflows past 710). Take shorter steps, or recentre the data near the "
            "origin."
        )
    small = r < 1e-4
    fac = np.where(small, 1.0 + r * r / 6.0, np.sinh(r) / np.where(small, 1.0, r))
    return fac[..., None] * u


def log_frame(s: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``log_x p`` in the frame at x (carried to the origin) and ``d(x, p)``.

    Returns ``u`` of shape (..., dim) with ``|u| = d`` and ``d`` of shape (...).
    """
    s, t = np.broadcast_arrays(s, t)
    ns, nt = _norm(s), _norm(t)
    diff, dsq, sig, x0 = _radial_and_diff(s, t, ns, nt)
    z = _boost_from_parts(s, t, ns, nt, diff, dsq, sig, x0)
    d = dist_from_chord_sq(_chord_from_parts(s, t, ns, nt, diff, dsq, sig))
    nz = _norm(z)
    u = z * (d / np.where(nz > 0, nz, 1.0))[..., None]
    return u, d


def lift(s: np.ndarray) -> np.ndarray:
    """Hyperboloid point with spatial part ``s``: ``(sqrt(1 + |s|^2), s)``."""
    return np.concatenate([_time(_norm(s))[..., None], s], axis=-1)


# --- Frechet mean --------------------------------------------------------------------
def _objective(S: np.ndarray, W: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``1/2 sum_i w_i d^2(x, p_i)``; S (k, n, dim), W (k, n), x (k, dim) -> (k,)."""
    d = dist_from_chord_sq(chord_sq(x[:, None, :], S))
    return 0.5 * np.einsum("kn,kn->k", W, d * d)


def frechet_mean_spatial(
    S: np.ndarray, W: np.ndarray, x_ext: np.ndarray, tol: float, max_iter: int
) -> tuple[np.ndarray, int]:
    """Weighted Frechet means of rows of spatial parts; blockwise over rows.

    Parameters
    ----------
    S : ndarray of shape (k, n, dim)
        Spatial parts of the points (absent points anywhere finite, weight 0).
    W : ndarray of shape (k, n)
        Weights summing to 1 per row (rows of zeros allowed: result unspecified).
    x_ext : ndarray of shape (k, dim)
        Spatial parts of the extrinsic initial guesses.

    Returns
    -------
    x : ndarray of shape (k, dim)
        Spatial parts of the means.
    n_failed : int
        Rows that did not reach the tolerance (their best point is returned).
    """
    out = np.empty_like(x_ext)
    failed = 0
    block = max(1, _BLOCK_PAIRS // (max(S.shape[1], 1) * (_N_START + 1)))
    for start in range(0, S.shape[0], block):
        sl = slice(start, start + block)
        out[sl], f = _newton_block(S[sl], W[sl], x_ext[sl], tol, max_iter)
        failed += f
    return out, failed


def _initial_point(S: np.ndarray, W: np.ndarray, x_ext: np.ndarray) -> np.ndarray:
    """Best of the extrinsic guess and the heaviest input points, per row.

    The damped Newton iteration converges from any start (the objective is strongly
    geodesically convex); the start only saves iterations where the extrinsic mean is
    far off (spread points far out). Scoring every input point would cost n^2 distances
    per row, so only the ``_N_START`` heaviest are scored: n distances each.
    """
    k, n, _ = S.shape
    c = min(n, _N_START)
    heavy = np.argsort(-W, axis=1, kind="stable")[:, :c]  # (k, c)
    cand = np.concatenate(
        [x_ext[:, None, :], np.take_along_axis(S, heavy[..., None], 1)], 1
    )
    d = dist_from_chord_sq(
        chord_sq(cand[:, :, None, :], S[:, None, :, :])
    )  # (k, c+1, n)
    f = 0.5 * np.einsum("kn,kcn->kc", W, d * d)
    f[:, 1:] = np.where(np.take_along_axis(W, heavy, 1) > 0, f[:, 1:], np.inf)
    f = np.where(np.isfinite(f), f, np.inf)
    best = np.argmin(f, axis=1)
    return cand[np.arange(k), best]


def _newton_block(S, W, x_ext, tol, max_iter):
    k, n, dim = S.shape
    x = _initial_point(S, W, x_ext)
    F = _objective(S, W, x)
    eye = np.eye(dim)
    active = np.arange(k)
    status = np.zeros(k, dtype=np.int8)  # 0 running, 1 converged, 2 stalled
    for _ in range(max_iter + 1):
        if active.size == 0:
            break
        Sa, Wa, xa, Fa = S[active], W[active], x[active], F[active]
        u, d = log_frame(xa[:, None, :], Sa)  # (a, n, dim), (a, n)
        g = np.einsum("an,ani->ai", Wa, u)  # minus the Riemannian gradient of F
        gnorm = _norm(g)
        scale = np.maximum(1.0, np.sqrt(np.einsum("an,an->a", Wa, d * d)))
        # float64 coordinates at x resolve positions to ~eps sinh R: no finer gradient
        resolution = _FLOOR * _EPS * _time(_norm(xa))
        conv = gnorm <= np.maximum(tol, resolution) * scale
        status[active[conv]] = 1
        if _ == max_iter:
            break
        keep = ~conv
        active, u, d, g, xa, Fa, Sa, Wa = (
            arr[keep] for arr in (active, u, d, g, xa, Fa, Sa, Wa)
        )
        if active.size == 0:
            break
        # Newton direction: Hessian of 1/2 d^2(., p) is u u^T + d coth d (I - u u^T)
        c = np.where(d < 1e-4, 1.0 + d * d / 3.0, d / np.tanh(np.maximum(d, 1e-300)))
        uh = u / np.where(d > 0, d, 1.0)[..., None]
        H = np.einsum("an,an->a", Wa, c)[:, None, None] * eye + np.matmul(
            ((Wa * (1.0 - c))[..., None] * uh).transpose(0, 2, 1), uh
        )
        step = np.linalg.solve(H, g[..., None])[..., 0]  # H >= I: always solvable
        bad = ~np.isfinite(step).all(axis=-1)
        step[bad] = g[bad]
        slope = -_dot(g, step)  # directional derivative of F along the step (< 0)
        # Armijo backtracking, all rows at once. Distances far out carry relative
        # errors up to ~eps sinh R, so F is only known to that: near the optimum the
        # predicted decrease falls below it, and a step within the noise is accepted
        # (the gradient test, not F, decides convergence).
        noise = 16.0 * _EPS * _time(_norm(xa)) * Fa
        alpha = np.ones(active.size)
        todo = np.ones(active.size, dtype=bool)
        x_new = xa.copy()
        F_new = Fa.copy()
        for _halving in range(40):
            idx = np.flatnonzero(todo)
            if idx.size == 0:
                break
            z = exp_origin_spatial_unchecked(alpha[idx, None] * step[idx])
            trial = boost_inverse(-xa[idx], z)
            Ft = _objective(Sa[idx], Wa[idx], trial)
            ok = np.isfinite(Ft) & (
                Ft <= Fa[idx] + 1e-4 * alpha[idx] * slope[idx] + noise[idx]
            )
            x_new[idx[ok]] = trial[ok]
            F_new[idx[ok]] = Ft[ok]
            todo[idx[ok]] = False
            alpha[idx[~ok]] *= 0.5
        stalled = todo  # no acceptable step: F cannot be lowered at float resolution
        status[active[stalled]] = 2
        x[active] = x_new
        F[active] = F_new
        active = active[~stalled]
    return x, int(np.sum(status != 1))


def exp_origin_spatial_unchecked(u: np.ndarray) -> np.ndarray:
    """``sinh|u| u / |u|`` (trial steps of the line search: overflow means reject)."""
    r = _norm(u)
    small = r < 1e-4
    with np.errstate(over="ignore", invalid="ignore"):
        fac = np.where(small, 1.0 + r * r / 6.0, np.sinh(r) / np.where(small, 1.0, r))
    return fac[..., None] * u


def warn_unconverged(n_failed: int, n_rows: int, tol: float, max_iter: int) -> None:
    """ConvergenceWarning for rows of the Frechet mean that missed the tolerance."""
    if n_failed:
        _warnings.warn(
            f"frechet_mean did not reach tol={tol} in max_iter={max_iter} iterations "
            f"for {n_failed} of {n_rows} means (the best point found is returned); "
            "raise max_iter or tol.",
            ConvergenceWarning,
            stacklevel=3,
        )
