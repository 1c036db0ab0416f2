"""Noise families, shrinkage, labeled dev rows and declared dependencies of the finite
label model, checked against data drawn from the documented model and brute force."""

import itertools
import warnings

import numpy as np
import pytest

import snorkel_structured as ss
from snorkel_structured.exceptions import IdentifiabilityWarning

S4 = ss.Permutations(4, metric="kendall_tau")


def vote_table(space, theta, power, eps, h):
    """P(lambda_a = v | y), (m, r, r) [a, y, v], written from the documentation:
    (1 - eps_a) exp(-theta_a d(v, y)^p) / Z_a(y) + eps_a h_a(v)."""
    Dp = space.distance_matrix**power
    K = np.exp(-np.asarray(theta)[:, None, None] * Dp[None])
    K /= K.sum(axis=2, keepdims=True)
    eps = np.asarray(eps)[:, None, None]
    return (1 - eps) * K + eps * np.asarray(h)[:, None, :]


def sample(space, prior, table, n, rng):
    r = len(space)
    y = rng.choice(r, size=n, p=prior)
    cdf = np.cumsum(table[:, y, :], axis=2)  # (m, n, r)
    u = rng.random((table.shape[0], n, 1))
    L = (u > cdf).sum(axis=2).T
    return np.minimum(L, r - 1), y


def two_centers():
    prior = np.zeros(24)
    prior[[0, 23]] = [0.6, 0.4]
    return prior


def test_outlier_rates_recovered_and_chosen():
    rng = np.random.default_rng(0)
    m = 4
    theta = np.array([1.5, 1.0, 2.0, 1.2])
    eps = np.array([0.0, 0.25, 0.0, 0.15])
    h = np.full((m, 24), 1 / 24)  # an outlier vote is uniform over S4
    L, _ = sample(S4, two_centers(), vote_table(S4, theta, 2, eps, h), 20000, rng)
    lm = ss.StructuredLabelModel(S4, noise_power=2, seed=0).fit(L)
    assert lm.noise_model_["outliers"] is True
    # eps is identified up to what the kernel's own tail explains: within 0.05
    np.testing.assert_allclose(lm.outlier_rate_, eps, atol=0.05)
    assert lm.outlier_rate_[1] > 0.15 and lm.outlier_rate_[0] < 0.05


def test_clean_data_keep_the_papers_family():
    rng = np.random.default_rng(1)
    theta = np.array([1.5, 1.0, 2.0, 1.2])
    h = np.full((4, 24), 1 / 24)
    L, _ = sample(
        S4, two_centers(), vote_table(S4, theta, 2, np.zeros(4), h), 20000, rng
    )
    lm = ss.StructuredLabelModel(S4, seed=0).fit(L)
    assert lm.noise_model_["power"] == 2.0 and lm.noise_model_["outliers"] is False
    np.testing.assert_allclose(lm.theta_, theta, rtol=0.1)


def test_small_samples_of_the_papers_model_keep_its_family():
    # The paper's label-model setup (two pure-noise LFs, n = 200): no seed may leave
    # the paper's family, so the fit matches the exact posterior's accuracy. (The
    # outlier family won every seed when its held-out score used the held-out half's
    # own vote distribution.)
    for seed in range(4):
        data = ss.synthetic.make_ranking_data(200, theta=(0.0, 0.0, 1.0), seed=seed)
        lm = ss.StructuredLabelModel(data.space, seed=seed).fit(data.L)
        assert lm.noise_model_["outliers"] is False, seed
        assert lm.noise_model_["power"] == 2.0, seed


