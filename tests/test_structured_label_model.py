"""StructuredLabelModel: the Snorkel-facing finite-space label model."""

import itertools
import warnings

import numpy as np
import pytest

import snorkel_structured as ss
from snorkel_structured.estimators import VoteStats


@pytest.fixture(scope="module")
def data():
    return ss.synthetic.make_ranking_data(3000, abstain=[0.0, 0.1, 0.2], seed=0)


@pytest.fixture(scope="module")
def model(data):
    return ss.StructuredLabelModel(
        data.space, estimator="mle", n_components=2, seed=0
    ).fit(data.L)


def test_fitted_attributes(model, data):
    assert model.theta_.shape == (3,)
    assert model.prior_.shape == (24,) and model.n_lfs_ == 3
    assert model.stats_.n_samples == 3000
    np.testing.assert_allclose(model.expected_sq_dist_, data.expected_sq_dist, atol=0.1)
    assert set(model.support_.tolist()) == set(data.support.tolist())


def test_additivity_fit_partial_fit_fit_stats(data):
    kw = dict(estimator="mle", n_components=2, seed=0)
    full = ss.StructuredLabelModel(data.space, **kw).fit(data.L)
    chunks = np.array_split(data.L, 3)
    part = ss.StructuredLabelModel(data.space, **kw)
    for c in chunks:
        part.partial_fit(c)
    stats = sum(VoteStats.from_label_matrix(c, n_labels=24) for c in chunks)
    via_stats = ss.StructuredLabelModel(data.space, **kw).fit_stats(stats)
    for other in (part, via_stats):
        np.testing.assert_array_equal(other.theta_, full.theta_)
        np.testing.assert_array_equal(other.prior_, full.prior_)


def test_posterior_matches_brute_force():
    space = ss.Discrete(3)
    data = ss.synthetic.make_label_matrix(
        2000,
        space=space,
        theta=[1.0, 2.0, 0.5],
        prior=[0.5, 0.3, 0.2],
        abstain=0.2,
        seed=1,
    )
    lm = ss.StructuredLabelModel(
        space, estimator="mle", prior_support="all", seed=0
    ).fit(data.L)
    # the documented model: (1 - eps_a) exp(-theta_a d^p) / Z + eps_a h_a(v)
    Dp = space.distance_matrix**lm.noise_power_
    eps, h = lm.outlier_rate_, lm.outlier_dist_
    L = np.array(list(itertools.product(range(-1, 3), repeat=3)))
    expected = np.empty((len(L), 3))
    for i, row in enumerate(L):  # brute-force enumeration of Bayes' rule
        for y in range(3):
            p = lm.prior_[y]
            for a, v in enumerate(row):
                if v >= 0:
                    z = np.exp(-lm.theta_[a] * Dp[y]).sum()
                    kernel = np.exp(-lm.theta_[a] * Dp[y, v]) / z
                    p *= (1 - eps[a]) * kernel + eps[a] * h[a, v]
            expected[i, y] = p
    expected /= expected.sum(1, keepdims=True)
    np.testing.assert_allclose(lm.predict_proba(L), expected, rtol=1e-10, atol=1e-12)


def test_all_abstain_row_gets_the_prior(model):
    probs = model.predict_proba(np.full((2, 3), ss.ABSTAIN))
    np.testing.assert_allclose(probs, np.tile(model.prior_, (2, 1)))


def test_label_dependent_on_snorkels_generator():
    from snorkel.synthetic.synthetic_data import generate_simple_label_matrix

    np.random.seed(0)  # Snorkel's generator only uses the global RNG
    _, Y, L = generate_simple_label_matrix(20000, 6, 3)
    lm = ss.StructuredLabelModel(
        ss.Discrete(3),
        estimator="mle",
        label_dependent=True,
        prior_support="all",
        seed=0,
    ).fit(L)
    assert lm.theta_.shape == (6, 3)
    assert lm.score(L, Y, tie_break_policy="random")["accuracy"] > 0.8


def test_snorkel_compatibility(model, data):
    preds, probs = model.predict(data.L, return_probs=True)
    assert preds.shape == (3000,) and probs.shape == (3000, 24)
    tie = np.full((1, 3), ss.ABSTAIN)  # posterior = prior: no tie unless the prior ties
    flat = ss.StructuredLabelModel(
        ss.Discrete(2), estimator="mle", prior_support="all", seed=0
    )
    Ld = np.array([[0, 0, 0], [1, 1, 1], [0, 1, -1], [1, 0, -1]] * 50)
    flat.fit(Ld, class_balance=[0.5, 0.5])
    assert flat.predict(np.array([[0, 1, -1]]), tie_break_policy="abstain")[0] == -1
    assert flat.predict(np.array([[0, 1, -1]]), tie_break_policy="random")[0] in (0, 1)
    draws = flat.predict(
        np.array([[0, 1, -1]] * 200), tie_break_policy="true-random", seed=0
    )
    assert set(draws.tolist()) == {0, 1}
    with pytest.raises(ValueError, match="tie_break_policy must be one of"):
        model.predict(tie, tie_break_policy="coin")
    scores = model.score(
        data.L,
        data.Y,
        metrics=["accuracy", "f1_micro", "mean_distance", "mean_sq_distance"],
    )
    assert scores["accuracy"] > 0.9 and scores["mean_distance"] < 0.2
    cp = model.get_conditional_probs()
    assert cp.shape == (3, 25, 24)
    np.testing.assert_allclose(cp.sum(axis=1), 1.0)
    np.testing.assert_allclose(cp[:, 0, 0], 1 - model.stats_.coverage())
    w = model.get_weights()
    assert w.shape == (3,) and ((w > 0) & (w <= 1)).all()
    assert model.log_conditional_probs().shape == (3, 24, 24)
    assert model.sample_pseudolabels(data.L, seed=0).shape == (3000,)
    np.testing.assert_array_equal(
        model.sample_pseudolabels(data.L, seed=1),
        model.sample_pseudolabels(data.L, seed=1),
    )


