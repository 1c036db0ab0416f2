"""The finite label model's defaults on data it was not built from: the whole-space
prior, the leave-one-out choice of family and weights, dependencies found in the
fit, and a few labeled rows that choose by cross-validation."""

import copy
import itertools
import warnings

import numpy as np
import pytest
from scipy.stats import norm

import snorkel_structured as ss
from snorkel_structured.estimators._agreement import excess_agreement_z
from snorkel_structured.estimators._em_core import EMFit, _Problem, pattern_weights
from snorkel_structured.estimators._noise_kernel import _SqDists
from snorkel_structured.estimators._stats import VoteStats
from snorkel_structured.estimators._support_posterior import SupportPosterior
from snorkel_structured.exceptions import IdentifiabilityWarning
from snorkel_structured.label_model._closing_checks import (
    ONE_ANSWER_SHARE,
    _warning_sample,
)
from snorkel_structured.label_model._dev_choice import DEV_MIN_SE, posterior_table
from snorkel_structured.label_model.structured import PRIOR_PSEUDO_COUNT


def _noisy_copy(rng, Y, accuracy, r):
    """Y where a coin of probability ``accuracy`` lands, else a uniform label."""
    keep = rng.random(Y.size) < accuracy
    return np.where(keep, Y, rng.integers(0, r, Y.size))


def _dominant_lf_data(n=3000, seed=0):
    """Truth spread over all 24 rankings; LF 0 votes on 96% of rows, LFs 1-2 on 3%."""
    rng = np.random.default_rng(seed)
    space = ss.Permutations(4)
    Y = rng.integers(0, 24, n)
    L = np.full((n, 3), -1)
    L[:, 0] = _noisy_copy(rng, Y, 0.8, 24)
    L[rng.random(n) > 0.96, 0] = -1
    for a in (1, 2):
        votes = rng.random(n) < 0.03
        L[votes, a] = _noisy_copy(rng, Y[votes], 0.9, 24)
    return space, L, Y


def test_default_prior_spreads_over_the_space_and_never_collapses():
    # The truth is any of the 24 rankings: a few-label support would predict one
    # answer for nearly every row (what the issue saw: 0.49 against 0.29).
    space, L, Y = _dominant_lf_data()
    lm = ss.StructuredLabelModel(space, seed=0).fit(L, progress_bar=False)
    assert lm.support_.size == 24
    pred = lm.predict(L, tie_break_policy="random")
    assert np.unique(pred).size == 24
    only_lf0 = (L[:, 0] >= 0) & (L[:, 1:] < 0).all(axis=1)
    # Alone, LF 0 is the best guess of every row it votes on.
    assert np.mean(pred[only_lf0] == L[only_lf0, 0]) > 0.95
    assert np.mean(pred == Y) >= np.mean(L[:, 0] == Y) - 0.01


def test_default_prior_keeps_every_label_at_the_pseudo_count():
    # MAP of the prior with a Dirichlet pseudo-count a per label: every weight is
    # at least a / (n + a r) (the M-step adds a to each label's posterior mass).
    space, L, _ = _dominant_lf_data(n=2000)
    lm = ss.StructuredLabelModel(space, seed=0).fit(L, progress_bar=False)
    floor = PRIOR_PSEUDO_COUNT / (2000 + PRIOR_PSEUDO_COUNT * 24)
    assert lm.prior_.min() >= floor * (1 - 1e-9)
    # prior_support="search" (the paper's few-centers prior) has no pseudo-count
    data = ss.synthetic.make_ranking_data(3000, seed=0)
    lm = ss.StructuredLabelModel(data.space, seed=0, prior_support="search")
    lm.fit(data.L, progress_bar=False)
    assert set(lm.support_.tolist()) == set(data.support.tolist())


def test_papers_setup_is_as_accurate_with_the_default_prior():
    data = ss.synthetic.make_ranking_data(2000, theta=(0.0, 0.0, 1.0), seed=1)
    acc = {}
    for support in ("auto", "search"):
        lm = ss.StructuredLabelModel(data.space, seed=0, prior_support=support)
        acc[support] = np.mean(
            lm.fit(data.L, progress_bar=False).predict(data.L) == data.Y
        )
    assert acc["auto"] >= acc["search"] - 0.01
    assert acc["auto"] > 0.9


def _consensus_truth(n=3000, m=6, items=5, seed=0):
    """Each LF ranks the items by its own independent score; the truth ranks them by
    the scores' sum (a composite). LFs agree no more than chance with each other."""
    rng = np.random.default_rng(seed)
    space = ss.Permutations(items)
    X = rng.standard_normal((n, m, items))

    def ranked(scores):  # the same order for truth and LFs: best item first
        return np.array([space.index(tuple(np.argsort(-s))) for s in scores])

    Y = ranked(X.sum(axis=1))
    L = np.column_stack([ranked(X[:, a]) for a in range(m)])
    return space, L, Y


@pytest.mark.parametrize("m", [4, 6])
def test_consensus_truth_is_not_decided_by_the_prior(m):
    # The agreements cannot inform a prior over 120 rankings: fitted, it followed the
    # votes' own frequencies, and with thetas near 0 it decided the answer (m = 4:
    # 2.24 against Borda's 1.42 in Kendall distance, chance 5; m = 6: one LF given
    # all the weight, 3.70). BIC keeps the uniform prior; the answer is Borda's.
    space, L, Y = _consensus_truth(m=m)
    train, test = slice(0, 2000), slice(2000, None)
    lm = ss.StructuredLabelModel(space, seed=0).fit(L[train], progress_bar=False)
    D = space.distance_matrix
    err = D[lm.predict(L[test], decision="distance"), Y[test]].mean()
    borda = ss.AggregatingVoter(space, method="borda").fit(L[train]).predict(L[test])
    assert lm.noise_model_["prior"] == "uniform"
    assert np.allclose(lm.prior_[lm.support_], 1.0 / lm.support_.size)
    assert err <= D[borda, Y[test]].mean() + 0.05


def test_pattern_weights_by_hand():
    P = np.array([[0, 1, -1, 2], [0, -1, 2, -1], [-1, -1, 1, 0], [3, 3, 3, 3]])
    groups = np.array([0, 0, 1, 1])
    expected = np.array(
        [[0.5, 0.5, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 0.5, 0.5], [0.5] * 4]
    )
    np.testing.assert_array_equal(pattern_weights(P, groups), expected)
    assert pattern_weights(P, np.arange(4)) is None
    assert pattern_weights(P, None) is None


