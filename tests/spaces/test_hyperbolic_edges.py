"""Hyperbolic space at its numerical edges: spread points, far from the origin, overflow.

References are independent of the code under test: exact arithmetic on the float inputs
(``decimal`` at 80 digits), the hyperbolic law of cosines in polar coordinates with a
multi-start optimizer, symmetry, and the truth that generated synthetic data.
"""

import warnings
from decimal import Decimal, localcontext

import numpy as np
import pytest
from scipy import optimize

from snorkel_structured import Hyperbolic, ManifoldLabelModel
from snorkel_structured.exceptions import ConvergenceWarning
from snorkel_structured.synthetic_manifold import make_manifold_data

EPS = np.finfo(float).eps


def polar_point(radius, angle):
    """Point of H^2 at ``radius`` from the origin in direction ``angle``."""
    return np.array(
        [
            np.cosh(radius),
            np.sinh(radius) * np.cos(angle),
            np.sinh(radius) * np.sin(angle),
        ]
    )


def exact_dist(a, b):
    """d(a, b) in 80-digit decimal arithmetic on the float spatial parts."""
    with localcontext() as ctx:
        ctx.prec = 80
        s = [Decimal(float(v)) for v in a[1:]]
        t = [Decimal(float(v)) for v in b[1:]]
        x0 = (1 + sum(v * v for v in s)).sqrt()
        y0 = (1 + sum(v * v for v in t)).sqrt()
        c = x0 * y0 - sum(u * v for u, v in zip(s, t, strict=True))
        if c <= 1:
            return 0.0
        return float((c + (c * c - 1).sqrt()).ln())


def exact_boost(point, radius, angle):
    """Apply, in exact arithmetic, the boost taking the origin to polar_point(r, angle).

    ``point`` is a float point of H^2 near the origin; the result is rounded to float.
    """
    with localcontext() as ctx:
        ctx.prec = 80
        r, th = Decimal(radius), Decimal(angle)
        # exact-enough cosh/sinh/cos/sin by series at 80 digits
        ch, sh = _cosh_sinh(r)
        c, s = _cos_sin(th)
        u = (c, s)
        p = [Decimal(float(v)) for v in point]
        p[0] = (1 + p[1] * p[1] + p[2] * p[2]).sqrt()
        along = u[0] * p[1] + u[1] * p[2]
        new0 = ch * p[0] + sh * along
        coef = sh * p[0] + (ch - 1) * along
        out = [new0, p[1] + coef * u[0], p[2] + coef * u[1]]
        return np.array([float(v) for v in out])


def _cosh_sinh(x):
    e = x.exp()
    return (e + 1 / e) / 2, (e - 1 / e) / 2


def _cos_sin(x):
    c, s, term, k = Decimal(0), Decimal(0), Decimal(1), 0
    while True:
        if k % 4 == 0:
            c += term
        elif k % 4 == 1:
            s += term
        elif k % 4 == 2:
            c -= term
        else:
            s -= term
        k += 1
        term = term * x / k
        if abs(term) < Decimal(10) ** -85 and k > 10:
            return c, s


# --- item 2: accuracy far from the origin ------------------------------------------------


@pytest.mark.parametrize("radius", [0.5, 5.0, 15.0, 20.0, 25.0, 30.0])
def test_dist_far_from_origin_matches_exact_arithmetic(radius, rng):
    h = Hyperbolic(2)
    a = np.stack([polar_point(radius, th) for th in rng.uniform(0, 2 * np.pi, 40)])
    # neighbours: radial step dr, tangential step dt (intrinsic lengths), near and far
    dr = rng.normal(size=40) * 0.3
    dt = rng.normal(size=40) * np.r_[np.full(20, 0.3), np.full(20, 4.0)]
    theta = np.arctan2(a[:, 2], a[:, 1]) + dt / np.sinh(radius)
    b = np.stack(
        [polar_point(abs(radius + r), th) for r, th in zip(dr, theta, strict=True)]
    )
    a, b = h.projection(a), h.projection(b)
    ref = np.array([exact_dist(p, q) for p, q in zip(a, b, strict=True)])
    d = h.dist(a, b)
    # float64 coordinates at radius R resolve positions to ~eps sinh R; the formula
    # must be exact for the given floats up to that resolution
    tol = 1e-13 + 2 * EPS * np.sinh(radius)
    np.testing.assert_array_less(np.abs(d - ref) / ref, tol)
    np.testing.assert_allclose(h.dist(b, a), d, rtol=1e-15)


