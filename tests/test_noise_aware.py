"""Noise matrices Q, their inverse as loss weights, and the loss-weights DataFrame."""

import itertools

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
        data.space, lm.theta_, lm.prior_, abstain=1 - lm.coverage_, **family
    )
    np.testing.assert_allclose(nm.Q, ref.Q)
    W_ref = ss.loss_weights(
        data.L, data.space, lm.theta_, lm.prior_, noise=nm, seed=1, **family
    )
    ref_paper = ss.noise_matrix(
        data.space, lm.theta_, lm.prior_, abstain=1 - lm.coverage_
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
