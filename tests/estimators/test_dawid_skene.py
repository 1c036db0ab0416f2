"""Dawid-Skene EM: recovery of the tables that drew the votes, the posterior's
convention against a brute-force product, EM's fixed point, bad input."""

import itertools

import numpy as np
import pytest

from snorkel_structured.estimators import VoteStats, dawid_skene_estimate
from tests._confusion_votes import draw_votes, right_mostly_tables


def test_recovers_the_tables_and_prior_that_drew_the_votes():
    rng = np.random.default_rng(0)
    prior = np.array([0.2, 0.3, 0.5])
    tables = right_mostly_tables(5, 3, rng)
    L, _ = draw_votes(60_000, prior, tables, rng)
    est = dawid_skene_estimate(VoteStats.from_label_matrix(L, n_labels=3))
    assert est.converged
    np.testing.assert_allclose(est.prior, prior, atol=0.01)
    fitted = np.exp(est.log_table).transpose(0, 2, 1)  # [a, y, v + 1]
    assert np.abs(fitted - tables).max() < 0.02


def test_posterior_is_the_product_of_the_tables_brute_force():
    rng = np.random.default_rng(1)
    L, _ = draw_votes(
        3_000, np.array([0.5, 0.3, 0.2]), right_mostly_tables(4, 3, rng), rng
    )
    est = dawid_skene_estimate(VoteStats.from_label_matrix(L, n_labels=3))
    logp, inverse = est.posterior().log_proba(L)
    got = np.exp(logp[inverse])
    # P(y | votes) proportional to prior_y * prod_a P(lambda_a = v_a | y), written out
    P = np.exp(est.log_table)
    for i in range(0, 3_000, 97):
        joint = np.array(
            [
                est.prior[y] * np.prod([P[a, L[i, a] + 1, y] for a in range(4)])
                for y in range(3)
            ]
        )
        np.testing.assert_allclose(got[i], joint / joint.sum(), rtol=1e-10)


def test_every_table_column_is_a_distribution_and_the_fit_is_an_em_fixed_point():
    rng = np.random.default_rng(2)
    L, _ = draw_votes(5_000, np.array([0.6, 0.4]), right_mostly_tables(4, 2, rng), rng)
    stats = VoteStats.from_label_matrix(L, n_labels=2)
    est = dawid_skene_estimate(stats, tol=1e-12, max_iter=5_000)
    np.testing.assert_allclose(np.exp(est.log_table).sum(axis=1), 1.0, atol=1e-12)
    # One more M-step from the fitted posterior (pseudo-count 0.5) gives the tables.
    logp, inverse = est.posterior().log_proba(L)
    R = np.exp(logp[inverse])
    counts = np.full((4, 3, 2), 0.5)
    for a, v in itertools.product(range(4), range(-1, 2)):
        counts[a, v + 1] += R[L[:, a] == v].sum(axis=0)
    np.testing.assert_allclose(
        np.exp(est.log_table), counts / counts.sum(axis=1, keepdims=True), atol=1e-6
    )
    np.testing.assert_allclose(
        est.prior, (R.sum(axis=0) + 0.5) / (len(L) + 1.0), atol=1e-6
    )


def test_log_likelihood_is_that_of_the_rows_under_the_fitted_model():
    rng = np.random.default_rng(3)
    L, _ = draw_votes(2_000, np.array([0.3, 0.7]), right_mostly_tables(3, 2, rng), rng)
    est = dawid_skene_estimate(VoteStats.from_label_matrix(L, n_labels=2))
    P = np.exp(est.log_table)
    per_row = sum(
        est.prior[y] * np.prod([P[a, L[:, a] + 1, y] for a in range(3)], axis=0)
        for y in range(2)
    )
    assert est.log_likelihood == pytest.approx(np.log(per_row).sum(), rel=1e-10)