def test_pattern_weights_with_error_correlations_by_hand():
    # LF a's vote weighs 1 / sum of its correlations with the members that voted:
    # group {0, 1} at rho 0.5, group {2, 3} at rho 1 (copies: the 1/j above).
    P = np.array([[0, 1, -1, 2], [0, -1, 2, -1], [-1, -1, 1, 0], [3, 3, 3, 3]])
    groups = np.array([0, 0, 1, 1])
    corr = np.array(
        [[1.0, 0.5, 0, 0], [0.5, 1.0, 0, 0], [0, 0, 1.0, 1.0], [0, 0, 1.0, 1.0]]
    )
    third = 1.0 / 1.5
    expected = np.array(
        [
            [third, third, 1.0, 1.0],
            [1.0, 1.0, 1.0, 1.0],
            [1.0, 1.0, 0.5, 0.5],
            [third, third, 0.5, 0.5],
        ]
    )
    np.testing.assert_allclose(pattern_weights(P, groups, corr), expected)
    same = (groups[:, None] == groups[None, :]).astype(float)
    np.testing.assert_array_equal(
        pattern_weights(P, groups, same), pattern_weights(P, groups)
    )


def _shared_source_rankings(n=3000, seed=0):
    """Rankings of 5 items by a score: LFs 0-2 add independent noise, LFs 3-5 mostly
    one shared noise draw (each more accurate alone, their errors coincide)."""
    rng = np.random.default_rng(seed)
    space = ss.Permutations(5)
    score, shared = rng.normal(size=(n, 5)), rng.normal(size=(n, 5))
    noise = [0.9 * rng.normal(size=(n, 5)) for _ in range(3)]
    noise += [0.6 * shared + 0.25 * rng.normal(size=(n, 5)) for _ in range(3)]

    def labels(orders):
        return np.array([space.index(tuple(o)) for o in orders])

    L = np.stack([labels(np.argsort(-(score + e), axis=1)) for e in noise], axis=1)
    return space, L, labels(np.argsort(-score, axis=1))


def test_rankings_sharing_a_source_count_as_one_in_the_unweighted_vote(tmp_path):
    space, L, Y = _shared_source_rankings()
    with pytest.warns(IdentifiabilityWarning, match=r"LFs \[\[3, 4, 5\]\] order item"):
        lm = ss.StructuredLabelModel(space, seed=0).fit(L, progress_bar=False)
    assert lm.dependencies_  # the finite test flags them: the unweighted vote
    assert sorted(lm.shared_sources_) == [(3, 4), (3, 5), (4, 5)]
    assert lm.shrinkage_ == 1.0
    # no outlier rates: they would take the LFs outside the cluster for outliers
    assert lm.noise_model_["outliers"] is False and not lm.outlier_rate_.any()
    np.testing.assert_array_equal(lm.vote_weights_[:3], 1.0)
    assert (lm.vote_weights_[3:] < 0.6).all()
    D = np.sqrt(space.squared_distance_matrix)
    err = D[lm.predict(L), Y].mean()
    best_lf = min(D[L[:, a], Y].mean() for a in range(6))
    independent = ss.StructuredLabelModel(space, seed=0).fit(
        L, progress_bar=False, dependencies=[]
    )
    assert err < best_lf - 0.2
    assert err < D[independent.predict(L), Y].mean() - 0.2
    lm.save(tmp_path / "lm.pkl")
    loaded = ss.StructuredLabelModel(space).load(tmp_path / "lm.pkl")
    np.testing.assert_array_equal(loaded.predict_proba(L), lm.predict_proba(L))


def test_distance_decision_risk_through_low_rank_distances(monkeypatch):
    # On S5 (120 labels) Kendall's distances have rank 11: the risk reads them as
    # thin factors, and must equal the risk from the full (k, k) distances.
    from snorkel_structured.estimators import _em_core

    space = ss.Permutations(5)
    S = space.squared_distance_matrix
    rng = np.random.default_rng(1)
    L = rng.integers(-1, 120, size=(400, 4))
    stats = VoteStats.from_label_matrix(L, n_labels=120)
    T = np.arange(120)
    log_w = np.log(rng.dirichlet(np.ones(120)))
    theta = np.array([0.3, 0.9, 0.5, 0.2])
    prob = _Problem(stats, _SqDists(S, 1.0), groups=np.array([0, 0, 1, 2]))
    got = prob.leave_one_out_risk(log_w, theta, T, decision="distance")
    assert prob._distance_factors(T, np.sqrt(S))[0].shape == (120, 11)
    monkeypatch.setattr(_em_core, "_FACTOR_MIN_LABELS", 10**6)
    full = _Problem(stats, _SqDists(S, 1.0), groups=np.array([0, 0, 1, 2]))
    want = full.leave_one_out_risk(log_w, theta, T, decision="distance")
    assert full._distance_factors(T, np.sqrt(S)) is None
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_dependent_rankings_with_a_consensus_truth_get_a_flatter_posterior():
    # The truth is a composite score of the LFs' own measures; the finite test finds
    # dependent pairs. The likelihood's posterior counts their shared agreement as
    # evidence; a flatter one's least-expected-distance answer (towards Borda's
    # order) predicts held-out votes better, and so the truth.
    task = ss.datasets.load_metabolic_score_rankings(seed=0)
    lm = ss.StructuredLabelModel(task.space, seed=0).fit(
        task.L_train, progress_bar=False
    )
    assert lm.dependencies_ and lm.shrinkage_ == 1.0
    f = lm.noise_model_["temperature"]
    assert f < 1.0
    D = np.sqrt(task.space.squared_distance_matrix)
    D = D / D.max()  # normalized Kendall distance, as the benchmark's
    err = D[lm.predict(task.L_test, decision="distance"), task.Y_test].mean()
    # the same model at the likelihood's sharpness (theta / f)
    outliers = lm.noise_model_["outliers"]
    sharp = copy.deepcopy(lm)
    sharp.theta_ = lm.theta_ / f
    sharp._posterior = SupportPosterior(
        posterior_table(
            task.space.squared_distance_matrix,
            sharp.theta_,
            lm.support_,
            power=lm.noise_power_,
            eps=lm.outlier_rate_ if outliers else None,
            log_h=np.log(np.maximum(lm.outlier_dist_, 1e-300)) if outliers else None,
        ),
        lm._posterior.log_prior,
        lm.support_,
        len(task.space),
        lm._posterior.groups,
        lm._posterior.group_corr,
    )
    err_sharp = D[sharp.predict(task.L_test, decision="distance"), task.Y_test].mean()
    borda = ss.aggregators.borda(task.L_test, task.space)
    assert err < err_sharp
    assert err <= D[borda, task.Y_test].mean() + 0.005


