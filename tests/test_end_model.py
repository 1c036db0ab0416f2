"""Kernel structured predictor: clean labels, loss weights, validation, sklearn."""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

import snorkel_structured as ss
from snorkel_structured.synthetic import make_ranking_data

SPACE = ss.Permutations(3)


def _data(rng, n=60, labels=(0, 2, 5)):
    y = rng.choice(np.array(labels), size=n)
    X = rng.normal(size=(n, 3)) + 3.0 * y[:, None] / 5.0
    return X, y


def test_interpolates_clean_training_labels_with_tiny_nu(rng):
    X, y = _data(rng)
    model = ss.KernelStructuredPredictor(SPACE, nu=1e-10, gamma=1.0).fit(X, y)
    np.testing.assert_array_equal(model.predict(X), y)
    assert model.score(X, y) == 1.0 and model.score(X, y, metric="neg_sq_dist") == 0.0
    np.testing.assert_array_equal(model.labels_, [0, 2, 5])


@pytest.mark.parametrize("kernel", ["rbf", "linear"])
def test_one_hot_weights_frame_equals_clean_labels(rng, kernel):
    X, y = _data(rng)
    names = [str(SPACE.item(i)) for i in (0, 2, 5)]
    W = pd.DataFrame((y[:, None] == np.array([0, 2, 5])).astype(float), columns=names)
    W.insert(0, "pseudolabel", y)
    a = ss.KernelStructuredPredictor(SPACE, kernel=kernel, candidates="all").fit(X, y)
    b = ss.KernelStructuredPredictor(SPACE, kernel=kernel, candidates="all").fit(X, W)
    np.testing.assert_allclose(
        a.decision_function(X), b.decision_function(X), atol=1e-10
    )
    assert a.decision_function(X).shape == (60, 6)


def test_chunking_does_not_change_predictions(rng):
    X, y = _data(rng)
    Xt = rng.normal(size=(37, 3))
    big = ss.KernelStructuredPredictor(SPACE, candidates="all").fit(X, y).predict(Xt)
    small = ss.KernelStructuredPredictor(SPACE, candidates="all", chunk_size=5)
    np.testing.assert_array_equal(small.fit(X, y).predict(Xt), big)


def test_noise_aware_fit_recovers_clean_predictor():
    data = make_ranking_data(600, theta=[0.0, 0.0, 1.0], seed=3)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(600, 2)) + 2.0 * (data.Y == data.support[0])[:, None]
    idx = pd.RangeIndex(600)
    W = ss.loss_weights(data.L, data.space, data.theta, data.prior, seed=0, index=idx)
    X_df = pd.DataFrame(X, index=idx)
    noisy = ss.KernelStructuredPredictor(data.space).fit(X_df, W)
    clean = ss.KernelStructuredPredictor(data.space).fit(X_df, data.Y)
    assert np.mean(noisy.predict(X) == clean.predict(X)) > 0.9
    np.testing.assert_array_equal(noisy.candidates_, data.support)


def test_validation_errors(rng):
    X, y = _data(rng)
    model = ss.KernelStructuredPredictor(SPACE)
    with pytest.raises(ss.NotFittedError, match="not fitted"):
        model.predict(X)
    with pytest.raises(ValueError, match="X has 60 rows but y has 59"):
        model.fit(X, y[:59])
    with pytest.raises(ValueError, match="unknown label: entry 3 is 6"):
        model.fit(X, np.where(np.arange(60) == 3, 6, y))
    with pytest.raises(ValueError, match="must be a 2-D"):
        model.fit(X[:, 0], y)
    with pytest.raises(ValueError, match="1-D array of label indices"):
        model.fit(X, y[:, None])
    with pytest.raises(ValueError, match="kernel must be one of"):
        ss.KernelStructuredPredictor(SPACE, kernel="poly").fit(X, y)
    W = pd.DataFrame({"pseudolabel": y, "not-a-label": 1.0})
    with pytest.raises(ValueError, match="names no label of the space"):
        model.fit(X, W)
    with pytest.raises(ValueError, match="loss-weights DataFrame has 59"):
        model.fit(X, W.iloc[:59])
    model.fit(X, y)
    with pytest.raises(ValueError, match="X has 2 features"):
        model.predict(X[:, :2])
    with pytest.raises(ValueError, match="metric must be one of"):
        model.score(X, y, metric="f1")


def test_misaligned_indexes_raise(rng):
    X, y = _data(rng, n=10)
    W = ss.loss_weights(np.c_[y, y], SPACE, [1.0, 1.0], np.full(6, 1 / 6), seed=0)
    X_df = pd.DataFrame(X, index=np.arange(10, 20))
    with pytest.raises(ValueError, match="different indexes"):
        ss.KernelStructuredPredictor(SPACE).fit(X_df, W)