def test_a_candidate_must_beat_the_default_by_two_standard_errors():
    from snorkel_structured.estimators._noise_family import _best_by_se, _gain_se

    rng = np.random.default_rng(0)
    counts = rng.integers(1, 4, size=50).astype(float)
    base = rng.normal(size=50)
    noise = rng.normal(size=50)
    # the standard error of a sum over rows of paired differences, by hand
    d = np.repeat(noise, counts.astype(int))
    se = np.sqrt(d.size * d.var(ddof=1))
    parts = lambda v: [(v, counts)]  # noqa: E731
    assert np.isclose(_gain_se(parts(base + noise), parts(base)), se)
    for shift, expect in [(1.9, "default"), (2.1, "other")]:
        other = base + noise + (shift * se - counts @ noise) / counts.sum()
        per_row = {"default": parts(base), "other": parts(other)}
        scores = {k: float(v[0][0] @ counts) for k, v in per_row.items()}
        assert np.isclose(scores["other"] - scores["default"], shift * se)
        assert _best_by_se(scores, per_row, "default", scores.get) == expect


def test_mallows_data_choose_power_one():
    rng = np.random.default_rng(2)
    theta = np.array([1.2, 0.8, 1.5, 1.0])
    h = np.full((4, 24), 1 / 24)
    L, _ = sample(
        S4, two_centers(), vote_table(S4, theta, 1, np.zeros(4), h), 20000, rng
    )
    lm = ss.StructuredLabelModel(S4, outliers=False, seed=0).fit(L)
    assert lm.noise_power_ == 1.0
    np.testing.assert_allclose(lm.theta_, theta, rtol=0.1)
    # E[d^2] is still reported in squared distances: check against the truth
    T = vote_table(S4, theta, 1, np.zeros(4), h)
    truth = np.einsum("y,ayv,yv->a", two_centers(), T, S4.squared_distance_matrix)
    np.testing.assert_allclose(lm.expected_sq_dist_, truth, rtol=0.1)


def test_posterior_is_the_documented_mixture():
    rng = np.random.default_rng(3)
    space = ss.Discrete(3)
    h = np.array([[0.2, 0.3, 0.5]] * 3)
    table = vote_table(space, [1.0, 2.0, 0.7], 2, [0.2, 0.0, 0.3], h)
    L, _ = sample(space, np.array([0.5, 0.3, 0.2]), table, 5000, rng)
    lm = ss.StructuredLabelModel(
        space, outliers=True, noise_power=1, label_dependent=False, seed=0
    ).fit(L)
    fitted = vote_table(
        space, lm.theta_, lm.noise_power_, lm.outlier_rate_, lm.outlier_dist_
    )
    patterns = np.array(list(itertools.product(range(-1, 3), repeat=3)))
    expected = np.tile(lm.prior_, (len(patterns), 1))
    for i, row in enumerate(patterns):
        for a, v in enumerate(row):
            if v >= 0:
                expected[i] *= fitted[a, :, v]
    expected /= expected.sum(1, keepdims=True)
    np.testing.assert_allclose(lm.predict_proba(patterns), expected, rtol=1e-9)
    # h_a is the LF's own vote frequencies
    for a in range(3):
        freq = np.bincount(L[:, a], minlength=3) / len(L)
        np.testing.assert_allclose(lm.outlier_dist_[a], freq)


def test_shrinks_toward_equal_when_lfs_are_equal_and_data_few():
    # Five equally good LFs, 150 rows: per-LF thetas are mostly estimation noise.
    chosen = []
    for seed in range(4):
        rng = np.random.default_rng(10 + seed)
        h = np.full((5, 24), 1 / 24)
        table = vote_table(S4, np.full(5, 0.6), 2, np.zeros(5), h)
        L, _ = sample(S4, two_centers(), table, 150, rng)
        lm = ss.StructuredLabelModel(
            S4, label_dependent=False, noise_power=2, outliers=False, seed=0
        ).fit(L)
        spread = np.ptp(lm.theta_)
        chosen.append((lm.shrinkage_, spread))
    assert np.median([s for s, _ in chosen]) >= 0.5, chosen


