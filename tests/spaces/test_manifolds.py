import re
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from snorkel_structured import Euclidean, Hyperbolic, ProductManifold, Sphere

SPACES = [
    Euclidean(3),
    Sphere(2),
    Sphere(4),
    Hyperbolic(2),
    Hyperbolic(5),
    ProductManifold([Sphere(2), Hyperbolic(2), Euclidean(1)]),
]


@pytest.mark.parametrize("space", SPACES, ids=repr)
def test_exp_log_inverse_and_dist(space, rng):
    x = space.random_point(200, seed=rng)
    p = space.random_point(200, seed=rng)
    v = space.log(p, x)
    np.testing.assert_allclose(space.exp(v, x), p, atol=1e-8 * (1 + np.abs(p).max()))
    np.testing.assert_allclose(space.norm(v), space.dist(p, x), rtol=1e-9, atol=1e-12)
    assert space.belongs(space.exp(v, x)).all()
    # batch == loop; symmetric; zero on the diagonal
    d = space.dist(x, p)
    np.testing.assert_allclose(d, [space.dist(a, b) for a, b in zip(x, p, strict=True)])
    np.testing.assert_allclose(d, space.dist(p, x), rtol=1e-12)
    np.testing.assert_allclose(space.dist(x, x), 0.0, atol=1e-7)
    np.testing.assert_allclose(space.squared_dist(x, p), d**2, rtol=1e-12)


def test_closed_form_distances():
    h = Hyperbolic(3)
    for r in [1e-9, 1e-3, 1.0, 30.0]:
        p = h.exp(np.array([0, r, 0, 0.0]), h.origin)
        np.testing.assert_allclose(h.dist(h.origin, p), r, rtol=1e-9)
        np.testing.assert_allclose(p[0], np.cosh(r), rtol=1e-12)
    s = Sphere(2)
    e = np.eye(3)
    np.testing.assert_allclose(s.dist(e[0], e[1]), np.pi / 2)
    np.testing.assert_allclose(s.dist(e[0], -e[0]), np.pi)
    t = 1e-9
    np.testing.assert_allclose(
        s.dist(e[0], np.array([np.cos(t), np.sin(t), 0])), t, rtol=1e-6
    )
    np.testing.assert_allclose(
        Euclidean(2).dist(np.zeros(2), np.array([3.0, 4.0])), 5.0
    )


def test_sphere_antipodal_log_is_a_valid_geodesic():
    s = Sphere(2)
    x = np.array([0.0, 0.6, 0.8])
    v = s.log(-x, x)
    np.testing.assert_allclose(np.linalg.norm(v), np.pi)
    np.testing.assert_allclose(v @ x, 0.0, atol=1e-12)
    np.testing.assert_allclose(s.exp(v, x), -x, atol=1e-12)


def test_poincare_round_trip_and_errors(rng):
    h = Hyperbolic(3)
    x = h.random_point(50, scale=2.0, seed=rng)
    b = h.to_poincare(x)
    assert (np.linalg.norm(b, axis=-1) < 1).all()
    np.testing.assert_allclose(h.from_poincare(b), x, rtol=1e-9, atol=1e-9)
    with pytest.raises(ValueError, match="open unit ball"):
        h.from_poincare(np.array([1.0, 0.0, 0.0]))
    with pytest.raises(ValueError, match=r"shape \(\.\.\., 3\)"):
        h.from_poincare(np.zeros(2))


@pytest.mark.parametrize("space", SPACES, ids=repr)
def test_frechet_mean_symmetric_and_stationary(space, rng):
    # symmetric set: y and its reflections exp_y(+-v) -> mean y
    y = space.random_point(4, seed=rng)
    v = space.random_tangent_vec(y, scale=0.5, seed=rng)
    pts = np.stack([space.exp(v, y), space.exp(-v, y)], axis=1)
    np.testing.assert_allclose(space.frechet_mean(pts), y, atol=1e-8)
    # weighted, with zero weights and NaN (absent) points: gradient vanishes
    P = space.random_point(30 * 6, seed=rng).reshape(30, 6, -1)
    P[:, 0] = np.nan
    w = rng.random((30, 6))
    w[:, 1] = 0.0
    m = space.frechet_mean(P, w)
    logs = space.log(np.nan_to_num(P[:, 2:]), m[:, None, :])
    grad = np.einsum("kn,knd->kd", w[:, 2:], logs)
    assert np.abs(grad).max() < 1e-7
    # all absent -> NaN
    assert np.isnan(space.frechet_mean(P[:, :2], w[:, :2])).all()