class _FixedRisks:
    """A problem whose leave-one-out risk per pattern is given per temperature."""

    def __init__(self, counts, risks):
        self.c = np.asarray(counts, dtype=np.float64)
        self.risks = risks

    def leave_one_out_risk(self, log_w, theta, T, alpha, eps, decision):
        assert decision == "distance"
        return np.asarray(self.risks[round(float(theta[0]), 6)], dtype=np.float64)


@pytest.mark.parametrize(
    "sharper, want",
    [
        # f = 0.5 beats the flattest on every row: gain 70 over 40 rows; paired
        # differences (2, 2, 2, 1) x 10 rows, mean 1.75, sum of squared deviations
        # 7.5, standard error of the sum sqrt(40 / 39 * 7.5) = 2.7735: z = 25.24.
        ([1.0, 1.0, 1.0, 2.0], (0.5, 70 / np.sqrt(40 / 39 * 7.5))),
        # f = 0.5 has the least risk (gain 1) but the rows disagree: the flattest.
        ([1.9, 4.0, 2.0, 4.0], (0.1, 0.0)),
        # the flattest has the least risk itself
        ([3.5, 3.0, 3.0, 3.0], (0.1, 0.0)),
    ],
)
def test_temperature_is_the_flattest_unless_a_sharper_one_wins_by_two_se(sharper, want):
    from snorkel_structured.estimators._em_core import EMFit
    from snorkel_structured.estimators._noise_family import (
        TEMPERATURE_GRID,
        choose_temperature,
    )

    assert min(TEMPERATURE_GRID) == 0.1 and 0.5 in TEMPERATURE_GRID
    flat = [3.0, 3.0, 3.0, 3.0]
    risks = {f: flat for f in TEMPERATURE_GRID}
    risks[0.5] = sharper
    prob = _FixedRisks([10, 10, 10, 10], risks)
    fit = EMFit(np.full(2, 0.5), np.ones(3), None, 0.0, 1, True)
    f, z = choose_temperature(prob, np.arange(2), fit)
    assert f == want[0]
    assert z == pytest.approx(want[1], rel=1e-12)


def _brute_force_loo_risk(P, c, S, theta, w, T, groups, decision="map"):
    """sum_i c_i sum_a [a voted, another group voted] d(MAP without a's group, v_ia),
    from the model's definition P(v | y) = exp(-theta d^2(v, y)) / Z(y), each vote
    weighing 1/j where j LFs of its group voted; ``decision="distance"``: the label
    of T of least expected distance under that posterior instead of the MAP."""
    D = np.sqrt(S)
    logP = -theta[:, None, None] * S[None, :, :]  # (m, y, v)
    logP -= np.log(np.exp(logP).sum(axis=2, keepdims=True))
    total = 0.0
    for i in range(P.shape[0]):
        for a in range(P.shape[1]):
            if P[i, a] < 0:
                continue
            others = [
                b for b in range(P.shape[1]) if groups[b] != groups[a] and P[i, b] >= 0
            ]
            if not others:
                continue
            n_voting = {
                g: sum(P[i, b] >= 0 for b in others if groups[b] == g) for g in groups
            }
            score = [
                np.log(w[j])
                + sum(logP[b, T[j], P[i, b]] / n_voting[groups[b]] for b in others)
                for j in range(T.size)
            ]
            if decision == "map":
                pick = int(np.argmax(score))
            else:
                post = np.exp(np.array(score) - max(score))
                post /= post.sum()
                pick = int(np.argmin([post @ D[T, T[j]] for j in range(T.size)]))
            total += c[i] * D[T[pick], P[i, a]]
    return total


@pytest.mark.parametrize("decision", ["map", "distance"])
@pytest.mark.parametrize("groups", [None, np.array([0, 0, 1, 2])])
def test_leave_one_out_risk_matches_brute_force(groups, decision):
    space = ss.Permutations(3)
    S = space.squared_distance_matrix
    rng = np.random.default_rng(0)
    L = rng.integers(-1, 6, size=(300, 4))
    stats = VoteStats.from_label_matrix(L, n_labels=6)
    prob = _Problem(stats, _SqDists(S), groups=groups)
    T = np.array([0, 2, 3, 5])
    w = np.array([0.1, 0.4, 0.3, 0.2])
    theta = np.array([0.3, 1.1, 0.7, 0.2])
    got = prob.c @ prob.leave_one_out_risk(np.log(w), theta, T, decision=decision)
    P, c = np.asarray(stats.patterns), np.asarray(stats.counts)
    g = np.arange(4) if groups is None else groups
    want = _brute_force_loo_risk(P, c, S, theta, w, T, g, decision)
    assert got == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("jitter", [0.0, 1e-12, -1e-12])
def test_leave_one_out_risk_scores_an_exact_tie_at_the_tied_labels_mean(jitter):
    # Two classes, LFs of equal weight, uniform prior; one row votes (0, 1, 0, -).
    # Leaving LF 0 out, LFs 1 and 2 split 1-1: a tie, scored by hand at the mean of
    # d(0, 0) and d(1, 0), 0.5. LF 1 out: two votes for 0, d(0, 1) = 1. LF 2 out:
    # a tie again, 0.5. Total 2, whatever the rounding of theta.
    S = ss.Discrete(2).squared_distance_matrix
    stats = VoteStats.from_label_matrix(np.array([[0, 1, 0, -1]]), n_labels=2)
    prob = _Problem(stats, _SqDists(S))
    theta = np.array([0.8, 0.8 + jitter, 0.8 - jitter, 0.8])
    T = np.arange(2)
    got = prob.leave_one_out_risk(np.log([0.5, 0.5]), theta, T)
    assert got == pytest.approx([2.0], abs=1e-9)


