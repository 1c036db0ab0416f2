"""Numerical edges of the manifold noise estimators (issue 14, items 18 and 19)."""

import warnings

import mpmath
import numpy as np
import pytest

from snorkel_structured import (
    Euclidean,
    Hyperbolic,
    IdentifiabilityWarning,
    ManifoldLabelModel,
    RiemannianGaussian,
    Sphere,
    WrappedNormal,
)
from snorkel_structured.estimators._manifold_stats import ManifoldStats
from snorkel_structured.estimators.triplet import (
    pair_sq_dist_estimate,
    triplet_estimate,
)
from snorkel_structured.noise import _manifold_rules as manifold_rules
from snorkel_structured.noise import manifold as noise_module
from snorkel_structured.synthetic_manifold import make_manifold_data

# --- item 18: large hyperbolic radii ------------------------------------------------


def test_pair_map_large_hyperbolic_radii_matches_high_precision():
    # Radii past ~354 overflowed sinh(ra) * sinh(rb) to inf (then NaN after the
    # weights): the pair fit died in scipy's "array must not contain infs".
    space = Hyperbolic(2)
    ra = np.array([[0.5, 30.0, 400.0, 700.0]])
    rb = np.array([[0.7, 31.0, 380.0, 720.0]])
    t, wt = manifold_rules._angle_rule(2)
    got = manifold_rules._angle_integrated_sq_dist(space, ra, rb, t, wt)[0]
    mpmath.mp.dps = 50
    for i, a in enumerate(ra[0]):
        for j, b in enumerate(rb[0]):
            want = sum(
                float(w)
                * float(
                    mpmath.acosh(
                        mpmath.cosh(a) * mpmath.cosh(b)
                        - mpmath.sinh(a) * mpmath.sinh(b) * float(tk)
                    )
                    ** 2
                )
                for tk, w in zip(t, wt, strict=True)
            )
            assert np.isfinite(got[i, j])
            np.testing.assert_allclose(got[i, j], want, rtol=1e-10)


def test_pair_map_is_finite_for_huge_wrapped_normal_variance():
    wn = WrappedNormal(Hyperbolic(2))
    value = wn.pair_expected_sq_dist(1e3, 1e3)
    # E d^2(la, lb) >= E d^2(la, y) = 2 sigma2 for independent isotropic LFs (H^2
    # distances are at least as long as Euclidean ones), and it is finite
    assert np.isfinite(value) and value > 2e3


def test_pair_sq_dist_on_points_far_from_the_origin():
    # LF outputs 30 from the label (the origin) in independent uniform directions:
    # every LF's E d^2 to the truth is exactly 900.
    space, rng, n = Hyperbolic(2), np.random.default_rng(0), 500
    u = rng.standard_normal((n, 3, 2))
    u /= np.linalg.norm(u, axis=-1, keepdims=True)
    v = np.concatenate([np.zeros((n, 3, 1)), 30.0 * u], axis=-1)
    X = space.exp(v, space.origin)
    stats = ManifoldStats.from_outputs(X, space)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no overflow on the way
        est = pair_sq_dist_estimate(stats, WrappedNormal(space))
    assert np.all(np.isfinite(est.noise_scale))
    # the wrapped normal is misspecified here (fixed radius); its E d^2 is still close
    np.testing.assert_allclose(est.expected_sq_dist, 900.0, rtol=0.2)


# --- item 18: the antipodal LF on the sphere ----------------------------------------


def _antipodal_data(noise):
    space = Sphere(2)
    scale = [0.05, 0.1, 0.2] if noise == "wrapped_normal" else [10.0, 5.0, 2.5]
    d = make_manifold_data(4000, space=space, noise_scale=scale, noise=noise, seed=0)
    X = np.concatenate([d.X, -d.Y[:, None, :]], axis=1)  # LF 3 votes the antipode
    return space, d, ManifoldStats.from_outputs(X, space)


@pytest.mark.parametrize("noise", ["wrapped_normal", "riemannian_gaussian"])
def test_antipodal_lf_is_fitted_at_maximum_noise(noise):
    # Before: "scale must be in (0, 1.708...]; got 1.70806699" from the Jacobian's
    # finite difference stepping past sigma2_max, and the antipodal LF's pairs pulled
    # LF 0 (sigma2 0.05) to 1e-8.
    space, d, stats = _antipodal_data(noise)
    family = d.noise
    with pytest.warns(IdentifiabilityWarning, match="LF 3.*maximum noise"):
        est = pair_sq_dist_estimate(stats, family)
    lo, hi = family.scale_bounds
    noisiest = hi if noise == "wrapped_normal" else 1e-8
    assert lo < est.noise_scale[3] <= hi
    np.testing.assert_allclose(est.noise_scale[3], noisiest, rtol=1e-9)
    # the three isotropic LFs are still recovered from their own pairs
    np.testing.assert_allclose(est.expected_sq_dist[:3], d.expected_sq_dist, rtol=0.1)