def test_frechet_mean_euclidean_is_weighted_average(rng):
    P = rng.normal(size=(5, 4, 3))
    w = rng.random(4)
    np.testing.assert_allclose(
        Euclidean(3).frechet_mean(P, w), np.average(P, axis=1, weights=w)
    )


@pytest.mark.parametrize("cls", [Euclidean, Sphere, Hyperbolic])
def test_value_objects_and_dim_validation(cls):
    assert cls(2) == cls(2) and cls(2) != cls(3) and hash(cls(2)) == hash(cls(2))
    assert repr(cls(2)) == f"{cls.__name__}(dim=2)"
    for bad in [0, -1, 2.5, True, "2"]:
        with pytest.raises(ValueError, match="dim must be a positive int"):
            cls(bad)
    with pytest.raises(ValueError, match="factors must be a non-empty list"):
        ProductManifold([])


def test_frechet_mean_validation():
    with pytest.raises(ValueError, match="weights must be finite and non-negative"):
        Sphere(2).frechet_mean(np.tile(np.eye(3)[0], (2, 1)), [1.0, -1.0])
    with pytest.raises(ValueError, match=r"points must have shape"):
        Sphere(2).frechet_mean(np.zeros((2, 4)))


def test_projection_and_belongs(rng):
    h, s = Hyperbolic(2), Sphere(2)
    z = rng.normal(size=(10, 3))
    assert h.belongs(h.projection(z)).all() and s.belongs(s.projection(z)).all()
    assert not h.belongs(np.array([1.0, 1.0, 1.0])) and not s.belongs(
        np.array([2.0, 0, 0])
    )


@settings(max_examples=25, deadline=None)
@given(r=st.floats(0.0, 20.0), a=st.floats(0.0, 6.2))
def test_hyperbolic_law_of_cosines_exact(r, a):
    h = Hyperbolic(2)
    y = h.origin
    la = h.exp(np.array([0.0, r, 0.0]), y)
    lb = h.exp(np.array([0.0, np.cos(a), np.sin(a)]) * 1.5, y)
    lhs = np.cosh(h.dist(la, lb))
    rhs = np.cosh(r) * np.cosh(1.5) - np.sinh(r) * np.sinh(1.5) * np.cos(a)
    np.testing.assert_allclose(lhs, rhs, rtol=1e-6)


# --- input checks (fuzz report /tmp/fuzz4/geometry) --------------------------------
def _first(space, n=4, seed=0):
    return space.random_point(n, seed=seed)


@pytest.mark.parametrize("space", SPACES, ids=repr)
def test_wrong_last_axis_is_refused_and_not_on_the_manifold(space):
    # report item 1: arrays whose last axis is not ambient_dim broadcast or slice into
    # numbers (belongs said True; the product dropped a factor)
    D = space.ambient_dim
    x, y = _first(space, seed=0), _first(space, seed=1)
    v = space.log(y, x)
    for bad in (x[..., :-1], np.concatenate([x, x[..., :1]], -1)):
        got = space.belongs(bad)
        assert got.shape == (4,) and not got.any()
        assert space.belongs(bad[0]).shape == () and not space.belongs(bad[0])
        shape = re.escape(str(bad.shape))
        msg = rf"must have shape \(\.\.\., {D}\).*got shape {shape}"
        calls = [
            lambda b=bad: space.dist(b, y),
            lambda b=bad: space.dist(x, b),
            lambda b=bad: space.squared_dist(b, y),
            lambda b=bad: space.exp(b, x),
            lambda b=bad: space.exp(v, b),
            lambda b=bad: space.log(b, x),
            lambda b=bad: space.log(y, b),
            lambda b=bad: space.inner(b, b),
            lambda b=bad: space.norm(b),
            lambda b=bad: space.projection(b),
            lambda b=bad: space.to_tangent(b, x),
            lambda b=bad: space.to_tangent(v, b),
            lambda b=bad: space.random_tangent_vec(b, seed=0),
        ]
        for call in calls:
            with pytest.raises(ValueError, match=msg):
                call()
    # 0-d input: no last axis at all
    assert not space.belongs(np.float64(1.0))
    with pytest.raises(ValueError, match=r"got shape \(\)"):
        space.dist(1.0, 1.0)