def test_equally_good_lfs_get_nearly_equal_weights():
    space = ss.Permutations(4)
    data = ss.synthetic.make_label_matrix(
        3000, space=space, theta=[0.7] * 5, prior=np.full(24, 1 / 24), seed=3
    )
    lm = ss.StructuredLabelModel(space, seed=0).fit(
        data.L, progress_bar=False, dependencies=[]
    )
    assert np.ptp(lm.theta_) < 0.1 * lm.theta_.mean()
    # the weighted answers predict held-out votes as well as the unweighted vote
    assert abs(lm.noise_model_["safety_net_z"]) < 2.0


def test_unequal_lfs_keep_their_weights():
    data = ss.synthetic.make_ranking_data(3000, theta=(0.0, 0.0, 1.0), seed=0)
    lm = ss.StructuredLabelModel(data.space, seed=0).fit(data.L, progress_bar=False)
    assert lm.shrinkage_ < 1.0
    assert lm.noise_model_["safety_net_z"] > 2.0  # well ahead of the unweighted vote
    assert np.argmax(lm.theta_) == 2


def test_safety_net_replaces_weights_that_predict_worse():
    # LFs 0-2 are independent and fair; LFs 3-4 copy one poor source. A model that
    # trusts the copies loses to the unweighted vote, scored against held-out votes
    # with the copies left out together. (With only one good LF against the copies,
    # each side is predicted by the other alone, and the two models give the same
    # answers but for ties.)
    rng = np.random.default_rng(0)
    space = ss.Permutations(4)
    Y = rng.integers(0, 24, 3000)
    source = _noisy_copy(rng, Y, 0.25, 24)
    L = np.column_stack(
        [_noisy_copy(rng, Y, 0.6, 24) for _ in range(3)]
        + [_noisy_copy(rng, source, 0.9, 24) for _ in range(2)]
    )
    from snorkel_structured.estimators._noise_family import unweighted_safety_net

    stats = VoteStats.from_label_matrix(L, n_labels=24)
    T = np.arange(24)
    w = np.full(24, 1 / 24)
    trusting = EMFit(w, np.array([0.1, 0.1, 0.1, 2.0, 2.0]), None, 0.0, 0, True)
    equal = EMFit(w, np.full(5, 1.0), None, 0.0, 0, True)
    grouped = _Problem(
        stats,
        _SqDists(space.squared_distance_matrix),
        groups=np.array([0, 1, 2, 3, 3]),
    )
    replace, z = unweighted_safety_net(grouped, grouped, T, trusting, equal)
    D = space.distance_matrix
    err = {}
    for name, f in (("trusting", trusting), ("equal", equal)):
        G = sum(
            -f.theta[a] * space.squared_distance_matrix[:, L[:, a]].T for a in range(5)
        )
        err[name] = D[np.argmax(G, axis=1), Y].mean()
    assert err["equal"] < err["trusting"]  # the truth agrees with the criterion
    assert replace and z < -2.0


def test_dev_rows_that_cannot_decide_are_said_to_be_kept_out():
    # 10 labeled rows: "LF 0 first" scores better than the unsupervised model, but
    # within one standard error, so the model is kept, and a warning says so
    # (labeled rows must never be set aside silently).
    space, L, Y = _dominated_by_a_shared_source()
    dev = np.random.default_rng(1).permutation(2000)[:10]
    with pytest.warns(IdentifiabilityWarning, match="by less than 1 standard error"):
        lm = ss.StructuredLabelModel(space, seed=0).fit(
            L[:2000], L_dev=L[dev], Y_dev=Y[dev], progress_bar=False, dependencies=[]
        )
    scores = lm.dev_scores_.set_index("candidate")["mean_distance"]
    assert lm.dev_choice_ == "label model"
    assert scores.min() < scores["label model"]


def _copied_lfs(n=6000, seed=0, copies=(4,)):
    """Discrete(3): LFs 0-3 independent, each LF in ``copies`` copies LF 0."""
    rng = np.random.default_rng(seed)
    Y = rng.integers(0, 3, n)
    L = np.column_stack([_noisy_copy(rng, Y, acc, 3) for acc in (0.5, 0.6, 0.7, 0.55)])
    extra = [L[:, 0].copy() for _ in copies]
    return np.column_stack([L, *extra]), Y


def test_auto_dependencies_find_a_copy_and_weigh_every_lf_the_same():
    L, Y = _copied_lfs()
    space = ss.Discrete(3)
    with pytest.warns(IdentifiabilityWarning, match=r"LF pairs \[\(0, 4\)\]"):
        lm = ss.StructuredLabelModel(space, seed=0).fit(L, progress_bar=False)
    assert lm.dependencies_ == [(0, 4)]
    assert lm.lf_groups_[0] == lm.lf_groups_[4] != lm.lf_groups_[1]
    assert lm.dependency_test_ is not None and len(lm.dependency_test_) == 10
    # found dependencies: the unweighted vote, whatever the agreements suggest
    assert np.ptp(lm.theta_) == 0.0 and lm.shrinkage_ == 1.0
    # its sharpness is chosen on rankings only (see the next test)
    assert "temperature" not in lm.noise_model_
    # declared, the same pair makes the copy and its original one voice instead
    declared = ss.StructuredLabelModel(space, seed=0).fit(
        L, progress_bar=False, dependencies=[(0, 4)]
    )
    alone = ss.StructuredLabelModel(space, seed=0).fit(
        L[:, :4], progress_bar=False, dependencies=[]
    )
    np.testing.assert_allclose(declared.vote_weights_, [0.5, 1, 1, 1, 0.5])
    assert (
        np.mean(declared.predict(L) == Y)
        >= np.mean(alone.predict(L[:, :4]) == Y) - 0.01
    )