@pytest.mark.parametrize("radius", [10.0, 20.0, 30.0])
def test_dist_preserved_by_exact_isometry(radius, rng):
    # a pair near the origin with known distance, moved out by an exact boost: the
    # distance of the rounded images differs only by the coordinates' resolution
    h = Hyperbolic(2)
    angle = rng.uniform(0, 2 * np.pi)
    p = polar_point(0.2, 1.0)
    q = polar_point(0.4, 2.5)
    d0 = exact_dist(p, q)
    P, Q = exact_boost(p, radius, angle), exact_boost(q, radius, angle)
    assert abs(exact_dist(h.origin, P) - radius) < 0.3  # really moved out
    resolution = EPS * np.cosh(radius + 1)
    assert abs(h.dist(P, Q) - d0) <= 4 * resolution + 1e-14


@pytest.mark.parametrize("radius", [20.0, 25.0, 30.0])
def test_exp_log_far_from_origin(radius, rng):
    h = Hyperbolic(2)
    angle = rng.uniform(0, 2 * np.pi)
    y = exact_boost(h.origin, radius, angle)
    p = exact_boost(polar_point(0.3, angle + 1.0), radius, angle)  # d(y, p) = 0.3
    resolution = EPS * np.cosh(radius + 1)
    v = h.log(p, y)
    assert abs(h.norm(v, y) - 0.3) <= 8 * resolution + 1e-14
    back = h.exp(v, y)
    assert h.dist(back, p) <= 8 * resolution + 1e-14
    assert abs(h.dist(y, back) - 0.3) <= 8 * resolution + 1e-14
    # a tangent vector of length 0.3 built at y: exp moves by 0.3 (was 0 / NaN)
    w = h.random_tangent_vec(y, seed=rng)
    w = 0.3 * w / h.norm(w, y)
    assert abs(h.dist(y, h.exp(w, y)) - 0.3) <= 8 * resolution + 1e-14
    assert h.belongs(h.exp(w, y)).all()


def test_belongs_tolerance_is_relative_far_out():
    h = Hyperbolic(2)
    far = h.projection(polar_point(30.0, 0.7))
    assert h.belongs(far)
    off = far.copy()
    off[0] *= 1 + 1e-3
    assert not h.belongs(off)


def test_translate_round_trip_and_isometry(rng):
    h = Hyperbolic(3)
    b = h.random_point(20, scale=8.0, seed=rng)
    x = h.random_point(20, scale=1.0, seed=rng)
    y = h.random_point(20, scale=1.0, seed=rng)
    tx, ty = h.translate(x, b), h.translate(y, b)
    resolution = EPS * np.cosh(h.dist(h.origin, tx) + 2)
    np.testing.assert_array_less(np.abs(h.dist(tx, ty) - h.dist(x, y)), 8 * resolution)
    np.testing.assert_allclose(h.translate(h.origin, b), b, rtol=1e-12)
    back = h.translate(tx, b, inverse=True)
    np.testing.assert_array_less(h.dist(back, x), 8 * resolution)


def test_points_beyond_float_resolution_are_refused():
    h = Hyperbolic(2)
    far = h.projection(polar_point(40.0, 0.3))
    with pytest.raises(ValueError, match="Recentre the data"):
        h.dist(far, h.origin)
    with pytest.raises(ValueError, match="resolve positions"):
        h.log(h.origin, far)
    with pytest.raises(ValueError, match="max_radius"):
        h.exp(np.array([0.0, 40.0, 0.0]), h.origin)
    with pytest.raises(ValueError, match="cosh overflows"):
        h.exp(np.array([0.0, 800.0, 0.0]), h.origin)
    with pytest.raises(ValueError, match="exp\\(v, x\\) lies"):  # result too far
        y = h.projection(polar_point(20.0, 0.0))
        h.exp(-h.log(h.origin, y), y)  # 20 farther out along the ray
    with pytest.raises(ValueError, match="Recentre the data"):
        h.frechet_mean(np.stack([far, h.origin])[None])
    with pytest.raises(ValueError, match="from the origin"):
        make_manifold_data(
            10, space=h, noise_scale=[0.1, 0.1, 0.1], y=polar_point(35.0, 0.0), seed=0
        )


