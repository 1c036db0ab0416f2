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
  on its bulk ``[max(0, r* - 8 s), r* + 8 s]`` (``r*`` the mode, ``s = 1/sqrt(kappa)``;
  the density is below ``e^-32`` of the mode outside), monotone in ``theta``; E cosh d
  on H^d, whose integrand ``cosh r`` moves the bulk by about ``1/(2 theta)``, on a
  window around its own mode, in log space (``inf`` past the float range). Sampling
  is exact rejection sampling from the Gaussian envelope
  ``log f(r) <= log f(r*) - kappa (r - r*)^2 / 2`` (``kappa = 2 theta``, or
  ``2 theta + d - 1`` on the sphere), which holds because ``(log f)'' <= -kappa``.

The pair map uses Gauss-Legendre rules on the bulk of each radial density (for the
wrapped normal, of ``sigma chi_d``, folded into [0, pi] on the sphere), split where the
distance has a kink, and a rule in the angle graded towards its near-singular end (see
``_manifold_rules._angle_nodes``): about 1e-8 relative or better for both families on
H^d and S^d.

On H^d, points farther than ``Hyperbolic.max_radius`` (about 31.9) from the origin
cannot be represented in float64, so ``sample`` refuses parameters for which one of
its draws would pass it with probability above 0.05 (e.g. ``theta < 0.0372`` for
200,000 draws on H^2), naming the noisiest parameter it can sample that many times.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import optimize, special

from snorkel_structured.noise._manifold_pair import PairMapMethods
from snorkel_structured.noise._manifold_rules import (
    _WINDOW_SD,
    _genlaguerre,
    _legendre,
    _sphere_sigma2_max,
    _sphere_wrapped_sq_dist,
)
from snorkel_structured.noise._manifold_rules import (  # benchmarks use it from here
    _reference_pair_expected_sq_dist as _reference_pair_expected_sq_dist,
)
from snorkel_structured.noise._manifold_sampling import SamplingMethods
from snorkel_structured.spaces.manifolds import Euclidean, Hyperbolic, Sphere

__all__ = ["RiemannianGaussian", "WrappedNormal", "make_noise"]

_N_LEGENDRE = 160  # nodes for 1-D moments of the Riemannian Gaussian
# Riemannian Gaussian radial rules memoized per (space, n_nodes) and exact theta;
# cleared when full (rules are 2 x n_nodes floats: 4096 x 160 nodes = 10 MB)
_RULE_CACHE: dict = {}
_MODE_CACHE: dict = {}
_RULE_CACHE_SIZE = 4096


def _check_space(space: Any, family: str) -> None:
    if not isinstance(space, (Euclidean, Sphere, Hyperbolic)):
        raise ValueError(
            f"space must be a Euclidean, Sphere or Hyperbolic instance for {family}; got "
            f"{space!r}. For a ProductManifold, fit each factor separately."
        )