def test_auto_dependencies_test_a_thinning_of_many_rows():
    # Above DETECT_MAX_ROWS rows the test reads a random thinning of the counts (its
    # cost grows with the distinct patterns); a copy is still found, and the test's
    # table counts about DETECT_MAX_ROWS rows.
    from snorkel_structured.label_model.structured import DETECT_MAX_ROWS

    L, _ = _copied_lfs(n=5 * DETECT_MAX_ROWS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lm = ss.StructuredLabelModel(ss.Discrete(3), seed=0).fit(L, progress_bar=False)
    assert lm.dependencies_ == [(0, 4)]
    pair = lm.dependency_test_.set_index(["lf_a", "lf_b"]).loc[(0, 1)]
    assert abs(pair["n_both"] - DETECT_MAX_ROWS) < 5 * np.sqrt(DETECT_MAX_ROWS)


def test_auto_dependencies_stay_quiet_on_independent_lfs():
    L, _ = _copied_lfs(copies=())
    with warnings.catch_warnings():
        warnings.simplefilter("error", IdentifiabilityWarning)
        lm = ss.StructuredLabelModel(ss.Discrete(3), seed=0).fit(L, progress_bar=False)
    assert lm.dependencies_ == []


def test_fewer_than_three_sources_fall_back_to_equal_weights():
    space = ss.Discrete(3)
    L, _ = _copied_lfs(copies=(4, 5))
    # Declared: LFs 1, 2, 3 and 0 with its copies form two groups.
    deps = [(0, 4), (0, 5), (1, 2), (2, 3)]
    with pytest.warns(IdentifiabilityWarning, match="unweighted vote"):
        lm = ss.StructuredLabelModel(space, seed=0).fit(
            L, progress_bar=False, dependencies=deps
        )
    assert lm.shrinkage_ == 1.0
    assert np.ptp(lm.theta_) < 1e-12


def test_dependencies_must_be_auto_none_or_pairs():
    L, _ = _copied_lfs(copies=())
    lm = ss.StructuredLabelModel(ss.Discrete(3), seed=0)
    with pytest.raises(ValueError, match="dependencies must be 'auto'"):
        lm.fit(L, progress_bar=False, dependencies="all")


def _dominated_by_a_shared_source(n=3000, seed=0):
    """LF 0 is good; LFs 1-3 copy one poor shared source, so they agree with each
    other far more than with the truth (the votes alone favour them)."""
    rng = np.random.default_rng(seed)
    space = ss.Permutations(4)
    Y = rng.integers(0, 24, n)
    source = _noisy_copy(rng, Y, 0.25, 24)
    L = np.column_stack(
        [_noisy_copy(rng, Y, 0.75, 24)]
        + [_noisy_copy(rng, source, 0.9, 24) for _ in range(3)]
    )
    return space, L, Y


def test_dev_rows_choose_by_cross_validation():
    space, L, Y = _dominated_by_a_shared_source()
    test = np.arange(2000, 3000)
    dev = np.arange(100)
    D = space.distance_matrix
    lm = ss.StructuredLabelModel(space, seed=0).fit(
        L[:2000], L_dev=L[dev], Y_dev=Y[dev], progress_bar=False, dependencies=[]
    )
    err = D[lm.predict(L[test], decision="distance"), Y[test]].mean()
    lf0 = D[L[test, 0], Y[test]].mean()
    unsup = ss.StructuredLabelModel(space, seed=0).fit(
        L[:2000], progress_bar=False, dependencies=[]
    )
    err_unsup = D[unsup.predict(L[test], decision="distance"), Y[test]].mean()
    assert err_unsup > lf0 + 0.2  # the votes alone mislead the model
    assert err <= lf0 + 0.05
    assert lm.dev_choice_ != "label model"
    scores = lm.dev_scores_
    assert scores["chosen"].sum() == 1
    chosen = scores.loc[scores["chosen"], "mean_distance"].item()
    label_model = scores["mean_distance"].iloc[0]
    # the best candidate, when it beats the unsupervised model beyond the noise
    assert chosen == scores["mean_distance"].min()
    best = scores["mean_distance"].idxmin()
    assert label_model - chosen > DEV_MIN_SE * scores["se_of_difference"][best]
    assert {"label model", "LF 0 first", "LF 3 first"} <= set(scores["candidate"])
    # The unsupervised candidate is scored as the unsupervised model predicts.
    row = scores.loc[scores["candidate"] == "label model", "mean_distance"].item()
    want = D[unsup.predict(L[dev], decision="distance"), Y[dev]].mean()
    assert row == pytest.approx(want, abs=1e-12)


def test_single_lf_candidates_are_that_lf_where_it_votes():
    # As documented: "LF <a> first" is LF a's vote wherever it votes and the
    # unsupervised model where it abstains. Its dev score is then that mean distance,
    # computed here from the votes. With power 2 and outliers, four LFs reading one
    # poor source outvoted LF 0 at the usual theta cap (mean Kendall distance 2.06 on
    # the dev rows, against 1.01 for its own votes).
    rng = np.random.default_rng(3)
    space = ss.Permutations(4)
    n = 1500
    Y = rng.integers(0, 24, n)
    source = _noisy_copy(rng, Y, 0.1, 24)
    L = np.column_stack(
        [_noisy_copy(rng, Y, 0.85, 24)]
        + [_noisy_copy(rng, source, 0.9, 24) for _ in range(4)]
    )
    L[rng.random(n) < 0.2, 0] = -1  # LF 0 abstains on a fifth of the rows
    dev = np.arange(100)
    kwargs = dict(progress_bar=False, dependencies=[])
    options = dict(seed=0, noise_power=2, outliers=True)
    lm = ss.StructuredLabelModel(space, **options).fit(
        L, L_dev=L[dev], Y_dev=Y[dev], **kwargs
    )
    unsup = ss.StructuredLabelModel(space, **options).fit(L, **kwargs)
    D = space.distance_matrix
    fallback = D[unsup.predict(L[dev], decision="distance"), Y[dev]]
    scores = lm.dev_scores_.set_index("candidate")["mean_distance"]
    for a in range(L.shape[1]):
        votes = L[dev, a]
        want = np.where(votes >= 0, D[np.maximum(votes, 0), Y[dev]], fallback).mean()
        assert scores[f"LF {a} first"] == pytest.approx(want, abs=1e-9)


def test_flattened_candidate_is_the_equal_weights_candidate_scaled(monkeypatch):
    # At scale 1 the flattened candidate is the equal-weights one: same folds, same
    # fitted theta, so the same cross-validated score to the last bit.
    import snorkel_structured.label_model._dev_choice as dev_choice

    space, L, Y = _dominated_by_a_shared_source(n=1500)
    dev = np.arange(100)

    def scores(scale):
        monkeypatch.setattr(dev_choice, "FLAT_SCALE", scale)
        lm = ss.StructuredLabelModel(space, seed=0).fit(
            L[:1000], L_dev=L[dev], Y_dev=Y[dev], progress_bar=False, dependencies=[]
        )
        return lm.dev_scores_.set_index("candidate")["mean_distance"]

    same = scores(1.0)
    for p in (1, 2):
        flat = same[f"equal weights from dev rows, flattened (power {p})"]
        assert flat == same[f"equal weights from dev rows (power {p})"]
    flatter = scores(0.2)
    assert any(
        flatter[f"equal weights from dev rows, flattened (power {p})"]
        != same[f"equal weights from dev rows (power {p})"]
        for p in (1, 2)
    )


def test_dev_rows_reach_borda_on_a_consensus_truth():
    # metabolic scores: the truth is the mean of the LFs' own signals, where Borda's
    # positional average beat every weighting (issue 21: LM + 100 dev rows 0.1228
    # against Borda 0.1123, medians of seeds 0-2, before the flattened candidate).
    from snorkel_structured.datasets import TASKS

    errs, borda_errs, choices = [], [], []
    for seed in range(3):
        task = TASKS["metabolic_score_rankings"](seed)
        dev = np.sort(np.random.default_rng([seed, 2]).permutation(task.n_train)[:100])
        lm = ss.StructuredLabelModel(task.space, seed=seed).fit(
            task.L_train,
            L_dev=task.L_train[dev],
            Y_dev=task.Y_train[dev],
            progress_bar=False,
        )
        borda = ss.AggregatingVoter(task.space, method="borda").fit(task.L_train)
        pred = lm.predict(task.L_test, decision="distance")
        errs.append(task.normalized_errors(pred, task.Y_test).mean())
        borda_errs.append(
            task.normalized_errors(borda.predict(task.L_test), task.Y_test).mean()
        )
        choices.append(lm.dev_choice_)
    assert any("flattened" in c for c in choices)
    assert np.median(errs) <= np.median(borda_errs) + 0.005


def test_no_dev_rows_no_dev_choice():
    space, L, _ = _dominant_lf_data(n=500)
    lm = ss.StructuredLabelModel(space, seed=0).fit(L, progress_bar=False)
    assert lm.dev_choice_ is None and lm.dev_scores_ is None


def test_manifold_auto_dependencies_find_a_copy():
    space = ss.Euclidean(2)
    rng = np.random.default_rng(0)
    Y = rng.normal(size=(4000, 2))
    X = (
        Y[:, None, :]
        + rng.normal(size=(4000, 4, 2)) * np.array([0.3, 0.5, 0.4, 0.6])[None, :, None]
    )
    X = np.concatenate([X, X[:, :1]], axis=1)  # LF 4 copies LF 0
    with pytest.warns(IdentifiabilityWarning, match=r"LF pairs \[\(0, 4\)\]"):
        mm = ss.ManifoldLabelModel(space).fit(X)
    assert mm.dependencies_.tolist() == [[0, 4]]
    assert len(mm.dependency_test_) == 10
    with warnings.catch_warnings():
        warnings.simplefilter("error", IdentifiabilityWarning)
        none = ss.ManifoldLabelModel(space).fit(X[:, :4])
    assert none.dependencies_.size == 0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_manifold_auto_dependencies_with_four_lfs_flag_the_complement_too(seed):
    # With 4 LFs a pair's residual is its complement's: the test cannot tell the
    # copied pair (0, 2) from (1, 3) and flags both; the model keeps the copy (its
    # own closeness is far beyond independence), with a warning saying why.
    # Independent LFs still flag nothing.
    space = ss.Euclidean(2)
    rng = np.random.default_rng(seed)
    Y = rng.normal(size=(4000, 2))
    X = Y[:, None, :] + rng.normal(size=(4000, 4, 2)) * 0.4
    with warnings.catch_warnings():
        warnings.simplefilter("error", IdentifiabilityWarning)
        none = ss.ManifoldLabelModel(space).fit(X)
    assert none.dependencies_.size == 0
    X[:, 2] = X[:, 0] + rng.normal(size=(4000, 2)) * 0.05  # LF 2 near-copies LF 0
    with pytest.warns(IdentifiabilityWarning, match="it flags both"):
        mm = ss.ManifoldLabelModel(space).fit(X)
    test = mm.dependency_test_
    flagged = test.loc[test["dependent"], ["lf_a", "lf_b"]].to_numpy().tolist()
    assert sorted(map(tuple, flagged)) == [(0, 2), (1, 3)]
    kept = {tuple(p) for p in mm.dependencies_.tolist()}
    assert (0, 2) in kept and kept <= {(0, 2), (1, 3)}


@pytest.mark.parametrize("n", [3000, 30_000])
def test_lfs_at_chance_agreement_warn(n):
    # LFs that vote at random: no pair agrees more than chance, and fit says so. The
    # uniform prior keeps the answer the votes' own (the fitted one followed their
    # frequencies), not one label for every row. At 30,000 rows (about as many
    # patterns) the check first reads a sample of the rows, which must not hide it.
    rng = np.random.default_rng(0)
    L = rng.integers(0, 24, size=(n, 4))
    _assert_sampled_above(L, 24, n > 3000)
    lm = ss.StructuredLabelModel(ss.Permutations(4), seed=0)
    with pytest.warns(IdentifiabilityWarning, match="No two LFs agree more"):
        lm.fit(L, progress_bar=False, dependencies=[])
    pred = lm.predict(L, tie_break_policy="random")
    assert np.bincount(pred).max() / pred.size < ONE_ANSWER_SHARE


@pytest.mark.parametrize("accuracies", [(0.6, 0.5, 0.0), (0.0, 0.2, 0.6, 0.0, 0.5)])
def test_excess_agreement_matches_a_brute_force_count(accuracies):
    # z of each pair from its definition, row by row: the mean distance between the
    # two LFs' votes against all pairs of their votes drawn independently. With 5
    # LFs the pair that agrees most is (2, 4), away from the first LF.
    space = ss.Permutations(3)
    rng = np.random.default_rng(1)
    Y = rng.integers(0, 6, 400)
    L = np.column_stack([_noisy_copy(rng, Y, acc, 6) for acc in accuracies])
    L[rng.random(L.shape) < 0.2] = -1
    stats = VoteStats.from_label_matrix(L, n_labels=6)
    z_max, threshold = excess_agreement_z(
        stats.patterns, stats.counts, space.squared_distance_rows, 6
    )
    D = space.distance_matrix
    zs = {}
    for a, b in itertools.combinations(range(len(accuracies)), 2):
        rows = (L[:, a] >= 0) & (L[:, b] >= 0)
        va, vb = L[rows, a], L[rows, b]
        cross = D[va[:, None], vb[None, :]]  # every independent pairing
        mean, var = cross.mean(), (cross**2).mean() - cross.mean() ** 2
        zs[a, b] = (mean - D[va, vb].mean()) / np.sqrt(var / rows.sum())
    assert z_max == pytest.approx(max(zs.values()), rel=1e-12)
    assert threshold == pytest.approx(norm.isf(0.05 / len(zs)), rel=1e-12)
    # Stopping once some pair passes every pair's threshold: the same verdict, and
    # a z that some pair reaches.
    z_stop, threshold_stop = excess_agreement_z(
        stats.patterns,
        stats.counts,
        space.squared_distance_rows,
        6,
        stop_when_passed=True,
    )
    assert (z_stop >= threshold_stop) == (z_max >= threshold)
    assert min(abs(z_stop - z) for z in zs.values()) < 1e-9
    assert z_stop <= z_max
    if len(accuracies) == 3:
        assert zs[0, 1] > threshold > max(zs[0, 2], zs[1, 2])  # LF 2 is pure noise
    else:
        assert zs[2, 4] == max(zs.values())


def test_excess_agreement_skips_spaces_too_large_to_read():
    # 900 voted labels of Permutations(7): 900 x 5,040 distance cells are above the
    # check's budget, so it returns None without reading a row.
    def sq_rows(labels):
        raise AssertionError("no distance row may be read")

    P = np.arange(1800).reshape(900, 2)
    assert excess_agreement_z(P, np.ones(900), sq_rows, 5040) is None


def _assert_sampled_above(L, n_labels, sampled):
    stats = VoteStats.from_label_matrix(L, n_labels=n_labels)
    assert (_warning_sample(stats) is not stats) == sampled


@pytest.mark.parametrize("n", [3000, 30_000])
def test_one_answer_for_every_row_warns(n):
    # A few-label prior (the paper's search) over random votes: the posterior is
    # nearly the prior and one label is the answer for nearly every row (at 30,000
    # rows, seen on a sample of them first).
    rng = np.random.default_rng(0)
    L = rng.integers(0, 24, size=(n, 4))
    _assert_sampled_above(L, 24, n > 3000)
    lm = ss.StructuredLabelModel(ss.Permutations(4), seed=0, prior_support="search")
    with pytest.warns(IdentifiabilityWarning, match="predicts label .* of the voted"):
        lm.fit(L, progress_bar=False, dependencies=[])
    pred = lm.predict(L, tie_break_policy="random")
    assert np.bincount(pred).max() / pred.size >= ONE_ANSWER_SHARE


@pytest.mark.parametrize("n", [2000, 30_000])
def test_good_lfs_do_not_warn(n):
    # Neither of the closing checks, on all rows or (30,000 rows of 6 LFs: over
    # 5,000 patterns) on a sample first.
    if n == 2000:
        space, L, _ = _dominant_lf_data(n=n)
    else:
        rng = np.random.default_rng(0)
        space, Y = ss.Permutations(4), rng.integers(0, 24, n)
        L = np.column_stack([_noisy_copy(rng, Y, 0.6, 24) for _ in range(6)])
    _assert_sampled_above(L, len(space), n > 2000)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ss.StructuredLabelModel(space, seed=0).fit(L, progress_bar=False)
    assert not [w for w in caught if "predicts label" in str(w.message)]
    assert not [w for w in caught if "No two LFs agree" in str(w.message)]


def test_support_swaps_each_gain_more_than_the_search_tolerance(monkeypatch):
    """The swap step refits a move only for a gain above the search's EM tolerance.

    On ``Permutations(7)`` (3,000 rows, three centers) it used to move labels of
    negligible mass back and forth, refitting 57 times for gains of 0 to 4e-5 nats.
    """
    import snorkel_structured.estimators._em_choices as choices
    import snorkel_structured.estimators._support_search as search

    space = ss.Permutations(7)
    centers = np.sort(np.random.default_rng(0).choice(len(space), 3, replace=False))
    prior = np.zeros(len(space))
    prior[centers] = 1 / 3
    data = ss.synthetic.make_label_matrix(
        3000, space=space, theta=[0.3, 0.5, 0.4, 0.45], prior=prior, seed=1
    )
    gains, start = [], {}
    run_em, swap = search._run_em, search._swap

    def counting_run_em(prob, T, *args, **kwargs):
        fit = run_em(prob, T, *args, **kwargs)
        gains.append(fit.ll - start["ll"])
        start["ll"] = max(start["ll"], fit.ll)
        return fit

    def watched_swap(prob, T, w, theta, ll, C, **kwargs):
        start["ll"] = ll
        monkeypatch.setattr(search, "_run_em", counting_run_em)
        try:
            return swap(prob, T, w, theta, ll, C, **kwargs)
        finally:
            monkeypatch.setattr(search, "_run_em", run_em)

    monkeypatch.setattr(choices, "_swap", watched_swap)
    lm = ss.StructuredLabelModel(space, seed=0, prior_support="search")
    lm.fit(data.L, progress_bar=False)
    assert set(lm.support_) == set(centers)
    assert 0 < len(gains) <= 12
    # Every refit but a final rejected one gained more than the tolerance.
    assert all(g > search._SEARCH_TOL * 3000 for g in gains[:-1])


def test_full_prior_short_runs_reach_what_every_start_run_out_reaches():
    """The full-prior fit runs each start a few EM steps and only the leader on: it
    must end converged at the likelihood the best of the starts run to convergence
    reaches, in fewer steps than running them all."""
    import snorkel_structured.estimators._support_search as search
    from snorkel_structured.estimators import VoteStats
    from snorkel_structured.estimators._em_core import _Problem
    from snorkel_structured.estimators._noise_kernel import _SqDists

    space = ss.Permutations(5)
    r = len(space)
    prior = np.zeros(r)
    prior[[3, 40, 97]] = [0.5, 0.3, 0.2]
    data = ss.synthetic.make_label_matrix(
        3000, space=space, theta=[0.4, 0.6, 0.5, 0.3], prior=prior, seed=2
    )
    stats = VoteStats.from_label_matrix(data.L, n_labels=r)
    prob = _Problem(stats, _SqDists(space.squared_distance_matrix, 2.0))
    C = np.arange(r)
    wrong = np.full(r, 0.1 / r)
    wrong[[10, 60]] += 0.45  # a start on two labels that are not centers
    starts = [
        (np.full(r, 1.0 / r), np.full(4, 1.0 / prob.sq.unit)),
        (wrong, np.full(4, 0.2)),
    ]
    opts = dict(
        fixed_w=False, label_dependent=False, max_iter=200, tol=search._SEARCH_TOL
    )
    run_out = [search._run_em(prob, C, w.copy(), th.copy(), **opts) for w, th in starts]
    short = search._best_of_short_runs(prob, C, starts, opts)
    assert short.converged
    assert short.ll >= max(f.ll for f in run_out) - 10 * search._SEARCH_TOL * 3000
    assert short.n_iter < sum(f.n_iter for f in run_out)
    # the starts handed in are not modified
    assert starts[1][0][10] == pytest.approx(0.45 + 0.1 / r)


def test_least_expected_cost_ties_are_decided_by_the_votes_not_the_rounding():
    # LFs of equal weight that split between labels 0 and 2 leave the posterior
    # symmetric: under 0/1 costs the two tie. A 1e-14 difference between the LFs'
    # tables (what numerically equivalent fits differ by), either way, must not
    # decide the answer; it is a function of the votes, and over many vote rows
    # that tie it is not always the same label.
    from snorkel_structured.estimators._support_posterior import SupportPosterior

    acc = np.log(np.array([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]]))
    L = np.array(
        [
            [a, b, c, d]
            for a, b, c, d in itertools.product([-1, 0, 2], repeat=4)
            if sorted(v for v in (a, b, c, d) if v >= 0) in ([0, 2], [0, 0, 2, 2])
        ]
        + [[1, -1, -1, -1], [0, 0, 2, -1]]
    )
    cost = 1.0 - np.eye(3)
    answers = []
    for vote in (0, 2):  # LF 1 voting `vote`: a rounding's worth more likely
        table = np.zeros((4, 4, 3))  # [a, vote + 1, label]; row 0: abstain
        table[:, 1:, :] = acc
        table[1, vote + 1, vote] += 1e-14
        post = SupportPosterior(table, np.log(np.full(3, 1 / 3)), np.arange(3), 3)
        logp, inverse = post.log_proba(L)
        expected = np.exp(logp[inverse]) @ cost  # brute force, per row of L
        n_least = (expected < expected.min(axis=1, keepdims=True) + 1e-12).sum(1)
        np.testing.assert_array_equal(n_least, [2] * (len(L) - 2) + [1, 1])
        assert (np.abs(expected[:-2, 0] - expected[:-2, 2]) < 1e-12).all()
        answers.append(post.predict_min_cost(L, cost))
    np.testing.assert_array_equal(answers[0], answers[1])
    got = answers[0]
    assert set(got[:-2]) == {0, 2}  # each tied label wins on some rows
    assert got[-2] == 1 and got[-1] == 0  # no tie: the least expected cost


