"""ManifoldLabelModel regressions: precise LFs, statistics-only fits, streaming,
unidentifiable noisy LFs and Euclidean targets too large for the statistics."""

import warnings

import numpy as np
import pytest

from snorkel_structured import (
    Euclidean,
    Hyperbolic,
    ManifoldLabelModel,
    NotFittedError,
    Sphere,
)
from snorkel_structured.estimators._manifold_stats import (
    LabeledManifoldStats,
    ManifoldStats,
)
from snorkel_structured.exceptions import IdentifiabilityWarning
from snorkel_structured.synthetic_manifold import make_manifold_data


# --- very precise LFs (sigma2 1e-9 is a few hundred metres on the Earth) ---------------
@pytest.mark.parametrize("sigma2", [1e-9, 1e-6])
@pytest.mark.parametrize("seed", [0, 1])
def test_precise_sphere_lfs_fit_without_warnings(sigma2, seed):
    s = Sphere(2)
    d = make_manifold_data(300, space=s, noise_scale=[sigma2] * 3, seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # also numpy's RuntimeWarnings
        lm = ManifoldLabelModel(s, seed=0).fit(d.X)
        pred, spread = lm.predict(d.X, return_spread=True)
    # the noise is estimated, not clipped to a floor or rejected
    np.testing.assert_allclose(lm.noise_scale_, sigma2, rtol=0.5)
    sq_err = s.squared_dist(pred, d.Y)
    lf_sq_err = s.squared_dist(d.X, d.Y[:, None, :]).mean(axis=0)
    # the pseudolabels beat every LF, and their error is what the model says
    assert sq_err.mean() < lf_sq_err.min()
    np.testing.assert_allclose(sq_err.mean(), spread.mean(), rtol=0.3)
    assert np.sqrt(sq_err.mean()) < 50 * np.sqrt(sigma2)


@pytest.mark.parametrize(
    "space,kw",
    [
        (Sphere(2), {"estimator": "pair_sq_dist"}),
        (Sphere(2), {"estimator": "uws"}),
        (Sphere(2), {"noise": "riemannian_gaussian"}),
        (Hyperbolic(2), {}),
    ],
    ids=repr,
)
def test_precise_lfs_other_estimators_and_spaces(space, kw):
    sigma2 = 1e-9
    noise = kw.get("noise", "wrapped_normal")
    scale = sigma2 if noise == "wrapped_normal" else 1.0 / (2.0 * sigma2)
    d = make_manifold_data(
        300, space=space, noise=noise, noise_scale=[scale] * 3, seed=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lm = ManifoldLabelModel(space, seed=0, **kw).fit(d.X)
    np.testing.assert_allclose(lm.expected_sq_dist_, 2 * sigma2, rtol=0.5)


def test_plug_in_variances_are_never_negative():
    s = Sphere(2)
    d = make_manifold_data(300, space=s, noise_scale=[1e-9] * 3, seed=0)
    stats = ManifoldStats.from_outputs(d.X, s)
    off = ~np.eye(3, dtype=bool)
    assert (stats.pair_invariant_var[off] >= 0).all()
    assert (stats.pair_sq_dist_var[off] >= 0).all()
    labeled = LabeledManifoldStats._from_checked(d.X, d.Y, s)
    assert (labeled.invariant_var >= 0).all() and (labeled.sq_dist_var >= 0).all()
    # a precise LF with labeled rows keeps them (a NaN standard error dropped it)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lm = ManifoldLabelModel(s, seed=0).fit(d.X[30:], X_dev=d.X[:30], Y_dev=d.Y[:30])
    np.testing.assert_allclose(lm.noise_scale_, 1e-9, rtol=0.5)


# --- robust=True with statistics only: the plain model, as documented --------------------
def test_robust_true_partial_fit_and_fit_stats_fit_the_plain_model():
    s = Sphere(2)
    d = make_manifold_data(600, space=s, noise_scale=[0.2, 0.5, 1.0], seed=0)
    plain = ManifoldLabelModel(s, robust=False, seed=0).fit(d.X)
    lm = ManifoldLabelModel(s, robust=True, seed=0).partial_fit(d.X)
    assert lm.noise_model_["family"] == "plain"
    assert lm.noise_model_["criterion"] == "statistics_only"
    np.testing.assert_allclose(lm.weights_, plain.weights_)
    np.testing.assert_array_equal(lm.outlier_rate_, 0.0)
    fs = ManifoldLabelModel(s, robust=True, seed=0).fit_stats(plain.stats_)
    assert fs.noise_model_["family"] == "plain"
    np.testing.assert_allclose(fs.weights_, plain.weights_)
    # after a robust fit, more rows re-estimate the plain model from all rows
    rob = ManifoldLabelModel(s, robust=True, seed=0).fit(d.X[:500])
    assert rob.noise_model_["family"] == "robust"
    rob.partial_fit(d.X[500:])
    assert rob.noise_model_["family"] == "plain"
    assert rob.stats_.n_samples == 600
    np.testing.assert_allclose(rob.weights_, plain.weights_)


# --- partial_fit keeps rows it cannot estimate from yet ----------------------------------
@pytest.mark.parametrize("space", [Euclidean(2), Sphere(2)], ids=repr)
def test_partial_fit_in_small_chunks_equals_fit(space):
    d = make_manifold_data(1000, space=space, noise_scale=[0.2, 0.5, 1.0], seed=0)
    X = d.X.copy()
    X[:8] = np.nan  # a first chunk where every LF abstains
    lm = ManifoldLabelModel(space, seed=0)
    chunks = np.array_split(X, 125)  # 8 rows each
    with pytest.warns(IdentifiabilityWarning, match="not fitted yet"):
        lm.partial_fit(chunks[0])
    with pytest.raises(NotFittedError):
        lm.predict(X[8:10])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for chunk in chunks[1:]:
            lm.partial_fit(chunk)
    # 8 voted rows so far: below min_overlap=10 co-votes per pair
    assert any("rows so far (16)" in str(w.message) for w in caught)
    assert lm.stats_.n_samples == 1000
    ref = ManifoldLabelModel(space, robust=False, seed=0).fit(X)
    np.testing.assert_allclose(lm.expected_sq_dist_, ref.expected_sq_dist_)
    np.testing.assert_allclose(lm.weights_, ref.weights_)
    np.testing.assert_allclose(lm.predict(X[8:]), ref.predict(X[8:]), atol=1e-12)


def test_partial_fit_first_chunk_too_small_then_completed():
    e = Euclidean(2)
    d = make_manifold_data(200, space=e, noise_scale=[0.2, 0.5, 1.0], seed=1)
    lm = ManifoldLabelModel(e, seed=0)
    with pytest.warns(IdentifiabilityWarning, match=r"rows so far \(5\).*min_overlap"):
        lm.partial_fit(d.X[:5])
    assert not hasattr(lm, "weights_")
    # bad input still raises and adds nothing
    bad = d.X[5:10].copy()
    bad[0, 0] = np.inf
    with pytest.raises(ValueError):
        lm.partial_fit(bad)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lm.partial_fit(d.X[5:])
    assert not [w for w in caught if "not fitted" in str(w.message)]
    assert lm.stats_.n_samples == 200
    ref = ManifoldLabelModel(e, robust=False, seed=0).fit(d.X)
    np.testing.assert_allclose(lm.weights_, ref.weights_)


# --- a noisy LF on few rows: the error names the cause -----------------------------------
def test_unidentifiable_noisy_lf_error_names_the_cause_without_a_prior_promise():
    s = Sphere(2)
    d = make_manifold_data(50, space=s, noise_scale=[0.2, 0.5, 1.0], seed=0)
    with warnings.catch_warnings():
        # no warning that LF 2 "is fitted at the family's maximum noise" before the
        # fit fails
        warnings.simplefilter("error")
        with pytest.raises(ValueError) as info:
            ManifoldLabelModel(s, seed=0).fit(d.X)
    msg = str(info.value)
    assert "Too few overlapping rows" not in msg  # every pair co-voted on 50 rows
    assert "cannot be identified from these rows" in msg
    assert "not above 0 by 2 standard errors (LFs 0 and 2: 0.109" in msg
    assert "LF(s) [2] with no pair" in msg
    assert "do not identify LF(s) [0, 1]" in msg
    assert "add rows" in msg and "estimator='pair_sq_dist'" in msg
    # both remedies the message names work
    more = make_manifold_data(500, space=s, noise_scale=[0.2, 0.5, 1.0], seed=0)
    assert ManifoldLabelModel(s, seed=0).fit(more.X).weights_.sum() == pytest.approx(1)
    lm = ManifoldLabelModel(s, estimator="pair_sq_dist", seed=0).fit(d.X)
    assert np.argmax(lm.expected_sq_dist_) == 2


# --- Euclidean targets beyond 1e50: refused, with what to do -----------------------------
@pytest.mark.parametrize("factor", [1e80, 1e160])
def test_huge_euclidean_targets_are_refused_with_the_fix(factor):
    e = Euclidean(2)
    d = make_manifold_data(300, space=e, noise_scale=[0.2, 0.5, 1.0], seed=0)
    match = r"Euclidean coordinate of absolute value .*e\+(80|160).*divide the targets"
    with pytest.raises(ValueError, match=match):
        ManifoldLabelModel(e, seed=0).fit(d.X * factor)
    with pytest.raises(ValueError, match=match):
        ManifoldLabelModel(e, seed=0).partial_fit(d.X * factor)
    with pytest.raises(ValueError, match="X_dev holds a Euclidean coordinate"):
        ManifoldLabelModel(e, seed=0).fit(
            d.X[30:], X_dev=d.X[:30] * factor, Y_dev=d.Y[:30]
        )


def test_large_euclidean_targets_get_the_same_weights():
    # the model is scale-equivariant: targets in any unit up to the limit agree
    e = Euclidean(2)
    d = make_manifold_data(300, space=e, noise_scale=[0.2, 0.5, 1.0], seed=0)
    ref = ManifoldLabelModel(e, seed=0).fit(d.X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        big = ManifoldLabelModel(e, seed=0).fit(d.X * 1e45)
    np.testing.assert_allclose(big.weights_, ref.weights_, rtol=1e-6)
    np.testing.assert_allclose(big.expected_sq_dist_, ref.expected_sq_dist_ * 1e90)
