import warnings

import networkx as nx
import numpy as np
import pytest

import snorkel_structured as ss
from snorkel_structured.aggregators import kemeny
from snorkel_structured.label_model.baselines import AggregatingVoter, ManifoldMeanVoter
from snorkel_structured.synthetic import make_ranking_data
from snorkel_structured.synthetic_manifold import make_manifold_data


def test_aggregating_voter_matches_functions_and_scores():
    data = make_ranking_data(2_000, seed=0, abstain=0.2)
    voter = AggregatingVoter(data.space, method="kemeny").fit(data.L)
    pred = voter.predict(data.L)
    np.testing.assert_array_equal(pred, kemeny(data.L, data.space))
    scores = voter.score(data.L, data.Y)
    ok = pred != -1
    assert scores["accuracy"] == pytest.approx(np.mean(pred == data.Y))
    assert scores["mean_distance"] == pytest.approx(
        data.space.distance_matrix[pred[ok], data.Y[ok]].mean()
    )


def test_weighted_frechet_mean_with_label_model_weights_beats_unweighted():
    # theta = [0, 0, 1]: weighting by the estimated theta ignores the two noise LFs.
    data = make_ranking_data(3_000, theta=(0.0, 0.0, 1.0), seed=1)
    lm = ss.StructuredLabelModel(data.space, estimator="mle", seed=0).fit(
        data.L, progress_bar=False
    )
    plain = (
        AggregatingVoter(data.space, method="frechet_mean")
        .fit(data.L)
        .score(data.L, data.Y)
    )
    weighted = (
        AggregatingVoter(data.space, method="frechet_mean", weights=lm.theta_)
        .fit(data.L)
        .score(data.L, data.Y)
    )
    assert weighted["mean_sq_distance"] < plain["mean_sq_distance"]


def test_manifold_mean_voter_uws_exact_in_euclidean():
    space = ss.Euclidean(3)
    data = make_manifold_data(
        20_000, space=space, noise_scale=[0.1, 0.4, 1.6], abstain=0.1, seed=2
    )
    voter = ManifoldMeanVoter(space).fit(data.X)
    pred = voter.predict(data.X)
    # unweighted Euclidean Frechet mean = plain average of the LFs that voted
    expected = np.nanmean(data.X, axis=1)
    np.testing.assert_allclose(pred, expected, atol=1e-8)
    # inverse-variance weights do better than equal weights
    w = 1.0 / data.expected_sq_dist
    better = ManifoldMeanVoter(space, weights=w).fit(data.X).score(data.X, data.Y)
    assert better["mean_sq_distance"] < voter.score(data.X, data.Y)["mean_sq_distance"]
    # UWS is exact in Euclidean space (additive squared distances): with n = 2e5 and
    # these scales the sampling standard error of each estimate is below 0.004.
    exact = make_manifold_data(
        200_000, space=space, noise_scale=[0.1, 0.2, 0.4], seed=3
    )
    uws = ss.ManifoldLabelModel(space, estimator="uws").fit(exact.X)
    np.testing.assert_allclose(
        uws.expected_sq_dist_, exact.expected_sq_dist, atol=0.015
    )


def test_baseline_errors():
    space = ss.Discrete(3)
    with pytest.raises(ValueError, match="method"):
        AggregatingVoter(space, method="borda").fit(np.zeros((2, 3), int))
    voter = AggregatingVoter(space).fit(np.zeros((2, 3), int))
    with pytest.raises(ValueError, match="3 columns"):
        voter.predict(np.zeros((2, 4), int))
    with pytest.raises(ValueError, match="weights"):
        ManifoldMeanVoter(ss.Euclidean(2), weights=[1.0]).fit(
            np.zeros((3, 3, 2))
        ).predict(np.zeros((3, 3, 2)))


def test_voters_predict_without_fit_as_snorkels_majority_label_voter():
    # Snorkel's MajorityLabelVoter predicts without fit; these voters learn nothing.
    data = make_ranking_data(300, seed=4, abstain=0.3)
    pred = AggregatingVoter(data.space, method="majority").predict(data.L)
    for row, p in zip(data.L, pred, strict=True):  # brute force: count the votes
        votes = row[row != -1]
        if votes.size == 0:
            assert p == -1
            continue
        counts = np.bincount(votes, minlength=len(data.space))
        assert p == np.flatnonzero(counts == counts.max())[0]  # ties: lowest index
    fitted = AggregatingVoter(data.space, method="majority").fit(data.L)
    np.testing.assert_array_equal(fitted.predict(data.L), pred)
    space = ss.Euclidean(2)
    X = make_manifold_data(50, space=space, noise_scale=[0.1, 0.2, 0.3], seed=0).X
    X[3] = np.nan
    mean = ManifoldMeanVoter(space).predict(X)
    with np.errstate(invalid="ignore"), pytest.warns(RuntimeWarning):
        np.testing.assert_allclose(mean, np.nanmean(X, axis=1), atol=1e-12)
    assert np.isnan(mean[3]).all()