def test_wrong_last_axis_hand_cases():
    # the report's examples: each used to return a number
    assert not Sphere(2).belongs(np.array([1.0, 0.0]))
    assert not Hyperbolic(2).belongs(np.array([1.0, 0.0]))
    assert not Euclidean(3).belongs(np.array([0.0]))
    h = Hyperbolic(2)
    for a in ([1.0, 0.0], [1.0, 2, 3, 4, 5]):
        with pytest.raises(ValueError, match=r"point_a must have shape \(\.\.\., 3\)"):
            h.dist(np.array(a), np.array(a))
    with pytest.raises(ValueError, match=r"shape \(\.\.\., 3\).*got shape \(4,\)"):
        Sphere(2).dist(np.array([1.0, 0, 0, 0]), np.array([0.0, 0, 0, 1]))
    for call in (
        lambda: h.translate(np.zeros(2), h.origin),
        lambda: h.to_poincare(np.zeros(4)),
        lambda: h.minkowski_inner(np.zeros(2), np.zeros(2)),
        lambda: h.norm(np.zeros(2), h.origin),
        lambda: h.inner(np.zeros(2), np.zeros(2), h.origin),
    ):
        with pytest.raises(ValueError, match=r"shape \(\.\.\., 3\)"):
            call()
    prod = ProductManifold([Sphere(2), Hyperbolic(2)])
    x, y = prod.random_point(1, seed=0)[0], prod.random_point(1, seed=1)[0]
    for call in (
        lambda: prod.dist(x[:3], y[:3]),  # used to drop the hyperbolic factor
        lambda: prod.exp(x[:3], y[:3]),
        lambda: prod.log(x[:3], y[:3]),
        lambda: prod.split(x[:3]),
    ):
        with pytest.raises(ValueError, match=r"shape \(\.\.\., 6\).*got shape \(3,\)"):
            call()
    assert not prod.belongs(x[:3])


@pytest.mark.parametrize("space", [Euclidean(2), Sphere(2), Hyperbolic(2)], ids=repr)
def test_frechet_mean_weights_whose_sum_overflows(space):
    # report item 3: w.sum() overflowed to inf and every normalized weight became 0
    p = space.random_point(1, seed=3)[0]
    q = space.random_point(1, seed=4)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "overflow encountered in reduce"
        m = space.frechet_mean(np.stack([p, p]), [1e308, 1e308])
        np.testing.assert_allclose(m, p, rtol=1e-12, atol=1e-12)
        # same ratios as [1, 1, 0]; a batch mixing overflowing and ordinary rows
        P = np.stack([np.stack([p, q, q]), np.stack([p, q, q])])
        W = np.array([[1.7e308, 1.7e308, 0.0], [1.0, 1.0, 0.0]])
        got = space.frechet_mean(P, W)
    ref = space.frechet_mean(np.stack([p, q]))
    np.testing.assert_allclose(got[0], ref, rtol=1e-12, atol=1e-12)
    # the ordinary row is untouched, to the bit
    np.testing.assert_array_equal(got[1], space.frechet_mean(P[1], W[1]))


def test_frechet_mean_overflow_euclidean_hand_reference():
    e = Euclidean(2)
    P = np.array([[1.0, 0.0], [0.0, 4.0], [9.0, 9.0]])
    m = e.frechet_mean(P, [1e308, 1.5e308, 0.0])  # ratios 2 : 3 : 0
    np.testing.assert_allclose(m, [0.4, 2.4], rtol=1e-15)


