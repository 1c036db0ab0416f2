import numpy as np
import pytest
from sklearn.base import clone

from snorkel_structured import (
    Euclidean,
    Hyperbolic,
    ManifoldLabelModel,
    NotFittedError,
    ProductManifold,
    Sphere,
)
from snorkel_structured.synthetic_manifold import make_manifold_data

SETTINGS = [
    (Sphere(2), "wrapped_normal", [0.05, 0.1, 0.2, 0.3, 0.5]),
    (Euclidean(3), "wrapped_normal", [0.05, 0.1, 0.2, 0.3, 0.5]),
    (Hyperbolic(3), "riemannian_gaussian", [1.0, 2.0, 4.0, 8.0, 3.0]),
    (Sphere(2), "riemannian_gaussian", [1.0, 2.0, 4.0, 8.0, 3.0]),
]


@pytest.mark.parametrize("space,noise,scale", SETTINGS, ids=repr)
@pytest.mark.parametrize("estimator", ["triplet", "pair_sq_dist"])
def test_recovery_with_abstains_and_pseudolabels(space, noise, scale, estimator):
    d = make_manifold_data(
        30000, space=space, noise=noise, noise_scale=scale, abstain=0.2, seed=0
    )
    lm = ManifoldLabelModel(
        space, estimator=estimator, noise=noise, robust=False, shrinkage=0.0
    ).fit(d.X)
    np.testing.assert_allclose(lm.expected_sq_dist_, d.expected_sq_dist, rtol=0.05)
    np.testing.assert_allclose(lm.weights_.sum(), 1.0)
    assert np.argmax(lm.weights_) == np.argmin(d.expected_sq_dist)
    pred = lm.predict(d.X[:3000])
    err_w = np.nanmean(space.squared_dist(pred, d.Y[:3000]))
    err_u = np.nanmean(space.squared_dist(space.frechet_mean(d.X[:3000]), d.Y[:3000]))
    assert err_w < err_u and err_w < d.expected_sq_dist.min()


def test_abstain_rows_predict_nan_and_single_vote_returns_it():
    s = Sphere(2)
    d = make_manifold_data(
        2000, space=s, noise_scale=[0.1, 0.2, 0.3], abstain=0.2, seed=1
    )
    lm = ManifoldLabelModel(s).fit(d.X)
    X = d.X[:3].copy()
    X[0] = np.nan
    X[1, 1:] = np.nan
    pred = lm.predict(X)
    assert np.isnan(pred[0]).all()
    np.testing.assert_allclose(pred[1], X[1, 0], atol=1e-12)
    assert s.belongs(pred[2])


def test_partial_fit_equals_fit_and_contract(tmp_path):
    h = Hyperbolic(2)
    d = make_manifold_data(
        6000, space=h, noise_scale=[0.2, 0.5, 1.0], abstain=0.1, seed=2
    )
    X0 = d.X.copy()
    full = ManifoldLabelModel(h, seed=0, robust=False, shrinkage=0.0).fit(d.X)
    np.testing.assert_array_equal(d.X, X0)  # input not mutated
    part = ManifoldLabelModel(h, shrinkage=0.0)
    for chunk in np.array_split(d.X, 3):
        part.partial_fit(chunk)
    np.testing.assert_allclose(part.noise_scale_, full.noise_scale_, rtol=1e-10)
    c = clone(full)
    assert c.get_params() == full.get_params() and not hasattr(c, "weights_")
    with pytest.raises(NotFittedError):
        c.predict(d.X)
    np.testing.assert_array_equal(
        ManifoldLabelModel(h, seed=0, robust=False).fit(d.X).noise_scale_,
        full.noise_scale_,
    )
    full.save(tmp_path / "lm.pkl")
    loaded = ManifoldLabelModel(h).load(tmp_path / "lm.pkl")
    np.testing.assert_array_equal(loaded.weights_, full.weights_)
    beta = (
        ManifoldLabelModel(h, weighting="beta_squared", robust=False, shrinkage=0.0)
        .fit(d.X)
        .weights_
    )
    inv = 1 / full.expected_sq_dist_**2
    np.testing.assert_allclose(beta, inv / inv.sum())


def test_uws_estimator_runs():
    e = Euclidean(2)
    d = make_manifold_data(20000, space=e, noise_scale=[0.2, 0.5, 1.0], seed=3)
    lm = ManifoldLabelModel(e, estimator="uws").fit(d.X)
    np.testing.assert_allclose(lm.noise_scale_, d.noise_scale, rtol=0.05)