def test_aggregating_voter_borda_on_rankings_only():
    from snorkel_structured.aggregators import borda

    data = make_ranking_data(500, seed=1, abstain=0.2)
    w = [0.5, 1.0, 2.0]
    voter = AggregatingVoter(data.space, method="borda", weights=w).fit(data.L)
    np.testing.assert_array_equal(voter.predict(data.L), borda(data.L, data.space, w))
    with pytest.raises(ValueError, match="method='borda' needs a Permutations"):
        AggregatingVoter(ss.Discrete(3), method="borda").predict(np.zeros((2, 3), int))


# -- ManifoldMeanVoter weights ---------------------------------------------------------
NAN = np.nan


def test_manifold_mean_voter_weighted_mean_by_hand():
    # Euclidean(1): the weighted Frechet mean is the weighted average of the votes.
    X = np.array(
        [
            [[0.0], [2.0], [NAN]],  # (1 * 0 + 3 * 2) / 4 = 1.5
            [[0.0], [2.0], [10.0]],  # LF 2 has weight 0: ignored, 1.5 again
            [[NAN], [4.0], [NAN]],  # only LF 1 votes: its vote
            [[NAN], [NAN], [NAN]],  # every LF abstains: NaN
        ]
    )
    voter = ManifoldMeanVoter(ss.Euclidean(1), weights=[1.0, 3.0, 0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no row is voted only by weight-0 LFs
        pred = voter.fit(X).predict(X)
    np.testing.assert_allclose(pred[:3, 0], [1.5, 1.5, 4.0], atol=1e-12)
    assert np.isnan(pred[3]).all()


def test_manifold_mean_voter_rows_voted_only_by_zero_weight_lfs_are_nan_and_warned():
    # The repro: LFs 0 and 1 vote, LF 2 abstains, and only LF 2 has weight. A weight
    # of 0 ignores an LF (as a zero sample weight in scikit-learn), so the row is
    # unlabeled, like an all-abstain row, and the warning says how many rows.
    sp = ss.Sphere(2)
    X = np.array([[[0, 0, 1.0], [0, 1.0, 0], [NAN] * 3]])
    with pytest.warns(UserWarning, match=r"1 of 1 rows are unlabeled \(NaN\)"):
        pred = ManifoldMeanVoter(sp, weights=[0, 0, 1]).predict(X)
    assert pred.shape == (1, 3) and np.isnan(pred).all()
    X2 = np.concatenate([X, [[[0, 0, 1.0], [NAN] * 3, [0, 1.0, 0]]]])
    with pytest.warns(UserWarning, match=r"1 of 2 rows .* \(LFs \[0, 1\]\)"):
        pred = ManifoldMeanVoter(sp, weights=[0, 0, 1]).predict(X2)
    assert np.isnan(pred[0]).all()
    np.testing.assert_allclose(pred[1], [0, 1.0, 0], atol=1e-12)  # LF 2's vote


def test_manifold_mean_voter_zero_weight_equals_removing_the_lf():
    space = ss.Sphere(2)
    data = make_manifold_data(
        300, space=space, noise_scale=[0.2, 0.5, 1.0], abstain=0.3, seed=5
    )
    removed = data.X.copy()
    removed[:, 2] = NAN  # LF 2 abstains everywhere
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # rows only LF 2 voted on
        zero = ManifoldMeanVoter(space, weights=[2.0, 1.0, 0.0]).predict(data.X)
    without = ManifoldMeanVoter(space, weights=[2.0, 1.0, 1.0]).predict(removed)
    np.testing.assert_allclose(zero, without, atol=1e-12)
    only_lf2 = np.isnan(removed).all(axis=(1, 2)) & ~np.isnan(data.X).all(axis=(1, 2))
    assert only_lf2.any() and np.isnan(zero[only_lf2]).all()


@pytest.mark.parametrize(
    "weights, match",
    [
        ([0.0, 0.0, 0.0], r"weights must have a positive entry; got all 3 zero"),
        ([1.0, -1.0, 1.0], r"non-negative; weights\[1\] is -1\.0"),
        ([NAN, 1.0, 1.0], r"finite and non-negative; weights\[0\] is nan"),
        ([1.0, 1.0, np.inf], r"finite and non-negative; weights\[2\] is inf"),
        ([1.0, 1.0], r"weights must be 3 finite non-negative numbers .* shape \(2,\)"),
    ],
)
def test_manifold_mean_voter_refuses_bad_weights(weights, match):
    X = np.array([[[0.0], [1.0], [2.0]], [[1.0], [NAN], [3.0]]])
    voter = ManifoldMeanVoter(ss.Euclidean(1), weights=weights)
    with pytest.raises(ValueError, match=match):
        voter.predict(X)  # without fit, as Snorkel's MajorityLabelVoter
    with pytest.raises(ValueError, match=match):
        voter.fit(X)


# -- AggregatingVoter.score: unknown gold labels (-1) and bad Y --------------------------
# balanced_tree(2, 2): root 0, children 1 and 2, leaves 3, 4 (under 1) and 5, 6 (under 2).
TREE = ss.GraphSpace(nx.balanced_tree(2, 2))


def test_aggregating_voter_score_leaves_out_unknown_gold_labels():
    # The repro: row 1's gold label is unknown. It had been read as label 6 (numpy's
    # index -1), d(0, 6) = 2, giving mean_distance 1.0; StructuredLabelModel.score
    # leaves the row out, and so does the voter now.
    voter = AggregatingVoter(TREE, method="majority")
    scores = voter.score(np.array([[3, 3, 3], [0, 0, 0]]), [3, -1])
    assert scores == {"accuracy": 1.0, "mean_distance": 0.0, "mean_sq_distance": 0.0}
    # Rows: correct; unlabeled by the voter (wrong for accuracy, no distance);
    # unknown gold (left out); predicted 1 against gold 3 (d = 1).
    L = np.array([[3, 3, 3], [-1, -1, -1], [0, 0, 0], [1, 1, 1]])
    scores = voter.score(L, np.array([3, 4, -1, 3]))
    assert scores["accuracy"] == pytest.approx(1 / 3)
    assert scores["mean_distance"] == pytest.approx(0.5)
    assert scores["mean_sq_distance"] == pytest.approx(0.5)
    # integral floats and a column vector pass, as in the label model's score
    assert voter.score(L, [[3.0], [4.0], [-1.0], [3.0]]) == scores


def test_aggregating_voter_score_with_every_gold_label_unknown_is_nan_and_warns():
    voter = AggregatingVoter(TREE, method="kemeny")
    with pytest.warns(UserWarning, match="Every gold label in Y is -1"):
        scores = voter.score(np.array([[3, 3, 3], [0, 0, 0]]), [-1, -1])
    assert all(np.isnan(v) for v in scores.values())


@pytest.mark.parametrize(
    "Y, match",
    [
        ([3, 9], r"Y holds a label outside \[0, 7\) \(or -1 .*\): entry 1 is 9"),
        ([3, -2], r"Y holds a label outside \[0, 7\) \(or -1 .*\): entry 1 is -2"),
        ([3, 2.5], r"Y must be a 1-D array of label indices; .* dtype float64"),
        (["a", "b"], r"Y must be a 1-D array of label indices"),
        ([3, 0, 1], r"Y must have one label per row of L \(2\); got 3"),
    ],
)
def test_aggregating_voter_score_refuses_bad_gold_labels(Y, match):
    voter = AggregatingVoter(TREE, method="kemeny")
    with pytest.raises(ValueError, match=match):
        voter.score(np.array([[3, 3, 3], [0, 0, 0]]), Y)


@pytest.mark.parametrize("method", ["kemeny", "frechet_mean", "medoid", "borda"])
def test_aggregating_voter_zero_weights(method):
    # All-zero weights ignore every LF: refused (they had labeled every voted row 0).
    space = ss.Permutations(3)
    L = np.array([[5, -1, -1], [5, 0, 0]])
    with pytest.raises(ValueError, match="weights must have a positive entry"):
        AggregatingVoter(space, method=method, weights=[0, 0, 0]).predict(L)
    # A weight-0 LF counts as abstaining: a row only it voted on is unlabeled.
    voter = AggregatingVoter(space, method=method, weights=[0, 1, 1])
    with pytest.warns(UserWarning, match="1 of 2 rows are unlabeled"):
        np.testing.assert_array_equal(voter.predict(L), [-1, 0])
