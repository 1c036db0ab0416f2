import itertools
import re
import warnings

import networkx as nx
import numpy as np
import pytest

import snorkel_structured as ss
from snorkel_structured.estimators import VoteStats, tensor_estimate
from snorkel_structured.noise.finite import expected_sq_dist, log_conditional_probs
from snorkel_structured.synthetic import make_label_matrix, make_ranking_data


def population_stats(S, theta, prior, n=1e9):
    """Infinite-sample VoteStats: counts = n * exact joint probabilities of all "
    "patterns."""
    r = S.shape[0]
    m = len(theta)
    cond = np.exp(log_conditional_probs(S, np.asarray(theta, float)))  # [a, y, v]
    support = np.flatnonzero(prior)
    patterns = np.array(list(itertools.product(range(r), repeat=m)), dtype=np.int64)
    joint = np.zeros(len(patterns))
    for y in support:
        term = np.full(len(patterns), prior[y])
        for a in range(m):
            term = term * cond[a, y, patterns[:, a]]
        joint += term
    return VoteStats(r, patterns, n * joint)


def tree_space():
    return ss.GraphSpace(nx.balanced_tree(2, 2))  # 7 nodes, not homogeneous


@pytest.mark.parametrize(
    "space, support, probs, theta",
    [
        (ss.Permutations(4), [3, 17], [0.2, 0.8], [0.6, 0.99, 0.8]),
        (ss.Permutations(4), [0, 5, 20], [0.5, 0.3, 0.2], [0.7, 0.9, 1.2]),
        (tree_space(), [1, 5], [0.35, 0.65], [0.5, 1.0, 0.8]),
        (ss.Discrete(4), [0, 2], [0.4, 0.6], [1.0, 2.0, 1.5]),
    ],
)
def test_exact_recovery_from_population_moments(space, support, probs, theta):
    S = space.squared_distance_matrix
    prior = np.zeros(len(space))
    prior[support] = probs
    stats = population_stats(S, theta, prior)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an identifiable problem raises no warning
        est = tensor_estimate(stats, S, seed=0)
    assert est.identifiable and est.warnings == []
    assert est.n_components == len(support)
    np.testing.assert_allclose(est.prior, prior, atol=1e-6)
    np.testing.assert_allclose(
        est.expected_sq_dist, expected_sq_dist(S, theta, prior), atol=1e-6
    )
    np.testing.assert_allclose(est.theta, theta, atol=1e-4)
    # Recovered conditional pmfs match the model's.
    cond = np.exp(log_conditional_probs(S, np.asarray(theta)))
    order = np.argsort(est.support)
    np.testing.assert_allclose(
        est.conditional_probs[:, order], cond[:, np.sort(support)], atol=1e-6
    )


def test_recovery_on_samples_within_tolerance():
    data = make_ranking_data(100_000, seed=1)
    stats = VoteStats.from_label_matrix(data.L, n_labels=len(data.space))
    est = tensor_estimate(stats, data.space.squared_distance_matrix, seed=0)
    assert est.identifiable
    assert set(est.support.tolist()) == set(data.support.tolist())
    # Floor (true labels visible) is about 0.005 here; allow 5x.
    assert np.abs(est.expected_sq_dist - data.expected_sq_dist).max() < 0.03
    np.testing.assert_allclose(
        est.prior[data.support], data.prior[data.support], atol=0.02
    )


def test_seed_gives_identical_results_and_stats_add():
    data = make_ranking_data(20_000, seed=2)
    S = data.space.squared_distance_matrix
    full = VoteStats.from_label_matrix(data.L, n_labels=24)
    chunks = sum(
        VoteStats.from_label_matrix(c, n_labels=24) for c in np.array_split(data.L, 3)
    )
    a = tensor_estimate(full, S, seed=5)
    b = tensor_estimate(chunks, S, seed=5)
    np.testing.assert_allclose(a.expected_sq_dist, b.expected_sq_dist, atol=1e-10)
    np.testing.assert_array_equal(a.support, b.support)


