"""Many weighted Frechet means at once, and the truncation of kernel weights.

``KernelManifoldRegressor.predict`` needs one weighted Frechet mean per query over the
same training targets. Two things make that fast:

- **Truncation.** Per query, only the training rows carrying the top ``1 - weight_tol``
  of the positive kernel weight are kept (:func:`truncate_weights`). Error bound: with
  normalized weights and ``eps`` the dropped fraction, the truncated mean ``m'``
  minimizes the kept part, so the gradient of the full objective
  ``F(z) = 1/2 sum_i w_i d^2(z, y_i)`` at ``m'`` is ``-sum_{dropped} w_i log_{m'} y_i``,
  of norm at most ``eps * R`` with ``R = max_{dropped} d(m', y_i)``. F is 1-strongly
  geodesically convex on Euclidean and hyperbolic space (Hadamard manifolds), so the
  full mean ``m`` satisfies ``d(m, m') <= eps * R``. On the sphere, if every point lies
  within ``rho < pi/2`` of ``m'`` and the segment to ``m``, F is ``rho cot rho``-strongly
  convex there and ``d(m, m') <= eps * R / (rho cot rho)`` (:func:`truncation_bound`).
- **Vectorized Newton** (:func:`frechet_means`): every query at once, started from the
  projected extrinsic (Euclidean) mean, a few Riemannian Newton steps with a per-row
  convergence check and step halving when the objective would rise; rows that do not
  converge are handed to ``space.frechet_mean`` (globally convergent) on their
  truncated problem.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_SMALL = 1e-4


def truncate_weights(
    w: np.ndarray, weight_tol: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Keep, per row, the largest weights holding at least ``1 - weight_tol`` of the
    row's total (every row keeps the same count ``k``: the largest any row needs).

    Parameters
    ----------
    w : ndarray of shape (n_rows, n_cols)
        Non-negative weights.
    weight_tol : float in [0, 1)

    Returns
    -------
    idx : ndarray of int of shape (n_rows, k)
        Kept columns, largest weight first.
    kept : ndarray of shape (n_rows, k)
        Their weights (unnormalized).
    dropped : ndarray of shape (n_rows,)
        Fraction of each row's total weight dropped (0 for an all-zero row).
    """
    n_rows, n_cols = w.shape
    total = w.sum(axis=1)
    nnz = int((w > 0).sum(axis=1).max()) if w.size else 0
    cap = max(1, min(n_cols, nnz))
    if cap < n_cols:  # the cap largest of each row, O(n_cols) per row
        part = np.argpartition(-w, cap - 1, axis=1)[:, :cap]
    else:
        part = np.broadcast_to(np.arange(n_cols), (n_rows, n_cols))
    vals = np.take_along_axis(w, part, axis=1)
    order = np.argsort(-vals, axis=1, kind="stable")
    idx = np.take_along_axis(part, order, axis=1)
    vals = np.take_along_axis(vals, order, axis=1)
    cum = np.cumsum(vals, axis=1)
    need = (cum < (1.0 - weight_tol) * total[:, None]).sum(axis=1) + 1
    k = int(min(cap, need.max())) if n_rows else 1
    idx, vals = idx[:, :k], vals[:, :k]
    safe = np.where(total > 0, total, 1.0)
    dropped = np.where(total > 0, np.clip(1.0 - vals.sum(axis=1) / safe, 0.0, 1.0), 0.0)
    return idx, vals, dropped


