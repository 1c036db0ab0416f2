"""Isotropic noise families on constant-curvature manifolds, with exact parameter maps.

Two families of ``P(lambda | y)``, both isotropic around the true label ``y``:

``WrappedNormal(space)``
    ``lambda = exp_y(v)`` with ``v`` a Gaussian tangent vector at ``y`` of variance
    ``sigma2`` per tangent coordinate. Its parameter (``noise_scale``) is ``sigma2``.
``RiemannianGaussian(space)``
    density proportional to ``exp(-theta d^2(lambda, y))`` with respect to the
    Riemannian volume (the paper's model). Its parameter is ``theta``.

Each offers seeded, vectorized ``sample``; ``expected_sq_dist`` (E d^2(lambda, y)),
``expected_invariant`` (E cosh d on H^d, E cos d on S^d, E d^2 on R^d: the quantity
whose pairwise version factorizes or adds, see ``estimators.triplet``), their inverses
(bracketed root finding, no grids, no Monte Carlo), and ``pair_expected_sq_dist``, the
exact E d^2(lambda_a, lambda_b) for two independent LFs around the same ``y`` (a 3-D
quadrature over the two radii and the angle between the directions, via the law of
cosines).

Radial laws (``r`` = length of the tangent vector, ``d`` = manifold dim):

- wrapped normal: ``r = sigma chi_d`` on every manifold. On H^d and R^d the distance is
  ``r``: ``E d^2 = d sigma2`` and on H^d ``E cosh d = 1F1(d/2; 1/2; sigma2/2)``. On the
  sphere the tangent Gaussian *wraps around*: the distance is the folded radius
  ``arccos(cos r)`` in [0, pi], so ``E cos d = E cos r = 1F1(d/2; 1/2; -sigma2/2)``
  exactly, while ``E d^2`` is a 1-D quadrature of the folded radius. ``E cos d`` is not
  monotone in ``sigma2`` on the sphere (it crosses 0 and comes back towards 0 from
  below as the law tends to uniform), so the wrapped normal on S^d is only identified
  up to ``sigma2_max``, the first zero of ``E cos d``; parameters are restricted to
  ``(0, sigma2_max]`` (``WrappedNormal.scale_bounds``).
- Riemannian Gaussian: radial density proportional to ``exp(-theta r^2) sinh^(d-1) r`` on
  H^d (``sin^(d-1) r`` on [0, pi] for S^d, ``r^(d-1)`` for R^d: a Gaussian with variance
  ``1/(2 theta)``). Moments are Gauss-Legendre quadratures of this log-concave density
  on ``[0, mode + 8/sqrt(theta)]`` (the tail beyond is below ``e^-64`` of the mode),
  monotone in ``theta``. Sampling is exact rejection sampling from the Gaussian envelope
  ``log f(r) <= log f(r*) - kappa (r - r*)^2 / 2`` (``kappa = 2 theta``, or
  ``2 theta + d - 1`` on the sphere), which holds because ``(log f)'' <= -kappa``.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from scipy import integrate, optimize, special

from snorkel_structured._validation import check_seed
from snorkel_structured.spaces.manifolds import Euclidean, Hyperbolic, Sphere

__all__ = ["RiemannianGaussian", "WrappedNormal", "make_noise"]

_N_RADIAL = 40  # radial nodes for the pair map
_N_ANGLE = 24  # angle nodes for the pair map
_N_LEGENDRE = 160  # nodes for 1-D moments of the Riemannian Gaussian
# Riemannian Gaussian radial rules memoized per (space, n_nodes) and exact theta;
# cleared when full (rules are 2 x n_nodes floats: 4096 x 160 nodes = 10 MB)
_RULE_CACHE: dict = {}
_MODE_CACHE: dict = {}
_RULE_CACHE_SIZE = 4096
_PAIR_CHUNK = 64  # pairs per block of the pair map: (64, 40, 40, 24) floats = 20 MB


def _check_space(space: Any, family: str) -> None:
    if not isinstance(space, (Euclidean, Sphere, Hyperbolic)):
        raise ValueError(
            f"space must be a Euclidean, Sphere or Hyperbolic instance for {family}; got "
            f"{space!r}. For a ProductManifold, fit each factor separately."
        )


@functools.lru_cache(maxsize=64)
def _angle_rule(dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes/weights for t = <u_a, u_b>, u_a, u_b independent uniform on S^(dim-1)."""
    if dim == 1:
        return np.array([-1.0, 1.0]), np.array([0.5, 0.5])
    a = (dim - 3) / 2.0
    t, w = special.roots_jacobi(_N_ANGLE, a, a)
    return t, w / w.sum()


