"""Noise matrices Q, their inverse as loss weights, and the loss-weights DataFrame."""

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest

import snorkel_structured as ss
from snorkel_structured.synthetic import make_ranking_data

SPACE3 = ss.Permutations(3)
PRIOR3 = np.array([0.3, 0.0, 0.2, 0.0, 0.0, 0.5])  # support {0, 2, 5}


def _brute_force_rule_probs(space, theta, prior, abstain, rule):
    """Every vote pattern u (abstains included) with P(u | y) and P(Z | u), by loops."""
    S = space.squared_distance_matrix
    r = len(space)
    support = np.flatnonzero(prior > 0)
    p = prior[support] / prior[support].sum()
    cond = np.exp(-np.asarray(theta)[:, None, None] * S[None])
    cond /= cond.sum(axis=2, keepdims=True)
    rows = []
    for u in itertools.product(range(-1, r), repeat=len(theta)):
        lik = np.ones(len(support))
        for a, v in enumerate(u):
            lik *= abstain[a] if v == -1 else (1 - abstain[a]) * cond[a, support, v]
        post = p * lik / (p * lik).sum()
        z = post if rule == "sample" else np.eye(len(support))[np.argmax(post)]
        rows.append((lik, z))
    return support, rows


@pytest.mark.parametrize("rule", ["sample", "map"])
def test_corrected_loss_is_unbiased_by_enumeration(rule):
    theta, abstain = np.array([0.4, 0.9]), np.array([0.2, 0.1])
    nm = ss.noise_matrix(SPACE3, theta, PRIOR3, abstain=abstain, rule=rule)
    assert nm.method == "exact"
    support, rows = _brute_force_rule_probs(SPACE3, theta, PRIOR3, abstain, rule)
    np.testing.assert_array_equal(nm.support, support)
    S = SPACE3.squared_distance_matrix
    # E[sum_l w_l d^2(t, y_l) | Y = y_i] over all vote patterns and pseudolabels
    corrected = nm.inverse @ S[support, :]  # (k pseudolabels, r candidates t)
    expected = sum(lik[:, None] * (z @ corrected)[None, :] for lik, z in rows)
    np.testing.assert_allclose(expected, S[support, :], atol=1e-10)
    Q_brute = sum(np.outer(lik, z) for lik, z in rows)
    np.testing.assert_allclose(nm.Q, Q_brute, atol=1e-12)