def test_validation_errors():
    s = Sphere(2)
    d = make_manifold_data(500, space=s, noise_scale=[0.1, 0.2, 0.3], seed=4)
    with pytest.raises(ValueError, match="at least 3 labeling functions"):
        ManifoldLabelModel(s).fit(d.X[:, :2])
    with pytest.raises(ValueError, match=r"shape \(n_samples, n_lfs, 3\)"):
        ManifoldLabelModel(s).fit(d.X[..., :2])
    X = d.X.copy()
    X[7, 1] *= 1.5
    with pytest.raises(ValueError, match="off Sphere.*row 7, LF 1"):
        ManifoldLabelModel(s).fit(X)
    X = d.X.copy()
    X[7, 1] *= 1 + 1e-9  # within tolerance: projected
    ManifoldLabelModel(s).fit(X)
    X[3, 2, 0] = np.nan
    with pytest.raises(ValueError, match="NaN coordinates at row 3, LF 2"):
        ManifoldLabelModel(s).fit(X)
    for kw, msg in [
        ({"estimator": "em"}, "estimator must be one of"),
        ({"noise": "laplace"}, "noise must be one of"),
        ({"weighting": "equal"}, "weighting must be one of"),
        ({"min_overlap": 0}, "min_overlap must be in the range"),
    ]:
        with pytest.raises(ValueError, match=msg):
            ManifoldLabelModel(s, **kw).fit(d.X)
    with pytest.raises(
        ValueError, match="space must be a Euclidean, Sphere or Hyperbolic"
    ):
        ManifoldLabelModel(ProductManifold([s, s])).fit(d.X)
    X = d.X.copy()
    X[:, 2] = np.nan
    X[:4, 2] = X[:4, 0]
    with (
        pytest.warns(Warning),
        pytest.raises(ValueError, match="Too few overlapping rows"),
    ):
        ManifoldLabelModel(s).fit(X)
    lm = ManifoldLabelModel(s).fit(d.X)
    with pytest.raises(ValueError, match="must have 3 labeling functions"):
        lm.predict(np.concatenate([d.X, d.X[:, :1]], axis=1))


@pytest.mark.parametrize("estimator", ["triplet", "pair_sq_dist", "uws"])
def test_euclidean_weights_do_not_depend_on_the_unit(estimator):
    """Targets in metres or in kilometres get the same weights: the Euclidean model
    has no unit of its own. The admissible range of the noise scale was absolute
    (1e-8 to 1e8), so at unit 1e6 every LF was clipped to it and weighed alike."""
    import warnings

    from snorkel_structured import Euclidean
    from snorkel_structured.exceptions import IdentifiabilityWarning

    rng = np.random.default_rng(0)
    Y = rng.normal(size=(2000, 1))
    X = Y[:, None, :] + np.array([0.1, 0.2, 0.5])[None, :, None] * rng.normal(
        size=(2000, 3, 1)
    )
    ref = ManifoldLabelModel(Euclidean(1), estimator=estimator).fit(X).weights_
    assert ref[0] > ref[1] > ref[2]  # less noise, more weight
    for unit in (1e-3, 1e6, 1e9):
        with warnings.catch_warnings():
            warnings.simplefilter("error", IdentifiabilityWarning)
            w = ManifoldLabelModel(Euclidean(1), estimator=estimator).fit(unit * X)
        np.testing.assert_allclose(w.weights_, ref, rtol=1e-6, atol=1e-9)
    # Far below, the robust model's floors decide: the fit says so.
    with pytest.warns(IdentifiabilityWarning, match="Rescale the targets"):
        ManifoldLabelModel(Euclidean(1), estimator=estimator).fit(1e-5 * X)


def test_sphere_lfs_of_junk_votes_get_no_weight():
    # Four LFs around the truth on S^2 and one or two of junk votes (uniform on the
    # sphere, unrelated to Y). A junk LF's mean cos d with the others is 0 up to
    # sampling noise: the default fit gives it weight about 0 and answers as well as
    # without it, with and without 100 labeled rows. Before, the triplet estimate
    # raised "Too few overlapping rows" when every such mean was <= 0, and one barely
    # positive mean, entering the least squares as its log, put a 0.3-noise LF at
    # noiseless (0.29 rad against 0.10 without junk). With labeled rows whose mean
    # cos d for the junk LF was <= 0, the junk LF came out noiseless.
    import warnings

    space = Sphere(2)
    n = 3000
    for seed in range(3):
        rng = np.random.default_rng(seed)
        Y = rng.standard_normal((n + 100, 3))
        Y /= np.linalg.norm(Y, axis=1, keepdims=True)
        votes = [Y + s * rng.standard_normal(Y.shape) for s in (0.1, 0.2, 0.3, 0.4)]
        votes += [rng.standard_normal(Y.shape) for _ in range(2)]
        X = np.stack(votes, axis=1)
        X /= np.linalg.norm(X, axis=2, keepdims=True)

        def error(k, dev, X=X, Y=Y):
            kw = dict(X_dev=X[n:, :k], Y_dev=Y[n:]) if dev else {}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                lm = ManifoldLabelModel(space, seed=0).fit(X[:n, :k], **kw)
            cos = np.clip((lm.predict(X[:n, :k]) * Y[:n]).sum(axis=1), -1.0, 1.0)
            return float(np.median(np.arccos(cos))), lm.weights_

        for dev in (False, True):
            clean, _ = error(4, dev)
            for n_junk in (1, 2):
                got, w = error(4 + n_junk, dev)
                assert got <= 1.05 * clean, (seed, dev, n_junk, got, clean)
                assert (w[4:] < 0.01).all(), (seed, dev, n_junk, w)
