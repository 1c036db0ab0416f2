"""Regressions for the failures the fuzz suite (tests/fuzz) found, as fixed examples."""

import warnings
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp

import snorkel_structured as ss
from snorkel_structured.synthetic import make_label_matrix


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


# --- distances whose squares overflow ---------------------------------------------------

_PATH4 = np.array([[0, 1, 2, 3], [1, 0, 1, 2], [2, 1, 0, 1], [3, 2, 1, 0]], float)


def _raw_numpy_warnings(caught):
    return [str(w.message) for w in caught if "encountered in" in str(w.message)]


@pytest.mark.parametrize("scale", [1e150, 1e60])
def test_distances_whose_squares_overflow_are_refused_at_construction(scale):
    # A 1e150-scaled matrix passed validation; "mle" and "uws" then fitted near-chance
    # labels with only numpy's overflow RuntimeWarnings (d^4 in the variance of d^2).
    with pytest.raises(ValueError, match=r"too large to square.*Rescale the distances"):
        ss.FiniteMetricSpace(list("abcd"), _PATH4 * scale)
    with pytest.raises(ValueError, match="Rescale the distances"):
        ss.GraphSpace(sp.csr_array(np.diag([scale] * 3, 1)))  # a path, long edges


def test_tiny_positive_distances_are_refused_at_construction():
    # the mirror image: theta ~ 1 / d^2 overflowed (raw numpy warnings) below 1e-50
    with pytest.raises(ValueError, match=r"too small.*Rescale the distances"):
        ss.FiniteMetricSpace(list("abcd"), _PATH4 * 1e-80)


@pytest.mark.parametrize("estimator", ["mle", "uws"])
def test_label_models_are_unchanged_by_a_large_rescaling_of_the_distances(estimator):
    # Near the largest distance accepted (1e50), the fits are those of the unit-scale
    # space with theta scaled by c^-2. "uws" used to stop its theta solve at an
    # absolute tolerance (1e-12): from c ~ 1e6 on every LF got the same theta.
    base = ss.FiniteMetricSpace(list("abcd"), _PATH4)
    c = 1e45
    big = ss.FiniteMetricSpace(list("abcd"), _PATH4 * c)
    data = make_label_matrix(
        500, space=base, theta=[1.0, 1.0, 0.8, 0.5, 0.5], prior=np.ones(4), seed=0
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lm0 = ss.StructuredLabelModel(base, estimator=estimator, seed=0)
        lm1 = ss.StructuredLabelModel(big, estimator=estimator, seed=0)
        lm0.fit(data.L, progress_bar=False)
        lm1.fit(data.L, progress_bar=False)
    assert _raw_numpy_warnings(caught) == []
    np.testing.assert_allclose(lm1.theta_ * c**2, lm0.theta_, rtol=1e-3)
    np.testing.assert_array_equal(lm1.predict(data.L), lm0.predict(data.L))
    assert np.mean(lm1.predict(data.L) == data.Y) > 0.7  # chance is 0.25


# --- linear-kernel end models on huge features ---------------------------------------


def _end_model_data(n=30):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3))
    return X, rng.integers(0, 3, n), rng.normal(size=(n, 2))


@pytest.mark.parametrize("scale", [1e150, 1e-150])
@pytest.mark.parametrize("n", [2, 30])  # 2 rows, 3 features: K is invertible
def test_linear_kernel_end_models_refuse_features_out_of_range_at_fit(scale, n):
    # Features near 1e150 gave non-finite decision values and NaN predictions (or an
    # "Eigenvalues did not converge" / "increase nu" error) after RuntimeWarnings.
    X, y, Y = _end_model_data(n)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a clear error, not NaN after RuntimeWarnings
        for n_components in ("auto", 2):
            with pytest.raises(ValueError, match=r"features too .*Standardize"):
                ss.KernelStructuredPredictor(
                    ss.Discrete(3), kernel="linear", n_components=n_components
                ).fit(X * scale, y)
            with pytest.raises(ValueError, match=r"features too .*Standardize"):
                ss.KernelManifoldRegressor(
                    ss.Euclidean(2), kernel="linear", n_components=n_components
                ).fit(X * scale, Y)


