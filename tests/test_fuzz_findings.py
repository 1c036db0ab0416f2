"""Regressions for the failures the fuzz suite (tests/fuzz) found, as fixed examples."""

import warnings

import numpy as np

import snorkel_structured as ss


def test_silent_lf_with_the_outlier_component_still_gives_loss_weights():
    # LF 3 never votes: its vote distribution was log(0) everywhere, so the fitted
    # outlier_dist_ had a row of zeros and loss_weights refused the model.
    L = np.array([[0, 0, 0, -1], [1, 1, 0, -1], [1, 1, 1, -1]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # three rows: identifiability warnings
        lm = ss.StructuredLabelModel(ss.Discrete(2), outliers=True, seed=0).fit(L)
    np.testing.assert_allclose(lm.outlier_dist_.sum(axis=1), 1.0)
    np.testing.assert_allclose(lm.outlier_dist_[3], [0.5, 0.5])
    weights = lm.loss_weights(L, seed=0)
    # rows of Q^-1 sum to one (Q's rows do)
    np.testing.assert_allclose(weights.drop(columns="pseudolabel").sum(axis=1), 1.0)


def test_robust_pair_fit_with_a_pure_noise_lf_on_the_circle():
    # A uniform LF's E d^2 lands an ulp above the family's maximum pi^2 / 3; flooring
    # another LF inverted E d^2 for every LF, which refused that one.
    rng = np.random.default_rng(0)
    n = 40

    def pts(a):
        return np.c_[np.cos(a), np.sin(a)]

    ang = rng.uniform(0, 2 * np.pi, n)
    a0 = pts(ang + 0.3 * rng.normal(size=n))
    X = np.stack(
        [
            a0,
            a0,
            pts(ang + 0.3 * rng.normal(size=n)),
            pts(ang + 0.3 * rng.normal(size=n)),
            pts(rng.uniform(0, 2 * np.pi, n)),
        ],
        axis=1,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lm = ss.ManifoldLabelModel(
            ss.Sphere(1), estimator="pair_sq_dist", robust=True, shrinkage=0.0, seed=0
        ).fit(X)
    assert np.isfinite(lm.weights_).all()
    # the pure-noise LF gets the least weight
    assert np.argmin(lm.weights_) == 4
