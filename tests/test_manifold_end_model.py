import numpy as np
import pytest

from snorkel_structured import (
    Euclidean,
    Hyperbolic,
    KernelManifoldRegressor,
    ManifoldLabelModel,
    NotFittedError,
    Sphere,
    WrappedNormal,
)
from snorkel_structured.synthetic_manifold import make_manifold_data


def _data(space, n, rng):
    F = rng.normal(size=(n, 2))
    if isinstance(space, Sphere):
        Y = space.projection(np.c_[F, np.ones(n)])
    else:
        Y = space.exp(np.c_[np.zeros(n), 0.7 * F], np.tile(space.origin, (n, 1)))
    X = WrappedNormal(space).sample(
        np.repeat(Y[:, None], 3, axis=1), [0.02, 0.1, 0.4], seed=rng
    )
    return F, Y, X


@pytest.mark.parametrize("space", [Sphere(2), Hyperbolic(2)], ids=repr)
def test_weak_supervision_beats_worst_lf_and_approaches_clean(space, rng):
    F, Y, X = _data(space, 500, rng)
    lm = ManifoldLabelModel(space).fit(X)
    weak = KernelManifoldRegressor(space, nu=1e-4).fit(F[:350], X[:350], lm)
    clean = KernelManifoldRegressor(space, nu=1e-4).fit(F[:350], Y[:350])
    worst = KernelManifoldRegressor(space, nu=1e-4).fit(F[:350], X[:350, 2])
    s_weak, s_clean, s_worst = (m.score(F[350:], Y[350:]) for m in (weak, clean, worst))
    assert s_weak > s_worst and s_weak > 2 * s_clean  # scores are negative errors
    pred = weak.predict(F[350:])
    assert space.belongs(pred).all()


def test_euclidean_clean_labels_with_positive_weights_matches_kernel_average(rng):
    e = Euclidean(1)
    F = rng.normal(size=(40, 1))
    Y = np.sin(F)
    m = KernelManifoldRegressor(e, kernel="linear", nu=1.0).fit(F, Y)
    from snorkel_structured.end_model._kernels import (
        kernel_matrix,
        ridge_factor,
        ridge_weights,
    )

    a = ridge_weights(
        ridge_factor(kernel_matrix(F, F, "linear", 1.0), 1.0),
        kernel_matrix(F, F[:3], "linear", 1.0),
    ).T
    a = np.maximum(a, 0)
    np.testing.assert_allclose(m.predict(F[:3])[:, 0], (a @ Y[:, 0]) / a.sum(1))


def test_end_model_validation(rng):
    s = Sphere(2)
    F, Y, X = _data(s, 30, rng)
    with pytest.raises(NotFittedError):
        KernelManifoldRegressor(s).predict(F)
    with pytest.raises(
        ValueError, match="label_model must be a fitted ManifoldLabelModel"
    ):
        KernelManifoldRegressor(s).fit(F, X)
    with pytest.raises(ValueError, match="label_model must be None"):
        KernelManifoldRegressor(s).fit(F, Y, ManifoldLabelModel(s).fit(X))
    with pytest.raises(ValueError, match="same number of rows"):
        KernelManifoldRegressor(s).fit(F[:10], Y)
    with pytest.raises(ValueError, match="kernel must be one of"):
        KernelManifoldRegressor(s, kernel="poly").fit(F, Y)
    with pytest.raises(ValueError, match="nu must be in the range"):
        KernelManifoldRegressor(s, nu=0.0).fit(F, Y)
    m = KernelManifoldRegressor(s).fit(F, Y)
    with pytest.raises(ValueError, match="expecting 2 features"):
        m.predict(F[:, :1])


def test_a_query_far_from_every_row_gets_its_nearest_voted_row():
    # Training row 0 has no vote. A query far from every training row has no kernel
    # weight anywhere: it gets the nearest training row that has votes (it used to
    # get row 0, and NaN).
    sphere = Sphere(2)
    rng = np.random.default_rng(0)
    data = make_manifold_data(300, space=sphere, noise_scale=[0.1, 0.2, 0.3], seed=0)
    votes = data.X.copy()
    votes[0] = np.nan
    lm = ManifoldLabelModel(sphere).fit(votes)
    features = rng.normal(size=(300, 3))
    reg = KernelManifoldRegressor(sphere).fit(features, votes, label_model=lm)
    far = np.array([[1e3, 1e3, 1e3]])
    nearest = np.argmin(((features - far) ** 2).sum(axis=1))
    assert nearest != 0
    expected = sphere.frechet_mean(votes[nearest][None], reg.beta_[None])
    np.testing.assert_allclose(reg.predict(far), expected, atol=1e-9)


@pytest.mark.parametrize("offset", [1e7, 1.7e9])
@pytest.mark.parametrize(
    ("n_components", "nu", "atol"),
    # The low-rank weights move by ~1e-6 under any round-off-level change of the
    # kernel (a 1e-9 shift of the centred features does as much), offset or not.
    [(None, "auto", 1e-9), (50, 1e-2, 1e-5)],
    ids=["exact", "low-rank"],
)
@pytest.mark.parametrize("space", [Euclidean(1), Sphere(2)], ids=repr)
def test_offset_features_give_the_centred_features_predictions(
    space, n_components, nu, atol, offset
):
    # Features sharing a large offset (Unix timestamps, IDs) made the RBF kernel's
    # |a|^2 + |b|^2 - 2 a.b lose every digit: fit refused the kernel as "not positive
    # definite" (its diagonal averaged 0.98, not 1). The kernel is free of a shift.
    rng = np.random.default_rng(0)
    F = rng.normal(size=(200, 2))
    if isinstance(space, Sphere):
        Y = space.projection(np.c_[F, np.ones(len(F))])
    else:
        Y = F[:, :1].copy()
    shifted = F + offset
    centred = shifted - offset  # exact: the features the shifted ones represent
    fits = [
        KernelManifoldRegressor(space, nu=nu, n_components=n_components).fit(X, Y)
        for X in (shifted, centred)
    ]
    np.testing.assert_allclose(fits[0].gamma_, fits[1].gamma_, rtol=1e-12)
    assert fits[0].nu_ == fits[1].nu_
    pred = [m.predict(X) for m, X in zip(fits, (shifted, centred), strict=True)]
    np.testing.assert_allclose(pred[0], pred[1], rtol=1e-6, atol=atol)
    assert np.mean(space.squared_dist(pred[0], Y)) < 0.1