def test_identical_refits_with_int_seed():
    d = ss.synthetic.make_ranking_data(1000, theta=[0.0, 0.0, 1.0], seed=2)
    a = ss.StructuredLabelModel(d.space, estimator="mle", n_components=2, seed=3).fit(
        d.L
    )
    b = ss.StructuredLabelModel(d.space, estimator="mle", n_components=2, seed=3).fit(
        d.L
    )
    np.testing.assert_array_equal(a.theta_, b.theta_)
    np.testing.assert_array_equal(a.prior_, b.prior_)


def test_uws_and_class_balance(data):
    lm = ss.StructuredLabelModel(data.space, estimator="uws", seed=0).fit(data.L)
    assert lm.prior_[data.support].sum() > 0.8
    fixed = ss.StructuredLabelModel(data.space, estimator="mle", seed=0).fit(
        data.L, class_balance=data.prior
    )
    np.testing.assert_allclose(fixed.prior_, data.prior)
    dev = ss.StructuredLabelModel(data.space, estimator="mle", seed=0).fit(
        data.L, Y_dev=data.Y[:500]
    )
    np.testing.assert_allclose(
        dev.prior_, np.bincount(data.Y[:500], minlength=24) / 500
    )


@pytest.mark.parametrize(
    "kwargs, L, match",
    [
        ({}, np.zeros((10, 2), int), "at least 3 columns"),
        ({}, np.zeros(10, int), "2-D"),
        ({}, np.full((10, 3), 24), "outside the label space"),
        ({}, np.full((10, 3), 0.5), "integer label indices"),
        ({"estimator": "magic"}, np.zeros((10, 3), int), "estimator must be one of"),
        (
            {"label_dependent": True, "estimator": "tensor"},
            np.zeros((10, 3), int),
            "needs estimator='mle'",
        ),
        ({"n_components": 0}, np.zeros((10, 3), int), "n_components must be in"),
        (
            {"prior_support": [99]},
            np.zeros((10, 3), int),
            "prior_support holds indices",
        ),
        ({"prior_support": "some"}, np.zeros((10, 3), int), "prior_support must be"),
    ],
)
def test_fit_validation_errors(kwargs, L, match):
    lm = ss.StructuredLabelModel(ss.Permutations(4), **{"estimator": "mle", **kwargs})
    with pytest.raises(ValueError, match=match):
        lm.fit(L)


def test_other_validation_errors(model, data):
    with pytest.raises(ValueError, match="must have 3 columns"):
        model.predict_proba(np.zeros((5, 4), int))
    with pytest.raises(ValueError, match="class_balance must be 24"):
        ss.StructuredLabelModel(data.space, estimator="mle").fit(
            data.L, class_balance=[0.5, 0.5]
        )
    with pytest.raises(ValueError, match="Y must have one label per row"):
        model.score(data.L, data.Y[:10])
    with pytest.raises(ValueError, match="Y_dev holds a label outside"):
        ss.StructuredLabelModel(data.space, estimator="mle").fit(data.L, Y_dev=[99])
    with pytest.raises(TypeError, match="space must be a FiniteMetricSpace"):
        ss.StructuredLabelModel([1, 2, 3]).fit(data.L)
    with pytest.raises(TypeError, match="unexpected keyword"):
        ss.StructuredLabelModel(data.space, estimator="mle").fit(data.L, epochs=3)
    with pytest.raises(ss.NotFittedError):
        ss.StructuredLabelModel(data.space).predict(data.L)
    with pytest.raises(ValueError, match="stats must count votes over 24"):
        ss.StructuredLabelModel(data.space).fit_stats(
            VoteStats.from_label_matrix(data.L, n_labels=30)
        )


def test_warnings_are_emitted():
    d = ss.synthetic.make_ranking_data(500, theta=[0.0, 0.0, 1.0], seed=0)
    with pytest.warns(ss.ConvergenceWarning, match="max_iter"):
        ss.StructuredLabelModel(
            d.space, estimator="mle", prior_support="all", max_iter=1, seed=0
        ).fit(d.L)
    with pytest.warns(ss.IdentifiabilityWarning):
        ss.StructuredLabelModel(
            d.space, estimator="tensor", n_components=2, seed=0
        ).fit(d.L)


