"""Constant-curvature manifolds: Euclidean space, spheres, hyperbolic space, products.

Points are float arrays of shape ``(..., ambient_dim)``; every operation broadcasts over
leading axes and reduces over the last one (geomstats vocabulary: ``point``,
``base_point``, ``tangent_vec``). Formulas are chosen for stability:

- sphere distances use ``2 atan2(|x - p|, |x + p|)`` (exact near 0 and near pi);
- hyperbolic operations work on the spatial coordinates only and split every quantity
  into terms of one sign, accurate far from the origin too (see
  ``snorkel_structured.spaces._hyperbolic``); points too far out for float64 are refused;
- ``sin(r)/r`` and ``sinh(r)/r`` use series near 0; results of ``exp`` are re-projected;
- the antipodal logarithm on the sphere (any direction is a geodesic) picks a
  deterministic tangent direction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from snorkel_structured import _warnings
from snorkel_structured._validation import check_scalar, check_seed
from snorkel_structured.exceptions import ConvergenceWarning
from snorkel_structured.spaces import _hyperbolic as _hyp

__all__ = ["Euclidean", "Hyperbolic", "ProductManifold", "Sphere"]

_SMALL = 1e-4  # below this, use series for sin(r)/r, sinh(r)/r, r/sin(r), ...


def _sinc(r: np.ndarray) -> np.ndarray:
    small = r < _SMALL
    return np.where(small, 1.0 - r * r / 6.0, np.sin(r) / np.where(small, 1.0, r))


def _sinhc(r: np.ndarray) -> np.ndarray:
    small = r < _SMALL
    with np.errstate(over="ignore"):
        return np.where(small, 1.0 + r * r / 6.0, np.sinh(r) / np.where(small, 1.0, r))


def _check_points(x: Any, space: Any, name: str, dtype: Any = None) -> np.ndarray:
    """``x`` as an array whose last axis has ``space.ambient_dim`` entries.

    The one shape check of every point and tangent-vector argument (shape only, O(1)):
    without it, arrays of the wrong length broadcast or slice into wrong numbers.
    """
    arr = np.asarray(x, dtype=dtype)
    if not arr.ndim or arr.shape[-1] != space.ambient_dim:
        raise ValueError(
            f"{name} must have shape (..., {space.ambient_dim}): points and tangent "
            f"vectors of {space!r} have ambient_dim = {space.ambient_dim} coordinates "
            f"on the last axis; got shape {arr.shape}."
        )
    return arr


def _entry(name: str, index: tuple[int, ...]) -> str:
    """``name[i, j]`` for messages (``name`` alone for a 0-d array)."""
    return f"{name}[{', '.join(map(str, index))}]" if index else name


def _wrong_length(point: np.ndarray, ambient_dim: int) -> np.ndarray | None:
    """All-False result of ``belongs`` if the last axis is not ``ambient_dim``."""
    if point.shape[-1:] != (ambient_dim,):
        return np.zeros(point.shape[:-1], dtype=bool)
    return None


def _check_scale(scale: Any) -> Any:
    """``scale`` of the random samplers: finite and >= 0 (a scalar, or an array)."""
    if np.ndim(scale) == 0 and not isinstance(scale, np.ndarray):
        return check_scalar(scale, "scale", low=0.0)
    _refuse_negative_or_non_finite(
        np.asarray(scale, dtype=np.float64),
        "scale",
        "scale must be finite and >= 0",
        "Pass a non-negative standard deviation.",
    )
    return scale


def _refuse_negative_or_non_finite(arr: np.ndarray, name: str, rule: str, hint: str):
    """A ValueError naming the first entry of ``arr`` that is negative or not finite."""
    bad = ~np.isfinite(arr) | (arr < 0)
    if bad.any():
        i = tuple(int(k) for k in np.argwhere(bad)[0])
        raise ValueError(f"{rule}; {_entry(name, i)} is {float(arr[i])!r}. {hint}")


def _check_dim(dim: Any, minimum: int = 1) -> int:
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < minimum:
        raise ValueError(
            f"dim must be a positive int (>= {minimum}); got {dim!r}. Pass e.g. dim=2."
        )
    return int(dim)


def _check_weights(weights: Any, shape: tuple[int, ...]) -> np.ndarray:
    """Weights of a Frechet mean: broadcastable to ``shape``, finite, non-negative."""
    w0 = np.asarray(weights, dtype=np.float64)
    try:
        w = np.broadcast_to(w0, shape)
    except ValueError:
        raise ValueError(
            f"weights must have shape (..., {shape[-1]}) broadcastable to {shape}; "
            f"got {w0.shape}."
        ) from None
    _refuse_negative_or_non_finite(
        w0,
        "weights",
        "weights must be finite and non-negative",
        "Use 0 for absent points.",
    )
    return w


class _ConstantCurvature:
    """Shared machinery: Frechet mean by safeguarded Riemannian Newton, metric helpers."""

    dim: int

    # --- value-object protocol -------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.dim == self.dim  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.dim))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(dim={self.dim})"

    @property
    def ambient_dim(self) -> int:
        """Length of the last axis of a point array."""
        return self.dim + 1

    # --- metric ------------------------------------------------------------------------
    def _metric_diag(self) -> np.ndarray:
        return np.ones(self.ambient_dim)

    def inner(self, tangent_a: np.ndarray, tangent_b: np.ndarray, base_point=None):
        """Riemannian inner product of tangent vectors, shape (...)."""
        a = _check_points(tangent_a, self, "tangent_a")
        b = _check_points(tangent_b, self, "tangent_b")
        return np.sum(a * b * self._metric_diag(), axis=-1)

    def norm(self, tangent_vec: np.ndarray, base_point=None) -> np.ndarray:
        """Riemannian norm of a tangent vector, shape (...)."""
        return np.sqrt(np.maximum(self.inner(tangent_vec, tangent_vec), 0.0))

    def squared_dist(self, point_a: np.ndarray, point_b: np.ndarray) -> np.ndarray:
        """Squared geodesic distance, shape (...)."""
        return self.dist(point_a, point_b) ** 2

    def _hessian_factor(self, r: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def _extrinsic_init(self, points: np.ndarray, weights: np.ndarray) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover

    # --- Frechet mean ------------------------------------------------------------------
    def frechet_mean(
        self,
        points: np.ndarray,
        weights: np.ndarray | None = None,
        *,
        tol: float = 1e-10,
        max_iter: int = 100,
    ) -> np.ndarray:
        """Weighted Frechet (Karcher) mean, vectorized over leading axes.

        Parameters
        ----------
        points : array-like of shape (..., n_points, ambient_dim)
            Points on the manifold. A point containing NaN counts as absent (weight 0),
            so abstaining labeling functions can be passed as rows of NaN. Other
            points must be finite.
        weights : array-like of shape (..., n_points) or (n_points,), optional
            Finite non-negative weights (zeros allowed, any scale); default equal
            weights.
        tol : float, default=1e-10
            Finite, > 0. Stop when the Riemannian gradient norm of
            ``1/2 sum w_i d^2(x, p_i) / sum w`` is below ``tol * max(1, rms distance)``.
        max_iter : int, default=100
            Newton iterations at most (>= 0).

        Returns
        -------
        mean : ndarray of shape (..., ambient_dim)
            NaN where every weight is zero, every point is absent, or there are no
            points (``n_points = 0``).

        Raises
        ------
        ValueError
            If shapes do not match, a weight is negative or not finite, a point has an
            infinite coordinate, or ``tol``/``max_iter`` are out of range; on hyperbolic
            space also if a point lies too far from the origin for float64 coordinates
            (see :class:`Hyperbolic`).

        Warns
        -----
        ConvergenceWarning
            If some means did not reach the tolerance in ``max_iter`` iterations; the
            best point found is returned for them (never NaN).

        Notes
        -----
        Riemannian Newton iterations. The Hessian of ``1/2 d^2(., p)`` at ``x`` is
        ``u u^T + c(r) (I - u u^T)`` with ``u`` the unit direction of ``log_x p`` and
        ``c(r) = r coth r`` (hyperbolic), ``r cot r`` (sphere), ``1`` (Euclidean).

        - Hyperbolic: the objective is geodesically strongly convex and ``c >= 1``, so
          the Newton direction always descends; an Armijo backtracking line search on
          the objective makes the iteration converge from any start. It starts from the
          better of the projected extrinsic mean and the best input point (lowest
          objective), and works in the frame of the current iterate (points moved by
          the isometry taking it to the origin), accurate far from the origin. The
          gradient tolerance is floored at the resolution of float64 coordinates there
          (``64 eps cosh R`` at distance ``R`` from the origin).
        - Sphere: from the normalized extrinsic mean; where the Newton direction is not
          a descent direction (possible for spread-out points) a gradient step is
          used, and steps are capped at ``pi / 2``. The result is a Karcher mean (a
          local minimizer): the global Frechet mean when the points of positive
          weight lie in an open hemisphere; otherwise possibly a local minimum, with
          no warning (of 300 random weighted configurations of 2 to 6 points spread
          over S^1, 10 returned a local minimum, up to 15.7 % above the global one). Compare with the input
          points (or other starts) if the data may cover more than a hemisphere.
        - Euclidean: the weighted average (closed form).
        """
        pts = np.asarray(points, dtype=np.float64)
        if pts.ndim < 2 or pts.shape[-1] != self.ambient_dim:
            raise ValueError(
                f"points must have shape (..., n_points, {self.ambient_dim}); got "
                f"{pts.shape}."
            )
        tol = check_scalar(tol, "tol", low=0.0, low_inclusive=False)
        max_iter = check_scalar(max_iter, "max_iter", kind="int", low=0)
        n = pts.shape[-2]
        if weights is None:
            w = np.ones(pts.shape[:-1])
        else:
            w = _check_weights(weights, pts.shape[:-1])
        absent = np.isnan(pts).any(axis=-1)
        if np.isinf(pts).any():
            inf = np.isinf(pts).any(axis=-1) & ~absent
            if inf.any():
                i = tuple(int(k) for k in np.argwhere(inf)[0])
                raise ValueError(
                    f"points must be finite; {_entry('points', i)} has an infinite "
                    f"coordinate: {pts[i].tolist()}. Remove that point or mark it "
                    "absent with a row of NaN."
                )
        valid = ~absent & (w > 0)
        w = np.where(valid, w, 0.0)
        batch = pts.shape[:-2]
        if n == 0:  # no points: every mean is undefined, as when all weights are 0
            return np.full((*batch, self.ambient_dim), np.nan)
        with np.errstate(over="ignore"):
            total = w.sum(axis=-1)
        over = np.isinf(total)
        if over.any():
            # the sum of large finite weights overflowed: divide those rows by their
            # maximum first (the mean depends only on the ratios; other rows are left
            # untouched, so their means do not move by a single bit)
            big = np.where(over, w.max(axis=-1), 1.0)[..., None]
            w = np.where(over[..., None], w / big, w)
            total = w.sum(axis=-1)
        empty = total <= 0
        wn = w / np.where(empty, 1.0, total)[..., None]
        filler = self._origin_like(pts.shape[:-2])[..., None, :]
        pts = np.where(valid[..., None], pts, filler)
        P = pts.reshape(-1, n, self.ambient_dim)
        W = wn.reshape(-1, n)
        out = self._mean_rows(P, W, tol, max_iter).reshape(*batch, self.ambient_dim)
        return np.where(empty[..., None], np.nan, out)

    def _mean_rows(self, P, W, tol, max_iter):
        """Means of rows P (k, n, D) with normalized weights W (k, n); (k, D)."""
        x = self._extrinsic_init(P, W)
        if self.curvature == 0:  # closed form
            return x
        return self._newton(P, W, x, tol, max_iter)

    def _origin_like(self, shape: tuple[int, ...]) -> np.ndarray:
        o = np.zeros((*shape, self.ambient_dim))
        o[..., 0] = 1.0
        return o

    def _newton(self, P, W, x, tol, max_iter):
        G = self._metric_diag()
        active = np.arange(P.shape[0])
        done = np.zeros(P.shape[0], dtype=bool)
        for _ in range(max_iter):
            Pa, Wa, xa = P[active], W[active], x[active]
            logs = self.log(Pa, xa[:, None, :])
            r = self.norm(logs)
            grad = np.einsum("kn,knd->kd", Wa, logs)
            gnorm = self.norm(grad)
            scale = np.maximum(1.0, np.sqrt(np.einsum("kn,kn->k", Wa, r * r)))
            conv = gnorm <= tol * scale
            done[active[conv]] = True
            keep = ~conv
            if not keep.any():
                active = active[:0]
                break
            active, logs, r, grad, xa, Wa = (
                active[keep],
                logs[keep],
                r[keep],
                grad[keep],
                xa[keep],
                Wa[keep],
            )
            c = self._hessian_factor(r)
            u = logs / np.where(r > 0, r, 1.0)[..., None]
            H = np.einsum("kn,kn->k", Wa, c)[:, None, None] * np.eye(self.ambient_dim)
            H = H + np.einsum("kn,kni,knj->kij", Wa * (1.0 - c), u, u * G)
            try:
                step = np.linalg.solve(H, grad[..., None])[..., 0]
            except np.linalg.LinAlgError:
                step = grad.copy()
            bad = ~np.isfinite(step).all(axis=-1) | (self.inner(step, grad) <= 0)
            step[bad] = grad[bad]
            step = self._cap_step(step)
            x[active] = self.exp(step, xa)
        if active.size:
            _warnings.warn(
                f"frechet_mean did not reach tol={tol} in max_iter={max_iter} "
                f"iterations for {active.size} of {P.shape[0]} means; raise max_iter.",
                ConvergenceWarning,
                stacklevel=3,
            )
        return x

    def _cap_step(self, step: np.ndarray) -> np.ndarray:
        return step


class Euclidean(_ConstantCurvature):
    """Euclidean space R^dim (curvature 0): regression labels.

    Parameters
    ----------
    dim : int
        Dimension; points have shape ``(..., dim)``.

    Examples
    --------
    >>> import numpy as np
    >>> space = Euclidean(2)
    >>> float(space.dist(np.array([0.0, 0.0]), np.array([3.0, 4.0])))
    5.0
    """

    curvature = 0.0

    def __init__(self, dim: int) -> None:
        self.dim = _check_dim(dim)

    @property
    def ambient_dim(self) -> int:
        """Length of the last axis of a point array (``dim``)."""
        return self.dim

    def _origin_like(self, shape):
        return np.zeros((*shape, self.dim))

    @property
    def origin(self) -> np.ndarray:
        """The point 0, shape (dim,)."""
        return np.zeros(self.dim)

    def dist(self, point_a, point_b):
        """Euclidean distance, shape (...).

        Inputs must be finite (not checked, for speed): an infinite coordinate gives
        ``inf`` or NaN.
        """
        a = _check_points(point_a, self, "point_a")
        b = _check_points(point_b, self, "point_b")
        return np.linalg.norm(a - b, axis=-1)

    def squared_dist(self, point_a, point_b):
        """Squared Euclidean distance, shape (...)."""
        diff = _check_points(point_a, self, "point_a") - _check_points(
            point_b, self, "point_b"
        )
        return np.einsum("...i,...i->...", diff, diff)

    def exp(self, tangent_vec, base_point):
        """``base_point + tangent_vec``, shape (..., dim); inputs must be finite."""
        return _check_points(base_point, self, "base_point") + _check_points(
            tangent_vec, self, "tangent_vec"
        )

    def log(self, point, base_point):
        """``point - base_point``, shape (..., dim); inputs must be finite."""
        return _check_points(point, self, "point") - _check_points(
            base_point, self, "base_point"
        )

    def belongs(self, point, atol: float = 1e-6):
        """True where the point is finite, shape (...).

        False everywhere if the last axis does not have ``dim`` entries.
        """
        point = np.asarray(point, dtype=np.float64)
        wrong = _wrong_length(point, self.ambient_dim)
        if wrong is not None:
            return wrong
        return np.isfinite(point).all(axis=-1)

    def projection(self, point):
        """Identity (a copy)."""
        return np.array(_check_points(point, self, "point", np.float64), copy=True)

    def to_tangent(self, vector, base_point=None):
        """Identity: every vector is tangent."""
        if base_point is not None:
            _check_points(base_point, self, "base_point")
        return np.array(_check_points(vector, self, "vector", np.float64), copy=True)

    def random_tangent_vec(self, base_point, *, scale=1.0, seed=None):
        """Gaussian tangent vectors N(0, scale^2 I), shape of ``base_point``.

        ``scale`` (finite, >= 0) may be an array broadcasting against
        ``base_point.shape[:-1]``.
        """
        scale = _check_scale(scale)
        rng = check_seed(seed)
        base_point = _check_points(base_point, self, "base_point", np.float64)
        z = rng.standard_normal(base_point.shape)
        return z * np.asarray(scale, dtype=np.float64)[..., None]

    def random_point(self, n_samples: int = 1, *, scale: float = 1.0, seed=None):
        """Standard normal points times ``scale`` (finite, >= 0), shape (n_samples, dim)."""
        n_samples = check_scalar(n_samples, "n_samples", kind="int", low=1)
        scale = _check_scale(scale)
        rng = check_seed(seed)
        return scale * rng.standard_normal((n_samples, self.dim))

    def _extrinsic_init(self, points, weights):
        return np.einsum("kn,knd->kd", weights, points)

    def _hessian_factor(self, r):  # pragma: no cover - closed form used instead
        return np.ones_like(r)


class Sphere(_ConstantCurvature):
    """Unit sphere S^dim in R^(dim+1) (curvature +1).

    Parameters
    ----------
    dim : int
        Intrinsic dimension; points have shape ``(..., dim + 1)``.

    Notes
    -----
    Points passed to :meth:`dist`, :meth:`exp`, :meth:`log` and :meth:`frechet_mean`
    must be finite unit vectors, and tangent vectors must be orthogonal to their base
    point. This is not checked (these methods are on hot paths): other arrays give
    meaningless numbers, e.g. ``dist([2, 0, 0], [1, 0, 0])`` is not 0, and ``exp`` of
    a non-tangent vector is silently normalized back onto the sphere. Validate or
    normalize inputs first with :meth:`belongs`, :meth:`projection` and
    :meth:`to_tangent`. An infinite coordinate makes :meth:`dist` (so :meth:`log`)
    return NaN.

    Examples
    --------
    >>> import numpy as np
    >>> s = Sphere(2)
    >>> round(float(s.dist(np.array([1.0, 0, 0]), np.array([0.0, 1, 0]))), 6)
    1.570796
    """

    curvature = 1.0

    def __init__(self, dim: int) -> None:
        self.dim = _check_dim(dim)

    @property
    def origin(self) -> np.ndarray:
        """The "north pole" e_0, shape (dim + 1,)."""
        return self._origin_like(())

    def dist(self, point_a, point_b):
        """Great-circle distance in [0, pi], shape (...).

        Points must be unit vectors (not checked; see the class Notes). NaN where a
        coordinate is infinite.
        """
        a = _check_points(point_a, self, "point_a")
        b = _check_points(point_b, self, "point_b")
        chord = np.linalg.norm(a - b, axis=-1)
        # "+ 0 * chord" adds exactly +0 for finite inputs but turns an infinite chord
        # into NaN (arctan2(inf, inf) = pi/4 would be a finite, wrong distance);
        # cheaper than a scan for inf, especially on single points
        return 2.0 * np.arctan2(chord, np.linalg.norm(a + b, axis=-1) + 0.0 * chord)

    def exp(self, tangent_vec, base_point):
        """Exponential map ``cos|v| x + sin|v| v/|v|``, shape (..., dim + 1).

        ``base_point`` must be a unit vector and ``tangent_vec`` orthogonal to it
        (not checked; see the class Notes).
        """
        v = _check_points(tangent_vec, self, "tangent_vec")
        x = _check_points(base_point, self, "base_point")
        r = np.linalg.norm(v, axis=-1)[..., None]
        y = np.asarray(np.cos(r) * x + _sinc(r) * v, dtype=np.float64)
        return y / np.linalg.norm(y, axis=-1, keepdims=True)

    def log(self, point, base_point):
        """Logarithm map, shape (..., dim + 1); antipodes get a fixed direction.

        Points must be unit vectors (not checked; see the class Notes).
        """
        p = _check_points(point, self, "point")
        x = _check_points(base_point, self, "base_point")
        p, x = np.broadcast_arrays(p, x)
        diff = p - x
        sq = np.einsum("...i,...i->...", diff, diff)
        u = diff + 0.5 * sq[..., None] * x  # p - <x,p> x, without cancellation
        un = np.linalg.norm(u, axis=-1)
        theta = self.dist(p, x)
        antipodal = (un < 1e-12) & (sq > 2.0)
        if np.any(antipodal):
            k = np.argmin(np.abs(x), axis=-1)
            e = np.zeros_like(x)
            np.put_along_axis(e, k[..., None], 1.0, axis=-1)
            alt = self.to_tangent(e, x)
            alt = alt / np.linalg.norm(alt, axis=-1, keepdims=True)
            u = np.where(antipodal[..., None], alt, u)
            un = np.where(antipodal, 1.0, un)
        small = theta < _SMALL
        fac = np.where(small, 1.0 + theta**2 / 6.0, theta / np.where(small, 1.0, un))
        return fac[..., None] * u

    def belongs(self, point, atol: float = 1e-6):
        """True where ``| |x| - 1 | <= atol``, shape (...).

        False everywhere if the last axis does not have ``dim + 1`` entries.
        """
        point = np.asarray(point, dtype=np.float64)
        wrong = _wrong_length(point, self.ambient_dim)
        if wrong is not None:
            return wrong
        with np.errstate(invalid="ignore"):
            return np.abs(np.linalg.norm(point, axis=-1) - 1.0) <= atol

    def projection(self, point):
        """Radial projection ``x / |x|`` onto the sphere.

        Raises
        ------
        ValueError
            If a point is the zero vector (it has no direction). NaN points stay NaN.
        """
        point = _check_points(point, self, "point", np.float64)
        nrm = np.linalg.norm(point, axis=-1, keepdims=True)
        zero = nrm[..., 0] == 0
        if zero.any():
            i = tuple(int(k) for k in np.argwhere(zero)[0])
            raise ValueError(
                f"cannot project the zero vector onto the sphere ({_entry('point', i)}"
                " is 0): its direction is undefined. Pass non-zero vectors, or mark "
                "the point absent with NaN."
            )
        return point / nrm

    def to_tangent(self, vector, base_point):
        """Orthogonal projection onto the tangent space at ``base_point``."""
        v = _check_points(vector, self, "vector", np.float64)
        x = _check_points(base_point, self, "base_point")
        return v - np.einsum("...i,...i->...", v, x)[..., None] * x

    def random_tangent_vec(self, base_point, *, scale=1.0, seed=None):
        """Isotropic Gaussian tangent vectors (per-coordinate std ``scale``).

        ``scale`` (finite, >= 0) may be an array broadcasting against
        ``base_point.shape[:-1]``.
        """
        scale = _check_scale(scale)
        rng = check_seed(seed)
        x = _check_points(base_point, self, "base_point", np.float64)
        z = (
            rng.standard_normal(x.shape)
            * np.asarray(scale, dtype=np.float64)[..., None]
        )
        return self.to_tangent(z, x)

    def random_point(self, n_samples: int = 1, *, seed=None):
        """Uniform points on the sphere, shape (n_samples, dim + 1)."""
        n_samples = check_scalar(n_samples, "n_samples", kind="int", low=1)
        rng = check_seed(seed)
        z = rng.standard_normal((n_samples, self.ambient_dim))
        return z / np.linalg.norm(z, axis=-1, keepdims=True)

    def _extrinsic_init(self, points, weights):
        m = np.einsum("kn,knd->kd", weights, points)
        nm = np.linalg.norm(m, axis=-1)
        best = points[np.arange(points.shape[0]), np.argmax(weights, axis=-1)]
        return np.where((nm > 1e-8)[:, None], m / np.maximum(nm, 1e-300)[:, None], best)

    def _hessian_factor(self, r):
        small = r < _SMALL
        with np.errstate(divide="ignore", invalid="ignore"):
            c = np.where(
                small,
                1.0 - r * r / 3.0,
                r * np.cos(r) / np.sin(np.where(small, 1.0, r)),
            )
        return np.where(np.isfinite(c), c, -1e6)

    def _cap_step(self, step):
        n = np.linalg.norm(step, axis=-1, keepdims=True)
        return np.where(n > np.pi / 2, step * (np.pi / 2) / np.maximum(n, 1e-300), step)


class Hyperbolic(_ConstantCurvature):
    """Hyperbolic space H^dim in the hyperboloid (Lorentz) model (curvature -1).

    Points ``x`` in R^(dim+1) with ``<x, x>_L = -x_0^2 + sum_i x_i^2 = -1``, ``x_0 > 0``.

    Parameters
    ----------
    dim : int
        Intrinsic dimension; points have shape ``(..., dim + 1)``.

    Notes
    -----
    Operations use the spatial coordinates ``x_1..x_dim`` only (``x_0`` is implied) and
    formulas free of cancellation, so they stay accurate far from the origin, where
    Minkowski products of points (``arccosh(-<x, y>_L)``) lose every digit. The
    coordinates themselves limit what can be known: at distance ``R`` from the origin
    float64 resolves positions only to about ``eps sinh R`` (5e-8 at ``R = 20``, 1e-3
    at ``R = 30``). Points farther than ``Hyperbolic.max_radius`` (about 31.9, where
    the resolution is 0.008) are refused with a ValueError: recentre such data (see
    :meth:`translate`). The time component of a tangent vector is implied by tangency
    (``<v, x>_L = 0``): ``exp``, ``inner`` and ``norm`` (given ``base_point``) read
    only its spatial part.

    Examples
    --------
    >>> import numpy as np
    >>> h = Hyperbolic(2)
    >>> p = h.exp(np.array([0.0, 1.5, 0.0]), h.origin)
    >>> round(float(h.dist(h.origin, p)), 10)
    1.5
    >>> h.to_poincare(h.origin)
    array([0., 0.])
    """

    curvature = -1.0
    max_radius = _hyp.MAX_RADIUS  # farther points are refused (float64 resolution)

    def __init__(self, dim: int) -> None:
        self.dim = _check_dim(dim)

    @property
    def origin(self) -> np.ndarray:
        """The point (1, 0, ..., 0), shape (dim + 1,)."""
        return self._origin_like(())

    def _spatial(self, point: Any, name: str) -> np.ndarray:
        """Spatial part of points, refused beyond ``max_radius`` (or infinite)."""
        s = _check_points(point, self, name, np.float64)[..., 1:]
        _hyp.check_spatial(np.sqrt(np.einsum("...i,...i->...", s, s)), name)
        return s

    def _metric_diag(self):
        g = np.ones(self.ambient_dim)
        g[0] = -1.0
        return g

    def inner(self, tangent_a, tangent_b, base_point=None):
        """Riemannian inner product of tangent vectors at ``base_point``, shape (...).

        Without ``base_point``: the Minkowski product ``-a_0 b_0 + sum_i a_i b_i``,
        which loses every digit for tangent vectors far from the origin. With it: the
        vectors are carried to the origin by the isometry taking ``base_point`` there
        (their spatial parts suffice), and the Euclidean product is taken there.
        """
        a = _check_points(tangent_a, self, "tangent_a")
        b = _check_points(tangent_b, self, "tangent_b")
        if base_point is None:
            return np.einsum("...i,...i->...", a, b) - 2.0 * a[..., 0] * b[..., 0]
        s = self._spatial(base_point, "base_point")
        ua = _hyp.pull_tangent(s, a[..., 1:])
        ub = _hyp.pull_tangent(s, b[..., 1:])
        return np.einsum("...i,...i->...", ua, ub)

    def norm(self, tangent_vec, base_point=None):
        """Riemannian norm of a tangent vector, shape (...); pass ``base_point`` far out.

        See :meth:`inner`: without ``base_point`` the Minkowski norm is used, exact near
        the origin only.
        """
        if base_point is None:
            return super().norm(tangent_vec)
        s = self._spatial(base_point, "base_point")
        v = _check_points(tangent_vec, self, "tangent_vec", np.float64)
        u = _hyp.pull_tangent(s, v[..., 1:])
        return np.sqrt(np.einsum("...i,...i->...", u, u))

    def minkowski_inner(self, point_a, point_b):
        """Minkowski inner product ``-a_0 b_0 + sum_i a_i b_i``, shape (...)."""
        return self.inner(
            _check_points(point_a, self, "point_a"),
            _check_points(point_b, self, "point_b"),
        )

    def _cosh_and_dist(self, point_a, point_b):
        """(2 cosh d - 2, d), accurate near and far from the origin; shapes (...)."""
        s = self._spatial(point_a, "point_a")
        t = self._spatial(point_b, "point_b")
        q = _hyp.chord_sq(s, t)
        return q, _hyp.dist_from_chord_sq(q)

    def dist(self, point_a, point_b):
        """Geodesic distance, shape (...).

        ``d = 2 asinh(sqrt(q) / 2)`` with ``q = 2 cosh d - 2`` written as the sum of a
        radial and an angular term (both >= 0) computed from the difference of the
        spatial parts: accurate to the resolution of the coordinates at any distance
        from the origin (relative error about ``eps sinh R``; see the class Notes).

        Raises
        ------
        ValueError
            If a point lies farther than ``max_radius`` from the origin.
        """
        return self._cosh_and_dist(point_a, point_b)[1]

    def exp(self, tangent_vec, base_point):
        """Exponential map ``cosh|v| x + sinh|v| v/|v|``, shape (..., dim + 1).

        Computed as ``L_x(exp_o(u))``: ``u`` is ``tangent_vec`` carried to the origin
        by the isometry ``L_x^-1`` (only the spatial part of ``tangent_vec`` is read;
        the time part is implied by tangency), ``L_x`` the boost taking the origin to
        ``x``.

        Raises
        ------
        ValueError
            If the tangent vector's Riemannian length ``|v|`` (the length of the
            geodesic step) exceeds ``max_radius``, whatever the base point and the
            result: the computation goes through coordinates of size ``e^|v| / 2``
            and amplifies input rounding by ``sinh |v|``. So ``exp(log(y, x), x)``
            raises when ``dist(x, y) > max_radius``, even if ``x`` and ``y`` are near
            the origin; take shorter steps. Also if ``base_point`` or the result lies
            farther than ``max_radius`` from the origin (their coordinates would be
            noise or overflow): recentre the data (:meth:`translate`).
        """
        v = _check_points(tangent_vec, self, "tangent_vec", np.float64)
        s = self._spatial(base_point, "base_point")
        u = _hyp.pull_tangent(s, v[..., 1:])
        z = _hyp.exp_origin_spatial(u)
        y = _hyp.boost_inverse(-s, z)
        _hyp.check_spatial(np.sqrt(np.einsum("...i,...i->...", y, y)), "exp(v, x)")
        return _hyp.lift(y)

    def log(self, point, base_point):
        """Logarithm map, shape (..., dim + 1).

        ``point`` is moved by the isometry taking ``base_point`` to the origin, its
        logarithm taken there and carried back (accurate far from the origin).

        Raises
        ------
        ValueError
            If a point lies farther than ``max_radius`` from the origin.
        """
        t = self._spatial(point, "point")
        s = self._spatial(base_point, "base_point")
        u, _ = _hyp.log_frame(s, t)
        return _hyp.push_tangent(s, u)

    def translate(self, point, base_point, *, inverse: bool = False):
        """Apply the hyperbolic translation taking the origin to ``base_point``.

        The translation is the Lorentz boost ``L_b`` along the geodesic from the origin
        to ``b = base_point`` (its differential at the origin is parallel transport
        along that geodesic). ``inverse=True`` applies ``L_b^-1``, which takes ``b``
        to the origin: the way to recentre data before working with it.

        Parameters
        ----------
        point : array-like of shape (..., dim + 1)
        base_point : array-like of shape (..., dim + 1)
        inverse : bool, default=False

        Returns
        -------
        point : ndarray of shape (..., dim + 1)

        Raises
        ------
        ValueError
            If an input or the result lies farther than ``max_radius`` from the origin.

        Examples
        --------
        >>> import numpy as np
        >>> h = Hyperbolic(2)
        >>> b = h.exp(np.array([0.0, 3.0, 0.0]), h.origin)
        >>> p = h.translate(h.origin, b)
        >>> bool(np.allclose(p, b))
        True
        >>> bool(np.allclose(h.translate(b, b, inverse=True), h.origin))
        True
        """
        t = self._spatial(point, "point")
        s = self._spatial(base_point, "base_point")
        y = _hyp.boost_inverse(s if inverse else -s, t)
        _hyp.check_spatial(np.sqrt(np.einsum("...i,...i->...", y, y)), "translate")
        return _hyp.lift(y)

    def _mean_rows(self, P, W, tol, max_iter):
        S = self._spatial(P, "a point of points")
        x_ext = np.einsum("kn,kni->ki", W, S)  # projected extrinsic mean (spatial part)
        x, failed = _hyp.frechet_mean_spatial(S, W, x_ext, tol, max_iter)
        _hyp.warn_unconverged(failed, P.shape[0], tol, max_iter)
        return _hyp.lift(x)

    def belongs(self, point, atol: float = 1e-6):
        """True where ``|<x,x>_L + 1| <= atol * max(1, x_0^2)`` and ``x_0 > 0``.

        False everywhere if the last axis does not have ``dim + 1`` entries.
        """
        x = np.asarray(point, dtype=np.float64)
        wrong = _wrong_length(x, self.ambient_dim)
        if wrong is not None:
            return wrong
        with np.errstate(invalid="ignore"):
            err = np.abs(self.inner(x, x) + 1.0)
            return (err <= atol * np.maximum(1.0, x[..., 0] ** 2)) & (x[..., 0] > 0)

    def projection(self, point):
        """Lift onto the hyperboloid keeping the spatial part: ``x_0 = sqrt(1 + |x_s|^2)``."""
        x = np.array(_check_points(point, self, "point", np.float64), copy=True)
        x[..., 0] = np.sqrt(1.0 + np.einsum("...i,...i->...", x[..., 1:], x[..., 1:]))
        return x

    def to_tangent(self, vector, base_point):
        """Minkowski-orthogonal projection ``v + <v, x>_L x`` onto ``T_x H``."""
        v = _check_points(vector, self, "vector", np.float64)
        x = _check_points(base_point, self, "base_point")
        return v + self.inner(v, x)[..., None] * x

    def _transport_from_origin(self, tangent_vec, base_point):
        """Parallel transport of ``v`` in ``T_o H`` along the geodesic from o to x."""
        v, x = np.asarray(tangent_vec), np.asarray(base_point)
        o = self._origin_like(x.shape[:-1])
        coef = self.inner(x, v) / (1.0 + x[..., 0])
        return v + coef[..., None] * (o + x)

    def random_tangent_vec(self, base_point, *, scale=1.0, seed=None):
        """Isotropic Gaussian tangent vectors at ``base_point`` (per-coordinate std).

        ``scale`` (finite, >= 0) may be an array broadcasting against
        ``base_point.shape[:-1]``.
        """
        scale = _check_scale(scale)
        rng = check_seed(seed)
        x = _check_points(base_point, self, "base_point", np.float64)
        z = np.zeros(x.shape)
        z[..., 1:] = rng.standard_normal((*x.shape[:-1], self.dim))
        z = z * np.asarray(scale, dtype=np.float64)[..., None]
        return self._transport_from_origin(z, x)

    def random_point(self, n_samples: int = 1, *, scale: float = 1.0, seed=None):
        """Wrapped-normal points around the origin, shape (n_samples, dim + 1).

        ``scale`` (finite, >= 0) is the per-coordinate std of the tangent vectors.
        """
        n_samples = check_scalar(n_samples, "n_samples", kind="int", low=1)
        scale = _check_scale(scale)
        o = self._origin_like((n_samples,))
        return self.exp(self.random_tangent_vec(o, scale=scale, seed=seed), o)

    def to_poincare(self, point):
        """Map hyperboloid points to the Poincare ball, shape (..., dim)."""
        x = _check_points(point, self, "point", np.float64)
        return x[..., 1:] / (1.0 + x[..., :1])

    def from_poincare(self, point):
        """Map Poincare-ball points (norm < 1) to the hyperboloid, shape (..., dim + 1).

        Raises
        ------
        ValueError
            If a point has norm >= 1.
        """
        p = np.asarray(point, dtype=np.float64)
        if p.shape[-1:] != (self.dim,):
            raise ValueError(f"point must have shape (..., {self.dim}); got {p.shape}.")
        sq = np.einsum("...i,...i->...", p, p)
        if np.any(~(sq < 1.0)):
            raise ValueError(
                "point must lie in the open unit ball (norm < 1); got a point of norm "
                f"{np.sqrt(np.max(sq))!r}. Rescale or clip it inside the ball."
            )
        den = (1.0 - sq)[..., None]
        return self.projection(
            np.concatenate([(1.0 + sq[..., None]) / den, 2.0 * p / den], -1)
        )

    def _extrinsic_init(self, points, weights):
        m = np.einsum("kn,knd->kd", weights, points)
        return self.projection(m)

    def _hessian_factor(self, r):
        small = r < _SMALL
        with np.errstate(over="ignore"):
            return np.where(
                small, 1.0 + r * r / 3.0, r / np.tanh(np.where(small, 1.0, r))
            )


class ProductManifold:
    """Product of manifolds with the product (l2) metric.

    Points are the concatenation of the factors' ambient coordinates;
    ``d^2 = sum_k d_k^2``. The Frechet mean separates into the factors' means.

    Parameters
    ----------
    factors : sequence of Euclidean, Sphere or Hyperbolic
        At least one factor.

    Examples
    --------
    >>> prod = ProductManifold([Sphere(2), Euclidean(1)])
    >>> prod.ambient_dim, prod.dim
    (4, 3)
    """

    def __init__(self, factors: Sequence[_ConstantCurvature]) -> None:
        factors = tuple(factors) if isinstance(factors, (list, tuple)) else factors
        if (
            not isinstance(factors, tuple)
            or len(factors) == 0
            or not all(isinstance(f, _ConstantCurvature) for f in factors)
        ):
            raise ValueError(
                "factors must be a non-empty list of Euclidean, Sphere or Hyperbolic "
                f"spaces; got {factors!r}."
            )
        self.factors = factors
        self.dim = sum(f.dim for f in factors)
        self.ambient_dim = sum(f.ambient_dim for f in factors)
        edges = np.cumsum([0] + [f.ambient_dim for f in factors])
        self._slices = tuple(
            slice(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:], strict=True)
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ProductManifold) and other.factors == self.factors

    def __hash__(self) -> int:
        return hash(("ProductManifold", self.factors))

    def __repr__(self) -> str:
        return f"ProductManifold([{', '.join(map(repr, self.factors))}])"

    @property
    def curvature(self) -> tuple[float, ...]:
        """Curvature of each factor."""
        return tuple(f.curvature for f in self.factors)

    def split(self, point) -> list[np.ndarray]:
        """Split points (..., ambient_dim) into the factors' coordinates."""
        point = _check_points(point, self, "point")
        return [point[..., s] for s in self._slices]

    def _map(self, name, *arrays):
        # arrays: (argument name, array) pairs, checked whole before slicing
        arrays = [_check_points(a, self, arg) for arg, a in arrays]
        parts = [
            getattr(f, name)(*(a[..., s] for a in arrays))
            for f, s in zip(self.factors, self._slices, strict=True)
        ]
        return np.concatenate(parts, axis=-1)

    @property
    def origin(self) -> np.ndarray:
        """Concatenated origins of the factors."""
        return np.concatenate([f.origin for f in self.factors])

    def squared_dist(self, point_a, point_b):
        """Sum of the factors' squared distances, shape (...)."""
        a = _check_points(point_a, self, "point_a")
        b = _check_points(point_b, self, "point_b")
        return sum(
            f.squared_dist(a[..., s], b[..., s])
            for f, s in zip(self.factors, self._slices, strict=True)
        )

    def dist(self, point_a, point_b):
        """Product geodesic distance, shape (...)."""
        return np.sqrt(self.squared_dist(point_a, point_b))

    def exp(self, tangent_vec, base_point):
        """Factor-wise exponential map."""
        return self._map(
            "exp", ("tangent_vec", tangent_vec), ("base_point", base_point)
        )

    def log(self, point, base_point):
        """Factor-wise logarithm map."""
        return self._map("log", ("point", point), ("base_point", base_point))

    def inner(self, tangent_a, tangent_b, base_point=None):
        """Sum of the factors' inner products."""
        a = _check_points(tangent_a, self, "tangent_a")
        b = _check_points(tangent_b, self, "tangent_b")
        return sum(
            f.inner(a[..., s], b[..., s])
            for f, s in zip(self.factors, self._slices, strict=True)
        )

    def norm(self, tangent_vec, base_point=None):
        """Riemannian norm of a tangent vector."""
        return np.sqrt(np.maximum(self.inner(tangent_vec, tangent_vec), 0.0))

    def belongs(self, point, atol: float = 1e-6):
        """True where every factor's part belongs to its factor, shape (...).

        False everywhere if the last axis does not have ``ambient_dim`` entries.
        """
        point = np.asarray(point, dtype=np.float64)
        wrong = _wrong_length(point, self.ambient_dim)
        if wrong is not None:
            return wrong
        out = np.ones(point.shape[:-1], dtype=bool)
        for f, s in zip(self.factors, self._slices, strict=True):
            out &= f.belongs(point[..., s], atol)
        return out

    def projection(self, point):
        """Factor-wise projection."""
        return self._map("projection", ("point", np.asarray(point, dtype=np.float64)))

    def to_tangent(self, vector, base_point):
        """Factor-wise projection onto the tangent space."""
        return self._map(
            "to_tangent",
            ("vector", np.asarray(vector, dtype=np.float64)),
            ("base_point", base_point),
        )

    def random_tangent_vec(self, base_point, *, scale=1.0, seed=None):
        """Isotropic Gaussian tangent vectors, factor by factor."""
        scale = _check_scale(scale)
        rng = check_seed(seed)
        x = _check_points(base_point, self, "base_point", np.float64)
        return np.concatenate(
            [
                f.random_tangent_vec(x[..., s], scale=scale, seed=rng)
                for f, s in zip(self.factors, self._slices, strict=True)
            ],
            axis=-1,
        )

    def random_point(self, n_samples: int = 1, *, seed=None):
        """Random points of each factor, concatenated, shape (n_samples, ambient_dim)."""
        rng = check_seed(seed)
        return np.concatenate(
            [f.random_point(n_samples, seed=rng) for f in self.factors], axis=-1
        )

    def frechet_mean(
        self, points, weights=None, *, tol: float = 1e-10, max_iter: int = 100
    ):
        """Weighted Frechet mean: the factors' means concatenated.

        See :meth:`Hyperbolic.frechet_mean` for parameters; ``points`` has shape
        ``(..., n_points, ambient_dim)``. A point with NaN anywhere counts as absent.
        """
        pts = np.asarray(points, dtype=np.float64)
        if pts.ndim < 2 or pts.shape[-1] != self.ambient_dim:
            raise ValueError(
                f"points must have shape (..., n_points, {self.ambient_dim}); got {pts.shape}."
            )
        absent = np.isnan(pts).any(axis=-1, keepdims=True)
        pts = np.where(absent, np.nan, pts)
        return np.concatenate(
            [
                f.frechet_mean(pts[..., s], weights, tol=tol, max_iter=max_iter)
                for f, s in zip(self.factors, self._slices, strict=True)
            ],
            axis=-1,
        )