def test_antipodal_lf_triplet_fitted_at_maximum_noise():
    # The triplet estimate (the default) treats an LF with no mean cos d above 0 as
    # pair_sq_dist does: at the family's maximum noise, with a warning naming it, the
    # other LFs from their own pairs. (It raised "Too few overlapping rows" before,
    # and an LF of junk votes with one barely positive pair pulled the others.)
    _, d, stats = _antipodal_data("wrapped_normal")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IdentifiabilityWarning)
        with pytest.warns(
            IdentifiabilityWarning, match=r"LF\(s\) \[3\].*maximum noise"
        ):
            est = triplet_estimate(stats, d.noise)
    _, hi = d.noise.scale_bounds
    np.testing.assert_allclose(est.noise_scale[3], hi, rtol=1e-6)
    np.testing.assert_allclose(est.expected_sq_dist[:3], d.expected_sq_dist, rtol=0.1)


# --- item 19: the fast radial integrals ----------------------------------------------


@pytest.mark.parametrize(
    "space", [Hyperbolic(2), Hyperbolic(5), Sphere(1), Sphere(2), Sphere(5)]
)
def test_riemannian_gaussian_moments_match_adaptive_quadrature(space):
    rg = RiemannianGaussian(space)
    rng = np.random.default_rng(3)
    theta = np.exp(rng.uniform(np.log(0.05), np.log(500.0), 6))
    f = np.cosh if isinstance(space, Hyperbolic) else np.cos
    got_d2 = rg.expected_sq_dist(theta)
    got_inv = rg.expected_invariant(theta)
    for k, th in enumerate(theta):
        want_d2 = manifold_rules._reference_radial_moment(rg, np.square, th)
        want_inv = manifold_rules._reference_radial_moment(rg, f, th)
        np.testing.assert_allclose(got_d2[k], want_d2, rtol=1e-9)
        np.testing.assert_allclose(got_inv[k], want_inv, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(
    "space", [Hyperbolic(1), Hyperbolic(2), Hyperbolic(5), Sphere(2), Sphere(5)]
)
@pytest.mark.parametrize("family", [RiemannianGaussian, WrappedNormal])
def test_vectorized_pair_map_equals_the_reference(space, family):
    noise = family(space)
    rng = np.random.default_rng(4)
    lo, hi = noise.scale_bounds
    if family is RiemannianGaussian:
        lims = (np.log(1e-2), np.log(1e5))
    else:
        lims = (np.log(1e-5), np.log(min(hi, 30.0)))
    sa, sb = np.exp(rng.uniform(*lims, (2, 12)))
    got = noise.pair_expected_sq_dist(sa, sb)
    want = manifold_rules._reference_pair_expected_sq_dist(noise, sa, sb)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_pair_map_euclidean_closed_form():
    for noise in (RiemannianGaussian(Euclidean(3)), WrappedNormal(Euclidean(3))):
        s = np.array([0.3, 2.0])
        np.testing.assert_allclose(
            noise.pair_expected_sq_dist(s, s[::-1]),
            noise.expected_sq_dist(s) + noise.expected_sq_dist(s[::-1]),
        )


@pytest.mark.parametrize("space", [Hyperbolic(2), Sphere(2)])
def test_pair_sq_dist_riemannian_gaussian_recovers_truth(space):
    theta = np.array([8.0, 4.0, 2.0, 3.0])
    d = make_manifold_data(
        20000, space=space, noise_scale=theta, noise="riemannian_gaussian", seed=5
    )
    stats = ManifoldStats.from_outputs(d.X, space)
    est = pair_sq_dist_estimate(stats, d.noise)
    np.testing.assert_allclose(est.expected_sq_dist, d.expected_sq_dist, rtol=0.05)
    np.testing.assert_allclose(est.noise_scale, theta, rtol=0.1)


@pytest.mark.parametrize(
    "space", [Euclidean(2), Hyperbolic(2), Hyperbolic(5), Sphere(2), Sphere(5)]
)
def test_riemannian_gaussian_pair_map_gradient_matches_differences(space):
    # the pair fit's Jacobian for this family: exponential-family identity
    rg = RiemannianGaussian(space)
    theta_a, theta_b = np.exp(
        np.random.default_rng(6).uniform(np.log(0.5), 4.0, (2, 8))
    )
    value, d_a, d_b = rg._pair_expected_sq_dist_and_grad(theta_a, theta_b)
    np.testing.assert_allclose(value, rg.pair_expected_sq_dist(theta_a, theta_b))
    h = 1e-5
    for got, (ua, ub) in ((d_a, (h, 0.0)), (d_b, (0.0, h))):
        up = rg.pair_expected_sq_dist(theta_a * np.exp(ua), theta_b * np.exp(ub))
        down = rg.pair_expected_sq_dist(theta_a * np.exp(-ua), theta_b * np.exp(-ub))
        np.testing.assert_allclose(got, (up - down) / (2 * h), rtol=1e-5, atol=1e-9)


@pytest.mark.parametrize("space", [Euclidean(2), Hyperbolic(2), Sphere(5)])
def test_riemannian_gaussian_moment_gradient_matches_differences(space):
    rg = RiemannianGaussian(space)
    theta = np.exp(np.linspace(-3.0, 6.0, 10))
    value, grad = rg._expected_sq_dist_and_grad(theta)
    np.testing.assert_allclose(value, rg.expected_sq_dist(theta))
    h = 1e-5
    diff = rg.expected_sq_dist(theta * np.exp(h)) - rg.expected_sq_dist(
        theta * np.exp(-h)
    )
    np.testing.assert_allclose(grad, diff / (2 * h), rtol=1e-7)


def test_radial_rule_memo_survives_being_cleared(monkeypatch):
    # a full memo is cleared; entries the same call still needs must be recomputed
    monkeypatch.setattr(noise_module, "_RULE_CACHE_SIZE", 5)
    rg = RiemannianGaussian(Hyperbolic(3))
    theta = np.array([0.5, 1.0, 2.0, 4.0])
    first = rg.pair_expected_sq_dist(theta, theta[::-1])
    again = rg.pair_expected_sq_dist(np.r_[theta, 8.0], np.r_[theta[::-1], 0.25])
    np.testing.assert_allclose(again[:4], first, rtol=1e-13)
    want = manifold_rules._reference_pair_expected_sq_dist(rg, 8.0, 0.25)
    np.testing.assert_allclose(again[4], want, rtol=1e-12)
    np.testing.assert_allclose(rg.expected_sq_dist(theta), rg.expected_sq_dist(theta))


def test_lfs_past_the_noiseless_end_are_named_and_their_weight_said():
    # Two LFs of noise 0.49 between two anti-correlated pairs (y + d, y - d): each
    # pair says the LF is better than noiseless, so the least squares put both past
    # the noiseless end and the clip hands them all the weight. The clip warning
    # named only the first; the fit now names both and says what share they get.
    rng = np.random.default_rng(0)
    n = 2000
    y = rng.normal(size=n)
    d1, d2 = 2.0 * rng.normal(size=n), 2.0 * rng.normal(size=n)
    X = np.stack(
        [
            y + 0.7 * rng.normal(size=n),
            y + 0.7 * rng.normal(size=n),
            y + d1,
            y - d1,
            y + d2,
            y - d2,
        ],
        axis=1,
    )[:, :, None]
    space = Euclidean(1)
    # the least squares by hand: e_a + e_b = mean (x_a - x_b)^2 over the 15 pairs
    a, b = np.triu_indices(6, k=1)
    design = np.zeros((a.size, 6))
    design[np.arange(a.size), a] = design[np.arange(a.size), b] = 1.0
    M = ((X[:, a, 0] - X[:, b, 0]) ** 2).mean(axis=0)
    by_hand = np.linalg.lstsq(design, M, rcond=None)[0]
    assert (by_hand[:2] < 0).all() and (by_hand[2:] > 0).all()
    with pytest.warns(IdentifiabilityWarning, match=r"LF\(s\) \[0, 1\] \(\["):
        est = triplet_estimate(
            ManifoldStats.from_outputs(X, space),
            noise_module.make_noise("wrapped_normal", space),
        )
    np.testing.assert_array_equal(est.past_noiseless, [1, 1, 0, 0, 0, 0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lm = ManifoldLabelModel(space, seed=0).fit(X, dependencies=[])
    share = lm.weights_[:2].sum()
    said = [
        str(w.message) for w in caught if "LF(s) [0, 1]: the LF pairs" in str(w.message)
    ]
    assert len(said) == 1 and f"gives them {share:.0%} of the weight" in said[0]
    assert share > 0.99  # what the warning is about


def test_too_few_rows_names_the_unidentified_lf_not_the_one_at_maximum_noise():
    # An LF voting the antipode is fitted at the family's maximum noise (it needs no
    # partner); a sparse LF co-voting on 4 rows is the one left unidentified. The
    # error named the antipode LF ("LF 4 has 0 usable partner(s)").
    sphere = Sphere(2)
    data = make_manifold_data(300, space=sphere, noise_scale=[0.05] * 4, seed=0)
    antipode = -data.Y[:, None, :]
    sparse = np.full((300, 1, 3), np.nan)
    sparse[:4, 0] = data.Y[:4]
    X = np.concatenate([data.X, antipode, sparse], axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=r"LF\(s\) \[5\] with \[0\] usable"):
            triplet_estimate(
                ManifoldStats.from_outputs(X, sphere),
                noise_module.make_noise("wrapped_normal", sphere),
            )