def test_an_lf_that_votes_one_class_on_every_row_says_nothing():
    # The distance family cannot express "always 1"; the tables can: its column is
    # the same under every class, so the posterior ignores it.
    rng = np.random.default_rng(4)
    tables = right_mostly_tables(4, 3, rng)
    L, _ = draw_votes(4_000, np.array([0.3, 0.3, 0.4]), tables, rng)
    with_constant = np.column_stack([L, np.ones(len(L), dtype=np.int64)])
    a = dawid_skene_estimate(VoteStats.from_label_matrix(L, n_labels=3))
    b = dawid_skene_estimate(VoteStats.from_label_matrix(with_constant, n_labels=3))
    pa, ia = a.posterior().log_proba(L)
    pb, ib = b.posterior().log_proba(with_constant)
    np.testing.assert_allclose(np.exp(pa[ia]), np.exp(pb[ib]), atol=2e-3)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"pseudo_count": -1.0}, "pseudo_count"),
        ({"max_iter": 0}, "max_iter"),
        ({"tol": 0.0}, "tol"),
    ],
)
def test_bad_options_are_refused(kwargs, match):
    L = np.array([[0, 1, 0], [1, 1, 1], [0, 0, 0]])
    with pytest.raises(ValueError, match=match):
        dawid_skene_estimate(VoteStats.from_label_matrix(L, n_labels=2), **kwargs)


def test_too_few_lfs_no_votes_and_raw_matrices_are_refused():
    two = VoteStats(2, np.array([[0, 1], [1, 1]]), np.array([3.0, 2.0]))
    with pytest.raises(ValueError, match="at least 3 LFs"):
        dawid_skene_estimate(two)
    silent = VoteStats.from_label_matrix(np.full((5, 3), -1), n_labels=2)
    with pytest.raises(ValueError, match="vote"):
        dawid_skene_estimate(silent)
    with pytest.raises(TypeError, match="VoteStats"):
        dawid_skene_estimate(np.zeros((4, 3), dtype=int))


def test_labeled_rows_are_counted_with_their_classes_at_the_fixed_point():
    rng = np.random.default_rng(9)
    L, y = draw_votes(3_000, np.array([0.5, 0.5]), right_mostly_tables(4, 2, rng), rng)
    lab = VoteStats.from_label_matrix(np.column_stack([L[:200], y[:200]]), n_labels=2)
    labeled = (lab.patterns[:, :-1], lab.counts, lab.patterns[:, -1])
    stats = VoteStats.from_label_matrix(L[200:], n_labels=2)
    est = dawid_skene_estimate(stats, labeled=labeled, tol=1e-12, max_iter=5_000)
    # one more M-step by hand: unlabeled rows by their posteriors, labeled rows by
    # their classes, plus the pseudo-count 0.5
    logp, inverse = est.posterior().log_proba(L[200:])
    R = np.vstack([np.exp(logp[inverse]), np.eye(2)[y[:200]]])
    votes = np.vstack([L[200:], L[:200]])
    counts = np.full((4, 3, 2), 0.5)
    for a, v in itertools.product(range(4), range(-1, 2)):
        counts[a, v + 1] += R[votes[:, a] == v].sum(axis=0)
    np.testing.assert_allclose(
        np.exp(est.log_table), counts / counts.sum(axis=1, keepdims=True), atol=1e-6
    )
    # the log-likelihood counts the labeled rows with their classes
    P = np.exp(est.log_table)

    def joint(rows, cls):
        return est.prior[cls] * np.prod(
            [P[a, rows[:, a] + 1, cls] for a in range(4)], axis=0
        )

    total = np.log(sum(joint(L[200:], c) for c in range(2))).sum()
    total += np.log(joint(L[:200], y[:200])).sum()
    assert est.log_likelihood == pytest.approx(total, rel=1e-10)
    with pytest.raises(ValueError, match="outside"):
        dawid_skene_estimate(stats, labeled=(labeled[0], labeled[1], labeled[2] + 5))


def test_stopping_at_max_iter_warns():
    from snorkel_structured.exceptions import ConvergenceWarning

    rng = np.random.default_rng(12)
    L, _ = draw_votes(2_000, np.array([0.5, 0.5]), right_mostly_tables(4, 2, rng), rng)
    stats = VoteStats.from_label_matrix(L, n_labels=2)
    with pytest.warns(ConvergenceWarning, match="max_iter=2"):
        est = dawid_skene_estimate(stats, max_iter=2)
    assert est.n_iter == 2 and not est.converged
