import numpy as np
import pytest

from snorkel_structured import (
    Euclidean,
    Hyperbolic,
    RiemannianGaussian,
    Sphere,
    WrappedNormal,
)

CASES = [
    (WrappedNormal, Hyperbolic(5), 0.8),
    (WrappedNormal, Sphere(2), 0.5),
    (WrappedNormal, Euclidean(3), 0.7),
    (RiemannianGaussian, Hyperbolic(3), 1.5),
    (RiemannianGaussian, Sphere(2), 2.0),
    (RiemannianGaussian, Euclidean(2), 0.8),
]
INV = {"cosh": np.cosh, "cos": np.cos, "sq_dist": np.square}


@pytest.mark.parametrize("family,space,scale", CASES, ids=lambda c: repr(c))
def test_maps_against_monte_carlo(family, space, scale, rng):
    noise = family(space)
    n = 60000
    y = space.random_point(n, seed=rng)
    la = noise.sample(y, scale, seed=rng)
    lb = noise.sample(y, scale / 2, seed=rng)
    assert space.belongs(la).all()
    d = space.dist(la, y)
    for mc, exact in [
        (d**2, noise.expected_sq_dist(scale)),
        (INV[noise.invariant_name](d), noise.expected_invariant(scale)),
        (space.squared_dist(la, lb), noise.pair_expected_sq_dist(scale, scale / 2)),
    ]:
        se = mc.std() / np.sqrt(n)
        assert abs(mc.mean() - exact) < 4.5 * se, (mc.mean(), exact, se)


def test_law_of_cosines_invariant_by_monte_carlo(rng):
    # E cosh d(la, lb) = E cosh d(la, y) E cosh d(lb, y) (hyperbolic), cos on the sphere
    for space, f in [(Hyperbolic(3), np.cosh), (Sphere(2), np.cos)]:
        noise = WrappedNormal(space)
        y = space.random_point(80000, seed=rng)
        la, lb = noise.sample(y, 0.3, seed=rng), noise.sample(y, 0.2, seed=rng)
        lhs = f(space.dist(la, lb))
        rhs = noise.expected_invariant(0.3) * noise.expected_invariant(0.2)
        assert abs(lhs.mean() - rhs) < 4.5 * lhs.std() / np.sqrt(len(lhs))


def test_closed_forms():
    from scipy.special import hyp1f1

    wn = WrappedNormal(Hyperbolic(4))
    np.testing.assert_allclose(wn.expected_invariant(1.3), hyp1f1(2.0, 0.5, 0.65))
    np.testing.assert_allclose(wn.expected_sq_dist([1.0, 2.0]), [4.0, 8.0])
    # Euclidean Riemannian Gaussian is N(0, 1/(2 theta) I)
    np.testing.assert_allclose(
        RiemannianGaussian(Euclidean(3)).expected_sq_dist(0.25), 6.0
    )
    # generic quadrature agrees with the closed form on H^d
    r, w = wn.radial_rule(1.3)
    np.testing.assert_allclose(w @ np.cosh(r), hyp1f1(2.0, 0.5, 0.65), rtol=1e-8)


@pytest.mark.parametrize("family,space,scale", CASES, ids=lambda c: repr(c))
def test_inverses_round_trip(family, space, scale):
    noise = family(space)
    for s in [scale / 4, scale]:
        np.testing.assert_allclose(
            noise.scale_from_invariant(noise.expected_invariant(s)), s, rtol=1e-7
        )
        np.testing.assert_allclose(
            noise.scale_from_expected_sq_dist(noise.expected_sq_dist(s)), s, rtol=1e-7
        )


def test_sphere_wrapped_normal_identifiability_bound():
    noise = WrappedNormal(Sphere(2))
    lo, hi = noise.scale_bounds
    assert abs(float(noise.expected_invariant(hi))) < 1e-10
    with pytest.raises(ValueError, match=r"sigma2\) must be in"):
        noise.expected_sq_dist(hi * 1.5)


def test_noise_validation(rng):
    with pytest.raises(
        ValueError, match="space must be a Euclidean, Sphere or Hyperbolic"
    ):
        WrappedNormal("H5")
    wn = WrappedNormal(Hyperbolic(2))
    with pytest.raises(ValueError, match=r"must be in \(0.0, inf\]"):
        wn.sample(Hyperbolic(2).origin, -1.0)
    with pytest.raises(ValueError, match=r"base_point must have shape"):
        wn.sample(np.zeros(5), 1.0)
    with pytest.raises(ValueError, match="outside the model's range"):
        wn.scale_from_invariant(0.5)
    assert wn == WrappedNormal(Hyperbolic(2)) and wn != RiemannianGaussian(
        Hyperbolic(2)
    )


def test_sampling_is_seeded():
    wn = RiemannianGaussian(Hyperbolic(3))
    y = np.tile(Hyperbolic(3).origin, (5, 1))
    np.testing.assert_array_equal(wn.sample(y, 1.0, seed=3), wn.sample(y, 1.0, seed=3))


@pytest.mark.parametrize("radius", [0.0, 20.0, 25.0])
def test_wrapped_normal_samples_far_out_have_the_right_spread(radius):
    # The tangent direction was normalized with the norm at the origin: 20 out the
    # draws spread 1.5x too wide (E d^2 / dim 0.149 for sigma^2 = 0.1).
    space = Hyperbolic(2)
    base = space.exp(np.array([0.0, radius, 0.0]), space.origin)
    noise = WrappedNormal(space)
    draws = noise.sample(np.broadcast_to(base, (20_000, 3)), 0.1, seed=0)
    d2 = space.squared_dist(draws, base)
    # E d^2 = dim sigma^2 for the wrapped normal; 20,000 draws: se about 0.7%
    assert np.mean(d2) == pytest.approx(float(noise.expected_sq_dist(0.1)), rel=0.03)


@pytest.mark.parametrize("theta", [1e-12, 1e-6, 0.01])
def test_circle_sampler_is_fast_and_exact_at_tiny_theta(theta):
    # Below theta ~ 0.05 on S^1 the Gaussian envelope is wider than [0, pi]: it
    # accepted about pi sqrt(theta) of its draws (10 draws took 25 s at 1e-12). The
    # draws must still follow the law: empirical E d^2 within 4 standard errors.
    noise = RiemannianGaussian(Sphere(1))
    y = np.tile([1.0, 0.0], (100_000, 1))
    d2 = Sphere(1).squared_dist(noise.sample(y, theta, seed=0), y)
    se = d2.std() / np.sqrt(d2.size)
    assert abs(d2.mean() - noise.expected_sq_dist(theta)) < 4 * se


def test_wrapped_normal_invariant_on_hyperbolic_space_is_inf_past_the_float_range():
    # E cosh d = 1F1(d/2; 1/2; sigma2/2) exceeds e^(sigma2/2): inf once that does,
    # at once (scipy's series took time linear in sigma2: 10 s at 1e13, no end at
    # 1e300); below, the closed form is unchanged.
    from scipy import special

    noise = WrappedNormal(Hyperbolic(3))
    s = np.array([2.0, 1000.0, 1501.0, 1e13, 1e300])
    out = noise.expected_invariant(s)
    np.testing.assert_array_equal(out[:2], special.hyp1f1(1.5, 0.5, s[:2] / 2))
    assert np.isposinf(out[2:]).all()
