import warnings

import numpy as np
import pytest

from snorkel_structured import (
    Euclidean,
    Hyperbolic,
    IdentifiabilityWarning,
    RiemannianGaussian,
    Sphere,
    WrappedNormal,
)
from snorkel_structured.estimators._manifold_stats import ManifoldStats
from snorkel_structured.estimators.triplet import (
    pair_sq_dist_estimate,
    triplet_estimate,
    uws_estimate,
)
from snorkel_structured.synthetic_manifold import make_manifold_data


def test_stats_are_additive(rng):
    d = make_manifold_data(
        3000, space=Sphere(2), noise_scale=[0.1, 0.2, 0.3], abstain=0.3, seed=1
    )
    whole = ManifoldStats.from_outputs(d.X, Sphere(2))
    parts = sum(
        ManifoldStats.from_outputs(c, Sphere(2)) for c in np.array_split(d.X, 4)
    )
    np.testing.assert_array_equal(parts.pair_count, whole.pair_count)
    np.testing.assert_allclose(parts.pair_invariant_sum, whole.pair_invariant_sum)
    np.testing.assert_allclose(parts.pair_sq_dist_sum, whole.pair_sq_dist_sum)
    assert parts.n_samples == 3000
    # counts match abstains
    voted = ~np.isnan(d.X[..., 0])
    assert whole.pair_count[0, 1] == (voted[:, 0] & voted[:, 1]).sum()
    with pytest.raises(ValueError, match="Cannot add ManifoldStats"):
        whole + ManifoldStats.from_outputs(d.X[:, :2], Sphere(2))
    with pytest.raises(TypeError):
        whole + 1
    with pytest.raises(ValueError):
        whole.pair_count[0, 0] = 5


@pytest.mark.parametrize(
    "space,family,scale",
    [
        (Hyperbolic(5), "wrapped_normal", [0.3, 1.0, 2.0]),
        (Sphere(2), "wrapped_normal", [0.05, 0.1, 0.2, 0.3]),
        (Euclidean(3), "wrapped_normal", [0.2, 0.5, 1.0]),
        (Hyperbolic(2), "riemannian_gaussian", [1.0, 2.0, 4.0]),
        (Sphere(2), "riemannian_gaussian", [2.0, 4.0, 8.0]),
    ],
    ids=repr,
)
def test_recovery_all_estimators(space, family, scale):
    d = make_manifold_data(
        40000, space=space, noise=family, noise_scale=scale, abstain=0.1, seed=2
    )
    stats = ManifoldStats.from_outputs(d.X, space)
    t = triplet_estimate(stats, d.noise)
    p = pair_sq_dist_estimate(stats, d.noise, init=t)
    np.testing.assert_allclose(t.expected_sq_dist, d.expected_sq_dist, rtol=0.05)
    np.testing.assert_allclose(p.expected_sq_dist, d.expected_sq_dist, rtol=0.04)
    np.testing.assert_allclose(p.noise_scale, d.noise_scale, rtol=0.06)


def test_uws_exact_in_euclidean_biased_on_hyperbolic():
    d = make_manifold_data(
        40000, space=Euclidean(2), noise_scale=[0.2, 0.5, 1.0], seed=3
    )
    u = uws_estimate(ManifoldStats.from_outputs(d.X, Euclidean(2)), d.noise)
    np.testing.assert_allclose(u.expected_sq_dist, d.expected_sq_dist, rtol=0.05)
    h = Hyperbolic(5)
    d = make_manifold_data(40000, space=h, noise_scale=[1.0, 2.0, 3.0], y=None, seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IdentifiabilityWarning)
        u = uws_estimate(ManifoldStats.from_outputs(d.X, h), d.noise)
    assert (
        np.abs(u.noise_scale - d.noise_scale).max() > 0.3
    )  # biased: squares not additive