def test_all_abstain_label_matrix_is_refused_clearly():
    L = np.full((50, 3), -1)
    with pytest.raises(ValueError, match="no votes: every labeling function abstained"):
        ss.StructuredLabelModel(ss.Permutations(3), seed=0).fit(L)


def test_loss_weights_pseudolabels_are_the_predictions_by_default():
    # rule="auto" takes the MAP over Q's support unless its Q is singular or worse
    # conditioned: the pseudolabels are then predict's labels wherever those are in
    # the support (they were posterior draws: a few percent of rows differed)
    data = ss.synthetic.make_ranking_data(2000, seed=0)
    lm = ss.StructuredLabelModel(data.space, seed=0).fit(data.L, progress_bar=False)
    w = lm.loss_weights(data.L, seed=0)
    assert w.attrs["rule"] == "map"
    support = np.asarray(w.attrs["support"])
    # the MAP over the support: the support label of highest posterior
    proba = lm.predict_proba(data.L)[:, support]
    np.testing.assert_array_equal(
        w["pseudolabel"].to_numpy(), support[np.argmax(proba, axis=1)]
    )
    pred = lm.predict(data.L)
    in_support = np.isin(pred, support)
    assert in_support.mean() > 0.95
    np.testing.assert_array_equal(
        w["pseudolabel"].to_numpy()[in_support], pred[in_support]
    )


def test_options_an_estimator_ignores_are_refused_and_score_checks_tie_breaks():
    # prior_support is not read by the tensor decomposition, n_components not by
    # UWS: each had been dropped without a word (support_ [3, 4, 5] for [3])
    data = ss.synthetic.make_ranking_data(300, seed=0)
    with pytest.raises(ValueError, match="prior_support=\\[3\\] needs estimator"):
        ss.StructuredLabelModel(data.space, estimator="tensor", prior_support=[3]).fit(
            data.L
        )
    with pytest.raises(ValueError, match="n_components=2 needs estimator"):
        ss.StructuredLabelModel(data.space, estimator="uws", n_components=2).fit(data.L)
    # score took any tie-break string, as an unseeded random one
    lm = ss.StructuredLabelModel(data.space, seed=0).fit(data.L, progress_bar=False)
    with pytest.raises(ValueError, match="tie_break_policy must be one of"):
        lm.score(data.L, data.Y, tie_break_policy="rnadom")


@pytest.mark.parametrize("k", [4, 7])
def test_more_components_than_true_labels_keep_the_lfs_weights(k):
    # A 7-node tree, 3 true leaves, LFs 70% right: with n_components above 3 the
    # tensor start is rank-deficient and the best single center is the root at
    # theta 0, from which every EM fit stayed at theta 0 (every row got the root,
    # accuracy 0). Extra components should get little weight, not erase the LFs.
    import networkx as nx

    rng = np.random.default_rng(0)
    space = ss.GraphSpace(nx.balanced_tree(2, 2))
    y = rng.choice([3, 4, 5], 400)
    L = np.where(rng.random((400, 4)) < 0.7, y[:, None], rng.integers(0, 7, (400, 4)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lm = ss.StructuredLabelModel(space, n_components=k, seed=0).fit(
            L, progress_bar=False
        )
        exact = ss.StructuredLabelModel(space, n_components=3, seed=0).fit(
            L, progress_bar=False
        )
    assert np.all(lm.theta_ > 1.0)
    acc = np.mean(lm.predict(L, tie_break_policy="random") == y)
    assert acc >= np.mean(exact.predict(L, tie_break_policy="random") == y) - 0.02


def test_never_wrong_names_only_lfs_with_their_own_theta():
    # With one theta for every LF (the unweighted vote) no LF decides the labels: a
    # sparse LF voting only where the others agree never disagrees with the model's
    # labels, but "reached theta=50 ... lets them decide the labels" was false (its
    # theta was the shared 2.85). An LF fitted with its own theta still warns.
    rng = np.random.default_rng(0)
    n, k = 3000, 3
    Y = rng.integers(0, k, n)
    right = rng.random((n, 4)) < np.array([0.8, 0.75, 0.7, 0.7])
    L = np.where(right, Y[:, None], (Y[:, None] + rng.integers(1, k, (n, 4))) % k)
    agree = (L == L[:, :1]).all(axis=1)
    L = np.c_[L, np.where(agree & (rng.random(n) < 0.3), L[:, 0], -1)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lm = ss.StructuredLabelModel(ss.Discrete(k), seed=0, shrinkage=1.0).fit(L)
    assert np.all(lm.theta_ == lm.theta_[0])
    assert not any("never wrong" in str(w.message) for w in caught)
    from snorkel_structured.synthetic import make_ranking_data

    data = make_ranking_data(500, seed=0)  # a copy of the truth, with its own theta
    with pytest.warns(ss.IdentifiabilityWarning, match=r"LF\(s\) \[3\] reached theta"):
        ss.StructuredLabelModel(data.space, seed=0).fit(np.c_[data.L, data.Y])