def test_fixed_shrinkage_moves_theta_to_the_mean():
    rng = np.random.default_rng(4)
    h = np.full((4, 24), 1 / 24)
    table = vote_table(S4, [1.5, 0.5, 1.0, 2.0], 2, np.zeros(4), h)
    L, _ = sample(S4, two_centers(), table, 4000, rng)
    kw = dict(noise_power=2, outliers=False, label_dependent=False, seed=0)
    free = ss.StructuredLabelModel(S4, shrinkage=0.0, **kw).fit(L)
    half = ss.StructuredLabelModel(S4, shrinkage=0.5, **kw).fit(L)
    full = ss.StructuredLabelModel(S4, shrinkage=1.0, **kw).fit(L)
    np.testing.assert_allclose(
        half.theta_, free.theta_.mean() + 0.5 * (free.theta_ - free.theta_.mean())
    )
    np.testing.assert_allclose(full.theta_, free.theta_.mean())


def test_log_likelihood_is_that_of_the_unlabeled_rows():
    rng = np.random.default_rng(5)
    space = ss.Discrete(3)
    h = np.full((3, 3), 1 / 3)
    table = vote_table(space, [1.0, 2.0, 0.7], 2, np.zeros(3), h)
    prior = np.array([0.5, 0.3, 0.2])
    L, _ = sample(space, prior, table, 3000, rng)
    L_dev, Y_dev = sample(space, prior, table, 100, rng)
    lm = ss.StructuredLabelModel(
        space,
        noise_power=2,
        outliers=False,
        shrinkage=0.0,
        label_dependent=False,
        abstain_dependent=False,
        seed=0,
    ).fit(L, L_dev=L_dev, Y_dev=Y_dev)
    # log-likelihood = sum log P(votes) over the unlabeled rows (labeled rows choose
    # among candidates by cross-validation; they are not in the likelihood)
    fitted = vote_table(space, lm.theta_, 2, np.zeros(3), h)
    per_y = np.tile(lm.prior_, (len(L), 1))
    for a in range(3):
        per_y *= fitted[a][:, L[:, a]].T
    expected = np.log(per_y.sum(1)).sum()
    np.testing.assert_allclose(lm.log_likelihood_, expected, rtol=1e-9)


def test_dev_rows_fix_a_model_the_votes_cannot_identify():
    # Two LFs copy each other's errors (dependent): unsupervised, the pair looks
    # accurate. 200 labeled rows bring the accuracy up to at least the best LF's.
    rng = np.random.default_rng(6)
    space = ss.Discrete(3)
    n = 6000
    y = rng.choice(3, size=n + 200, p=[0.4, 0.35, 0.25])
    good = np.where(rng.random(n + 200) < 0.85, y, rng.integers(0, 3, n + 200))
    bad = np.where(rng.random(n + 200) < 0.5, y, rng.integers(0, 3, n + 200))
    bad_copy = np.where(rng.random(n + 200) < 0.9, bad, rng.integers(0, 3, n + 200))
    other = np.where(rng.random(n + 200) < 0.6, y, rng.integers(0, 3, n + 200))
    L_all = np.column_stack([good, bad, bad_copy, other])
    L, L_dev, Y, Y_dev = L_all[:n], L_all[n:], y[:n], y[n:]
    unsup = ss.StructuredLabelModel(space, seed=0).fit(L)
    dev = ss.StructuredLabelModel(space, seed=0).fit(L, L_dev=L_dev, Y_dev=Y_dev)
    acc = lambda m: (m.predict(L, tie_break_policy="random") == Y).mean()  # noqa: E731
    best_lf = max((L[:, a] == Y).mean() for a in range(4))
    assert acc(dev) >= best_lf - 0.01
    assert acc(dev) >= acc(unsup) - 0.005


