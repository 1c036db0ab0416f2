"""The score test of LF dependencies against a fitted label model (label-model layer)."""

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest

import snorkel_structured as ss
from snorkel_structured.estimators import VoteStats
from snorkel_structured.label_model._dependency_score import (
    agreement_expectations,
    default_null_model,
    model_dependency_test,
    null_model_tables,
    score_statistics,
)
from snorkel_structured.synthetic import make_label_matrix


def _plain_model(space, L):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ss.StructuredLabelModel(
            space,
            seed=0,
            label_dependent=False,
            abstain_dependent=False,
            noise_power=2,
            outliers=False,
            shrinkage=0.0,
        ).fit(L)


def test_agreement_probability_matches_brute_force():
    space = ss.Discrete(3)
    d = make_label_matrix(
        3000,
        space=space,
        theta=[1.0, 0.7, 1.4, 0.9],
        prior=[0.2, 0.3, 0.5],
        abstain=0.3,
        seed=0,
    )
    lm = _plain_model(space, d.L)
    T, log_prior, log_vote, abstain = null_model_tables(lm, space)
    cp = lm.get_conditional_probs()  # (m, r + 1, r), abstain first
    stats = VoteStats.from_label_matrix(d.L, 3)
    P = stats.patterns
    for a, b in [(0, 1), (1, 3)]:
        rows, p = agreement_expectations(P, a, b, log_prior, log_vote, abstain)
        for row, p_fast in zip(rows, p, strict=True):
            num = den = 0.0
            for y in range(3):  # brute force over y and the pair's votes
                w = lm.prior_[y]
                for c in range(4):
                    if c not in (a, b):
                        w *= cp[c, P[row, c] + 1, y]
                for va, vb in itertools.product(range(3), range(3)):
                    joint = w * cp[a, va + 1, y] * cp[b, vb + 1, y]
                    den += joint
                    num += joint * (va == vb)
            assert p_fast == pytest.approx(num / den, rel=1e-9)


def test_model_statistic_is_centred_on_data_from_the_model():
    space = ss.Discrete(3)
    d = make_label_matrix(
        4000,
        space=space,
        theta=[1.0, 0.7, 1.4, 0.9],
        prior=[0.2, 0.3, 0.5],
        abstain=0.2,
        seed=1,
    )
    lm = _plain_model(space, d.L)
    _, log_prior, log_vote, abstain = null_model_tables(lm, space)
    # New data drawn from the fitted model itself: observed - expected is noise.
    sim = make_label_matrix(
        200_000,
        space=space,
        theta=lm.theta_,
        prior=lm.prior_,
        abstain=1.0 - lm.coverage_,
        seed=2,
    )
    stats = VoteStats.from_label_matrix(sim.L, 3)
    *_, n_both, obs, exp, z = score_statistics(stats, log_prior, log_vote, abstain)
    assert np.all(np.abs(z) < 4.0)
    assert np.allclose(obs, exp, atol=0.01)


def test_posterior_from_tables_matches_predict_proba():
    space = ss.Permutations(4)
    d = ss.synthetic.make_ranking_data(3000, theta=[0.6, 0.9, 0.8, 0.7], seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lm = ss.StructuredLabelModel(space, seed=0).fit(d.L)
    T, log_prior, log_vote, abstain = null_model_tables(lm, space)
    L = d.L[:50]
    logp = np.tile(log_prior, (len(L), 1))
    for c in range(L.shape[1]):
        logp += np.log1p(-abstain[c]) + log_vote[c][L[:, c]]
    post = np.exp(logp - logp.max(1, keepdims=True))
    post /= post.sum(1, keepdims=True)
    assert np.allclose(post, lm.predict_proba(L, labels="support"), atol=1e-8)


def test_score_test_fits_the_default_null_model_and_applies_holm():
    space = ss.Discrete(3)
    d = make_label_matrix(
        4000,
        space=space,
        theta=[1.0, 1.4, 0.8, 1.2, 1.6],
        prior=[0.3, 0.3, 0.4],
        abstain=0.1,
        seed=0,
    )
    L = d.L.copy()
    mask = np.random.default_rng(1).random(len(L)) < 0.5
    L[mask, 4] = L[mask, 0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lm = default_null_model(space).fit(L)
    own = model_dependency_test(L, space=space, lf_names=list("abcde"))
    given = model_dependency_test(L, lm, lf_names=list("abcde"))
    pd.testing.assert_frame_equal(own, given)
    # Holm at alpha = 0.05 over the 10 pairs: the k-th smallest p-value passes
    # alpha / (10 - k + 1) for every flagged pair, and the flagged are the smallest.
    p = np.sort(own["p_value"].to_numpy())
    n_flagged = int(own["dependent"].sum())
    assert np.all(p[:n_flagged] <= 0.05 / (10 - np.arange(n_flagged)))
    if n_flagged < 10:
        assert p[n_flagged] > 0.05 / (10 - n_flagged)


def test_score_test_validation_errors():
    space = ss.Discrete(3)
    d = make_label_matrix(500, space=space, theta=[1, 1, 1, 1], prior=[1, 1, 1], seed=0)
    lm = _plain_model(space, d.L[:, :3])
    with pytest.raises(ValueError, match="fitted with 3 labeling functions"):
        model_dependency_test(d.L, lm, space=space)
    with pytest.raises(ValueError, match="fitted on"):
        model_dependency_test(
            np.zeros((10, 4), dtype=int), _plain_model(space, d.L), space=ss.Discrete(4)
        )
    with pytest.raises(ValueError, match="at least 4"):
        model_dependency_test(d.L[:, :3], space=space)
    with pytest.raises(ValueError, match="finite label space"):
        model_dependency_test(np.zeros((5, 4, 2)), space=ss.Euclidean(2))
    with pytest.raises(ValueError, match="space"):
        model_dependency_test(d.L)


def test_null_tables_of_dawid_skene_are_its_own():
    # The default on classes fits full tables (confusion): the score test must read
    # them, not the distance family's theta that is right as often.
    rng = np.random.default_rng(3)
    y = rng.integers(0, 3, 4000)
    confuse = np.array([[0, 1, 1], [1, 1, 2], [2, 0, 2]])  # uneven errors
    L = np.where(
        rng.random((4000, 5)) < 0.7,
        y[:, None],
        confuse[y[:, None], rng.integers(0, 3, (4000, 5))],
    )
    L[rng.random(L.shape) < 0.2] = -1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lm = ss.StructuredLabelModel(ss.Discrete(3), seed=0).fit(L, dependencies=[])
    assert lm.noise_model_["theta"] == "confusion"
    T, log_prior, log_vote, abstain = null_model_tables(lm, ss.Discrete(3))
    logp = np.tile(log_prior, (200, 1))
    for c in range(5):
        v = L[:200, c]
        logp += np.where(
            (v >= 0)[:, None],
            np.log1p(-abstain[c]) + log_vote[c][np.maximum(v, 0)],
            np.log(abstain[c]),
        )
    post = np.exp(logp - logp.max(1, keepdims=True))
    post /= post.sum(1, keepdims=True)
    voted = (L[:200] >= 0).any(axis=1)  # rows with no vote get the prior
    assert np.allclose(post[voted], lm.predict_proba(L[:200])[voted], atol=1e-10)