def test_abstains_and_five_lfs():
    space = ss.Permutations(4)
    prior = np.zeros(24)
    prior[[2, 9, 21]] = [0.3, 0.3, 0.4]
    data = make_label_matrix(
        100_000,
        space=space,
        theta=[0.6, 1.0, 0.8, 0.7, 1.2],
        prior=prior,
        abstain=0.2,
        seed=3,
    )
    assert (data.L == ss.ABSTAIN).mean() > 0.15
    stats = VoteStats.from_label_matrix(data.L, n_labels=24)
    est = tensor_estimate(stats, space.squared_distance_matrix, seed=0)
    assert est.identifiable and est.n_components == 3
    assert set(est.support.tolist()) == {2, 9, 21}
    rel = np.abs(est.expected_sq_dist - data.expected_sq_dist) / data.expected_sq_dist
    assert rel.max() < 0.05
    assert est.triplets.shape == (5, 3)
    assert (est.triplets[:, 0] == np.arange(5)).all() and (est.triplets >= 0).all()


def test_pure_noise_lfs_warn_and_still_return():
    data = make_ranking_data(5_000, theta=[0.0, 0.0, 1.0], seed=0)
    stats = VoteStats.from_label_matrix(data.L, n_labels=24)
    with pytest.warns(
        ss.IdentifiabilityWarning, match="single component|independently"
    ):
        est = tensor_estimate(stats, data.space.squared_distance_matrix, seed=0)
    assert not est.identifiable and est.warnings
    assert np.isfinite(est.expected_sq_dist).all()
    assert est.prior.sum() == pytest.approx(1.0)
    # Forcing k = 2 names the noise LFs.
    with pytest.warns(ss.IdentifiabilityWarning) as record:
        est2 = tensor_estimate(
            stats, data.space.squared_distance_matrix, n_components=2, seed=0
        )
    messages = [str(w.message) for w in record]
    assert any(
        re.search(r"LF\(s\) \[0, 1(, 2)?\] vote independently", m) for m in messages
    )
    assert any("rank-deficient" in m for m in messages)
    assert messages == est2.warnings
    assert not est2.identifiable and est2.n_components == 2


def test_one_noise_lf_among_informative_ones_is_named():
    space = ss.Permutations(4)
    prior = np.zeros(24)
    prior[[4, 15]] = [0.5, 0.5]
    data = make_label_matrix(
        50_000, space=space, theta=[0.9, 1.0, 0.0, 0.8], prior=prior, seed=0
    )
    stats = VoteStats.from_label_matrix(data.L, n_labels=24)
    with pytest.warns(
        ss.IdentifiabilityWarning, match=r"LF\(s\) \[2\] vote independently"
    ):
        est = tensor_estimate(stats, space.squared_distance_matrix, seed=0)
    assert est.n_components == 2 and set(est.support.tolist()) == {4, 15}
    assert 2 not in est.triplet  # the decomposition avoided the noise LF
    good = [0, 1, 3]
    assert np.abs(est.expected_sq_dist[good] - data.expected_sq_dist[good]).max() < 0.05


def test_invalid_inputs():
    data = make_ranking_data(200, seed=0)
    S = data.space.squared_distance_matrix
    stats = VoteStats.from_label_matrix(data.L, n_labels=24)
    with pytest.raises(TypeError, match="stats must be a VoteStats"):
        tensor_estimate(data.L, S)
    with pytest.raises(ValueError, match=r"S must be \(24, 24\)"):
        tensor_estimate(stats, S[:5, :5])
    with pytest.raises(ValueError, match="at least 3 labeling functions"):
        tensor_estimate(VoteStats.from_label_matrix(data.L[:, :2], n_labels=24), S)
    with pytest.raises(ValueError, match="n_components must be in the range"):
        tensor_estimate(stats, S, n_components=0)
    with pytest.raises(ValueError, match="n_components must be in the range"):
        tensor_estimate(stats, S, n_components=25)
    with pytest.raises(ValueError, match="n_restarts must be in the range"):
        tensor_estimate(stats, S, n_restarts=0)
    with pytest.raises(ValueError, match="embedding must be a fitted"):
        tensor_estimate(stats, S, embedding=ss.PseudoEuclideanEmbedding())
    with pytest.raises(ValueError, match="embedding must embed 24 labels"):
        tensor_estimate(
            stats, S, embedding=ss.PseudoEuclideanEmbedding().fit(S[:5, :5])
        )
    with pytest.raises(ValueError, match="symmetric"):
        bad = S.copy()
        bad[0, 1] += 1.0
        tensor_estimate(stats, bad)
