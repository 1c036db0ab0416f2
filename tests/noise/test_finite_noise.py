import numpy as np
import pytest
from scipy import stats

import snorkel_structured as ss
from snorkel_structured.noise import (
    expected_sq_dist,
    expected_sq_dist_by_label,
    log_conditional_probs,
    log_posterior,
    sample_votes,
    theta_from_expected_sq_dist,
)


def test_paper_expected_sq_dists():
    # The paper's synthetic setup (section 6): theta = [0.6, 0.99, 0.8] on S4 Kendall tau.
    model = ss.FiniteNoiseModel(ss.Permutations(4), [0.6, 0.99, 0.8])
    np.testing.assert_allclose(
        model.expected_sq_dist(), [1.1863, 0.6800, 0.8621], atol=5e-5
    )


def test_conditional_probs_by_hand():
    # Path a - b - c: S = [[0,1,4],[1,0,1],[4,1,0]]; trees are not homogeneous, Z depends on y.
    space = ss.FiniteMetricSpace("abc", [[0, 1, 2], [1, 0, 1], [2, 1, 0]])
    theta = 0.7
    P = ss.FiniteNoiseModel(space, [theta]).conditional_probs()[0]
    S = space.squared_distance_matrix
    expected = np.exp(-theta * S) / np.exp(-theta * S).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(P, expected)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    # end points and the middle have different partition functions
    assert not np.isclose(np.exp(-theta * S[0]).sum(), np.exp(-theta * S[1]).sum())


def test_homogeneous_space_has_label_free_expectation():
    E = expected_sq_dist_by_label(
        ss.Permutations(4).squared_distance_matrix, np.array([0.3, 1.2])
    )
    np.testing.assert_allclose(E, E[:, :1] * np.ones((1, 24)))


@pytest.mark.parametrize(
    "space",
    [
        ss.Permutations(4),
        ss.GraphSpace(
            np.array([[0, 1, 0, 0], [1, 0, 1, 1], [0, 1, 0, 0], [0, 1, 0, 0]])
        ),
        ss.Discrete(5),
    ],
    ids=repr,
)
def test_theta_round_trip(space):
    S = space.squared_distance_matrix
    r = len(space)
    theta = np.array([0.0, 0.05, 0.4, 1.3, 3.0])
    prior = np.random.default_rng(1).dirichlet(np.ones(r))
    E = expected_sq_dist(S, theta, prior)
    np.testing.assert_allclose(
        theta_from_expected_sq_dist(S, E, prior), theta, atol=1e-8
    )
    # label-dependent: one theta per (LF, true label)
    theta2 = np.random.default_rng(2).uniform(0.0, 2.0, size=(3, r))
    E2 = expected_sq_dist_by_label(S, theta2)
    np.testing.assert_allclose(theta_from_expected_sq_dist(S, E2), theta2, atol=1e-7)


def test_expected_sq_dist_is_decreasing_and_inverse_clips():
    S = ss.Permutations(4).squared_distance_matrix
    grid = np.linspace(0, 5, 50)
    E = expected_sq_dist(S, grid, np.full(24, 1 / 24))
    assert (np.diff(E) < 0).all()
    uniform_mean = S.mean()
    got = theta_from_expected_sq_dist(S, [uniform_mean + 1.0, 1e-12], theta_max=20.0)
    assert got[0] == 0.0 and got[1] == 20.0


def test_sampler_frequencies_match_model():
    space = ss.Permutations(4)
    S = space.squared_distance_matrix
    theta = np.array([0.5, 1.5])
    y = np.repeat([3, 17], [40_000, 60_000])
    L = sample_votes(S, theta, y, seed=123)
    P = np.exp(log_conditional_probs(S, theta))
    for a in range(2):
        for label in (3, 17):
            obs = np.bincount(L[y == label, a], minlength=24)
            exp = P[a, label] * obs.sum()
            keep = exp > 5  # chi-square needs expected counts above ~5; pool the rest
            o = np.append(obs[keep], obs[~keep].sum())
            e = np.append(exp[keep], exp[~keep].sum())
            if e[-1] == 0:
                o, e = o[:-1], e[:-1]
            assert stats.chisquare(o, e).pvalue > 1e-3


def test_sampler_abstains_and_seeds():
    S = ss.Discrete(3).squared_distance_matrix
    y = np.zeros(50_000, dtype=int)
    L = sample_votes(S, np.array([1.0, 1.0]), y, abstain=[0.0, 0.3], seed=0)
    assert (L[:, 0] >= 0).all()
    assert abs((L[:, 1] == -1).mean() - 0.3) < 0.01
    np.testing.assert_array_equal(
        L, sample_votes(S, np.array([1.0, 1.0]), y, abstain=[0.0, 0.3], seed=0)
    )
    with pytest.raises(ValueError, match="abstain"):
        sample_votes(S, np.array([1.0]), y, abstain=1.5)
    with pytest.raises(ValueError, match="label indices"):
        sample_votes(S, np.array([1.0]), np.array([3]))


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_sampler_refuses_non_finite_theta(bad):
    # A NaN CDF made searchsorted return positions that became votes of -3 here.
    S = ss.Discrete(3).squared_distance_matrix
    with pytest.raises(ValueError, match=r"theta must be finite; got (nan|inf) at"):
        sample_votes(S, np.array([bad, 1.0]), np.zeros(10, dtype=int), seed=0)