def test_declared_copy_counts_once():
    rng = np.random.default_rng(7)
    space = ss.Discrete(3)
    h = np.full((4, 3), 1 / 3)
    table = vote_table(space, [0.9, 0.6, 1.1, 0.7], 2, np.zeros(4), h)
    L, _ = sample(space, np.array([0.5, 0.3, 0.2]), table, 8000, rng)
    with_copy = np.column_stack([L, L[:, 0]])
    kw = dict(
        noise_power=2,
        outliers=False,
        shrinkage=0.0,
        seed=0,
        label_dependent=False,
        abstain_dependent=False,
    )
    ref = ss.StructuredLabelModel(space, **kw).fit(L)
    dep = ss.StructuredLabelModel(space, **kw).fit(with_copy, dependencies=[(4, 0)])
    np.testing.assert_allclose(dep.vote_weights_, [0.5, 1, 1, 1, 0.5])
    assert dep.dependencies_ == [(0, 4)]
    # the copy and its original, at half weight each, are the original once
    np.testing.assert_allclose(
        dep.predict_proba(with_copy[:500]), ref.predict_proba(L[:500]), atol=1e-3
    )
    naive = ss.StructuredLabelModel(space, **kw).fit(with_copy, dependencies=[])
    gap = np.abs(naive.predict_proba(with_copy[:500]) - ref.predict_proba(L[:500]))
    assert gap.max() > 0.05


def test_dependencies_that_leave_too_few_groups_warn():
    rng = np.random.default_rng(8)
    L = rng.integers(0, 3, size=(300, 3))
    with pytest.warns(IdentifiabilityWarning, match="at least 3 are needed"):
        ss.StructuredLabelModel(ss.Discrete(3), seed=0).fit(L, dependencies=[(0, 1)])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(dependencies=[(0, 0)]), "with itself"),
        (dict(dependencies=[(0, 7)]), "outside"),
        (dict(dependencies=[0, 1]), "pairs of LF indices"),
        (dict(dependencies=[(0.5, 1)]), "integer"),
        (dict(L_dev=np.zeros((3, 3), int)), "L_dev needs Y_dev"),
        (dict(L_dev=np.zeros((3, 4), int), Y_dev=[0, 1, 2]), "L_dev"),
        (dict(L_dev=np.zeros((3, 3), int), Y_dev=[0, 1]), "one label per row"),
    ],
)
def test_bad_fit_arguments(kwargs, match):
    L = np.random.default_rng(0).integers(0, 3, size=(50, 3))
    with pytest.raises(ValueError, match=match):
        ss.StructuredLabelModel(ss.Discrete(3), seed=0).fit(L, **kwargs)


@pytest.mark.parametrize(
    "kwargs", [dict(noise_power=3), dict(outliers="yes"), dict(shrinkage=1.5)]
)
def test_bad_family_parameters(kwargs):
    L = np.random.default_rng(0).integers(0, 3, size=(50, 3))
    with pytest.raises(ValueError):
        ss.StructuredLabelModel(ss.Discrete(3), **kwargs).fit(L)


def test_dev_labels_outside_a_given_support_are_refused():
    L = np.random.default_rng(0).integers(0, 24, size=(50, 3))
    lm = ss.StructuredLabelModel(S4, prior_support=np.array([0, 1]))
    with pytest.raises(ValueError, match="outside prior_support"):
        lm.fit(L, L_dev=L[:5], Y_dev=[0, 1, 2, 0, 1])