@pytest.mark.parametrize("radius", [20.0, 25.0])
def test_make_manifold_data_far_from_origin_has_the_right_noise(radius):
    h = Hyperbolic(2)
    sigma2 = np.array([0.05, 0.1, 0.2])
    data = make_manifold_data(
        4000, space=h, noise_scale=sigma2, y=polar_point(radius, 1.0), seed=0
    )
    assert np.isfinite(data.X).all() and h.belongs(data.X).all()
    d2 = h.squared_dist(data.X, data.Y[:, None, :])
    # wrapped normal: d^2 = sigma2 chi^2_dim, mean dim sigma2, sd sqrt(2 dim) sigma2
    se = np.sqrt(2 * h.dim) * sigma2 / np.sqrt(d2.shape[0])
    np.testing.assert_array_less(np.abs(d2.mean(axis=0) - h.dim * sigma2), 5 * se)


@pytest.mark.parametrize("radius", [20.0, 25.0])
def test_label_model_recovers_noise_far_from_origin(radius):
    h = Hyperbolic(2)
    sigma2 = np.array([0.05, 0.1, 0.2])
    data = make_manifold_data(
        2000, space=h, noise_scale=sigma2, y=polar_point(radius, 1.0), seed=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        lm = ManifoldLabelModel(h).fit(data.X)
        pred = lm.predict(data.X)
    np.testing.assert_allclose(lm.noise_scale_, sigma2, rtol=0.15)
    lf_err = h.dist(data.X, data.Y[:, None, :]).mean(axis=0)
    assert h.dist(pred, data.Y).mean() < lf_err.min()


# --- item 1: Frechet mean of spread points --------------------------------------------


def _polar_objective(v, radii, angles, weights):
    """1/2 sum w d^2(exp_o(v), p_i) by the hyperbolic law of cosines (independent)."""
    rho, phi = np.hypot(*v), np.arctan2(v[1], v[0])
    c = np.cosh(rho) * np.cosh(radii) - np.sinh(rho) * np.sinh(radii) * np.cos(
        phi - angles
    )
    return 0.5 * np.sum(weights * np.arccosh(np.maximum(c, 1.0)) ** 2)


def _brute_force_mean(radii, angles, weights, rng):
    best = None
    for start in rng.uniform(-12, 12, size=(25, 2)):
        res = optimize.minimize(
            _polar_objective,
            start,
            args=(radii, angles, weights),
            method="BFGS",
            options={"gtol": 1e-12},
        )
        if best is None or res.fun < best.fun:
            best = res
    return best.x, best.fun


def test_frechet_mean_spread_symmetric_configuration_is_the_centre():
    h = Hyperbolic(2)
    rows = []
    for radius in [3.0, 8.0, 10.0, 15.0]:
        for phase in [0.0, 0.4]:
            angles = phase + np.array([0.0, 2.0, 4.0]) * np.pi / 3
            rows.append(np.stack([polar_point(radius, a) for a in angles]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mean = h.frechet_mean(np.stack(rows))
    np.testing.assert_array_less(h.dist(mean, h.origin), 1e-9)


def test_frechet_mean_spread_points_matches_brute_force(rng):
    h = Hyperbolic(2)
    configs = [
        (np.full(3, 10.0), np.array([0.0, 2.0, 4.0]), np.ones(3) / 3),
        (np.full(3, 8.0), np.array([0.0, 2.0, 4.0]), np.ones(3) / 3),
        (
            np.array([12.0, 6.0, 9.0, 3.0]),
            np.array([0.5, 2.0, 3.7, 5.0]),
            np.array([0.1, 0.4, 0.2, 0.3]),
        ),
    ]
    n_max = max(len(c[0]) for c in configs)
    pts = np.full((len(configs), n_max, 3), np.nan)  # NaN rows: absent points
    w = np.zeros((len(configs), n_max))
    for k, (radii, angles, weights) in enumerate(configs):
        pts[k, : len(radii)] = [
            polar_point(r, a) for r, a in zip(radii, angles, strict=True)
        ]
        w[k, : len(radii)] = weights
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mean = h.frechet_mean(pts, w)
    for k, (radii, angles, weights) in enumerate(configs):
        v, f_best = _brute_force_mean(radii, angles, weights, rng)
        ref = h.exp(np.r_[0.0, v], h.origin)
        assert h.dist(mean[k], ref) < 1e-6
        mine = h.log(mean[k], h.origin)[1:]
        assert _polar_objective(mine, radii, angles, weights) <= f_best + 1e-9
    # the spread example of the issue: the minimiser is about 0.1 from the origin
    assert 0.05 < h.dist(mean[0], h.origin) < 0.15


@pytest.mark.parametrize("centre_radius", [0.0, 10.0, 20.0])
def test_frechet_mean_is_stationary(centre_radius, rng):
    h = Hyperbolic(3)
    n, m = 200, 5
    centre = h.exp(np.r_[0.0, centre_radius, 0.0, 0.0], h.origin)
    local = h.random_point(n * m, scale=3.0, seed=rng).reshape(n, m, 4)
    pts = h.translate(local, centre)
    w = rng.uniform(0.0, 1.0, size=(n, m))
    pts[rng.random((n, m)) < 0.2] = np.nan  # abstains
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mean = h.frechet_mean(pts, w)
    assert np.isfinite(mean).all()
    present = ~np.isnan(pts[..., 0])
    wn = np.where(present, w, 0.0)
    logs = h.log(np.where(present[..., None], pts, mean[:, None, :]), mean[:, None, :])
    grad = np.einsum("kn,knd->kd", wn, logs) / wn.sum(axis=1, keepdims=True)
    gnorm = h.norm(grad, mean)
    resolution = 64 * EPS * np.cosh(h.dist(h.origin, mean))
    rms = np.sqrt(
        (
            wn
            * h.squared_dist(
                np.where(present[..., None], pts, mean[:, None]), mean[:, None]
            )
        ).sum(1)
        / wn.sum(1)
    )
    np.testing.assert_array_less(
        gnorm, np.maximum(1e-9, 2 * resolution) * np.maximum(1, rms)
    )
    # batch == one row at a time
    for k in range(3):
        np.testing.assert_allclose(h.frechet_mean(pts[k], w[k]), mean[k], rtol=1e-9)


def test_frechet_mean_unconverged_warns_and_returns_best_point():
    h = Hyperbolic(2)
    pts = np.stack([polar_point(10.0, a) for a in (0.0, 2.0, 4.0)])[None]

    def objective(x):
        return 0.5 * np.mean(h.squared_dist(pts[0], x))

    with pytest.warns(ConvergenceWarning, match="best point found"):
        mean = h.frechet_mean(pts, max_iter=1)
    assert np.isfinite(mean).all()
    # no worse than the best start (an input point or the extrinsic mean)
    starts = list(pts[0]) + [h.projection(pts[0].mean(axis=0))]
    assert objective(mean[0]) <= min(objective(s) for s in starts)


@pytest.mark.parametrize(
    "sigma2", [[20.0] * 3, [30.0] * 3, [40.0] * 3, [20.0, 30.0, 40.0]], ids=str
)
def test_label_model_large_noise_hyperbolic_predictions(sigma2):
    h = Hyperbolic(2)
    data = make_manifold_data(1000, space=h, noise_scale=sigma2, seed=0)
    pred = ManifoldLabelModel(h).fit(data.X).predict(data.X)
    assert np.isfinite(pred).all()
    err = h.dist(pred, data.Y).mean()
    lf_err = h.dist(data.X, data.Y[:, None, :]).mean(axis=0)
    assert err <= lf_err.max()
    assert err <= lf_err.min()  # pooling three votes helps even at this noise
