"""StructuredLabelModel on plain classes: Dawid and Skene's tables by default.

Recovery of the tables that drew the votes, when the default keeps the distance
family instead, Q against a brute-force sum over vote patterns written from
noise_matrix's definition, a constant LF ignored, and save/load."""

import itertools

import numpy as np
import pytest

import snorkel_structured as ss
from tests._confusion_votes import draw_votes, right_mostly_tables


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(0)
    prior = np.array([0.5, 0.3, 0.2])
    tables = right_mostly_tables(5, 3, rng)
    L, y = draw_votes(40_000, prior, tables, rng)
    lm = ss.StructuredLabelModel(ss.Discrete(3), seed=0).fit(L, progress_bar=False)
    return lm, L, y, prior, tables


def test_default_on_classes_recovers_the_tables_that_drew_the_votes(fitted):
    lm, _, _, prior, tables = fitted
    assert lm.noise_model_["theta"] == "confusion"
    np.testing.assert_allclose(lm.prior_, prior, atol=0.01)
    got = lm.get_conditional_probs()  # (m, r + 1, r) [a, v + 1, y], abstain first
    assert np.abs(got.transpose(0, 2, 1) - tables).max() < 0.02
    np.testing.assert_allclose(got.sum(axis=1), 1.0, atol=1e-12)
    # Snorkel's accuracy: P(vote = y | votes), averaged over the prior
    right = tables[:, np.arange(3), np.arange(3) + 1] / (1 - tables[:, :, 0])
    np.testing.assert_allclose(lm.get_weights(), right @ prior, atol=0.01)
    # theta_: the distance family's theta that is right as often (k = 3)
    p = 1 / (1 + 2 * np.exp(-lm.theta_))
    np.testing.assert_allclose(
        p, np.exp(np.diagonal(lm.log_conditional_probs(), axis1=1, axis2=2))
    )


def test_the_tables_beat_the_distance_family_when_errors_are_uneven(fitted):
    lm, L, y, *_ = fitted
    family = ss.StructuredLabelModel(ss.Discrete(3), label_dependent=True, seed=0).fit(
        L, progress_bar=False
    )
    assert family.noise_model_["theta"] == "label"
    acc = [(m.predict(L, tie_break_policy="random") == y).mean() for m in (lm, family)]
    assert acc[0] > acc[1]