@pytest.mark.parametrize("n_components", [None, 10])
def test_linear_kernel_end_models_never_predict_non_finite_values(n_components):
    X, y, Y = _end_model_data()
    huge = X * 1e300  # the kernel with the training rows (1e40) overflows
    model = ss.KernelStructuredPredictor(
        ss.Discrete(3), kernel="linear", n_components=n_components
    ).fit(X * 1e40, y)
    regressor = ss.KernelManifoldRegressor(
        ss.Euclidean(2), kernel="linear", nu="auto", n_components=n_components
    ).fit(X * 1e40, Y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isfinite(model.decision_function(X * 1e40)).all()
        assert np.isfinite(regressor.predict(X * 1e40)).all()
        with pytest.raises(ValueError, match="Standardize"):
            model.decision_function(huge)
        with pytest.raises(ValueError, match="Standardize"):
            model.predict(huge)
        with pytest.raises(ValueError, match="Standardize"):
            regressor.predict(huge)


# --- GraphSpace: bad edge lengths in an adjacency matrix --------------------------------


@pytest.mark.parametrize("bad", [np.nan, np.inf, -1.0])
@pytest.mark.parametrize("kind", ["csr_array", "coo_matrix", "dense"])
def test_adjacency_with_a_bad_edge_length_is_refused_naming_the_edge(bad, kind):
    # A NaN edge of a sparse adjacency was silently dropped by the shortest paths (a
    # triangle stayed connected through its other edges), while a networkx graph
    # with the same edge is refused.
    A = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, bad], [2.0, bad, 0.0]])
    graph = {"csr_array": sp.csr_array, "coo_matrix": sp.coo_matrix}.get(
        kind, np.asarray
    )(A)
    with pytest.raises(
        ValueError, match=r"edge \(1, 2\) has length .*finite, non-negative"
    ):
        ss.GraphSpace(graph)


# --- LFs that never vote ----------------------------------------------------------------


def _silent_lf_votes():
    data = make_label_matrix(
        300, space=ss.Discrete(3), theta=[1.5, 1.2, 1.0, 1.0], prior=np.ones(3), seed=0
    )
    L = data.L.copy()
    L[:, 2] = ss.ABSTAIN
    return data.L, L


def _silent_warnings(caught):
    return [
        w
        for w in caught
        if issubclass(w.category, ss.IdentifiabilityWarning)
        and "never voted" in str(w.message)
    ]


def test_structured_label_model_warns_once_per_fit_about_an_lf_that_never_votes():
    full, L = _silent_lf_votes()
    lm = ss.StructuredLabelModel(ss.Discrete(3), seed=0)
    for votes in (L, iter([L[:100], L[100:200], L[200:]])):  # chunks: still once
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lm.fit(votes, progress_bar=False)
        silent = _silent_warnings(caught)
        assert len(silent) == 1, [str(w.message) for w in caught]
        message = str(silent[0].message)
        assert "LF 2 never voted in L_train" in message and "zero coverage" in message
        assert "remove its column" in message
        assert silent[0].filename == __file__  # points at the user's fit call
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lm.fit(full, progress_bar=False)
    assert _silent_warnings(caught) == []


@pytest.mark.parametrize("estimator", ["mle", "tensor", "uws"])
def test_votes_of_an_lf_that_never_voted_in_training_do_not_count(estimator):
    # Its theta is a default (tensor/uws: the largest), not an estimate: at predict
    # time its votes must leave the posterior as if it had abstained.
    full, L = _silent_lf_votes()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lm = ss.StructuredLabelModel(ss.Discrete(3), estimator=estimator, seed=0)
        lm.fit(L, progress_bar=False)
    assert np.all(np.atleast_2d(lm.theta_.T).T[2] == 0.0)
    muted = full.copy()
    muted[:, 2] = -1
    np.testing.assert_allclose(lm.predict_proba(full), lm.predict_proba(muted))


def test_manifold_label_model_names_the_lf_that_never_votes():
    rng = np.random.default_rng(0)
    truth = rng.normal(size=(200, 2))
    X = np.stack([truth + s * rng.normal(size=(200, 2)) for s in (0.1, 0.2, 0.3)], 1)
    X = np.concatenate([X, np.full((200, 1, 2), np.nan)], axis=1)  # LF 3: silent
    lm = ss.ManifoldLabelModel(ss.Euclidean(2), seed=0)
    # it was refused with "Too few overlapping rows ... LF 3 has 0 usable partner(s)"
    # without saying why: the warning names the cause first
    with pytest.warns(ss.IdentifiabilityWarning, match="LF 3 never voted in X"):
        with pytest.raises(ValueError, match="Too few overlapping rows"):
            lm.fit(X)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lm.fit(X[:, :3])
    assert _silent_warnings(caught) == []


def test_lf_analysis_names_the_lf_that_never_votes():
    full, L = _silent_lf_votes()
    lfs = [SimpleNamespace(name=n) for n in ("a", "b", "broken", "d")]
    with pytest.warns(ss.IdentifiabilityWarning, match=r"LF 2 \('broken'\) never"):
        analysis = ss.StructuredLFAnalysis(L, lfs, space=ss.Discrete(3))
    assert analysis.lf_coverages()[2] == 0.0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ss.StructuredLFAnalysis(full, lfs, space=ss.Discrete(3))
    assert _silent_warnings(caught) == []
