"""Quadrature rules and law-of-cosines kernels of the manifold noise families.

Module-level helpers of :mod:`snorkel_structured.noise.manifold`, which need no noise
class: the graded angle rule between two LFs' directions (``_angle_nodes``), cached
Gauss-Legendre and generalized Gauss-Laguerre nodes, the hyperbolic and spherical law
of cosines for the pair map (``_pair_sq_dist_from_radii`` and its angle-integrated
inner loop ``_angle_integrated_sq_dist``), the wrapped normal's sphere moments
(``_sphere_wrapped_sq_dist``, ``_sphere_sigma2_max``), and the slow reference
implementations the fast paths are tested against (``_reference_pair_expected_sq_dist``,
``_reference_radial_moment``), which take a noise object and call only its methods.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from scipy import integrate, optimize, special

from snorkel_structured.spaces.manifolds import Euclidean, Hyperbolic, Sphere

# Angle nodes of the pair map (see _angle_nodes): on H^d and R^d, and on S^d.
_N_ANGLE = 24
_N_ANGLE_SPHERE = 20
# Half-width of the radial windows, in standard deviations of the density's Gaussian
# envelope: the log-concave densities are below e^(-8^2/2) = 1.3e-14 of their mode
# outside the window.
_WINDOW_SD = 8.0


@functools.lru_cache(maxsize=64)
def _angle_nodes(dim: int, sphere: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nodes ``t = cos(phi)``, ``u = 1 - t`` and weights of the angle between LFs.

    ``phi`` is the angle between independent uniform directions on S^(dim-1), density
    proportional to ``sin^(dim-2) phi`` on [0, pi]. ``u`` is computed as
    ``2 sin^2(phi / 2)``, exact where ``1 - cos(phi)`` would round to 0: on H^d the
    law of cosines multiplies it by ``sinh ra sinh rb``.

    The rule is Gauss-Legendre in ``s`` after a change of variables ``phi(s)`` that
    grades the nodes towards the angle where ``d^2`` is nearly singular, rather than
    Gauss-Jacobi in ``t``, which converges slowly there (max. relative errors of the
    angle average of ``d^2`` over a grid of radii):

    - H^d: ``d^2 ~ log^2(u + eps)`` with ``eps ~ e^(-2 min(ra, rb))``, a log branch
      point next to ``phi = 0``. ``phi = pi s^3`` makes the integrand about
      ``s^2 log^2 s``: 24 nodes give 3.5e-8 on H^2 and 1e-10 on H^3 for any radii
      (24 Gauss-Jacobi nodes in ``t``: 1.7e-3 and 7e-5, near ``ra = rb = 9``). (A
      higher power gains little and puts nodes where ``cos(phi)`` rounds to 1.)
    - S^d (radii in [0, pi]): ``d`` has a square-root branch point next to the
      antipode ``phi = pi`` when ``ra + rb`` is near pi. ``phi = pi (1 - s^3)``: 20
      nodes give 3.9e-9 on S^2 (24 Gauss-Jacobi nodes: 4.3e-4).
    """
    if dim == 1:  # S^0: the directions agree or are opposite
        phi, wphi = np.array([np.pi, 0.0]), np.array([0.5, 0.5])
    else:
        x, w = _legendre(_N_ANGLE_SPHERE if sphere else _N_ANGLE)
        s, w = 0.5 * (x + 1.0), 0.5 * w
        if sphere:
            phi, wphi = np.pi * (1.0 - s**3), 3.0 * np.pi * s**2 * w
        else:
            phi, wphi = np.pi * s**3, 3.0 * np.pi * s**2 * w
        wphi = wphi * np.sin(phi) ** (dim - 2)
    out = np.cos(phi), 2.0 * np.sin(0.5 * phi) ** 2, wphi / wphi.sum()
    for arr in out:  # cached: shared by every caller
        arr.setflags(write=False)
    return out