def test_warning_free_default_fit_on_clean_data():
    rng = np.random.default_rng(9)
    h = np.full((3, 24), 1 / 24)
    L, _ = sample(
        S4, two_centers(), vote_table(S4, [1.5, 1.0, 2.0], 2, np.zeros(3), h), 3000, rng
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lm = ss.StructuredLabelModel(S4, seed=0).fit(L)
    assert np.isfinite(lm.predict_proba(L)).all()


def test_conditional_probs_and_noise_matrix_follow_the_fitted_family():
    rng = np.random.default_rng(11)
    space = ss.Discrete(3)
    h = np.array([[0.6, 0.2, 0.2]] * 3)
    table = vote_table(space, [1.2, 0.8, 1.0], 1, [0.3, 0.1, 0.2], h)
    L, _ = sample(space, np.array([0.5, 0.3, 0.2]), table, 6000, rng)
    lm = ss.StructuredLabelModel(
        space, noise_power=1, outliers=True, label_dependent=False, seed=0
    ).fit(L)
    fitted = vote_table(
        space, lm.theta_, lm.noise_power_, lm.outlier_rate_, lm.outlier_dist_
    )
    np.testing.assert_allclose(np.exp(lm.log_conditional_probs()), fitted, rtol=1e-9)
    cond = lm.get_conditional_probs()
    np.testing.assert_allclose(cond.sum(axis=1), 1.0)
    # Q by enumeration of every vote pattern and by draws from the same tables agree
    exact = lm.noise_matrix(method="exact", rule="map", min_prior=0.0)
    draws = lm.noise_matrix(method="monte_carlo", rule="map", min_prior=0.0, seed=0)
    assert np.abs(exact.Q - draws.Q).max() < 5 * draws.std_error.max() + 1e-3
    # ... and the exact Q is brute force over the documented model
    patterns = np.array(list(itertools.product(range(3), repeat=3)))
    Q = np.zeros((3, 3))
    for row in patterns:
        lik = np.prod([fitted[a, :, v] for a, v in enumerate(row)], axis=0)  # (y,)
        z = np.argmax(lm.prior_ * lik)
        Q[:, z] += lik
    np.testing.assert_allclose(exact.Q, Q, atol=1e-9)


def test_min_distance_decision_is_brute_force_bayes():
    # A 3-branch tree: the Bayes answer for mean distance may be an inner node.
    import networkx as nx

    tree = nx.Graph([("r", "a"), ("a", "a1"), ("a", "a2"), ("r", "b"), ("b", "b1")])
    space = ss.GraphSpace(tree)
    leaves = np.array([space.index(x) for x in ("a1", "a2", "b1")])
    rng = np.random.default_rng(12)
    L = rng.choice(leaves, size=(400, 3))
    lm = ss.StructuredLabelModel(space, prior_support=leaves, seed=0).fit(L)
    P = lm.predict_proba(L)
    D = space.distance_matrix
    for decision, cost in (("distance", D), ("sq_distance", D**2)):
        expected = np.array(
            [np.argmin([p @ cost[:, z] for z in range(len(space))]) for p in P]
        )
        np.testing.assert_array_equal(lm.predict(L, decision=decision), expected)
    inner = lm.predict(L, decision="distance")
    assert not np.isin(inner, leaves).all()  # split posteriors retreat to a's node
    with pytest.raises(ValueError, match="decision must be one of"):
        lm.predict(L, decision="median")


@pytest.mark.parametrize("estimator", ["tensor", "uws"])
def test_moment_estimators_skip_declared_pairs(estimator):
    # LF 4 copies LF 0: their pair looks noiseless. Declared, the moment estimators
    # use only independent triplets: LF 0's E[d^2] is what they give without the
    # copy (the truth, for the consistent tensor estimator).
    rng = np.random.default_rng(13)
    h = np.full((4, 24), 1 / 24)
    table = vote_table(S4, [0.6, 0.8, 1.0, 0.7], 2, np.zeros(4), h)
    L, _ = sample(S4, two_centers(), table, 30000, rng)
    with_copy = np.column_stack([L, L[:, 0]])
    truth = np.einsum("y,ayv,yv->a", two_centers(), table, S4.squared_distance_matrix)
    kw = dict(estimator=estimator, seed=0)
    if estimator == "uws":
        kw["prior_support"] = np.array([0, 23])
    dep = ss.StructuredLabelModel(S4, **kw).fit(with_copy, dependencies=[(0, 4)])
    naive = ss.StructuredLabelModel(S4, **kw).fit(with_copy)
    alone = ss.StructuredLabelModel(S4, **kw).fit(L)
    np.testing.assert_allclose(
        dep.expected_sq_dist_[:4], alone.expected_sq_dist_, atol=0.03
    )
    assert abs(naive.expected_sq_dist_[0] - alone.expected_sq_dist_[0]) > 0.3
    if estimator == "tensor":
        np.testing.assert_allclose(dep.expected_sq_dist_[:4], truth, rtol=0.05)


def test_outlier_family_em_step_matches_its_definition():
    # The robust family's E- and M-step (computed on the distinct votes each LF
    # cast) against the mixture written out per pattern and label: P(v | y) =
    # (1 - eps_a) exp(-theta_a d^p(v, y)) / Z_a(y) + eps_a h_a(v), with h_a the LF's
    # own vote distribution. Repeated rows (counts > 1) and an LF that never votes.
    from snorkel_structured.estimators._em_core import _EPS_MAX, _EPS_MIN, _Problem
    from snorkel_structured.estimators._noise_kernel import _SqDists
    from snorkel_structured.estimators._stats import VoteStats

    space = ss.Permutations(5)
    rng = np.random.default_rng(4)
    distinct = rng.integers(-1, 120, size=(25, 5))
    distinct[:, 4] = -1
    L = distinct[rng.integers(0, 25, size=70)]
    stats = VoteStats.from_label_matrix(L, n_labels=120)
    P, c = np.asarray(stats.patterns), np.asarray(stats.counts, dtype=float)
    T = np.arange(0, 120, 3)
    theta = rng.uniform(0.2, 1.5, size=5)
    eps = np.array([0.05, 0.2, 0.01, 0.4, 0.1])
    w = rng.dirichlet(np.ones(T.size))
    own = np.array(
        [np.bincount(P[:, a][P[:, a] >= 0], c[P[:, a] >= 0], 120) for a in range(5)]
    )
    own = own / np.maximum(own.sum(axis=1, keepdims=True), 1e-300)
    # an outlier distribution given from elsewhere, without one vote LF 0 cast here
    elsewhere = own.copy()
    elsewhere[0, P[P[:, 0] >= 0, 0][0]] = 0.0
    elsewhere[0] /= elsewhere[0].sum()
    for power, h in ((1.0, own), (2.0, own), (2.0, elsewhere)):
        dp = np.sqrt(space.squared_distance_matrix) ** power  # (r, r)
        # the definition, pattern by pattern
        Pt = np.exp(-theta[:, None, None] * dp[None, :, T])  # (m, r, k)
        Pt /= Pt.sum(axis=1, keepdims=True)
        lik = np.tile(w, (P.shape[0], 1))
        rho = np.zeros((5,) + lik.shape)  # the noise model's share of each vote
        for i, a in zip(*np.nonzero(P >= 0), strict=True):
            mix = (1 - eps[a]) * Pt[a, P[i, a]] + eps[a] * h[a, P[i, a]]
            lik[i] *= mix
            rho[a, i] = (1 - eps[a]) * Pt[a, P[i, a]] / mix
        R_want = lik / lik.sum(axis=1, keepdims=True)
        ll_want = c @ np.log(lik.sum(axis=1))
        cR = c[:, None] * R_want
        N_want = np.einsum("auk,uk->ak", rho, cR)
        d_votes = np.where((P >= 0).T[:, :, None], dp[np.maximum(P, 0).T][:, :, T], 0)
        num_want = np.einsum("auk,uk,auk->ak", rho, cR, d_votes)
        voted_mass = ((P >= 0) * c[:, None]).sum(axis=0)
        eps_want = np.clip(
            (voted_mass - N_want.sum(axis=1)) / np.maximum(voted_mass, 1e-300),
            _EPS_MIN,
            _EPS_MAX,
        )

        with np.errstate(divide="ignore"):
            log_h = None if h is own else np.log(h)
        sq = _SqDists(space.squared_distance_matrix, power)
        prob = _Problem(stats, sq, log_h=log_h)
        R, ll = prob.e_step(np.log(w), theta, T, None, eps)
        np.testing.assert_allclose(R, R_want, rtol=1e-10, atol=1e-14)
        assert ll - prob.abstain_loglik == pytest.approx(ll_want, rel=1e-12)
        N, num, new_eps = prob.vote_moments(R, T, theta, eps)
        np.testing.assert_allclose(N, N_want, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(num, num_want, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(new_eps, eps_want, rtol=1e-10, atol=1e-15)
        assert N[4].sum() == 0 and new_eps[4] == _EPS_MIN  # never voted


@pytest.mark.parametrize(
    "fixed, attribute, value",
    [
        ({"noise_power": 1}, "noise_power_", 1.0),
        ({"outliers": True}, "outliers", True),
        ({"noise_power": 1, "outliers": False}, "noise_power_", 1.0),
    ],
)
def test_a_fixed_family_option_is_kept(fixed, attribute, value):
    # Data from the paper's family: left free, the choice would be p = 2 without
    # outliers; an option the user fixed must hold whatever the data say.
    data = ss.synthetic.make_ranking_data(3000, seed=0)
    lm = ss.StructuredLabelModel(data.space, seed=0, **fixed).fit(
        data.L, progress_bar=False
    )
    got = (
        getattr(lm, attribute)
        if attribute.endswith("_")
        else lm.noise_model_[attribute]
    )
    assert got == value


def test_outlier_gain_brackets_each_rates_brute_force_gain():
    # Written from _outlier_gain's definition: each LF's rate alone at its best, the
    # other parameters held, summed over LFs, with the grid's factor 1.5 on top. The
    # likelihoods here come from vote_table (the documented mixture), not from EM.
    from snorkel_structured.estimators import VoteStats
    from snorkel_structured.estimators._em_core import EMFit, _Problem
    from snorkel_structured.estimators._noise_family import _outlier_gain
    from snorkel_structured.estimators._noise_kernel import _SqDists

    rng = np.random.default_rng(3)
    theta = np.array([1.2, 0.9, 1.5])
    L, _ = sample(
        S4,
        two_centers(),
        vote_table(S4, theta, 2, [0.0, 0.2, 0.05], np.full((3, 24), 1 / 24)),
        3000,
        rng,
    )
    h = np.stack([np.bincount(L[:, a], minlength=24) / len(L) for a in range(3)])
    w = two_centers()

    def loglik(eps):
        P = vote_table(S4, theta, 2, eps, h)  # (m, y, v)
        lik = w[None, :] * np.prod([P[a][:, L[:, a]].T for a in range(3)], axis=0)
        return np.log(lik.sum(axis=1)).sum()

    base = loglik(np.zeros(3))
    grid = np.linspace(0.0, 0.999, 2000)
    brute = sum(max(loglik(np.eye(3)[a] * e) - base for e in grid) for a in range(3))
    prob = _Problem(VoteStats.from_label_matrix(L, n_labels=24), _SqDists(S4, 2.0))
    fit = EMFit(w, theta, None, base, 0, True)
    est = _outlier_gain(prob, fit, np.arange(24))
    assert brute > 10.0  # the 20% outlier LF gains: the bracket is not about zeros
    assert brute - 1e-6 <= est <= 1.5 * brute + 1e-6


def test_outlier_family_not_fitted_when_the_rates_cannot_pay(monkeypatch):
    # The paper's model: the screen skips the outlier family's EM fit, and the fit is
    # the one made with the screen off (the family would not have been chosen).
    from snorkel_structured.estimators import _noise_family

    data = ss.synthetic.make_ranking_data(10000, seed=0)
    fits = []
    run_em = _noise_family._run_em

    def counting(prob, T, w, theta, **kw):
        fits.append(kw.get("eps") is not None)
        return run_em(prob, T, w, theta, **kw)

    monkeypatch.setattr(_noise_family, "_run_em", counting)
    screened = ss.StructuredLabelModel(data.space, seed=0).fit(data.L)
    assert not any(fits)
    monkeypatch.setattr(_noise_family, "_OUTLIER_SCREEN", 0.0)
    full = ss.StructuredLabelModel(data.space, seed=0).fit(data.L)
    assert any(fits)
    assert screened.noise_model_ == full.noise_model_
    np.testing.assert_array_equal(screened.theta_, full.theta_)
    np.testing.assert_array_equal(
        screened.predict_proba(data.L), full.predict_proba(data.L)
    )