@pytest.mark.parametrize("space", SPACES, ids=repr)
def test_frechet_mean_refuses_infinite_points_keeps_nan_absent(space):
    # report item 4: inf gave NaN (sphere) or [0.53, inf] (Euclidean)
    P = space.random_point(3, seed=5)
    bad = P.copy()
    bad[1, -1] = np.inf
    with pytest.raises(ValueError, match=r"points must be finite; points\[1\] has an"):
        space.frechet_mean(bad)
    batch = np.stack([P, bad])
    with pytest.raises(ValueError, match=r"points\[1, 1\] has an infinite"):
        space.frechet_mean(batch)
    # a row with NaN stays absent, even if it also holds inf
    absent = P.copy()
    absent[1] = np.nan
    absent[1, 0] = np.inf
    np.testing.assert_allclose(
        space.frechet_mean(absent), space.frechet_mean(P[[0, 2]]), rtol=1e-12
    )


def test_infinite_coordinates_in_maps():
    s = Sphere(2)
    # used to be pi/2: arctan2(inf, inf) = pi/4
    with np.errstate(invalid="ignore"):
        assert np.isnan(s.dist(np.array([np.inf, 0, 0]), np.array([1.0, 0, 0])))
        assert np.isnan(s.log(np.array([np.inf, 0, 0]), np.array([1.0, 0, 0]))).all()
    h = Hyperbolic(2)
    with pytest.raises(ValueError, match="point_a has an infinite coordinate"):
        h.dist(np.array([np.inf, np.inf, 0.0]), h.origin)
    assert "must be finite" in Euclidean.dist.__doc__


def test_hyperbolic_exp_docstring_states_the_tangent_length_limit():
    # report item 5: exp refuses |v| > max_radius even near the origin, as documented
    h = Hyperbolic(2)
    x = h.exp(np.array([0.0, 16.0, 0.0]), h.origin)
    y = h.exp(np.array([0.0, -16.0, 0.0]), h.origin)
    v = h.log(y, x)
    np.testing.assert_allclose(h.norm(v, x), 32.0, rtol=1e-9)
    with pytest.raises(ValueError, match="tangent_vec has length 32"):
        h.exp(v, x)
    doc = " ".join(h.exp.__doc__.split())
    assert "Riemannian length ``|v|``" in doc and "exceeds ``max_radius``" in doc
    assert "even if ``x`` and ``y`` are near the origin" in doc


def test_sphere_projection_of_zero_and_unit_vector_contract():
    # report item 6: projection(0) returned NaN; off-sphere inputs are documented
    s = Sphere(2)
    with pytest.raises(ValueError, match=r"zero vector.*point\[1\] is 0"):
        s.projection(np.array([[1.0, 0, 0], [0.0, 0, 0]]))
    with pytest.raises(ValueError, match="direction is undefined"):
        s.projection(np.zeros(3))
    np.testing.assert_array_equal(
        s.projection(np.array([0.0, 3.0, 4.0])), [0, 0.6, 0.8]
    )
    with np.errstate(invalid="ignore"):
        assert np.isnan(s.projection(np.full(3, np.nan))).all()  # absent stays NaN
    notes = " ".join(Sphere.__doc__.split())
    assert "must be finite unit vectors" in notes and "not checked" in notes


@pytest.mark.parametrize("space", SPACES, ids=repr)
def test_frechet_mean_of_no_points_is_nan(space):
    # report item 7: reshape(-1, 0, D) failed inside numpy
    D = space.ambient_dim
    m = space.frechet_mean(np.zeros((0, D)))
    assert m.shape == (D,) and np.isnan(m).all()
    m = space.frechet_mean(np.zeros((4, 0, D)), np.zeros((4, 0)))
    assert m.shape == (4, D) and np.isnan(m).all()