def test_sklearn_clone_and_params_round_trip(rng):
    model = ss.KernelStructuredPredictor(SPACE, kernel="linear", nu=0.1, chunk_size=7)
    params = model.get_params()
    assert params == {
        "space": SPACE,
        "kernel": "linear",
        "gamma": "auto",
        "nu": 0.1,
        "n_components": "auto",
        "candidates": "support",
        "chunk_size": 7,
        "seed": 0,
    }
    twin = clone(model)
    assert twin.get_params() == params and twin is not model
    X, y = _data(rng)
    X0 = X.copy()
    fitted = model.fit(X, y)
    assert fitted is model and not hasattr(clone(model), "dual_coef_")
    np.testing.assert_array_equal(X, X0)
    again = clone(model).fit(X, y)
    np.testing.assert_array_equal(again.dual_coef_, model.dual_coef_)
    assert clone(model).set_params(nu=1.0).nu == 1.0


def test_rbf_scale_is_free_of_the_features_magnitude():
    # gamma="scale" is 1 / (n_features var X): scaling X by 2^k scales gamma by 2^-2k
    # exactly, so the kernel and the predictions are bit for bit the same.
    rng = np.random.default_rng(0)
    space = ss.Permutations(3)
    X, y = rng.normal(size=(120, 4)), rng.integers(0, 6, 120)
    base = ss.KernelStructuredPredictor(space).fit(X, y)
    for k in (-300, 300):
        model = ss.KernelStructuredPredictor(space).fit(X * 2.0**k, y)
        assert model.gamma_ == base.gamma_ * 2.0 ** (-2 * k)
        np.testing.assert_array_equal(model.predict(X * 2.0**k), base.predict(X))


@pytest.mark.parametrize("scale", [1e-160, 1e160])
def test_features_beyond_floating_range_are_refused(scale):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(30, 4)) * scale, rng.integers(0, 6, 30)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a clear error, not NaN after RuntimeWarnings
        with pytest.raises(ValueError, match="Standardize|standardize"):
            ss.KernelStructuredPredictor(ss.Permutations(3)).fit(X, y)


# --- features sharing a large offset (Unix timestamps, IDs) -------------------------


def _exact_squared_distances(A, B):
    """((a - b) ** 2).sum() of each pair in exact rational arithmetic, then rounded."""
    from fractions import Fraction

    return np.array(
        [
            [
                float(
                    sum(
                        (Fraction(x) - Fraction(z)) ** 2
                        for x, z in zip(a, b, strict=True)
                    )
                )
                for b in B
            ]
            for a in A
        ]
    )


@pytest.mark.parametrize("offset", [0.0, 1e7, 1.7e9, -3e12])
def test_squared_distances_match_the_exact_differences_on_offset_features(offset):
    # |a|^2 + |b|^2 - 2 a.b of x + 1.7e9 lost every digit of a distance of 1 (the RBF
    # kernel became noise); the distances must be those of the exact differences.
    from snorkel_structured.end_model._kernels import squared_distances

    rng = np.random.default_rng(0)
    A = rng.normal(size=(9, 3)) + offset
    B = rng.normal(size=(7, 3)) + offset
    B[1] = A[4] + [1e-6, 0.0, 0.0]  # a near-duplicate pair: tiny, never negative
    for P, Q in ((A, B), (B, A), (A, A)):
        exact = _exact_squared_distances(P, Q)
        # brute force over the (exactly representable) differences, for more rows
        brute = ((P[:, None, :] - Q[None, :, :]) ** 2).sum(-1)
        sq = squared_distances(P, Q)
        assert (sq >= 0).all()
        np.testing.assert_allclose(sq, exact, rtol=1e-12, atol=1e-13 * exact.max())
        np.testing.assert_allclose(brute, exact, rtol=1e-12)
    sq = squared_distances(A, A)
    assert (np.diag(sq) == 0.0).all() and (sq == sq.T).all()
    big = rng.normal(size=(400, 3)) + offset
    sq = squared_distances(big, big)
    brute = ((big[:, None, :] - big[None, :, :]) ** 2).sum(-1)
    np.testing.assert_allclose(sq, brute, rtol=1e-12, atol=1e-13 * brute.max())
    assert (np.diag(sq) == 0.0).all() and (sq == sq.T).all() and (sq >= 0).all()


@pytest.mark.parametrize("offset", [1e7, 1.7e9])
@pytest.mark.parametrize("n_components", [None, 50])
def test_offset_features_give_the_centred_features_predictions(offset, n_components):
    # Fitted on X + 1.7e9, the predictor scored 0.545 on its own training rows (1.0
    # centred), and at offsets 1e7-1e8 fit refused an RBF kernel "not positive
    # definite" (its diagonal averaged 0.98, not 1). The kernel is free of a shift.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = np.where(X[:, 0] > 0, 5, 0)
    shifted = X + offset
    centred = shifted - offset  # exact: the features the shifted ones represent
    fits = [
        ss.KernelStructuredPredictor(SPACE, n_components=n_components).fit(F, y)
        for F in (shifted, centred)
    ]
    np.testing.assert_allclose(fits[0].gamma_, fits[1].gamma_, rtol=1e-12)
    assert fits[0].nu_ == fits[1].nu_
    D = [m.decision_function(F) for m, F in zip(fits, (shifted, centred), strict=True)]
    np.testing.assert_allclose(D[0], D[1], rtol=1e-6, atol=1e-6 * np.abs(D[1]).max())
    np.testing.assert_array_equal(fits[0].predict(shifted), fits[1].predict(centred))
    assert (fits[0].predict(shifted) == y).mean() > 0.95
