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
    np.testing.assert_allclose(d, [space.dist(a, b) for a, b in zip(x, p)])
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