def test_scale_tol_max_iter_are_validated():
    # report item 8
    h, e, s = Hyperbolic(2), Euclidean(2), Sphere(2)
    prod = ProductManifold([Sphere(2), Euclidean(1)])
    for bad in (np.nan, np.inf, -1.0):
        for call in (
            lambda b=bad: h.random_point(2, scale=b, seed=0),
            lambda b=bad: e.random_point(2, scale=b, seed=0),
            lambda b=bad: s.random_tangent_vec(s.origin, scale=b, seed=0),
            lambda b=bad: h.random_tangent_vec(h.origin, scale=b, seed=0),
            lambda b=bad: e.random_tangent_vec(e.origin, scale=b, seed=0),
            lambda b=bad: prod.random_tangent_vec(prod.origin, scale=b, seed=0),
        ):
            with pytest.raises(ValueError, match="scale must be"):
                call()
    with pytest.raises(ValueError, match=r"scale must be finite and >= 0; scale\[1\]"):
        s.random_tangent_vec(s.random_point(2, seed=0), scale=np.array([1.0, -2.0]))
    # valid: 0 and per-point arrays
    np.testing.assert_array_equal(e.random_point(2, scale=0, seed=0), 0.0)
    v = s.random_tangent_vec(s.random_point(2, seed=0), scale=np.array([0.0, 1.0]))
    np.testing.assert_array_equal(v[0], 0.0)
    P = s.random_point(3, seed=0)
    with pytest.raises(TypeError, match="max_iter must be an int; got 2.5"):
        s.frechet_mean(P, max_iter=2.5)
    with pytest.raises(ValueError, match=r"max_iter must be in the range \[0"):
        s.frechet_mean(P, max_iter=-1)
    for tol, match in (
        (np.nan, "tol must be finite"),
        (0.0, "tol must be in the range"),
    ):
        with pytest.raises(ValueError, match=match):
            s.frechet_mean(P, tol=tol)
    with pytest.raises(ValueError, match="tol must be finite"):
        h.frechet_mean(h.random_point(3, seed=0), tol=np.inf)
    np.testing.assert_array_equal(
        h.frechet_mean(h.random_point(3, seed=0), max_iter=np.int64(100)),
        h.frechet_mean(h.random_point(3, seed=0)),
    )


def test_bad_weight_message_names_the_entry():
    # report item 9: the message showed np.nanmin(w), a valid weight
    P = np.tile(np.eye(3)[0], (3, 1))
    for w, shown in (([1.0, 2.0, np.nan], "nan"), ([1.0, 2.0, np.inf], "inf")):
        with pytest.raises(ValueError, match=rf"weights\[2\] is {shown}\."):
            Sphere(2).frechet_mean(P, w)
    with pytest.raises(ValueError, match=r"weights\[1, 0\] is -1\.0\."):
        Euclidean(3).frechet_mean(np.zeros((2, 3, 3)), [[1.0, 1, 1], [-1.0, 1, 1]])


def test_sphere_frechet_mean_is_documented_as_a_karcher_mean():
    # report item 2 (documented, algorithm unchanged): points not in an open hemisphere
    s = Sphere(1)
    ang = np.array([-3.083, 1.953, -0.891, -0.264, -2.131, -0.634])
    w = np.array([0.458, 0.606, 0.045, 0.433, 0.494, 0.953])
    P = np.c_[np.cos(ang), np.sin(ang)]
    m = s.frechet_mean(P, w)
    grad = np.einsum("n,nd->d", w, s.log(P, m))
    assert np.linalg.norm(grad) < 1e-10  # stationary: a Karcher mean ...
    th = np.linspace(-np.pi, np.pi, 20001)
    G = np.c_[np.cos(th), np.sin(th)]
    F = (w * s.dist(G[:, None], P[None]) ** 2).sum(1)
    f_m = (w * s.dist(m, P) ** 2).sum()
    assert f_m > 1.1 * F.min()  # ... but not the global minimum here
    # in an open hemisphere it is the global one
    Q, v = P[[2, 3, 5]], w[[2, 3, 5]]  # angles -0.891, -0.264, -0.634
    mq = s.frechet_mean(Q, v)
    Fq = (v * s.dist(G[:, None], Q[None]) ** 2).sum(1)
    np.testing.assert_allclose(mq, G[np.argmin(Fq)], atol=1e-3)
    doc = " ".join(Sphere.frechet_mean.__doc__.split())
    assert "Karcher mean" in doc and "open hemisphere" in doc
    assert "normalized extrinsic mean" in doc and "10 returned a local minimum" in doc