@pytest.mark.parametrize("space", [ss.Permutations(3), ss.Discrete(4)])
def test_map_ties_are_told_apart_by_expected_distance_off_plain_classes(space):
    # An unweighted vote (one theta for every LF) with integer distances ties on
    # many rows. The documented rule, written out: labels within 1e-5 of the top
    # probability tie; on a space other than Discrete, only those of least expected
    # distance E[d(z, Y) | votes] (within 1e-5 of the largest distance) stay tied;
    # a row still tied abstains (tie_break_policy="abstain").
    r = len(space)
    rng = np.random.default_rng(0)
    L = rng.integers(-1, r, size=(600, 4))
    lm = ss.StructuredLabelModel(
        space, seed=0, shrinkage=1.0, noise_power=1.0, outliers=False
    ).fit(L, progress_bar=False, dependencies=[])
    assert np.ptp(lm.theta_) == 0.0
    P = lm.predict_proba(L)
    D = np.sqrt(space.squared_distance_matrix)
    want = np.empty(len(L), dtype=np.int64)
    for i, p in enumerate(P):
        tied = np.flatnonzero(np.abs(p - p.max()) < 1e-5)
        if not isinstance(space, ss.Discrete):
            cost = np.array([p @ D[:, z] for z in tied])
            tied = tied[cost <= cost.min() + 1e-5 * D.max()]
        want[i] = tied[0] if tied.size == 1 else -1
    # predict says how many rows with votes it leaves unlabeled (5% or more)
    voted = (L != -1).any(axis=1)
    n_tied, n_voted = int(((want == -1) & voted).sum()), int(voted.sum())
    assert n_tied >= 0.05 * n_voted
    with pytest.warns(IdentifiabilityWarning, match=f"{n_tied} of the {n_voted} rows"):
        got = lm.predict(L)
    np.testing.assert_array_equal(got, want)
    with warnings.catch_warnings():
        warnings.simplefilter("error", IdentifiabilityWarning)
        assert (lm.predict(L, tie_break_policy="random")[voted] >= 0).all()
        few = np.flatnonzero(want >= 0)[: int(0.96 * n_voted)]
        few = np.concatenate([few, np.flatnonzero((want == -1) & voted)[:1]])
        assert (lm.predict(L[few]) == -1).sum() == 1  # under 5%: no word
    n_prob_ties = (np.sum(np.abs(P - P.max(axis=1, keepdims=True)) < 1e-5, 1) > 1).sum()
    assert n_prob_ties > 50  # the case is exercised
    if isinstance(space, ss.Discrete):
        assert (got == -1).sum() == n_prob_ties  # Snorkel's rule, unchanged
    else:
        assert (got == -1).sum() < n_prob_ties / 2
    np.testing.assert_array_equal(lm.predict(L, return_probs=True)[0], got)
    import dask.array as da  # partition by partition, the same rule

    lazy = lm.predict(da.from_array(L, chunks=(128, 4)))
    np.testing.assert_array_equal(lazy.compute(), got)