class _ManifoldNoise(PairMapMethods, SamplingMethods):
    """Shared: value-object protocol, moments and their inverses, radial rules; the pair
    map and sampling are mixins (``_manifold_pair``, ``_manifold_sampling``)."""

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

    @property
    def _less_noise(self) -> float:
        """+1 if a larger parameter is less noisy (theta), -1 if more (sigma2)."""
        return 1.0 if isinstance(self, RiemannianGaussian) else -1.0

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

    # --- radial rules (the pair map's, the Riemannian Gaussian's moments) -------------
    def _log_density(self, r, scale):  # pragma: no cover
        """Unnormalized log density of the distance ``d(lambda, y)`` at ``r``."""
        raise NotImplementedError

    def _bulk_window(
        self, scale: np.ndarray, width: float = _WINDOW_SD
    ) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover
        """``(lo, hi)`` per parameter of a 1-D array: the radial density's bulk."""
        raise NotImplementedError

    def _log_rules(self, scale, lo, hi, n_nodes: int, *, tilt: bool = False):
        """Nodes and log-weights of ``int_lo^hi f(r) [cosh r] dr`` (Gauss-Legendre).

        ``scale``, ``lo``, ``hi`` of one shape ``S``; nodes and weights of shape
        ``S + (n_nodes,)``. ``f`` is the unnormalized radial density (times ``cosh r``
        with ``tilt``), so ``logsumexp(logw, axis=-1)`` is the log of the integral.
        Empty intervals (``lo == hi``) get weights of -inf.
        """
        scale, lo, hi = scale[..., None], lo[..., None], hi[..., None]
        x, w = _legendre(n_nodes)
        r = lo + 0.5 * (hi - lo) * (x + 1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            logw = np.log(0.5 * (hi - lo) * w) + self._log_density(r, scale)
            if tilt:  # log cosh r = r + log1p(e^-2r) - log 2, without overflow
                logw = logw + r + np.log1p(np.exp(-2.0 * r)) - np.log(2.0)
        return r, np.where(np.isfinite(logw), logw, -np.inf)


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
    _folded_sphere_rules = True  # the pair map's rules on S^d: the folded radius

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

    def _log_density(self, r, sigma2):
        """log of the density of ``d(lambda, y)``, unnormalized.

        ``r^(d-1) e^(-r^2 / (2 sigma2))`` (``sigma chi_d``) on H^d and R^d. On S^d the
        distance is the folded radius ``arccos(cos r)`` in [0, pi], and the direction
        of ``lambda`` stays uniform and independent of it (``-u`` where ``sin r < 0``),
        so the pair map can use the folded law, a sum over the windings ``2 k pi +-
        rho``: then its only kink is at ``rho_a + rho_b = pi``, like the Riemannian
        Gaussian's (the unfolded radius has one at every multiple of pi).
        """
        d = self.space.dim

        def log_chi(x):
            with np.errstate(divide="ignore"):
                vol = (d - 1) * np.log(x) if d > 1 else 0.0
            return vol - x * x / (2.0 * sigma2)

        out = log_chi(r)
        if not isinstance(self.space, Sphere):
            return out
        # the windings 2 k pi - rho in [(2k - 1) pi, 2k pi] and 2 k pi + rho in
        # [2k pi, (2k + 1) pi] that reach into the bulk
        reach = float(np.sqrt(np.max(sigma2)) * (np.sqrt(d - 1.0) + _WINDOW_SD))
        k = 1
        while (2 * k - 1) * np.pi < reach:
            out = np.logaddexp(out, log_chi(2.0 * np.pi * k - r))
            if 2 * k * np.pi < reach:
                out = np.logaddexp(out, log_chi(2.0 * np.pi * k + r))
            k += 1
        return out

    def _bulk_window(
        self, sigma2: np.ndarray, width: float = _WINDOW_SD
    ) -> tuple[np.ndarray, np.ndarray]:
        # sigma chi_d is log-concave with (log f)'' <= -1/sigma2: mode +- c sigma
        sigma = np.sqrt(np.asarray(sigma2, dtype=np.float64))
        mode = sigma * np.sqrt(self.space.dim - 1.0)
        lo, hi = np.maximum(mode - width * sigma, 0.0), mode + width * sigma
        if isinstance(self.space, Sphere):
            # radii past pi fold back: to 2 pi - hi, or anywhere past 2 pi
            folds = hi > np.pi
            lo = np.where(folds, np.maximum(np.minimum(lo, 2.0 * np.pi - hi), 0.0), lo)
            hi = np.minimum(hi, np.pi)
        return lo, hi

    def _log_radius_tail(self, scale: np.ndarray, radius: float) -> np.ndarray:
        # P(sigma chi_d > R) = Q(d/2, R^2 / (2 sigma2)), the regularized upper gamma
        x = radius**2 / (2.0 * np.asarray(scale, dtype=np.float64).ravel())
        with np.errstate(divide="ignore"):
            return np.log(special.gammaincc(self.space.dim / 2.0, x))

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
    by Gauss-Legendre quadrature of the radial density on its bulk (E cosh d on H^d in
    log space, ``inf`` below theta ~ ``(2 dim - 1) / 2840``); exact rejection sampling.

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

    def _mode(self, theta, *, tilt: bool = False):
        """Mode of the radial density (vectorized, on the decreasing score).

        Bisection in log r (the bracket spans many decades) down to ~0.5% and then
        safeguarded Newton steps: the moments call this for every parameter the root
        finders try, and 80 plain bisection steps dominated their cost.

        ``tilt=True`` (H^d, ``dim >= 2``): the mode of the density times ``cosh r``,
        the integrand of E cosh d (its score gains ``tanh r``; it is still decreasing,
        as ``(d - 1) / sinh^2 r > 1 / cosh^2 r``).
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
            # score <= -2 theta r + (d - 1)(1 + 1/r) + tilt < 0 at hi
            a = (d - 1 + tilt) / (2.0 * theta)
            lo, hi = np.full(theta.shape, 1e-12), a + np.sqrt(a) + 1.0
            score = lambda r: (  # noqa: E731
                -2 * theta * r + (d - 1) / np.tanh(r) + (np.tanh(r) if tilt else 0.0)
            )
            slope = lambda r: (  # noqa: E731
                -2 * theta
                - (d - 1) / np.sinh(r) ** 2
                + (1.0 / np.cosh(r) ** 2 if tilt else 0.0)
            )
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
        """Gauss-Legendre rules on the bulk (:meth:`_window`), one row per theta.

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
        lo, hi = self._bulk_window(theta)
        r, logw = self._log_rules(theta, lo, hi, n_nodes)
        w = np.exp(logw - logw.max(axis=1, keepdims=True))
        return r, w / w.sum(axis=1, keepdims=True)

    def _pair_radial_rules(self, scales: np.ndarray):
        return self._radial_rules(scales, self._n_radial[0])  # memoized

    def _bulk_window(
        self, theta: np.ndarray, width: float = _WINDOW_SD
    ) -> tuple[np.ndarray, np.ndarray]:
        # the mode does not depend on n_nodes: the pair rules and the 160-node
        # moment rules of one theta share it
        modes = _MODE_CACHE.setdefault(self.space, {})
        wanted = list(dict.fromkeys(theta.tolist()))
        if len(modes) + len(wanted) > _RULE_CACHE_SIZE:
            modes.clear()
        todo = [v for v in wanted if v not in modes]
        if todo:
            modes.update(zip(todo, self._mode(np.array(todo)).tolist(), strict=True))
        return self._window(theta, np.array([modes[v] for v in theta.tolist()]), width)

    def _window(
        self, theta: np.ndarray, mode: np.ndarray, width: float = _WINDOW_SD
    ) -> tuple[np.ndarray, np.ndarray]:
        """Bulk ``[max(0, m - c s), m + c s]`` of a radial integrand with mode ``m``.

        ``s = 1 / sqrt(kappa)`` is the sd of the Gaussian envelope (``(log f)'' <=
        -kappa``, also for the tilted ``f cosh`` on H^d, dim >= 2) and ``c = width``;
        clipped to [0, pi] on the sphere. Centred on
        the bulk rather than starting at 0: when the mode is many sd out (H^d at
        small theta: mode ``(d - 1) / (2 theta)``, sd ``1 / sqrt(2 theta)``), a rule
        on ``[0, m + c s]`` spends most nodes where the density is below e^-700 (the
        160-node moments were off by 5e-4 at theta = 1e-5 on H^2, the 40-node pair
        map by 2e-3 at theta = 1e-3 on H^5).
        """
        half = width / np.sqrt(self._kappa(theta))
        lo, hi = np.maximum(mode - half, 0.0), mode + half
        if isinstance(self.space, Sphere):
            hi = np.minimum(hi, np.pi)
        return lo, hi

    def _log_expected_cosh(self, theta: np.ndarray) -> np.ndarray:
        """log E cosh r on H^d for a 1-D array of ``theta``.

        ``cosh r`` tilts the density by ``e^r`` and moves its bulk by about
        ``1 / (2 theta)``: out of the moments' window below theta ~ 1/128 (E cosh d
        was 18x too low at theta = 0.003 on H^2, NaN at 1e-4). So the numerator
        ``int f cosh`` gets its own window around its own mode, and both integrals
        are summed in log space (the value itself overflows below theta ~ 1e-3).
        """
        if self.space.dim == 1:
            # the law of +-r is N(0, 1/(2 theta)), so E cosh r = e^(var / 2)
            return 0.25 / theta
        n = _N_LEGENDRE
        lo, hi = self._bulk_window(theta)
        _, log_z = self._log_rules(theta, lo, hi, n)
        lo, hi = self._window(theta, self._mode(theta, tilt=True))
        _, log_m = self._log_rules(theta, lo, hi, n, tilt=True)
        return special.logsumexp(log_m, axis=1) - special.logsumexp(log_z, axis=1)

    def _log_radius_tail(self, scale: np.ndarray, radius: float) -> np.ndarray:
        theta = np.asarray(scale, dtype=np.float64).ravel()
        lo, hi = self._bulk_window(theta)
        n = _N_LEGENDRE
        _, log_z = self._log_rules(theta, lo, hi, n)
        # beyond the window the density is below e^-32 of its mode: a tail of 0
        # (-inf) there is exact enough for a comparison with sample's level
        start, stop = np.maximum(lo, radius), np.maximum(hi, radius)
        _, log_t = self._log_rules(theta, start, stop, n)
        with np.errstate(divide="ignore"):
            return special.logsumexp(log_t, axis=1) - special.logsumexp(log_z, axis=1)

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
        """E cosh d (H), E cos d (S) or E d^2 (R); shape of ``scale``.

        On H^d, E cosh d grows like ``e^((2 dim - 1) / (4 theta))`` as theta decreases:
        it is ``inf`` once past the float64 range (theta below about
        ``(2 dim - 1) / 2840``, e.g. 1.06e-3 on H^2), as for ``WrappedNormal``.
        Computed in log space (see :meth:`_log_expected_cosh`), so it is accurate up
        to there.
        """
        if isinstance(self.space, Euclidean):
            return self.expected_sq_dist(scale)
        if isinstance(self.space, Hyperbolic):
            s = self._check_scale(scale)
            with np.errstate(over="ignore"):  # inf past the float range, by design
                return np.exp(self._log_expected_cosh(s.ravel())).reshape(s.shape)
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