def test_sampler_refuses_nan_abstain_rates():
    S = ss.Discrete(3).squared_distance_matrix
    with pytest.raises(
        ValueError, match=r"abstain rates must be in \[0, 1\]; got nan at index 0"
    ):
        sample_votes(S, np.array([1.0]), np.zeros(10, dtype=int), abstain=np.nan)


def test_posterior_matches_brute_force(rng):
    space = ss.GraphSpace(
        np.array([[0, 1, 1, 0], [1, 0, 0, 1], [1, 0, 0, 0], [0, 1, 0, 0]])
    )
    S = space.squared_distance_matrix
    theta = np.array([0.4, 1.0, 2.0])
    prior = np.array([0.1, 0.2, 0.3, 0.4])
    log_cond = log_conditional_probs(S, theta)
    L = rng.integers(-1, 4, size=(30, 3))
    post = np.exp(log_posterior(L, log_cond, np.log(prior)))
    for row, p in zip(L, post, strict=True):
        w = prior.copy()
        for a, v in enumerate(row):
            if v >= 0:
                w *= np.exp(-theta[a] * S[:, v]) / np.exp(-theta[a] * S).sum(axis=1)
        np.testing.assert_allclose(p, w / w.sum())


def test_noise_model_validation():
    with pytest.raises(TypeError, match="FiniteMetricSpace"):
        ss.FiniteNoiseModel(np.eye(3), [1.0])
    with pytest.raises(ValueError, match="theta"):
        ss.FiniteNoiseModel(ss.Discrete(3), [[1.0, 2.0]])
    with pytest.raises(ValueError, match="finite"):
        ss.FiniteNoiseModel(ss.Discrete(3), [np.nan])
    m = ss.FiniteNoiseModel.from_expected_sq_dist(ss.Discrete(4), [0.2, 0.5])
    np.testing.assert_allclose(m.expected_sq_dist(), [0.2, 0.5])
    assert m == ss.FiniteNoiseModel(ss.Discrete(4), m.theta)


def test_priors_are_checked_and_normalized_alike():
    # expected_sq_dist read an unnormalized prior as given (10 x uniform gave 10 x
    # E d^2) while from_expected_sq_dist normalized it, so they did not round-trip;
    # NaN, negative or all-zero priors gave NaN or a silent theta of 25.
    space = ss.Permutations(3)
    model = ss.FiniteNoiseModel(space, [1.0])
    p = np.full(6, 1 / 6)
    np.testing.assert_allclose(
        model.expected_sq_dist(10 * p), model.expected_sq_dist(p)
    )
    E = model.expected_sq_dist(10 * p)
    back = ss.FiniteNoiseModel.from_expected_sq_dist(space, E, prior=10 * p).theta
    np.testing.assert_allclose(back, [1.0], rtol=1e-6)
    for bad in ([np.nan] * 6, [-1, 1, 1, 1, 1, 1], np.zeros(6), [0.5, 0.5]):
        with pytest.raises(ValueError, match="prior must"):
            model.expected_sq_dist(bad)
        with pytest.raises(ValueError, match="prior must"):
            ss.FiniteNoiseModel.from_expected_sq_dist(space, [0.5], prior=bad)


def test_sample_votes_refuses_malformed_y_abstain_and_theta():
    # bare numpy IndexError/broadcast errors before, or (theta of the wrong width)
    # votes drawn silently
    from snorkel_structured.noise.finite import sample_votes

    space = ss.Permutations(3)
    model = ss.FiniteNoiseModel(space, [1.0, 1.0])
    with pytest.raises(ValueError, match="y must be a 1-D array of integer"):
        model.sample(np.array([0.5, 1.2]), seed=0)
    with pytest.raises(ValueError, match="y must be a 1-D array of integer"):
        model.sample(np.zeros((2, 2), int), seed=0)
    with pytest.raises(ValueError, match="abstain must be one rate or one per LF"):
        model.sample(np.zeros(5, int), abstain=[0.1, 0.1, 0.1], seed=0)
    with pytest.raises(ValueError, match=r"theta must have shape \(m,\) or \(m, 6\)"):
        sample_votes(space.squared_distance_matrix, np.ones((1, 5)), [0], seed=0)
    # integral floats are label indices too, and draw the same votes
    np.testing.assert_array_equal(
        model.sample(np.array([0.0, 3.0, 5.0]), seed=1),
        model.sample(np.array([0, 3, 5]), seed=1),
    )