@functools.lru_cache(maxsize=8)
def _legendre(n_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    # roots_legendre costs ~0.3 ms; it was recomputed for every scale of every call
    return special.roots_legendre(n_nodes)


def _log_sinh(r: np.ndarray) -> np.ndarray:
    """log sinh r for r >= 0 without overflow (-inf at 0)."""
    with np.errstate(divide="ignore"):
        return r + np.log(-np.expm1(-2.0 * r)) - np.log(2.0)


# Largest radius for which sinh(ra) * sinh(rb) stays below the float64 maximum
# (sinh^2(354) ~ e^708 / 4); beyond it the hyperbolic law of cosines runs in logs.
_SINH_SAFE = 354.0


def _pair_sq_dist_from_radii(space, ra, rb, t) -> np.ndarray:
    """d^2(lambda_a, lambda_b) by the law of cosines from radii and cos(angle)."""
    if isinstance(space, Euclidean):
        return ra * ra + rb * rb - 2.0 * ra * rb * t
    if isinstance(space, Hyperbolic):
        # cosh d - 1 = h = 2 sinh^2((ra - rb)/2) + sinh ra sinh rb (1 - t)
        if max(np.max(ra), np.max(rb)) <= _SINH_SAFE:
            h = 2.0 * np.sinh(0.5 * (ra - rb)) ** 2 + np.sinh(ra) * np.sinh(rb) * (
                1.0 - t
            )
            return (2.0 * np.arcsinh(np.sqrt(np.maximum(h, 0.0) / 2.0))) ** 2
        # Large radii (very noisy LFs, or parameters the optimizer tries): the product
        # of sinh overflows to inf (then inf * 0 weights = NaN). Work with log h:
        # d = arccosh(1 + h) = log(2 h) + O(1/h) once h > e^36.
        with np.errstate(divide="ignore"):
            log_h = np.logaddexp(
                np.log(2.0) + 2.0 * _log_sinh(0.5 * np.abs(ra - rb)),
                _log_sinh(ra) + _log_sinh(rb) + np.log(1.0 - t),
            )
        big = log_h > 36.0
        small_d = 2.0 * np.arcsinh(np.sqrt(np.exp(np.minimum(log_h, 36.0)) / 2.0))
        return np.where(big, np.log(2.0) + log_h, small_d) ** 2
    # sphere: 1 - cos d = 2 sin^2((ra - rb)/2) + sin ra sin rb (1 - t)
    h = 2.0 * np.sin(0.5 * (ra - rb)) ** 2 + np.sin(ra) * np.sin(rb) * (1.0 - t)
    return (2.0 * np.arcsin(np.sqrt(np.clip(h / 2.0, 0.0, 1.0)))) ** 2


def _angle_integrated_sq_dist(space, ra, rb, t, wt) -> np.ndarray:
    """``sum_k wt_k d^2(ra_i, rb_j, t_k)`` for radii ``ra`` (P, N) and ``rb`` (P, M).

    The same law of cosines as :func:`_pair_sq_dist_from_radii`, arranged so that
    every term not involving the angle is computed on the (P, N, M) grid and the
    (P, N, M, T) array sees only five operations: this is the inner loop of the
    pair map. Returns shape (P, N, M).
    """
    ra, rb = ra[:, :, None], rb[:, None, :]
    u = (1.0 - t)[None, None, None, :]
    if isinstance(space, Euclidean):  # exact: E_t d^2 = ra^2 + rb^2 - 2 ra rb E t
        return ra * ra + rb * rb - 2.0 * ra * rb * float(np.dot(wt, t))
    if isinstance(space, Hyperbolic):
        if max(np.max(ra), np.max(rb)) > _SINH_SAFE:
            return (
                _pair_sq_dist_from_radii(
                    space, ra[..., None], rb[..., None], t[None, None, None, :]
                )
                @ wt
            )
        # q = h / 2 = sinh^2((ra - rb)/2) + sinh ra sinh rb (1 - t) / 2; d = 2 asinh sqrt q
        a = (np.sinh(0.5 * (ra - rb)) ** 2)[..., None]
        b = (0.5 * np.sinh(ra) * np.sinh(rb))[..., None]
        q = b * u
        q += a
        np.sqrt(q, out=q)
        np.arcsinh(q, out=q)
    else:
        # sphere: q = (1 - cos d) / 2 = sin^2((ra - rb)/2) + sin ra sin rb (1 - t) / 2
        a = (np.sin(0.5 * (ra - rb)) ** 2)[..., None]
        b = (0.5 * np.sin(ra) * np.sin(rb))[..., None]
        q = b * u
        q += a
        np.clip(q, 0.0, 1.0, out=q)
        np.sqrt(q, out=q)
        np.arcsin(q, out=q)
    np.square(q, out=q)
    return 4.0 * (q @ wt)  # d = 2 asinh(sqrt q) or 2 asin(sqrt q)


class _ManifoldNoise:
    """Shared: value-object protocol, sampling by radius x direction, inverses."""

    parameter_name = "scale"

    def __init__(self, space: Euclidean | Sphere | Hyperbolic) -> None:
        _check_space(space, type(self).__name__)
        self.space = space

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.space == self.space  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.space))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.space!r})"

    @property
    def invariant_name(self) -> str:
        """``"cosh"`` (hyperbolic), ``"cos"`` (sphere) or ``"sq_dist"`` (Euclidean)."""
        return {Hyperbolic: "cosh", Sphere: "cos", Euclidean: "sq_dist"}[
            type(self.space)
        ]

    # --- to implement -----------------------------------------------------------------
    def radial_rule(
        self, scale: float
    ) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover
        raise NotImplementedError

    def _sample_radius(self, scale: np.ndarray, rng) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    @property
    def scale_bounds(self) -> tuple[float, float]:
        """Open interval of admissible parameters."""
        return (0.0, np.inf)

    # --- generic ----------------------------------------------------------------------
    def _check_scale(self, scale: Any, name: str = "scale") -> np.ndarray:
        s = np.asarray(scale, dtype=np.float64)
        lo, hi = self.scale_bounds
        if not np.all(np.isfinite(s)) or np.any(s <= lo) or np.any(s > hi):
            bad = s.ravel()[
                ~(np.isfinite(s.ravel()) & (s.ravel() > lo) & (s.ravel() <= hi))
            ][0]
            raise ValueError(
                f"{name} ({self.parameter_name}) must be in ({lo}, {hi}] for {self!r}; got "
                f"{bad!r}."
            )
        return s

    def sample(self, base_point: Any, scale: Any, *, seed: Any = None) -> np.ndarray:
        """Draw one noisy point around each base point.

        Parameters
        ----------
        base_point : array-like of shape (..., ambient_dim)
            True labels ``y`` on the manifold.
        scale : float or array-like broadcastable to ``base_point.shape[:-1]``
            The family's parameter (``sigma2`` or ``theta``) per draw.
        seed : None, int or numpy.random.Generator, default=None
            A Generator passed in advances.

        Returns
        -------
        point : ndarray of shape (..., ambient_dim)
        """
        rng = check_seed(seed)
        x = np.asarray(base_point, dtype=np.float64)
        if x.shape[-1:] != (self.space.ambient_dim,):
            raise ValueError(
                f"base_point must have shape (..., {self.space.ambient_dim}); got {x.shape}."
            )
        s = np.broadcast_to(self._check_scale(scale), x.shape[:-1])
        direction = self.space.random_tangent_vec(x, seed=rng)
        # the norm at x: far out on hyperbolic space only the base point makes it exact
        norm = self.space.norm(direction, x)
        direction = direction / np.where(norm > 0, norm, 1.0)[..., None]
        r = self._sample_radius(s, rng)
        return self.space.exp(r[..., None] * direction, x)

    def _radial_rules(
        self, scales: np.ndarray, n_nodes: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Radial rules for many parameters at once: nodes and weights, (n_scales, n_nodes).

        Row ``i`` equals ``radial_rule(scales[i], n_nodes)``; subclasses vectorize it.
        """
        rules = [self.radial_rule(float(v), n_nodes) for v in scales]
        if not rules:
            return np.zeros((0, n_nodes)), np.zeros((0, n_nodes))
        return np.stack([r for r, _ in rules]), np.stack([w for _, w in rules])

    def expectation(self, func, scale: float) -> float:
        """E f(r) for the radius r = |log_y(lambda)| (1-D quadrature)."""
        r, w = self.radial_rule(scale)
        return float(np.dot(w, func(r)))

    def _radial_moment(self, func, s: np.ndarray, n_nodes: int | None = None):
        """E f(r) for every parameter in ``s`` (checked) with one batched rule."""
        flat = s.ravel()
        kw = {} if n_nodes is None else {"n_nodes": n_nodes}
        r, w = self._radial_rules(flat, **kw)
        return np.einsum("pn,pn->p", w, func(r)).reshape(s.shape)

    def expected_invariant(self, scale: Any) -> np.ndarray:
        """E cosh d (H), E cos d (S) or E d^2 (R) of d = d(lambda, y); shape of ``scale``."""
        s = self._check_scale(scale)
        f = {"cosh": np.cosh, "cos": np.cos, "sq_dist": np.square}[self.invariant_name]
        return self._radial_moment(f, s)

    def expected_sq_dist(self, scale: Any) -> np.ndarray:
        """E d^2(lambda, y); shape of ``scale``."""
        return self._radial_moment(np.square, self._check_scale(scale))

    def _invert(self, forward, value: np.ndarray, name: str) -> np.ndarray:
        value = np.asarray(value, dtype=np.float64)
        lo, hi = self.scale_bounds
        t_lo = np.log(lo) if lo > 0 else -60.0
        t_hi = np.log(hi) if np.isfinite(hi) else 60.0

        def F(t: float) -> float:
            with np.errstate(all="ignore"):
                return float(forward(np.exp(t)))

        # Bracket in log(scale), grown from [-1, 1] until it covers every value.
        a, b = max(-1.0, t_lo), min(1.0, t_hi)
        fa, fb = F(a), F(b)
        increasing = fb > fa
        vmin, vmax = (np.nanmin(value), np.nanmax(value)) if value.size else (0.0, 0.0)

        def grow(t, f, step, limit, need):
            while need(f) and (t - limit) * np.sign(step) < 0:
                t2 = float(np.clip(t + step, min(t, limit), max(t, limit)))
                f2 = F(t2)
                if not np.isfinite(f2):
                    break
                t, f = t2, f2
            return t, f

        if increasing:
            a, fa = grow(a, fa, -2.0, t_lo, lambda f: f > vmin)
            b, fb = grow(b, fb, 2.0, t_hi, lambda f: f < vmax)
        else:
            a, fa = grow(a, fa, -2.0, t_lo, lambda f: f < vmax)
            b, fb = grow(b, fb, 2.0, t_hi, lambda f: f > vmin)
        out = np.empty(value.shape)
        for idx, v in np.ndenumerate(value):
            if not (min(fa, fb) <= v <= max(fa, fb)):
                raise ValueError(
                    f"{name} must be in [{min(fa, fb)!r}, {max(fa, fb)!r}] for {self!r}; "
                    f"got {float(v)!r}. The value is outside the model's range."
                )
            out[idx] = np.exp(
                optimize.brentq(lambda t, v=v: F(t) - v, a, b, xtol=1e-13, rtol=1e-13)
            )
        return out

    def scale_from_invariant(self, value: Any) -> np.ndarray:
        """Invert :meth:`expected_invariant` (bracketed root finder); shape of ``value``.

        Raises
        ------
        ValueError
            If a value is outside the family's range (e.g. E cosh d < 1).
        """
        if isinstance(self.space, Euclidean):  # the invariant is E d^2 itself there
            return self.scale_from_expected_sq_dist(value)
        return self._invert(
            lambda s: float(self.expected_invariant(s)), value, "expected_invariant"
        )

    def scale_from_expected_sq_dist(self, value: Any) -> np.ndarray:
        """Invert :meth:`expected_sq_dist` (bracketed root finder); shape of ``value``."""
        return self._invert(
            lambda s: float(self.expected_sq_dist(s)), value, "expected_sq_dist"
        )

    def pair_expected_sq_dist(self, scale_a: Any, scale_b: Any) -> np.ndarray:
        """E d^2(lambda_a, lambda_b) for independent draws around a common ``y``.

        By isotropy the law of ``d(lambda_a, lambda_b)`` depends only on the two
        parameters: with radii ``r_a, r_b`` and ``t = <u_a, u_b>`` the cosine of the
        angle between independent uniform directions (density proportional to
        ``(1 - t^2)^((dim - 3)/2)``), the law of cosines gives the distance. The 3-D
        expectation is a product Gauss rule (radial rules x Gauss-Jacobi in ``t``),
        vectorized over pairs: one batched radial rule per distinct parameter and one
        angle-integrated kernel per block of pairs (:func:`_angle_integrated_sq_dist`).
        :func:`_reference_pair_expected_sq_dist` is the same rule evaluated one
        parameter at a time (kept to check this one against).

        Parameters
        ----------
        scale_a, scale_b : array-like of the same shape (...)

        Returns
        -------
        pair_sq_dist : ndarray of shape (...)
        """
        return self._pair_map(scale_a, scale_b, grad=False)[0]

    def _pair_map(self, scale_a: Any, scale_b: Any, *, grad: bool):
        """(pair map, d/d log scale_a, d/d log scale_b); the derivatives None without grad.

        The derivatives use that the radial law is an exponential family in ``r^2``
        (density ``exp(-theta r^2)`` or ``exp(-r^2 / (2 sigma2))`` times a
        parameter-free volume factor): ``d E f(r) / d log s = c(s) Cov(f(r), r^2)``
        with ``c = -theta`` or ``1 / (2 sigma2)``, evaluated with the map's own
        quadrature at no extra cost.
        """
        sa, sb = np.broadcast_arrays(
            self._check_scale(scale_a), self._check_scale(scale_b)
        )
        t, wt = _angle_rule(self.space.dim)
        flat_a, flat_b = sa.ravel(), sb.ravel()
        # one batched rule per distinct parameter (an LF's parameter enters many pairs)
        uniq, inv = np.unique(np.r_[flat_a, flat_b], return_inverse=True)
        R, W = self._radial_rules(uniq, _N_RADIAL)
        # nodes of negligible weight (the last of the far tail) change the sums by
        # less than 1e-13 relative
        keep = (W > 1e-16 * W.max(axis=1, keepdims=True)).any(axis=0)
        R, W = R[:, keep], W[:, keep]
        ia, ib = inv[: flat_a.size], inv[flat_a.size :]
        out, ga, gb = (
            np.empty(flat_a.size),
            np.empty(flat_a.size),
            np.empty(flat_a.size),
        )
        for start in range(0, flat_a.size, _PAIR_CHUNK):  # bounds the 4-D temporary
            sl = slice(start, start + _PAIR_CHUNK)
            K = _angle_integrated_sq_dist(self.space, R[ia[sl]], R[ib[sl]], t, wt)
            wa, wb = W[ia[sl]], W[ib[sl]]
            kb = np.einsum("pij,pj->pi", K, wb)  # E over r_b at each node of r_a
            out[sl] = np.einsum("pi,pi->p", wa, kb)
            if grad:
                ra2, rb2 = R[ia[sl]] ** 2, R[ib[sl]] ** 2
                ka = np.einsum("pi,pij->pj", wa, K)
                ga[sl] = np.einsum("pi,pi,pi->p", wa, kb, ra2) - out[sl] * np.einsum(
                    "pi,pi->p", wa, ra2
                )
                gb[sl] = np.einsum("pj,pj,pj->p", wb, ka, rb2) - out[sl] * np.einsum(
                    "pj,pj->p", wb, rb2
                )
        if not grad:
            return out.reshape(sa.shape), None, None
        ga, gb = ga * self._grad_factor(flat_a), gb * self._grad_factor(flat_b)
        return out.reshape(sa.shape), ga.reshape(sa.shape), gb.reshape(sa.shape)

    def _grad_factor(self, scale: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError


class WrappedNormal(_ManifoldNoise):
    """Wrapped normal: ``lambda = exp_y(v)``, ``v`` tangent Gaussian, variance ``sigma2``.

    Parameters
    ----------
    space : Euclidean, Sphere or Hyperbolic

    Notes
    -----
    ``r = |v| = sigma chi_dim``. On H^d, ``E d^2 = d sigma2`` and
    ``E cosh d = 1F1(d/2; 1/2; sigma2/2)``; on S^d, ``E cos d = 1F1(d/2; 1/2; -sigma2/2)``
    exactly (cos is even and 2 pi-periodic, so folding does not change it) and ``E d^2``
    is a quadrature of the folded radius ``arccos(cos r)``. See the module docstring for
    the sphere's identifiability bound ``scale_bounds``.

    Examples
    --------
    >>> from snorkel_structured.spaces.manifolds import Hyperbolic
    >>> wn = WrappedNormal(Hyperbolic(5))
    >>> float(wn.expected_sq_dist(2.0))
    10.0
    >>> round(float(wn.scale_from_invariant(wn.expected_invariant(2.0))), 10)
    2.0
    """

    parameter_name = "sigma2"

    @property
    def scale_bounds(self) -> tuple[float, float]:
        """``(0, inf)``, or ``(0, sigma2_max]`` on the sphere (first zero of E cos d)."""
        if isinstance(self.space, Sphere):
            return (0.0, _sphere_sigma2_max(self.space.dim))
        return (0.0, np.inf)

    def radial_rule(self, scale: float, n_nodes: int = 64):
        """Generalized Gauss-Laguerre nodes for ``r = sigma sqrt(2u)``, u ~ Gamma(d/2)."""
        u, w = _genlaguerre(n_nodes, self.space.dim / 2.0 - 1.0)
        return np.sqrt(2.0 * scale * u), w

    def _radial_rules(self, scales, n_nodes: int = 64):
        u, w = _genlaguerre(n_nodes, self.space.dim / 2.0 - 1.0)
        s = np.asarray(scales, dtype=np.float64)[:, None]
        return np.sqrt(2.0 * s * u), np.broadcast_to(w, (s.shape[0], n_nodes))

    def _sample_radius(self, scale, rng):
        chi2 = rng.chisquare(self.space.dim, size=scale.shape)
        return np.sqrt(scale * chi2)

    def expected_invariant(self, scale):
        """E cosh d (H), E cos d (S) or E d^2 (R) (closed forms); shape of ``scale``."""
        s = self._check_scale(scale)
        d = self.space.dim
        if isinstance(self.space, Hyperbolic):
            # 1F1(d/2; 1/2; x) > e^x overflows past x = 710; scipy's series then
            # takes time linear in x (it never returned at sigma2 = 1e300)
            arr = np.asarray(s, dtype=np.float64)
            out = np.full(arr.shape, np.inf)
            finite = arr / 2.0 <= 750.0
            out[finite] = special.hyp1f1(d / 2.0, 0.5, arr[finite] / 2.0)
            return out if out.ndim else out[()]
        if isinstance(self.space, Sphere):
            # Kummer: 1F1(a; b; -x) = e^-x 1F1(b - a; b; x), accurate for large x.
            return np.exp(-s / 2.0) * special.hyp1f1(0.5 - d / 2.0, 0.5, s / 2.0)
        return d * s

    def expected_sq_dist(self, scale):
        """E d^2(lambda, y): ``dim * sigma2``, or a quadrature on the sphere."""
        s = self._check_scale(scale)
        if not isinstance(self.space, Sphere):
            return self.space.dim * s
        return np.vectorize(
            lambda v: _sphere_wrapped_sq_dist(self.space.dim, v), otypes=[float]
        )(s)

    def scale_from_expected_sq_dist(self, value):
        """Invert :meth:`expected_sq_dist`; closed form off the sphere."""
        if isinstance(self.space, Sphere):
            return super().scale_from_expected_sq_dist(value)
        value = np.asarray(value, dtype=np.float64)
        if np.any(~(value > 0)):
            raise ValueError(
                f"expected_sq_dist must be positive for {self!r}; got {float(value.ravel()[~(value.ravel() > 0)][0])!r}."
            )
        return value / self.space.dim

    def _grad_factor(self, scale):
        return 0.5 / scale

    def pair_expected_sq_dist(self, scale_a, scale_b):
        """E d^2(lambda_a, lambda_b); ``dim (sigma2_a + sigma2_b)`` on Euclidean space."""
        if isinstance(self.space, Euclidean):
            sa, sb = self._check_scale(scale_a), self._check_scale(scale_b)
            return self.space.dim * (sa + sb)
        return super().pair_expected_sq_dist(scale_a, scale_b)


@functools.lru_cache(maxsize=32)
def _genlaguerre(n_nodes: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    u, w = special.roots_genlaguerre(n_nodes, alpha)
    return u, w / w.sum()


def _sphere_wrapped_sq_dist(dim: int, sigma2: float) -> float:
    """E arccos(cos(sigma chi_dim))^2 by adaptive quadrature split at the folds."""
    sigma = np.sqrt(sigma2)
    logc = -(dim / 2.0 - 1.0) * np.log(2.0) - special.gammaln(dim / 2.0)

    def f(x):  # chi_dim density times folded squared distance
        r = sigma * x
        folded = np.abs(np.mod(r + np.pi, 2 * np.pi) - np.pi)
        return (
            np.exp(logc + (dim - 1) * np.log(x) - x * x / 2.0) * folded**2
            if x > 0
            else 0.0
        )

    upper = np.sqrt(dim) + 12.0
    breaks = np.arange(np.pi, sigma * upper, np.pi) / sigma
    edges = np.concatenate([[0.0], breaks, [upper]])
    return float(
        sum(
            integrate.quad(f, a, b, epsabs=1e-13, epsrel=1e-11)[0]
            for a, b in zip(edges[:-1], edges[1:], strict=True)
        )
    )


_SIGMA2_MAX: dict[int, float] = {}


def _sphere_sigma2_max(dim: int) -> float:
    if dim not in _SIGMA2_MAX:

        def g(s):
            return np.exp(-s / 2.0) * special.hyp1f1(0.5 - dim / 2.0, 0.5, s / 2.0)

        hi = 1.0
        while g(hi) > 0:
            hi *= 2.0
        _SIGMA2_MAX[dim] = float(optimize.brentq(g, 1e-12, hi, xtol=1e-14))
    return _SIGMA2_MAX[dim]


class RiemannianGaussian(_ManifoldNoise):
    """Riemannian Gaussian: density proportional to ``exp(-theta d^2(lambda, y))``.

    Parameters
    ----------
    space : Euclidean, Sphere or Hyperbolic

    Notes
    -----
    The parameter is ``theta > 0`` (larger = more accurate). Radial density
    ``exp(-theta r^2) sinh^(d-1) r`` (H^d), ``exp(-theta r^2) sin^(d-1) r`` on ``[0, pi]``
    (S^d), and on R^d a Gaussian with variance ``1/(2 theta)`` per coordinate. Moments
    by Gauss-Legendre quadrature of the radial density; exact rejection sampling.

    Examples
    --------
    >>> from snorkel_structured.spaces.manifolds import Euclidean
    >>> rg = RiemannianGaussian(Euclidean(3))
    >>> round(float(rg.expected_sq_dist(0.5)), 12)
    3.0
    """

    parameter_name = "theta"

    def _log_density(self, r, theta):
        d = self.space.dim
        if isinstance(self.space, Hyperbolic):
            # log sinh r = r + log1p(-e^{-2r}) - log 2, stable for large r
            ls = r + np.log(-np.expm1(-2.0 * r)) - np.log(2.0)
        elif isinstance(self.space, Sphere):
            ls = np.log(np.sin(r))
        else:
            ls = np.log(r)
        with np.errstate(invalid="ignore"):
            return -theta * r * r + (d - 1) * np.where(d > 1, ls, 0.0)

    def _mode(self, theta):
        """Mode of the radial density (vectorized, on the decreasing score).

        Bisection in log r (the bracket spans many decades) down to ~0.5% and then
        safeguarded Newton steps: the moments call this for every parameter the root
        finders try, and 80 plain bisection steps dominated their cost.
        """
        theta = np.asarray(theta, dtype=np.float64)
        d = self.space.dim
        if d == 1:
            return np.zeros_like(theta)
        if isinstance(self.space, Euclidean):
            return np.sqrt((d - 1) / (2.0 * theta))
        if isinstance(self.space, Sphere):
            lo, hi = np.full(theta.shape, 1e-12), np.full(theta.shape, np.pi / 2)
            score = lambda r: -2 * theta * r + (d - 1) / np.tan(r)  # noqa: E731
            slope = lambda r: -2 * theta - (d - 1) / np.sin(r) ** 2  # noqa: E731
        else:
            a = (d - 1) / (2.0 * theta)
            lo, hi = np.full(theta.shape, 1e-12), a + np.sqrt(a) + 1.0
            score = lambda r: -2 * theta * r + (d - 1) / np.tanh(r)  # noqa: E731
            slope = lambda r: -2 * theta - (d - 1) / np.sinh(r) ** 2  # noqa: E731
        for _ in range(14):
            mid = np.sqrt(lo * hi)
            pos = score(mid) > 0
            lo, hi = np.where(pos, mid, lo), np.where(pos, hi, mid)
        r = np.sqrt(lo * hi)
        with np.errstate(over="ignore"):  # sinh^2 r = inf far out: the term is 0
            for _ in range(6):
                r = np.clip(r - score(r) / slope(r), lo, hi)
        return r

    def _kappa(self, theta):
        extra = self.space.dim - 1 if isinstance(self.space, Sphere) else 0.0
        return 2.0 * theta + extra

    def radial_rule(self, scale: float, n_nodes: int = _N_LEGENDRE):
        """Gauss-Legendre nodes/weights for the normalized radial density."""
        r, w = self._radial_rules(np.array([float(scale)]), n_nodes)
        return r[0], w[0]

    def _radial_rules(self, scales, n_nodes: int = _N_LEGENDRE):
        """Gauss-Legendre rules on ``[0, mode + 8 / sqrt(kappa / 2)]``, one row per theta.

        Vectorized over ``theta`` (one mode search for all, cached Legendre nodes) and
        memoized per exact ``theta``: a least-squares step evaluates the same
        parameters for the residual, the Jacobian and the labeled-row moments.
        """
        theta = np.asarray(scales, dtype=np.float64).ravel()
        cache = _RULE_CACHE.setdefault((self.space, n_nodes), {})
        wanted = list(dict.fromkeys(theta.tolist()))
        if len(cache) + len(wanted) > _RULE_CACHE_SIZE:
            cache.clear()  # before listing what is missing: entries still needed go too
        missing = [v for v in wanted if v not in cache]
        if missing:
            r, w = self._compute_radial_rules(np.array(missing), n_nodes)
            r.setflags(write=False)
            w.setflags(write=False)
            cache.update(zip(missing, zip(r, w, strict=True), strict=True))
        rows = [cache[v] for v in theta.tolist()]
        if not rows:
            return np.zeros((0, n_nodes)), np.zeros((0, n_nodes))
        return np.stack([r for r, _ in rows]), np.stack([w for _, w in rows])

    def _compute_radial_rules(self, theta: np.ndarray, n_nodes: int):
        # the mode does not depend on n_nodes: the 40-node pair rules and the
        # 160-node moment rules of one theta share it
        modes = _MODE_CACHE.setdefault(self.space, {})
        wanted = list(dict.fromkeys(theta.tolist()))
        if len(modes) + len(wanted) > _RULE_CACHE_SIZE:
            modes.clear()
        todo = [v for v in wanted if v not in modes]
        if todo:
            modes.update(zip(todo, self._mode(np.array(todo)).tolist(), strict=True))
        mode = np.array([modes[v] for v in theta.tolist()])[:, None]
        theta = theta[:, None]
        upper = mode + 8.0 / np.sqrt(self._kappa(theta) / 2.0)
        if isinstance(self.space, Sphere):
            upper = np.minimum(upper, np.pi)
        x, w = _legendre(n_nodes)
        r = 0.5 * upper * (x + 1.0)
        logf = self._log_density(r, theta)
        logf = np.where(np.isfinite(logf), logf, -np.inf)
        dens = w * np.exp(logf - logf.max(axis=1, keepdims=True))
        return r, dens / dens.sum(axis=1, keepdims=True)

    def _sample_radius(self, scale, rng):
        theta = np.asarray(scale, dtype=np.float64)
        if isinstance(self.space, Euclidean):
            return np.sqrt(
                rng.chisquare(self.space.dim, size=theta.shape) / (2.0 * theta)
            )
        flat = theta.ravel()
        uniq, inv = np.unique(flat, return_inverse=True)  # few distinct parameters
        umode = self._mode(uniq)
        mode, kappa = umode[inv], self._kappa(flat)
        if self.space.dim > 1:
            logf_mode = self._log_density(umode, uniq)[inv]
        else:
            logf_mode = np.zeros_like(flat)
        upper = np.pi if isinstance(self.space, Sphere) else np.inf
        # An envelope wider than the sphere's [0, pi] (S^1 at theta below about 0.05)
        # accepts about pi sqrt(theta) of its draws (10 draws took 25 s at 1e-12):
        # there a uniform proposal on [0, pi] under the density's maximum instead.
        wide = kappa * upper**2 < 1.0
        out = np.full(flat.shape, np.nan)
        todo = np.arange(flat.size)
        while todo.size:
            r = mode[todo] + rng.standard_normal(todo.size) / np.sqrt(kappa[todo])
            w = wide[todo]
            if w.any():
                r[w] = rng.uniform(0.0, upper, int(w.sum()))
            inside = (r > 0) & (r < upper)
            with np.errstate(invalid="ignore", divide="ignore"):
                log_ratio = (
                    self._log_density(np.where(inside, r, 1.0), flat[todo])
                    - logf_mode[todo]
                    + np.where(w, 0.0, 0.5 * kappa[todo] * (r - mode[todo]) ** 2)
                )
            accept = inside & (np.log(rng.random(todo.size)) < log_ratio)
            out[todo[accept]] = r[accept]
            todo = todo[~accept]
        return out.reshape(theta.shape)

    def expected_sq_dist(self, scale):
        """E d^2(lambda, y); ``dim / (2 theta)`` on Euclidean space."""
        if isinstance(self.space, Euclidean):
            return self.space.dim / (2.0 * self._check_scale(scale))
        return super().expected_sq_dist(scale)

    def expected_invariant(self, scale):
        """E cosh d (H), E cos d (S) or E d^2 (R); shape of ``scale``."""
        if isinstance(self.space, Euclidean):
            return self.expected_sq_dist(scale)
        return super().expected_invariant(scale)

    def scale_from_expected_sq_dist(self, value):
        """Invert :meth:`expected_sq_dist`; closed form on Euclidean space."""
        if isinstance(self.space, Euclidean):
            value = np.asarray(value, dtype=np.float64)
            if np.any(~(value > 0)):
                raise ValueError(
                    f"expected_sq_dist must be positive for {self!r}; got {float(value.min())!r}."
                )
            return self.space.dim / (2.0 * value)
        return super().scale_from_expected_sq_dist(value)

    def pair_expected_sq_dist(self, scale_a, scale_b):
        """E d^2(lambda_a, lambda_b); ``dim (1/(2 theta_a) + 1/(2 theta_b))`` on R^d."""
        if isinstance(self.space, Euclidean):
            return self.expected_sq_dist(scale_a) + self.expected_sq_dist(scale_b)
        return super().pair_expected_sq_dist(scale_a, scale_b)

    def _grad_factor(self, scale):
        return -scale

    def _expected_sq_dist_and_grad(self, scale):
        """``E d^2`` and its derivative in ``log theta``: ``-theta Var(r^2)``."""
        s = self._check_scale(scale)
        if isinstance(self.space, Euclidean):
            e = self.expected_sq_dist(s)
            return e, -e
        r, w = self._radial_rules(s.ravel())
        r2 = r * r
        e = np.einsum("pn,pn->p", w, r2)
        var = np.einsum("pn,pn->p", w, (r2 - e[:, None]) ** 2)
        return e.reshape(s.shape), (-s.ravel() * var).reshape(s.shape)

    def _pair_expected_sq_dist_and_grad(self, scale_a, scale_b):
        """Pair map and its derivatives in ``log theta_a``, ``log theta_b``.

        The exponential-family identity (see ``_pair_map``) on the map's own
        quadrature. The pair fit uses it as its Jacobian for this family: the fitted
        parameters agree with finite differences to ~1e-8 relative on synthetic data
        (H^2, H^5, S^2, S^5) at a third of the cost. (Not for the wrapped normal on the
        sphere, whose Laguerre rule is too coarse at large sigma2 for the two to
        agree.)
        """
        if isinstance(self.space, Euclidean):
            ea, eb = self.expected_sq_dist(scale_a), self.expected_sq_dist(scale_b)
            return ea + eb, -ea, -eb
        return self._pair_map(scale_a, scale_b, grad=True)


def _reference_pair_expected_sq_dist(
    noise: WrappedNormal | RiemannianGaussian, scale_a: Any, scale_b: Any
) -> np.ndarray:
    """The pair map one parameter at a time (the implementation before vectorizing).

    Same radial and angle rules as ``noise.pair_expected_sq_dist``, evaluated with a
    separate ``radial_rule`` per parameter and the full (pairs, N, N, T) law of
    cosines; kept as the reference the fast path is tested and benchmarked against.
    """
    sa, sb = np.broadcast_arrays(
        noise._check_scale(scale_a), noise._check_scale(scale_b)
    )
    t, wt = _angle_rule(noise.space.dim)
    out = np.empty(sa.size)
    for p, (a, b) in enumerate(zip(sa.ravel(), sb.ravel(), strict=True)):
        ra, wa = noise.radial_rule(float(a), _N_RADIAL)
        rb, wb = noise.radial_rule(float(b), _N_RADIAL)
        d2 = _pair_sq_dist_from_radii(
            noise.space, ra[:, None, None], rb[None, :, None], t[None, None, :]
        )
        out[p] = np.einsum("i,j,k,ijk->", wa, wb, wt, d2)
    return out.reshape(sa.shape)


def _reference_radial_moment(
    noise: RiemannianGaussian, func: Any, scale: float
) -> float:
    """E f(r) under the Riemannian Gaussian by adaptive quadrature (scipy quad).

    An independent check of the Gauss-Legendre moments: the radial density
    ``exp(-theta r^2) vol(r)`` normalized by its own quad integral, on ``[0, pi]``
    (sphere) or ``[0, inf)`` split at the mode.
    """
    theta = float(scale)
    mode = float(noise._mode(np.array(theta)))
    logf_mode = float(noise._log_density(np.array(max(mode, 1e-300)), theta))

    def dens(r: float) -> float:
        with np.errstate(divide="ignore", invalid="ignore"):
            v = float(noise._log_density(np.array(r), theta)) - logf_mode
        return float(np.exp(v)) if np.isfinite(v) else 0.0

    sd = 1.0 / np.sqrt(noise._kappa(theta))
    hi = np.pi if isinstance(noise.space, Sphere) else mode + 40.0 * sd
    pts = sorted({min(max(mode + k * sd, 0.0), hi) for k in (-3, -1, 0, 1, 3)})
    kw = {"points": pts[1:-1] or None, "limit": 200, "epsabs": 0.0, "epsrel": 1e-12}
    z = integrate.quad(dens, 0.0, hi, **kw)[0]
    m = integrate.quad(lambda r: dens(r) * func(r), 0.0, hi, **kw)[0]
    return m / z


NOISE_FAMILIES = {
    "wrapped_normal": WrappedNormal,
    "riemannian_gaussian": RiemannianGaussian,
}


def make_noise(noise: Any, space: Any) -> WrappedNormal | RiemannianGaussian:
    """Resolve ``noise`` (a family name or instance) for ``space``.

    Raises
    ------
    ValueError
        For an unknown name or a noise instance built on another space.
    """
    if isinstance(noise, (WrappedNormal, RiemannianGaussian)):
        if noise.space != space:
            raise ValueError(
                f"noise is defined on {noise.space!r} but the model's space is {space!r}."
            )
        return noise
    if noise not in NOISE_FAMILIES:
        raise ValueError(
            f"noise must be one of {sorted(NOISE_FAMILIES)}; got {noise!r}."
        )
    return NOISE_FAMILIES[noise](space)
