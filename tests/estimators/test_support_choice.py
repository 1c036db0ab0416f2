"""Which labels the prior keeps, and which noise model the data choose (issue 11).

Every case is drawn from a known truth; the assertions compare with that truth or with
plain majority vote on the same rows.
"""

import warnings

import networkx as nx
import numpy as np
import pytest

import snorkel_structured as ss


def _fit(space, L, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ss.StructuredLabelModel(space, seed=0, **kwargs).fit(L)


@pytest.mark.parametrize("seed", [0, 4, 8])
def test_adjacent_centers_are_all_kept(seed):
    data = ss.synthetic.make_close_centers_data(1500, seed=seed)
    space = data.space
    lm = _fit(space, data.L)
    assert set(np.flatnonzero(lm.prior_ >= 0.05)) == set(data.support.tolist())
    acc = np.mean(lm.predict(data.L, tie_break_policy="random") == data.Y)
    full = _fit(space, data.L, prior_support="all")
    acc_full = np.mean(full.predict(data.L, tie_break_policy="random") == data.Y)
    assert acc >= acc_full - 0.01


def test_searched_support_on_a_large_space_keeps_adjacent_centers():
    # Permutations(7) is too large for the whole-space prior: the support is searched,
    # greedily from one center and by the prior fitted over all candidates at once
    # (no random restarts with a free size). Two pairs of centers, each one swap
    # apart, on 1,000 rows of four noisy LFs.
    space = ss.Permutations(7)

    def sq_row(c):  # squared Kendall distances from c (never the 5,040^2 matrix)
        return space.squared_distance_rows(np.array([c]))[0]

    rng = np.random.default_rng(0)
    c0 = int(rng.integers(len(space)))
    c1 = int(rng.choice(np.flatnonzero(sq_row(c0) == 1)))
    c2 = int(rng.choice(np.flatnonzero(sq_row(c0) >= 16)))
    c3 = int(rng.choice(np.flatnonzero(sq_row(c2) == 4)))
    prior = np.zeros(len(space))
    prior[[c0, c1, c2, c3]] = [0.4, 0.15, 0.3, 0.15]
    theta = rng.uniform(0.12, 0.3, 4)
    data = ss.synthetic.make_label_matrix(
        1000, space=space, theta=theta, prior=prior, seed=100
    )
    lm = _fit(space, data.L)
    assert set(np.flatnonzero(lm.prior_ >= 0.05)) == {c0, c1, c2, c3}
    np.testing.assert_allclose(
        lm.prior_[[c0, c1, c2, c3]], prior[[c0, c1, c2, c3]], atol=0.05
    )


def test_discrete_keeps_every_class_and_follows_unanimous_votes():
    rows = np.array([[0, 1, 0], [1, 1, 1], [0, 0, 0], [1, 0, 1]])
    L = np.repeat(rows, 1000, axis=0)
    lm = _fit(ss.Discrete(2), L)
    np.testing.assert_array_equal(lm.support_, [0, 1])
    preds = lm.predict(rows)
    assert preds[1] == 1 and preds[2] == 0


def test_discrete_three_rows_keep_both_classes():
    lm = _fit(ss.Discrete(3), np.array([[0, 0, 1], [0, 0, -1], [1, 1, 1]]))
    np.testing.assert_array_equal(lm.support_, [0, 1, 2])
    assert (lm.prior_ > 0).all()


def test_tree_category_votes_do_not_become_labels():
    # Labels are leaves; LFs answer the leaf, its category node, or a random leaf.
    G = nx.Graph()
    for c in range(4):
        G.add_edge("root", f"c{c}")
        for leaf in range(5):
            G.add_edge(f"c{c}", f"c{c}l{leaf}")
    space = ss.GraphSpace(G)
    leaves = np.array(
        [space.index(f"c{c}l{leaf}") for c in range(4) for leaf in range(5)]
    )
    parent = {
        space.index(f"c{c}l{leaf}"): space.index(f"c{c}")
        for c in range(4)
        for leaf in range(5)
    }
    rng = np.random.default_rng(0)
    n = 3000
    Y = rng.choice(leaves, n, p=rng.dirichlet(np.ones(20)))
    category = np.vectorize(parent.get)(Y)
    L = np.empty((n, 4), dtype=np.int64)
    for a, (p_leaf, p_cat) in enumerate(
        [(0.6, 0.3), (0.5, 0.4), (0.4, 0.4), (0.7, 0.1)]
    ):
        u = rng.random(n)
        L[:, a] = np.where(
            u < p_leaf, Y, np.where(u < p_leaf + p_cat, category, rng.choice(leaves, n))
        )
    lm = _fit(space, L)
    preds = lm.predict(L, tie_break_policy="random")
    assert not np.isin(preds, list(set(parent.values()))).any()
    majority = np.array([np.bincount(row).argmax() for row in L])
    assert np.mean(preds == Y) > np.mean(majority == Y) + 0.05


def test_abstains_that_depend_on_the_label_are_estimated():
    rng = np.random.default_rng(0)
    n, k, m = 20000, 3, 5
    Y = rng.integers(k, size=n)
    acc = np.array([0.8, 0.7, 0.75, 0.65, 0.85])
    alpha = rng.uniform(0.1, 0.6, size=(m, k))  # P(abstain | Y) per LF and class
    right = rng.random((n, m)) < acc
    wrong = (Y[:, None] + rng.integers(1, k, size=(n, m))) % k
    L = np.where(right, Y[:, None], wrong)
    L[rng.random((n, m)) < alpha[:, Y].T] = ss.ABSTAIN
    lm = _fit(ss.Discrete(k), L)
    assert lm.abstain_dependent_
    np.testing.assert_allclose(lm.abstain_, alpha, atol=0.03)
    cp = lm.get_conditional_probs()
    np.testing.assert_allclose(cp.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(cp[:, 0, :], alpha, atol=0.03)
    # rows where no LF votes get the prior, not the abstain-weighted posterior
    none = np.full((1, m), ss.ABSTAIN)
    np.testing.assert_allclose(lm.predict_proba(none)[0], lm.prior_)


def test_abstains_independent_of_the_label_keep_the_simple_model():
    data = ss.synthetic.make_ranking_data(5000, abstain=0.3, seed=0)
    lm = _fit(data.space, data.L)
    assert not lm.abstain_dependent_
    np.testing.assert_allclose(lm.abstain_, 0.3, atol=0.02)


def test_lfs_that_never_meet_are_weighted_equally():
    # Each row gets at most one vote: no agreement to learn from, so the model must
    # fall back to the unweighted vote rather than fit each LF's vote distribution.
    rng = np.random.default_rng(1)
    n, m, k = 3000, 6, 3
    Y = rng.integers(k, size=n)
    L = np.full((n, m), ss.ABSTAIN)
    who = rng.integers(m, size=n)
    acc = np.linspace(0.5, 0.9, m)[who]
    vote = np.where(rng.random(n) < acc, Y, (Y + rng.integers(1, k, size=n)) % k)
    L[np.arange(n), who] = vote
    lm = _fit(ss.Discrete(k), L)
    assert lm.noise_model_["theta"] == "shared"
    np.testing.assert_array_equal(lm.predict(L), vote)