def truncation_bound(
    space: Any,
    mean: np.ndarray,
    dropped: np.ndarray,
    points: np.ndarray,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """Upper bound on ``d(full mean, truncated mean)`` per row (see the module notes).

    Parameters
    ----------
    space : Euclidean, Sphere or Hyperbolic
    mean : ndarray of shape (n_rows, ambient_dim)
        Truncated means.
    dropped : ndarray of shape (n_rows,)
        Dropped weight fraction ``eps``.
    points : ndarray of shape (n_rows, n_points, ambient_dim)
        All the points (or a superset of the dropped ones): ``R`` is the largest
        distance from ``mean`` among those with positive weight.
    weights : ndarray of shape (n_rows, n_points), optional

    Returns
    -------
    bound : ndarray of shape (n_rows,)
        ``inf`` on the sphere where the convexity radius condition fails.
    """
    d = space.dist(points, mean[:, None, :])
    if weights is not None:
        d = np.where(weights > 0, d, 0.0)
    R = np.nanmax(d, axis=1)
    b = dropped * R
    if getattr(space, "curvature", 0.0) > 0:
        delta = b.copy()
        for _ in range(20):  # fixed point of delta = eps R / c(R + delta)
            rho = R + delta
            c = np.where(rho < np.pi / 2, _hessian_factor(1.0, rho), 0.0)
            delta = np.where(c > 0, b / np.where(c > 0, c, 1.0), np.inf)
        return delta
    return b


def _hessian_factor(curvature: float, r: np.ndarray) -> np.ndarray:
    """Tangential Hessian factor of 1/2 d^2(., p) at distance r: r cot r (K = +1),
    r coth r (K = -1), 1 (K = 0)."""
    small = r < _SMALL
    rs = np.where(small, 1.0, r)
    if curvature > 0:
        with np.errstate(divide="ignore", invalid="ignore"):
            c = np.where(small, 1.0 - r * r / 3.0, rs * np.cos(rs) / np.sin(rs))
        return np.where(np.isfinite(c), c, -1e6)
    if curvature < 0:
        with np.errstate(over="ignore"):
            return np.where(small, 1.0 + r * r / 3.0, rs / np.tanh(rs))
    return np.ones_like(r)


def frechet_means(
    space: Any,
    points: np.ndarray,
    weights: np.ndarray,
    *,
    tol: float = 1e-10,
    max_iter: int = 20,
) -> np.ndarray:
    """Weighted Frechet means of many small point sets at once.

    Parameters
    ----------
    space : Euclidean, Sphere, Hyperbolic or ProductManifold
    points : ndarray of shape (n_rows, n_points, ambient_dim)
        Finite points of the space (put any point where the weight is 0).
    weights : ndarray of shape (n_rows, n_points)
        Non-negative; every row has a positive sum.
    tol : float, default=1e-10
        Per row: stop when the Riemannian gradient norm of
        ``1/2 sum w_i d^2(x, p_i) / sum w`` is below ``tol * max(1, rms distance)``
        (as ``space.frechet_mean``).
    max_iter : int, default=20
        Newton steps before the remaining rows go to ``space.frechet_mean``.

    Returns
    -------
    means : ndarray of shape (n_rows, ambient_dim)
    """
    W = weights / weights.sum(axis=1, keepdims=True)
    factors = getattr(space, "factors", None)
    if factors is not None:  # the product metric separates into the factors' means
        parts = space.split(points)
        return np.concatenate(
            [
                frechet_means(f, p, W, tol=tol, max_iter=max_iter)
                for f, p in zip(factors, parts, strict=True)
            ],
            axis=-1,
        )
    ext = np.einsum("kn,knd->kd", W, points)
    K = float(space.curvature)
    if K == 0:
        return ext  # closed form: the weighted average
    x = _extrinsic_start(space, ext, points, W)
    if K > 0 and type(space).__name__ == "Sphere":
        x, left = _sphere_newton(points, W, x, tol, max_iter)
        if left.size:
            x[left] = space.frechet_mean(points[left], W[left], tol=tol)
        return x
    active = np.arange(points.shape[0])
    eye = np.eye(points.shape[-1])
    G = np.ones(eye.shape[0])
    if K < 0:
        G[0] = -1.0  # Minkowski metric of the hyperboloid model
    for it in range(max_iter + 1):
        P, Wa, xa = points[active], W[active], x[active]
        logs = space.log(P, xa[:, None, :])
        r = space.norm(logs)
        grad = np.einsum("kn,knd->kd", Wa, logs)  # minus the gradient: descent dir.
        gnorm = space.norm(grad)
        f0 = 0.5 * np.einsum("kn,kn->k", Wa, r * r)
        scale = np.maximum(1.0, np.sqrt(2.0 * f0))
        # floor at the resolution of float64 coordinates (hyperbolic: x_0 = cosh R)
        floor = 64 * np.finfo(float).eps * np.abs(xa).max(axis=1)
        conv = gnorm <= np.maximum(tol * scale, floor)
        keep = ~conv
        active, logs, r, grad, xa, Wa, P, f0 = (
            a[keep] for a in (active, logs, r, grad, xa, Wa, P, f0)
        )
        if active.size == 0 or it == max_iter:
            break
        c = _hessian_factor(K, r)
        u = logs / np.where(r > 0, r, 1.0)[..., None]
        H = np.einsum("kn,kn->k", Wa, c)[:, None, None] * eye
        H = H + np.einsum("kn,kni,knj->kij", Wa * (1.0 - c), u, u * G)
        with np.errstate(all="ignore"):
            try:
                step = np.linalg.solve(H, grad[..., None])[..., 0]
            except np.linalg.LinAlgError:
                step = grad.copy()
        bad = ~np.isfinite(step).all(axis=-1) | (space.inner(step, grad) <= 0)
        step[bad] = grad[bad]
        if K > 0:  # never step past a quarter circle
            sn = np.linalg.norm(step, axis=-1, keepdims=True)
            step = np.where(
                sn > np.pi / 2, step * (np.pi / 2) / np.maximum(sn, 1e-300), step
            )
        # step halving where the objective would rise (at most 10 halvings)
        todo = np.arange(active.size)
        new = np.empty_like(xa)
        t = 1.0
        for _ in range(10):
            try:
                cand = space.exp(t * step[todo], xa[todo])
            except ValueError:  # a step ending beyond the float range: shorter
                t *= 0.5
                continue
            d = space.dist(P[todo], cand[:, None, :])
            f1 = 0.5 * np.einsum("kn,kn->k", Wa[todo], d * d)
            ok = f1 <= f0[todo] * (1 + 1e-12)
            new[todo[ok]] = cand[ok]
            todo = todo[~ok]
            if todo.size == 0:
                break
            t *= 0.5
        new[todo] = xa[todo]  # no decrease found: leave them for the fallback
        x[active] = new
    if active.size:
        # not converged in max_iter Newton steps: the space's globally convergent
        # solver on these rows' (truncated) problems
        x[active] = space.frechet_mean(points[active], W[active], tol=tol)
    return x


def _extrinsic_start(space, ext, points, W):
    """Projected extrinsic mean; the largest-weight point where it degenerates."""
    best = points[np.arange(points.shape[0]), np.argmax(W, axis=1)]
    if space.curvature > 0:
        nm = np.linalg.norm(ext, axis=-1)
        return np.where(
            (nm > 1e-8)[:, None], ext / np.maximum(nm, 1e-300)[:, None], best
        )
    x = space.projection(ext)
    return np.where(np.isfinite(x).all(axis=1)[:, None], x, best)


def _sphere_terms(P: np.ndarray, x: np.ndarray):
    """cos and angle to each point: (k, n) each, from one batched matrix-vector pass."""
    c = np.clip(np.einsum("knd,kd->kn", P, x), -1.0, 1.0)
    return c, np.arccos(c)


def _sphere_newton(P, W, x, tol, max_iter):
    """Riemannian Newton for weighted means on the unit sphere, in inner products.

    log_x p = theta / sin(theta) (p - cos(theta) x), so the gradient, the Hessian
    (sum_i w_i [c_i I + (1 - c_i) u_i u_i^T], c = theta cot theta) and the objective
    are sums over points of P with per-point scalars: three batched products over P per
    step instead of elementwise maps. Returns the means and the rows not converged.
    """
    active = np.arange(P.shape[0])
    c, th = _sphere_terms(P, x)
    Pa, Wa = P, W
    for it in range(max_iter + 1):
        xa = x[active]
        sn = np.sin(th)
        small = th < _SMALL
        f = np.where(small, 1.0 + th * th / 6.0, th / np.where(small, 1.0, sn))
        a = Wa * f
        v = np.einsum("kn,knd->kd", a, Pa)
        grad = v - np.einsum("kn,kn->k", a, c)[:, None] * xa  # tangent part of v
        grad = grad - np.einsum("kd,kd->k", grad, xa)[:, None] * xa
        gnorm = np.linalg.norm(grad, axis=1)
        f0 = 0.5 * np.einsum("kn,kn->k", Wa, th * th)
        conv = gnorm <= tol * np.maximum(1.0, np.sqrt(2.0 * f0))
        if conv.all() or it == max_iter:
            active = active[~conv]
            break
        if conv.mean() > 0.5:
            # Converged rows leave once many have: copying the point arrays every
            # step would cost more than the spare arithmetic on the converged rows.
            keep = ~conv
            active, xa, c, th, sn, small, grad, f0, conv = (
                arr[keep] for arr in (active, xa, c, th, sn, small, grad, f0, conv)
            )
            Pa, Wa = Pa[keep], Wa[keep]
        grad[conv] = 0.0  # converged rows stay put
        # Hessian factor theta cot theta = theta cos / sin, from the terms at hand
        # (near the antipode it tends to -inf: capped as in _hessian_factor)
        sn_safe = np.where(small, 1.0, sn)
        with np.errstate(divide="ignore", invalid="ignore"):
            hf = np.where(small, 1.0 - th * th / 3.0, th * c / sn_safe)
            hf = np.where(np.isfinite(hf), np.maximum(hf, -1e6), -1e6)
            # b = w (1 - hf) / sin^2(theta); its limit at theta = 0 is w / 3
            b = np.where(small, Wa / 3.0, Wa * (1.0 - hf) / (sn_safe * sn_safe))
        b = np.where(np.isfinite(b), b, 0.0)
        M = np.matmul((Pa * b[..., None]).transpose(0, 2, 1), Pa)  # sum b p p^T
        q = np.einsum("kn,knd->kd", b * c, Pa)
        bc2 = np.einsum("kn,kn->k", b, c * c)
        M -= q[:, :, None] * xa[:, None, :] + xa[:, :, None] * q[:, None, :]
        M += bc2[:, None, None] * xa[:, :, None] * xa[:, None, :]
        H = np.einsum("kn,kn->k", Wa, hf)[:, None, None] * np.eye(x.shape[1]) + M
        with np.errstate(all="ignore"):
            try:
                step = np.linalg.solve(H, grad[..., None])[..., 0]
            except np.linalg.LinAlgError:
                step = grad.copy()
        step = step - np.einsum("kd,kd->k", step, xa)[:, None] * xa
        bad = ~np.isfinite(step).all(axis=1) | (np.einsum("kd,kd->k", step, grad) <= 0)
        step[bad] = grad[bad]
        norm = np.linalg.norm(step, axis=1, keepdims=True)
        step = np.where(
            norm > np.pi / 2, step * (np.pi / 2) / np.maximum(norm, 1e-300), step
        )
        # step halving where the objective would rise
        todo = np.flatnonzero(~conv)
        full = todo.size == active.size
        t = 1.0
        for _ in range(10):
            st = t * (step if full else step[todo])
            r = np.linalg.norm(st, axis=1, keepdims=True)
            cand = (
                np.cos(r) * (xa if full else xa[todo])
                + np.where(r > 0, np.sin(r) / np.where(r > 0, r, 1.0), 1.0) * st
            )
            cand /= np.linalg.norm(cand, axis=1, keepdims=True)
            # the first trial needs no copy of the points (every row tries it)
            cc, tt = _sphere_terms(Pa if full else Pa[todo], cand)
            f1 = 0.5 * np.einsum("kn,kn->k", Wa if full else Wa[todo], tt * tt)
            ok = f1 <= f0[todo] * (1 + 1e-12)
            rows = todo[ok]
            x[active[rows]] = cand[ok]
            c[rows], th[rows] = cc[ok], tt[ok]
            todo = todo[~ok]
            full = False
            if todo.size == 0:
                break
            t *= 0.5
    return x, active