def test_warnings_and_identifiability_errors():
    s = Sphere(2)
    noise = WrappedNormal(s)
    # two very noisy LFs: their mean cos d is <= 0, outside the model's range, and
    # the two pairs left (a path, no odd cycle) do not identify three LFs. Every
    # pair co-voted on all 2000 rows: the error says which pair was left out and
    # why (not "too few overlapping rows"), with no warning of a fit before it.
    d = make_manifold_data(2000, space=s, noise_scale=[0.01, 1.5, 1.5], seed=4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="cannot be identified") as info:
            triplet_estimate(ManifoldStats.from_outputs(d.X, s), noise)
    assert "not above 0 by 2 standard errors (LFs 1 and 2" in str(info.value)
    assert "Too few overlapping rows" not in str(info.value)
    # a noiseless LF with few rows: estimated E cosh d < 1, clipped with a warning
    h = Hyperbolic(2)
    d = make_manifold_data(300, space=h, noise_scale=[1e-6, 2.0, 2.0], seed=3)
    with pytest.warns(IdentifiabilityWarning, match="outside the range"):
        est = triplet_estimate(ManifoldStats.from_outputs(d.X, h), d.noise)
    assert est.noise_scale[0] < 1e-6
    X = make_manifold_data(500, space=s, noise_scale=[0.1, 0.1, 0.1], seed=5).X
    X[:, 2] = np.nan
    X[:5, 2] = X[:5, 0]
    with pytest.warns(IdentifiabilityWarning, match="fewer than min_overlap"):
        with pytest.raises(ValueError, match="Too few overlapping rows"):
            triplet_estimate(ManifoldStats.from_outputs(X, s), noise)


def test_riemannian_gaussian_euclidean_map():
    rg = RiemannianGaussian(Euclidean(2))
    np.testing.assert_allclose(rg.pair_expected_sq_dist(1.0, 0.5), 1.0 + 2.0)


def test_weighted_and_labeled_stats_are_additive():
    s = Sphere(2)
    d = make_manifold_data(
        2000, space=s, noise_scale=[0.1, 0.2, 0.3], abstain=0.2, seed=6
    )
    w = np.random.default_rng(0).random(d.X.shape[:2])
    whole = ManifoldStats.from_outputs(d.X, s, row_weights=w)
    parts = sum(
        ManifoldStats.from_outputs(x, s, row_weights=ww)
        for x, ww in zip(np.array_split(d.X, 3), np.array_split(w, 3), strict=True)
    )
    np.testing.assert_allclose(parts.pair_count, whole.pair_count)
    np.testing.assert_allclose(parts.pair_invariant_sq_sum, whole.pair_invariant_sq_sum)
    # a pair's row counts w_a * w_b: brute force for one pair
    both = ~np.isnan(d.X[:, 0, 0]) & ~np.isnan(d.X[:, 1, 0])
    cos = np.cos(s.dist(d.X[both, 0], d.X[both, 1]))
    ww = w[both, 0] * w[both, 1]
    np.testing.assert_allclose(whole.pair_invariant_mean[0, 1], ww @ cos / ww.sum())
    np.testing.assert_allclose(
        whole.pair_invariant_var[0, 1],
        ww @ cos**2 / ww.sum() - (ww @ cos / ww.sum()) ** 2,
    )
    with pytest.raises(ValueError, match="row_weights must be"):
        ManifoldStats.from_outputs(d.X, s, row_weights=-w)


def test_labeled_equations_identify_and_sharpen():
    s = Sphere(2)
    d = make_manifold_data(1500, space=s, noise_scale=[0.02, 0.05, 0.1], seed=7)
    from snorkel_structured.estimators._manifold_stats import LabeledManifoldStats

    stats = ManifoldStats.from_outputs(d.X[500:], s)
    dev = LabeledManifoldStats._from_checked(d.X[:500], d.Y[:500], s)
    np.testing.assert_allclose(
        dev.sq_dist_mean, np.mean(s.squared_dist(d.X[:500], d.Y[:500, None]), axis=0)
    )
    both = triplet_estimate(stats, d.noise, dev=dev)
    np.testing.assert_allclose(both.expected_sq_dist, d.expected_sq_dist, rtol=0.1)
    # with every pair declared dependent only the labeled rows identify the LFs
    all_pairs = [(0, 1), (0, 2), (1, 2)]
    only_dev = triplet_estimate(stats, d.noise, dev=dev, dependencies=all_pairs)
    np.testing.assert_allclose(
        only_dev.expected_invariant, dev.invariant_mean, rtol=1e-6
    )
    assert np.all(np.isfinite(both.log_sq_dist_var)) and np.all(
        both.log_sq_dist_var > 0
    )