@pytest.mark.parametrize("rule", ["sample", "map"])
def test_q_rows_sum_to_one_and_label_dependent_theta(rule):
    theta = np.array([[0.2, 1, 1, 1, 1, 0.8], [1.0] * 6, [0.5] * 6])
    nm = ss.noise_matrix(SPACE3, theta, PRIOR3, abstain=0.1, rule=rule)
    np.testing.assert_allclose(nm.Q.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(nm.Q @ nm.inverse, np.eye(3), atol=1e-10)
    assert nm.condition_number >= 1.0 and nm.sigma_min > 0


@pytest.mark.parametrize("rule", ["sample", "map"])
def test_exact_and_monte_carlo_agree_within_standard_error(rule):
    theta = [0.3, 0.6, 0.9]
    exact = ss.noise_matrix(SPACE3, theta, PRIOR3, abstain=0.1, rule=rule)
    mc = ss.noise_matrix(
        SPACE3,
        theta,
        PRIOR3,
        abstain=0.1,
        rule=rule,
        method="monte_carlo",
        n_draws=20_000,
        seed=0,
    )
    assert mc.method == "monte_carlo" and mc.n_evaluated == 20_000
    assert mc.max_std_error > 0 and exact.max_std_error == 0
    z = np.abs(mc.Q - exact.Q) / np.maximum(mc.std_error, 1e-12)
    assert z.max() < 4.5  # 18 entries, each within 4.5 standard errors
    again = ss.noise_matrix(
        SPACE3,
        theta,
        PRIOR3,
        abstain=0.1,
        rule=rule,
        method="monte_carlo",
        n_draws=20_000,
        seed=0,
    )
    np.testing.assert_array_equal(mc.Q, again.Q)


def test_auto_switches_to_monte_carlo_above_max_patterns():
    nm = ss.noise_matrix(SPACE3, [0.5, 0.5, 0.5], PRIOR3, max_patterns=100, seed=0)
    assert nm.method == "monte_carlo"


def test_singular_q_raises():
    with pytest.raises(ValueError, match="Q is singular"):
        ss.noise_matrix(SPACE3, [0.0, 0.0, 0.0], PRIOR3)


def test_ill_conditioned_q_warns():
    with pytest.warns(ss.IllConditionedWarning, match="ill-conditioned"):
        ss.noise_matrix(SPACE3, [0.05, 0.05], PRIOR3, warn_condition=2.0)


def test_bad_model_arguments_raise():
    with pytest.raises(ValueError, match="rule must be one of"):
        ss.noise_matrix(SPACE3, [1.0], PRIOR3, rule="mean")
    with pytest.raises(ValueError, match="prior must be 6"):
        ss.noise_matrix(SPACE3, [1.0], PRIOR3[:3])
    with pytest.raises(ValueError, match="support label 1 has zero prior"):
        ss.noise_matrix(SPACE3, [1.0], PRIOR3, support=[0, 1])
    with pytest.raises(ValueError, match="abstain rates must be in"):
        ss.noise_matrix(SPACE3, [1.0], PRIOR3, abstain=1.0)


def test_loss_weights_frame_layout_and_index_round_trip():
    data = make_ranking_data(300, theta=[0.3, 0.6, 0.9], abstain=0.2, seed=1)
    idx = pd.Index([f"doc{i}" for i in range(300)], name="doc")
    L_df = pd.DataFrame(data.L, index=idx, columns=["lf_a", "lf_b", "lf_c"])
    W = ss.loss_weights(L_df, data.space, data.theta, data.prior, seed=0)
    assert W.index.equals(idx)
    support = data.support
    names = [str(data.space.item(int(i))) for i in support]
    assert list(W.columns) == ["pseudolabel", *names]
    assert W["pseudolabel"].dtype == np.int64
    assert set(W["pseudolabel"]) <= set(support.tolist())
    nm = ss.noise_matrix(
        data.space, data.theta, data.prior, abstain=(data.L == -1).mean(axis=0)
    )
    pos = np.searchsorted(support, W["pseudolabel"].to_numpy())
    np.testing.assert_allclose(W[names].to_numpy(), nm.inverse[pos])
    assert W.attrs["support"] == support.tolist() and W.attrs["method"] == "exact"
    # seeded, and an explicit index overrides; abstain-only rows are kept
    W2 = ss.loss_weights(data.L, data.space, data.theta, data.prior, seed=0, index=idx)
    pd.testing.assert_frame_equal(W, W2)
    all_abstain = np.full((4, 3), ss.ABSTAIN)
    W3 = ss.loss_weights(
        all_abstain, data.space, data.theta, data.prior, noise=nm, rule="map"
    )
    assert len(W3) == 4


def test_loss_weights_map_rule_matches_posterior_argmax():
    data = make_ranking_data(200, theta=[0.0, 0.0, 1.0], seed=2)
    W = ss.loss_weights(data.L, data.space, data.theta, data.prior, rule="map")
    assert W.attrs["rule"] == "map"
    # the MAP under a clean-ish LF agrees with that LF when it votes a support label
    hit = np.isin(data.L[:, 2], data.support)
    assert (W["pseudolabel"].to_numpy()[hit] == data.L[hit, 2]).mean() > 0.99


def test_loss_weights_errors():
    data = make_ranking_data(50, seed=0)
    with pytest.raises(ValueError, match="index has 3 entries"):
        ss.loss_weights(data.L, data.space, data.theta, data.prior, index=[1, 2, 3])
    with pytest.raises(ValueError, match="theta describes 2 LFs"):
        ss.loss_weights(data.L, data.space, data.theta[:2], data.prior)
    bad = data.L.copy()
    bad[0, 0] = 24
    with pytest.raises(ValueError, match="outside the label space"):
        ss.loss_weights(bad, data.space, data.theta, data.prior)


def test_generic_space_uses_item_strings_or_label_names():
    space = ss.FiniteMetricSpace(["a", "b", "c"], [[0, 1, 2], [1, 0, 1], [2, 1, 0]])
    L = np.array([[0, 0], [2, 2], [1, -1]])
    W = ss.loss_weights(L, space, [2.0, 2.0], [0.4, 0.2, 0.4], seed=0)
    assert list(W.columns) == ["pseudolabel", "a", "b", "c"]
    W = ss.loss_weights(L, space.squared_distance_matrix, [2.0, 2.0], [0.4, 0.2, 0.4])
    assert list(W.columns) == ["pseudolabel", "label_0", "label_1", "label_2"]


def test_label_model_methods_match_functions():
    data = make_ranking_data(1000, theta=[0.0, 0.0, 1.0], abstain=0.1, seed=0)
    lm = ss.StructuredLabelModel(data.space, estimator="mle", seed=0).fit(data.L)
    nm = lm.noise_matrix()
    outliers = lm.noise_model_["outliers"]
    family = dict(
        power=lm.noise_power_,
        outlier_rate=lm.outlier_rate_ if outliers else None,
        outlier_dist=lm.outlier_dist_ if outliers else None,
    )
    ref = ss.noise_matrix(
        data.space,
        lm.theta_,
        lm.prior_,
        abstain=1 - lm.coverage_,
        rule=nm.rule,  # the model's default rule, whichever it is
        **family,
    )
    np.testing.assert_allclose(nm.Q, ref.Q)
    W_ref = ss.loss_weights(
        data.L, data.space, lm.theta_, lm.prior_, noise=nm, seed=1, **family
    )
    ref_paper = ss.noise_matrix(
        data.space, lm.theta_, lm.prior_, abstain=1 - lm.coverage_, rule=nm.rule
    )
    if lm.noise_power_ != 2 or outliers:  # another family: another Q
        assert np.abs(ref_paper.Q - nm.Q).max() > 1e-6
    assert W_ref.shape[0] == 1000
    # the default threshold keeps the two true centers, not the estimate's spurious sliver
    assert sorted(nm.support.tolist()) == sorted(data.support.tolist())
    L_df = pd.DataFrame(data.L, index=np.arange(1000) * 2)
    W = lm.loss_weights(L_df, seed=0)
    assert W.index.equals(L_df.index) and W.attrs["support"] == nm.support.tolist()
    pd.testing.assert_frame_equal(W, lm.loss_weights(L_df, seed=0))
    W_map = lm.loss_weights(data.L, rule="map", noise=lm.noise_matrix(rule="map"))
    assert W_map.attrs["rule"] == "map"


def test_monte_carlo_progress_bar_is_opt_in_and_changes_nothing(capsys):
    kw = dict(abstain=0.1, method="monte_carlo", n_draws=500, seed=3)
    quiet = ss.noise_matrix(SPACE3, [0.5, 1.0, 2.0], PRIOR3, **kw)
    assert "Monte Carlo Q" not in capsys.readouterr().err  # default off
    shown = ss.noise_matrix(SPACE3, [0.5, 1.0, 2.0], PRIOR3, progress_bar=True, **kw)
    err = capsys.readouterr().err
    assert "Monte Carlo Q" in err and "3/3" in err  # one step per support label
    np.testing.assert_array_equal(shown.Q, quiet.Q)
    with pytest.raises(TypeError, match="progress_bar must be a bool"):
        ss.noise_matrix(SPACE3, [1.0], PRIOR3, progress_bar="yes")


def test_em_progress_bar_over_starts_is_opt_in_and_changes_nothing(capsys):
    from snorkel_structured.estimators import VoteStats
    from snorkel_structured.estimators.em import mle_estimate

    data = make_ranking_data(500, seed=2)
    stats = VoteStats.from_label_matrix(data.L, n_labels=len(data.space))
    S = data.space.squared_distance_matrix
    quiet = mle_estimate(stats, S, n_components=2, n_restarts=3, seed=0)
    assert "EM starts" not in capsys.readouterr().err
    shown = mle_estimate(
        stats, S, n_components=2, n_restarts=3, seed=0, progress_bar=True
    )
    assert "EM starts" in capsys.readouterr().err
    np.testing.assert_array_equal(shown.theta, quiet.theta)
    np.testing.assert_array_equal(shown.prior, quiet.prior)


def test_default_rule_is_the_map_so_pseudolabels_are_the_predicted_labels():
    data = make_ranking_data(600, theta=[0.0, 0.0, 1.0], abstain=0.1, seed=2)
    W = ss.loss_weights(data.L, data.space, data.theta, data.prior)
    assert W.attrs["rule"] == "map"
    # by hand: argmax_y prior_y prod_a P(lambda_a | y) over the support
    S = data.space.squared_distance_matrix
    sup = np.asarray(W.attrs["support"])
    cond = np.exp(-np.asarray(data.theta)[:, None, None] * S[None])
    cond /= cond.sum(axis=2, keepdims=True)  # (m, y, v)
    post = np.tile(np.log(data.prior[sup]), (600, 1))
    for a in range(3):
        voted = data.L[:, a] != -1
        post[voted] += np.log(cond[a][sup][:, data.L[voted, a]].T)
    np.testing.assert_array_equal(W["pseudolabel"], sup[np.argmax(post, axis=1)])
    # and the label model's own predictions, fitted on the same votes
    lm = ss.StructuredLabelModel(data.space, estimator="mle", seed=0).fit(
        data.L, progress_bar=False
    )
    family = dict(power=lm.noise_power_)
    if lm.noise_model_["outliers"]:
        family.update(outlier_rate=lm.outlier_rate_, outlier_dist=lm.outlier_dist_)
    W_lm = ss.loss_weights(data.L, data.space, lm.theta_, lm.prior_, **family)
    pred = lm.predict(data.L)
    in_q = np.isin(pred, W_lm.attrs["support"])  # Q's support drops slivers
    np.testing.assert_array_equal(W_lm["pseudolabel"][in_q], pred[in_q])


def test_auto_rule_draws_when_the_map_never_picks_a_rare_class():
    # Two classes, prior 0.9 / 0.1, three LFs right 60% of the time: even three
    # votes for class 1 leave class 0 more probable (0.9 * 0.4^3 > 0.1 * 0.6^3), so
    # the MAP is never 1, Q for the MAP has a zero column, and no weights exist.
    space, prior = ss.Discrete(2), np.array([0.9, 0.1])
    theta = [np.log(0.6 / 0.4)] * 3  # d^2 = 1 between classes: odds 0.6 / 0.4
    assert 0.9 * 0.4**3 > 0.1 * 0.6**3
    with pytest.raises(ValueError, match="never be the posterior's argmax"):
        ss.noise_matrix(space, theta, prior, rule="map")
    with np.errstate(invalid="ignore"):  # abstain patterns have probability 0
        support, rows = _brute_force_rule_probs(
            space, theta, prior, np.zeros(3), "sample"
        )
    Q_hand = sum(np.outer(lik, z) for lik, z in rows if lik.any())
    auto = ss.noise_matrix(space, theta, prior, warn_condition=1e6)
    assert auto.rule == "sample"
    np.testing.assert_allclose(auto.Q, Q_hand, atol=1e-12)
    W = ss.loss_weights(
        np.array([[1, 1, 1], [0, 0, 0]]), space, theta, prior, warn_condition=1e6
    )
    assert W.attrs["rule"] == "sample"


def test_auto_support_when_the_prior_is_spread():
    """min_prior="auto": the 5% rule where it covers the prior (few centers), else the
    heaviest labels up to 90% of the prior, at most 40, with a warning below 90%."""
    from snorkel_structured.noise_aware import AUTO_MAX_LABELS

    space = ss.Permutations(5)
    r = len(space)
    # Few centers above 5%, slivers below: the same support as min_prior=0.05.
    few = np.full(r, 0.1 / (r - 3))
    few[[3, 50, 90]] = 0.3
    auto = ss.noise_matrix(space, [0.5, 0.5, 0.5], few, n_draws=50, seed=0)
    assert auto.support.tolist() == [3, 50, 90]
    # 30 labels of equal weight (3.3% each): none passes 5%; the 27 heaviest hold 90%.
    rng = np.random.default_rng(0)
    thirty = np.zeros(r)
    heavy = np.sort(rng.choice(r, 30, replace=False))
    thirty[heavy] = 1 / 30
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # 90% covered: no warning
        nm = ss.noise_matrix(space, [1.0, 1.0, 1.0], thirty, n_draws=50, seed=0)
    assert nm.support.size == 27 and set(nm.support) <= set(heavy)
    # Uniform over 120 labels: the cap, and a warning that names the share covered.
    with pytest.warns(UserWarning, match="40 heaviest labels, 33% of the prior"):
        nm = ss.noise_matrix(
            space, [1.0, 1.0, 1.0], np.full(r, 1 / r), n_draws=50, seed=0
        )
    assert nm.support.size == AUTO_MAX_LABELS
    # A threshold no label passes still says what to do.
    with pytest.raises(ValueError, match="min_prior='auto'"):
        ss.noise_matrix(space, [1.0, 1.0, 1.0], np.full(r, 1 / r), min_prior=0.05)


# -- a squared-distance matrix gets FiniteMetricSpace's validation ------------------
THETA3, PRIOR_ABC = [1.0, 0.5, 0.2], [0.5, 0.3, 0.2]


@pytest.mark.parametrize(
    "S, match",
    [
        (
            [[0, np.nan, 1], [np.nan, 0, 1], [1, 1, 0]],
            r"must be finite; entry \(0, 1\) is .*nan",
        ),
        ([[0, -1, 4], [-1, 0, 1], [4, 1, 0]], r"must be non-negative; entry \(0, 1\)"),
        ([[0, 1, 4], [9, 0, 1], [4, 1, 0]], r"must be symmetric; entry \(0, 1\)"),
        (
            [[0, 1, 4], [1, 2, 1], [4, 1, 0]],
            r"must have a zero diagonal; entry \(1, 1\)",
        ),
    ],
)
def test_invalid_squared_distance_matrix_raises_naming_the_entry(S, match):
    # NaN used to surface as "LinAlgError: SVD did not converge"; negative and
    # asymmetric squared distances were used as given.
    S = np.array(S, dtype=float)
    match = r"space \(a matrix of squared distances\) " + match
    with pytest.raises(ValueError, match=match):
        ss.noise_matrix(S, THETA3, PRIOR_ABC)
    L = np.array([[0, 1, 2], [2, 2, -1]])
    with pytest.raises(ValueError, match=match):
        ss.loss_weights(L, S, THETA3, PRIOR_ABC, seed=0)


def test_finite_metric_space_refuses_what_noise_matrix_refuses():
    # the same validator, so the same verdict on the same (asymmetric) matrix
    S = np.array([[0, 1, 4], [9, 0, 1], [4, 1, 0.0]])
    with pytest.raises(ValueError, match=r"must be symmetric; entry \(0, 1\)") as a:
        ss.FiniteMetricSpace("abc", S)
    with pytest.raises(ValueError, match=r"must be symmetric; entry \(0, 1\)") as b:
        ss.noise_matrix(S, THETA3, PRIOR_ABC)
    assert str(a.value).split(" must ")[1] == str(b.value).split(" must ")[1]


def test_explicit_squared_distances_give_the_hand_computed_q():
    # Two labels at squared distance 1, one LF with theta = ln 3, no abstains:
    # P(vote = y | y) = 1 / (1 + e^-theta) = 3/4, and with one LF and a uniform prior
    # the MAP pseudolabel is the vote, so Q = [[3/4, 1/4], [1/4, 3/4]].
    S = np.array([[0.0, 1.0], [1.0, 0.0]])
    nm = ss.noise_matrix(S, [np.log(3.0)], [0.5, 0.5], rule="map")
    np.testing.assert_allclose(nm.Q, [[0.75, 0.25], [0.25, 0.75]], atol=1e-12)
    np.testing.assert_allclose(nm.inverse, [[1.5, -0.5], [-0.5, 1.5]], atol=1e-12)
    same = ss.noise_matrix(
        ss.FiniteMetricSpace(["a", "b"], [[0, 1], [1, 0]]),
        [np.log(3.0)],
        [0.5, 0.5],
        rule="map",
    )
    np.testing.assert_array_equal(same.Q, nm.Q)


# -- loss_weights validates abstain rates as noise_matrix does -----------------------
@pytest.mark.parametrize("abstain", [1.5, 1.0, -0.1, np.nan, [0.1, 1.0, 0.2]])
def test_loss_weights_refuses_the_abstain_rates_noise_matrix_refuses(abstain):
    # abstain=1.5 used to be clipped to 1 - 1e-9 first: weights up to 2.7e9.
    data = make_ranking_data(50, theta=[0.3, 0.6, 0.9], seed=0)
    with pytest.raises(ValueError, match=r"abstain rates must be in \[0, 1\)") as nm:
        ss.noise_matrix(data.space, data.theta, data.prior, abstain=abstain)
    with pytest.raises(ValueError, match=r"abstain rates must be in \[0, 1\)") as lw:
        ss.loss_weights(data.L, data.space, data.theta, data.prior, abstain=abstain)
    assert str(lw.value) == str(nm.value)


def test_loss_weights_uses_given_abstain_rates_as_given():
    # Two labels, one LF (theta = ln 3: right with probability 3/4), abstain rate
    # 1/2, uniform prior, MAP rule (ties to the first label, so an abstain gives
    # label 0). By hand: Q = 1/2 [[3/4, 1/4], [1/4, 3/4]] + 1/2 [[1, 0], [1, 0]]
    # = [[7/8, 1/8], [5/8, 3/8]], det 1/4, Q^-1 = [[3/2, -1/2], [-5/2, 7/2]].
    S = np.array([[0.0, 1.0], [1.0, 0.0]])
    L = np.array([[0], [1], [-1]])
    W = ss.loss_weights(L, S, [np.log(3.0)], [0.5, 0.5], abstain=0.5, rule="map")
    assert W["pseudolabel"].tolist() == [0, 1, 0]
    np.testing.assert_allclose(
        W[["label_0", "label_1"]].to_numpy(),
        [[1.5, -0.5], [-2.5, 3.5], [1.5, -0.5]],
        atol=1e-12,
    )


def test_loss_weights_default_rates_accept_an_lf_that_always_abstains():
    # The default rates come from L, where an all -1 column has rate 1: it counts as
    # just below 1 (documented), so its LF carries no weight; no error.
    data = make_ranking_data(200, theta=[0.3, 0.6, 0.9], seed=0)
    L = data.L.copy()
    L[:, 0] = ss.ABSTAIN
    W = ss.loss_weights(L, data.space, data.theta, data.prior, seed=0)
    assert np.isfinite(W.drop(columns="pseudolabel").to_numpy()).all()


@pytest.mark.parametrize(
    "model_kw, fit_kw",
    [({}, {"dependencies": [(0, 1)]}), ({"abstain_dependent": True}, {})],
)
def test_label_model_pseudolabels_are_its_predictions_with_dependencies(
    model_kw, fit_kw
):
    # The README's promise: the MAP pseudolabels are the labels predict returns
    # (where that label is in Q's support). With declared dependencies (votes
    # weighed by their group) or abstains that depend on Y, the posterior is not
    # the independent LFs' posterior of theta_ and prior_; the weights had come
    # from the latter (5 and 3 rows of this tree disagreed with predict)
    import networkx as nx

    rng = np.random.default_rng(0)
    space = ss.GraphSpace(nx.balanced_tree(2, 2))
    n, m = 600, 4
    y = rng.choice([3, 4, 5], n, p=[0.5, 0.3, 0.2])
    L = np.where(
        rng.random((n, m)) < [0.8, 0.6, 0.6, 0.5],
        y[:, None],
        rng.integers(0, 7, (n, m)),
    )
    L[:, 1] = np.where(rng.random(n) < 0.9, L[:, 0], L[:, 1])
    L[rng.random((n, m)) < 0.3] = -1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lm = ss.StructuredLabelModel(space, seed=0, **model_kw).fit(
            L, progress_bar=False, **fit_kw
        )
        pred, P = lm.predict(L, return_probs=True)
        W = lm.loss_weights(L, seed=0, rule="map")
    sup = np.asarray(W.attrs["support"])
    top2 = np.sort(P[:, sup], axis=1)[:, -2:]
    clear = np.isin(pred, sup) & (top2[:, 1] > top2[:, 0])  # no tie inside Q's support
    assert clear.sum() > 500
    np.testing.assert_array_equal(W["pseudolabel"].to_numpy()[clear], pred[clear])


@pytest.mark.parametrize("method", ["exact", "monte_carlo"])
@pytest.mark.parametrize("rule", ["map", "sample"])
def test_posterior_given_as_the_default_one_changes_nothing(method, rule):
    # noise_matrix's documented default posterior, passed explicitly: the same Q
    from snorkel_structured.noise.finite import log_conditional_probs, log_posterior

    data = make_ranking_data(300, theta=[0.3, 0.8, 1.5], abstain=0.2, seed=4)
    S = data.space.squared_distance_matrix
    log_cond = log_conditional_probs(S, np.asarray(data.theta, dtype=float))
    log_prior = np.log(np.maximum(np.asarray(data.prior, dtype=float), 1e-300))

    def independent(L, labels):
        return log_posterior(L, log_cond, log_prior)[:, labels]

    kw = dict(abstain=0.2, rule=rule, method=method, n_draws=2000, seed=5)
    want = ss.noise_matrix(data.space, data.theta, data.prior, **kw)
    got = ss.noise_matrix(
        data.space, data.theta, data.prior, posterior=independent, **kw
    )
    np.testing.assert_allclose(got.Q, want.Q, atol=1e-12)
    args = (data.L, data.space, data.theta, data.prior)
    W_want = ss.loss_weights(*args, noise=want, seed=6)
    W_got = ss.loss_weights(*args, noise=got, posterior=independent, seed=6)
    np.testing.assert_array_equal(W_got["pseudolabel"], W_want["pseudolabel"])


def test_loss_weights_index_must_be_one_label_per_row():
    # a scalar index raised pandas' own TypeError
    data = make_ranking_data(50, seed=0)
    with pytest.raises(ValueError, match="index must be one label per row"):
        ss.loss_weights(data.L, data.space, data.theta, data.prior, index=5)


@pytest.mark.parametrize("space", [ss.Discrete(3), ss.Permutations(3)])
def test_map_weights_are_unbiased_on_a_symmetric_model_with_ties(space):
    # Equal thetas and a uniform prior: many vote patterns tie labels exactly. The
    # weights' pseudolabels and the Q they invert must break those ties alike, so the
    # corrected loss is unbiased (enumerating every pattern; it was off by up to 0.47).
    S = space.squared_distance_matrix
    r = len(space)
    theta, prior = np.array([1.5, 1.5]), np.full(r, 1.0 / r)
    nm = ss.noise_matrix(
        space, theta, prior, rule="map", support=np.arange(r), method="exact"
    )
    L = np.array(list(itertools.product(range(r), repeat=2)))
    W = ss.loss_weights(L, space, theta, prior, abstain=0.0, noise=nm)
    Wm = W.drop(columns="pseudolabel").to_numpy()
    logits = -theta[:, None, None] * S[None]
    logc = logits - np.log(np.exp(logits).sum(axis=2, keepdims=True))
    for y in range(r):
        P = np.exp(logc[0, y, L[:, 0]] + logc[1, y, L[:, 1]])  # P(votes | Y = y)
        np.testing.assert_allclose(P @ (Wm @ S), S[:, y], atol=1e-12)


def test_loss_weights_refuse_an_l_where_every_lf_abstains():
    # Q would be the prior's rows plus 1e-9 of votes (the clipped rates): its inverse
    # gave weights of order 1e8 with only an ill-conditioning warning.
    space = ss.Permutations(3)
    prior = np.array([0.5, 0, 0, 0, 0, 0.5])
    with pytest.raises(ValueError, match="every LF abstains on every row"):
        ss.loss_weights(np.full((3, 2), -1), space, [1.0, 1.0], prior, seed=0)