@pytest.mark.filterwarnings("ignore::snorkel_structured.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("case", ["declared dependencies", "option set", "not classes"])
def test_the_distance_family_is_kept_where_the_tables_do_not_apply(case):
    rng = np.random.default_rng(1)
    L, y = draw_votes(3_000, np.array([0.5, 0.5]), right_mostly_tables(4, 2, rng), rng)
    space, kwargs, fit_kwargs = ss.Discrete(2), {}, {}
    if case == "declared dependencies":
        fit_kwargs = {"dependencies": [(0, 1)]}
    elif case == "option set":
        kwargs = {"outliers": False}
    else:
        space = ss.FiniteMetricSpace([0, 1], np.array([[0.0, 1.0], [1.0, 0.0]]))
    lm = ss.StructuredLabelModel(space, seed=0, **kwargs).fit(
        L, progress_bar=False, **fit_kwargs
    )
    assert lm.noise_model_["theta"] != "confusion"


def test_noise_matrix_is_the_sum_over_vote_patterns_brute_force():
    rng = np.random.default_rng(2)
    L, _ = draw_votes(
        20_000, np.array([0.4, 0.35, 0.25]), right_mostly_tables(3, 3, rng), rng
    )
    lm = ss.StructuredLabelModel(ss.Discrete(3), seed=0).fit(L, progress_bar=False)
    assert lm.noise_model_["theta"] == "confusion"
    nm = lm.noise_matrix(rule="map")
    # From noise_matrix's definition: Q_ij = sum over patterns u of P(u | Y = i)
    # [the model's MAP of u is j], LF a abstaining at rate 1 - coverage_a and
    # otherwise voting v with P(v | Y = i, a votes).
    cond = lm.get_conditional_probs()[:, 1:, :]  # [a, v, y], P(v, votes | y)
    cond = cond / cond.sum(axis=1, keepdims=True)  # P(v | y, votes)
    rates = 1 - lm.coverage_
    patterns = np.array(list(itertools.product(range(-1, 3), repeat=3)))
    mode = lm.predict_proba(patterns).argmax(axis=1)
    Q = np.zeros((3, 3))
    for u, j in zip(patterns, mode, strict=True):
        for i in range(3):
            Q[i, j] += np.prod(
                [
                    rates[a] if v < 0 else (1 - rates[a]) * cond[a, v, i]
                    for a, v in enumerate(u)
                ]
            )
    np.testing.assert_allclose(nm.Q, Q, atol=1e-12)
    weights = lm.loss_weights(L[:50], rule="map")
    np.testing.assert_allclose(
        weights.iloc[:, 1:].to_numpy(), np.linalg.inv(Q)[mode_of(lm, L[:50])], atol=1e-9
    )


def mode_of(lm, L):
    return lm.predict_proba(L).argmax(axis=1)


def test_a_constant_lf_changes_no_answer():
    rng = np.random.default_rng(3)
    L, _ = draw_votes(
        5_000, np.array([0.3, 0.3, 0.4]), right_mostly_tables(4, 3, rng), rng
    )
    with_constant = np.column_stack([L, np.ones(len(L), dtype=np.int64)])
    a = ss.StructuredLabelModel(ss.Discrete(3), seed=0).fit(L, progress_bar=False)
    b = ss.StructuredLabelModel(ss.Discrete(3), seed=0).fit(
        with_constant, progress_bar=False
    )
    assert b.noise_model_["theta"] == "confusion"
    # EM stops at 0.02 nats in all: two fits agree to that precision, not to
    # rounding
    pa, pb = a.predict_proba(L), b.predict_proba(with_constant)
    np.testing.assert_allclose(pa, pb, atol=0.01)
    assert (pa.argmax(axis=1) == pb.argmax(axis=1)).mean() > 0.995


def test_save_and_load_keep_the_tables(fitted, tmp_path):
    lm, L, *_ = fitted
    lm.save(tmp_path / "lm.pkl")
    back = ss.StructuredLabelModel(ss.Discrete(3)).load(tmp_path / "lm.pkl")
    assert back.noise_model_["theta"] == "confusion"
    np.testing.assert_array_equal(
        back.predict_proba(L[:500]), lm.predict_proba(L[:500])
    )
    np.testing.assert_array_equal(
        back.get_conditional_probs(), lm.get_conditional_probs()
    )


def test_confusion_option_is_checked():
    rng = np.random.default_rng(5)
    L, y = draw_votes(2_000, np.array([0.5, 0.5]), right_mostly_tables(4, 2, rng), rng)
    with pytest.raises(TypeError, match="confusion must be True, False or 'auto'"):
        ss.StructuredLabelModel(ss.Discrete(2), confusion="yes").fit(L)
    with pytest.raises(ValueError, match="confusion=True needs a Discrete space"):
        ss.StructuredLabelModel(ss.Permutations(3), confusion=True).fit(L % 2)
    with pytest.raises(ValueError, match="confusion=True needs a Discrete space"):
        ss.StructuredLabelModel(ss.Discrete(2), confusion=True, outliers=False).fit(L)
    with pytest.raises(ValueError, match=r"dependencies \(\[\(0, 1\)\]\)"):
        ss.StructuredLabelModel(ss.Discrete(2), confusion=True).fit(
            L, dependencies=[(0, 1)], progress_bar=False
        )
    forced = ss.StructuredLabelModel(ss.Discrete(2), confusion=True, seed=0)
    assert forced.fit(L, progress_bar=False).noise_model_["theta"] == "confusion"


def test_lfs_that_meet_one_other_lf_keep_the_distance_family():
    # LFs 0-1 and 2-3 vote on disjoint halves of the rows: each meets one other LF,
    # which does not identify a table (it would only repeat the pair's agreement).
    rng = np.random.default_rng(6)
    L, _ = draw_votes(4_000, np.array([0.5, 0.5]), right_mostly_tables(4, 2, rng), rng)
    L[:2_000, 2:] = -1
    L[2_000:, :2] = -1
    fit = {"dependencies": [], "progress_bar": False}  # the guard alone
    lm = ss.StructuredLabelModel(ss.Discrete(2), seed=0).fit(L, **fit)
    assert lm.noise_model_["theta"] != "confusion"
    L[:20, 2] = L[:20, 0]  # 20 shared rows give LFs 0 and 2 their second partner...
    L[2_000:2_020, 1] = L[2_000:2_020, 3]  # ... and LFs 1 and 3 theirs
    lm = ss.StructuredLabelModel(ss.Discrete(2), seed=0).fit(L, **fit)
    assert lm.noise_model_["theta"] == "confusion"


def test_the_guard_counts_shared_rows_as_written_out():
    # Every voting LF shares >= 10 rows with each of two others, and the votes are at
    # least the tables' numbers: checked row by row, on both of the guard's paths (up
    # to 16 LFs, and above).
    from snorkel_structured.label_model._confusion import tables_identified

    rng = np.random.default_rng(7)
    for _ in range(120):
        m, n = int(rng.integers(3, 20)), int(rng.integers(5, 300))
        L = np.where(
            rng.random((n, m)) < rng.random(m) * 0.5, rng.integers(0, 3, (n, m)), -1
        )
        L[0, 0] = 1  # at least one vote
        V = L >= 0
        expected = V.sum() >= m * 4 * 3 and all(  # votes >= table numbers, k = 3
            sum((V[:, a] & V[:, b]).sum() >= 10 for b in range(m) if b != a) >= 2
            for a in range(m)
            if V[:, a].any()
        )
        stats = ss.estimators.VoteStats.from_label_matrix(L, n_labels=3)
        assert tables_identified(stats) == expected


def test_labeled_rows_join_the_tables_and_can_overrule_the_votes():
    # Every LF votes the next class, (y + 1) % 3, most of the time: without labels
    # the votes name the wrong classes; 100 labeled rows give the tables the shift.
    rng = np.random.default_rng(8)
    tables = right_mostly_tables(5, 3, rng)
    tables[:, :, 1:] = np.roll(tables[:, :, 1:], 1, axis=2)  # vote (y + 1) % 3
    L, y = draw_votes(6_000, np.array([0.4, 0.35, 0.25]), tables, rng)
    plain = ss.StructuredLabelModel(ss.Discrete(3), seed=0).fit(L, progress_bar=False)
    assert (plain.predict(L) == y).mean() < 0.1
    lm = ss.StructuredLabelModel(ss.Discrete(3), seed=0).fit(
        L[100:], L_dev=L[:100], Y_dev=y[:100], progress_bar=False
    )
    assert lm.noise_model_["theta"] == "confusion"
    assert lm.dev_choice_ == "label model"
    assert (lm.predict(L[100:]) == y[100:]).mean() > 0.9
    got = lm.get_conditional_probs().transpose(0, 2, 1)  # [a, y, v + 1]
    assert np.abs(got - tables).max() < 0.05


def test_class_balance_is_held_and_chunks_give_the_fit_of_all_rows():
    rng = np.random.default_rng(10)
    L, _ = draw_votes(6_000, np.array([0.6, 0.4]), right_mostly_tables(4, 2, rng), rng)
    fixed = ss.StructuredLabelModel(ss.Discrete(2), seed=0).fit(
        L, class_balance=[0.3, 0.7], progress_bar=False
    )
    assert fixed.noise_model_["theta"] == "confusion"
    assert fixed.noise_model_["prior"] == "fixed"
    np.testing.assert_allclose(fixed.prior_, [0.3, 0.7])
    whole = ss.StructuredLabelModel(ss.Discrete(2), seed=0).fit(L, progress_bar=False)
    chunked = ss.StructuredLabelModel(ss.Discrete(2), seed=0)
    for part in np.array_split(L, 3):
        chunked.partial_fit(part)
    assert chunked.noise_model_["theta"] == "confusion"
    np.testing.assert_allclose(chunked.predict_proba(L), whole.predict_proba(L))


def test_tables_larger_than_the_votes_keep_the_distance_family():
    # 60 classes, 4 LFs: 4 x 61 x 60 = 14,640 numbers from 2,000 rows x 4 votes.
    rng = np.random.default_rng(11)
    y = rng.integers(0, 60, 2_000)
    L = np.where(
        rng.random((2_000, 4)) < 0.8, y[:, None], rng.integers(0, 60, (2_000, 4))
    )
    lm = ss.StructuredLabelModel(ss.Discrete(60), seed=0).fit(
        L, dependencies=[], progress_bar=False
    )
    assert lm.noise_model_["theta"] != "confusion"
    more = np.tile(L, (2, 1))  # 16,000 votes: enough
    lm = ss.StructuredLabelModel(ss.Discrete(60), seed=0).fit(
        more, dependencies=[], progress_bar=False
    )
    assert lm.noise_model_["theta"] == "confusion"


def test_noise_matrix_from_tables_equals_it_from_theta_when_they_agree():
    # The tables of the distance family itself, given as log_cond, must give its Q
    # and its loss weights: exactly, and by Monte Carlo within the draws' standard
    # errors (the two paths draw the votes by different routines).
    space = ss.Discrete(3)
    theta, prior = np.array([1.2, 0.4, 2.0, 0.8]), np.array([0.2, 0.3, 0.5])
    d = ss.synthetic.make_label_matrix(
        500, space=space, theta=theta, prior=prior, abstain=0.3, seed=0
    )
    tables = ss.noise_aware.log_conditional_probs(space.squared_distance_matrix, theta)
    a = ss.noise_matrix(space, theta, prior, abstain=0.3, method="exact")
    b = ss.noise_matrix(space, theta, prior, abstain=0.3, log_cond=tables)
    np.testing.assert_allclose(a.Q, b.Q, atol=1e-12)
    mc = ss.noise_matrix(
        space, theta, prior, abstain=0.3, method="monte_carlo", seed=1, log_cond=tables
    )
    assert np.all(np.abs(mc.Q - a.Q) <= 4 * mc.std_error + 1e-12)
    wa = ss.loss_weights(d.L, space, theta, prior, seed=2)
    wb = ss.loss_weights(d.L, space, theta, prior, seed=2, log_cond=tables)
    np.testing.assert_allclose(wa.to_numpy(float), wb.to_numpy(float), atol=1e-12)
    with pytest.raises(ValueError, match=r"log_cond must be an \(4, 3, 3\) array"):
        ss.noise_matrix(space, theta, prior, log_cond=tables[:, :2])
    with pytest.raises(ValueError, match="log_cond must be"):
        ss.noise_matrix(space, theta, prior, log_cond=tables + 1.0)  # not normalized
    with pytest.raises(ValueError, match="not both"):
        ss.noise_matrix(
            space,
            theta,
            prior,
            log_cond=tables,
            outlier_rate=np.full(4, 0.1),
            outlier_dist=np.full((4, 3), 1 / 3),
        )