def _angle_rule(dim: int, sphere: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Nodes/weights for t = <u_a, u_b>, u_a, u_b independent uniform on S^(dim-1).

    The rule of :func:`_angle_nodes` without its ``u`` column.
    """
    t, _, w = _angle_nodes(dim, sphere)
    return t, w


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


def _pair_sq_dist_from_radii(space, ra, rb, t, u=None) -> np.ndarray:
    """d^2(lambda_a, lambda_b) by the law of cosines from radii and cos(angle).

    ``u = 1 - t`` may be passed when known more accurately than ``1 - t`` rounds.
    """
    u = 1.0 - t if u is None else u
    if isinstance(space, Euclidean):
        return ra * ra + rb * rb - 2.0 * ra * rb * t
    if isinstance(space, Hyperbolic):
        # cosh d - 1 = h = 2 sinh^2((ra - rb)/2) + sinh ra sinh rb (1 - t)
        if max(np.max(ra), np.max(rb)) <= _SINH_SAFE:
            h = 2.0 * np.sinh(0.5 * (ra - rb)) ** 2 + np.sinh(ra) * np.sinh(rb) * u
            return (2.0 * np.arcsinh(np.sqrt(np.maximum(h, 0.0) / 2.0))) ** 2
        # Large radii (very noisy LFs, or parameters the optimizer tries): the product
        # of sinh overflows to inf (then inf * 0 weights = NaN). Work with log h:
        # d = arccosh(1 + h) = log(2 h) + O(1/h) once h > e^36.
        with np.errstate(divide="ignore"):
            log_h = np.logaddexp(
                np.log(2.0) + 2.0 * _log_sinh(0.5 * np.abs(ra - rb)),
                _log_sinh(ra) + _log_sinh(rb) + np.log(u),
            )
        big = log_h > 36.0
        d = np.log(2.0) + log_h
        if not big.all():  # (all big when both radii are past _SINH_SAFE)
            small_d = 2.0 * np.arcsinh(np.sqrt(np.exp(np.minimum(log_h, 36.0)) / 2.0))
            d = np.where(big, d, small_d)
        return d**2
    # sphere: 1 - cos d = 2 sin^2((ra - rb)/2) + sin ra sin rb (1 - t)
    h = 2.0 * np.sin(0.5 * (ra - rb)) ** 2 + np.sin(ra) * np.sin(rb) * u
    return (2.0 * np.arcsin(np.sqrt(np.clip(h / 2.0, 0.0, 1.0)))) ** 2


def _angle_integrated_sq_dist(space, ra, rb, t, wt, u=None) -> np.ndarray:
    """``sum_k wt_k d^2(ra_i, rb_j, t_k)`` for radii ``ra`` (P, N) and ``rb`` (P, M).

    The same law of cosines as :func:`_pair_sq_dist_from_radii`, arranged so that
    every term not involving the angle is computed on the (P, N, M) grid and the
    (P, N, M, T) array sees only five operations: this is the inner loop of the
    pair map. ``rb`` may also be (P, N, M) or (P, 1, M) (nodes ``rb_ij`` per node
    ``ra_i``). ``u = 1 - t`` as in :func:`_pair_sq_dist_from_radii`. Returns shape
    (P, N, M).
    """
    ra, rb = ra[:, :, None], (rb[:, None, :] if rb.ndim == 2 else rb)
    u = 1.0 - t if u is None else u
    if max(np.max(ra), np.max(rb)) > _SINH_SAFE and isinstance(space, Hyperbolic):
        return (
            _pair_sq_dist_from_radii(
                space, ra[..., None], rb[..., None], t[None, None, None, :], u
            )
            @ wt
        )
    u = u[None, None, None, :]
    if isinstance(space, Euclidean):  # exact: E_t d^2 = ra^2 + rb^2 - 2 ra rb E t
        return ra * ra + rb * rb - 2.0 * ra * rb * float(np.dot(wt, t))
    if isinstance(space, Hyperbolic):
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


def _reference_pair_expected_sq_dist(
    noise: Any, scale_a: Any, scale_b: Any
) -> np.ndarray:
    """The pair map one pair at a time (the implementation before vectorizing).

    Same radial and angle rules as ``noise.pair_expected_sq_dist`` (built for one
    parameter at a time, with the sphere's ``r_b`` rule split per node of ``r_a``),
    evaluated with the full (N, M, T) law of cosines of
    :func:`_pair_sq_dist_from_radii`; kept as the reference the fast path is tested
    and benchmarked against. ``noise`` is a ``WrappedNormal`` or
    ``RiemannianGaussian``; only its methods are called.
    """
    sa, sb = np.broadcast_arrays(
        noise._check_scale(scale_a), noise._check_scale(scale_b)
    )
    sphere = isinstance(noise.space, Sphere)
    t, u, wt = _angle_nodes(noise.space.dim, sphere)
    out = np.empty(sa.size)
    for p, (a, b) in enumerate(zip(sa.ravel(), sb.ravel(), strict=True)):
        if sphere and noise._less_noise * (a - b) < 0:  # as in the fast path
            a, b = b, a
        ra, wa = (v[0] for v in noise._pair_radial_rules(np.array([float(a)])))
        scale_b = np.array([float(b)])
        if sphere:
            lo, hi = noise._bulk_window(scale_b)
            cut = np.pi - ra[None]
            rb, wb = (v[0] for v in noise._split_rules(scale_b, lo, hi, cut))
        else:
            rb, wb = (
                np.broadcast_to(v, (ra.size, v.shape[1]))
                for v in noise._pair_radial_rules(scale_b)
            )
        d2 = _pair_sq_dist_from_radii(
            noise.space, ra[:, None, None], rb[:, :, None], t[None, None, :], u
        )
        out[p] = np.einsum("i,ij,k,ijk->", wa, wb, wt, d2)
    return out.reshape(sa.shape)


def _reference_radial_moment(noise: Any, func: Any, scale: float) -> float:
    """E f(r) under the Riemannian Gaussian by adaptive quadrature (scipy quad).

    An independent check of the Gauss-Legendre moments: the radial density
    ``exp(-theta r^2) vol(r)`` normalized by its own quad integral, on ``[0, pi]``
    (sphere) or ``[0, inf)`` split at the mode. ``noise`` is a ``RiemannianGaussian``;
    only its methods are called.
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
