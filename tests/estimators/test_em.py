"""EM maximum likelihood over vote patterns (snorkel_structured/estimators/em.py)."""

import warnings

import numpy as np
import pytest

import snorkel_structured as ss
from snorkel_structured.estimators import VoteStats
from snorkel_structured.estimators.em import em_refine, mle_estimate


def _stats(data):
    return VoteStats.from_label_matrix(data.L, n_labels=len(data.space))


def test_recovers_paper_setup():
    data = ss.synthetic.make_ranking_data(20000, seed=3)
    est = mle_estimate(
        _stats(data), data.space.squared_distance_matrix, n_components=2, seed=0
    )
    assert set(est.support.tolist()) == set(data.support.tolist())
    np.testing.assert_allclose(est.expected_sq_dist, data.expected_sq_dist, atol=0.04)
    np.testing.assert_allclose(
        est.prior[data.support], data.prior[data.support], atol=0.02
    )
    assert est.converged


def test_pure_noise_lfs_find_support_without_tensor():
    data = ss.synthetic.make_ranking_data(1000, theta=[0.0, 0.0, 1.0], seed=4)
    est = mle_estimate(
        _stats(data),
        data.space.squared_distance_matrix,
        n_components=2,
        init="search",
        seed=0,
    )
    assert set(est.support.tolist()) == set(data.support.tolist())
    assert est.theta[:2].max() < 0.05 and abs(est.theta[2] - 1.0) < 0.15


def test_label_dependent_theta_shape_and_recovery():
    space = ss.Discrete(3)
    theta = np.array(
        [[2.0, 1.0, 0.5], [1.5, 1.5, 1.5], [0.8, 2.5, 1.2], [1.0, 1.0, 2.0]]
    )
    data = ss.synthetic.make_label_matrix(
        40000, space=space, theta=theta, prior=[0.3, 0.3, 0.4], seed=0
    )
    est = mle_estimate(
        _stats(data),
        space.squared_distance_matrix,
        support=np.arange(3),
        label_dependent=True,
        seed=0,
    )
    assert est.theta.shape == (4, 3)
    np.testing.assert_allclose(est.theta, theta, atol=0.15)


def test_fixed_prior_is_kept():
    data = ss.synthetic.make_ranking_data(5000, seed=1)
    est = mle_estimate(
        _stats(data), data.space.squared_distance_matrix, prior=data.prior, seed=0
    )
    np.testing.assert_array_equal(est.prior, data.prior)


def test_em_refine_fixed_theta_and_max_iter_warning():
    data = ss.synthetic.make_ranking_data(3000, seed=2)
    S = data.space.squared_distance_matrix
    est = em_refine(
        _stats(data), S, theta=data.theta, prior=np.full(24, 1 / 24), fixed_theta=True
    )
    np.testing.assert_array_equal(est.theta, data.theta)
    assert est.prior[data.support].sum() > 0.9
    with pytest.warns(ss.ConvergenceWarning, match="max_iter=1"):
        em_refine(
            _stats(data), S, theta=np.ones(3), prior=np.full(24, 1 / 24), max_iter=1
        )


def test_seed_gives_identical_estimates():
    data = ss.synthetic.make_ranking_data(2000, theta=[0.0, 0.0, 1.0], seed=5)
    a = mle_estimate(
        _stats(data), data.space.squared_distance_matrix, n_components=2, seed=7
    )
    b = mle_estimate(
        _stats(data), data.space.squared_distance_matrix, n_components=2, seed=7
    )
    np.testing.assert_array_equal(a.theta, b.theta)
    np.testing.assert_array_equal(a.prior, b.prior)


def test_constant_lf_at_theta_bound_is_flagged():
    # An LF that always votes one label is "never wrong" if every row is that label:
    # EM drives its theta to the cap, which must be reported, not silently used.
    from snorkel_structured.synthetic import make_ranking_data

    data = make_ranking_data(5000, theta=(0.3, 0.3, 0.3), seed=0)
    L = data.L.copy()
    L[:, 2] = data.support[0]
    with pytest.warns(ss.IdentifiabilityWarning, match=r"LF\(s\) \[2\] reached theta"):
        ss.StructuredLabelModel(
            data.space, estimator="mle", seed=0, prior_support="search"
        ).fit(L, progress_bar=False)


def test_free_support_size_is_chosen_by_bic_not_raw_likelihood():
    # theta = [0, 0, 1]: restarts that grow spurious labels must not win on likelihood.
    from snorkel_structured.synthetic import make_ranking_data

    sizes = []
    for seed in (1, 3, 6):
        data = make_ranking_data(1000, theta=(0.0, 0.0, 1.0), seed=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lm = ss.StructuredLabelModel(
                data.space, estimator="mle", seed=seed, prior_support="search"
            ).fit(data.L, progress_bar=False)
        assert set(data.support) <= set(lm.support_)
        sizes.append(lm.support_.size)
    assert max(sizes) <= 3


def _class_votes(n, accuracy, prior, abstain, seed):
    """Dawid-Skene votes: each LF right with its accuracy, else a uniform other class."""
    rng = np.random.default_rng(seed)
    k, m = len(prior), len(accuracy)
    Y = rng.choice(k, size=n, p=prior)
    wrong = (Y[:, None] + rng.integers(1, k, size=(n, m))) % k
    L = np.where(rng.random((n, m)) < accuracy, Y[:, None], wrong)
    L[rng.random((n, m)) < abstain] = -1
    return L, Y


def test_choices_on_a_sample_then_one_fit_on_all_rows(monkeypatch):
    from snorkel_structured.estimators import em
    from snorkel_structured.estimators._noise_family import SHRINK_GRID

    accuracy = np.array([0.9, 0.85, 0.8, 0.75, 0.7, 0.65, 0.6, 0.7, 0.8, 0.9])
    L, _ = _class_votes(40_000, accuracy, [0.5, 0.3, 0.2], 0.2, seed=1)
    stats = VoteStats.from_label_matrix(L, n_labels=3)
    assert stats.n_patterns > em.CHOICE_MAX_PATTERNS
    assert stats.n_samples > em.CHOICE_ROWS
    kw = dict(
        plain_classes=True,
        label_dependent="auto",
        abstain_dependent="auto",
        outliers=(False, True),
        shrinkages=SHRINK_GRID,
        seed=0,
    )
    S = ss.Discrete(3).squared_distance_matrix
    sampled = mle_estimate(stats, S, **kw)
    monkeypatch.setattr(em, "CHOICE_MAX_PATTERNS", stats.n_patterns)
    whole = mle_estimate(stats, S, **kw)
    keys = ("prior", "theta", "abstain", "power", "outliers", "shrinkage")
    assert {k: sampled.noise_model[k] for k in keys} == {
        k: whole.noise_model[k] for k in keys
    }
    # the same model's maximum likelihood on all rows, from two different starts
    np.testing.assert_allclose(sampled.prior, whole.prior, atol=1e-4)
    np.testing.assert_allclose(sampled.theta, whole.theta, atol=2e-3)
    assert sampled.log_likelihood == pytest.approx(whole.log_likelihood, abs=0.05)
    # ... and it is the truth's: one accuracy per LF, abstains independent of Y,
    # P(right | Y) = e^theta / (e^theta + k - 1)
    assert (sampled.noise_model["theta"], sampled.noise_model["abstain"]) == (
        "lf",
        False,
    )
    right = np.exp(sampled.theta) / (np.exp(sampled.theta) + 2)
    np.testing.assert_allclose(right, accuracy, atol=0.02)


def test_a_row_weight_reads_as_that_many_copies_of_each_row():
    from snorkel_structured.estimators._em_core import _Problem
    from snorkel_structured.estimators._noise_kernel import _SqDists

    L, _ = _class_votes(500, np.full(4, 0.7), [0.6, 0.4], 0.3, seed=2)
    stats = VoteStats.from_label_matrix(L, n_labels=2)
    copies = VoteStats(2, stats.patterns.copy(), stats.counts * 3.0)
    sq = _SqDists(ss.Discrete(2).squared_distance_matrix)
    weighted, tripled = _Problem(stats, sq, row_weight=3.0), _Problem(copies, sq)
    T, log_w, theta = np.arange(2), np.log([0.6, 0.4]), np.array([1.0, 0.5, 2.0, 1.5])
    assert weighted.n == tripled.n == 3 * stats.n_samples
    assert weighted.loglik(log_w, theta, T) == pytest.approx(
        tripled.loglik(log_w, theta, T), rel=1e-12
    )
    assert weighted.conditional_loglik(log_w, theta, T) == pytest.approx(
        tripled.conditional_loglik(log_w, theta, T), rel=1e-12
    )


def test_an_e_step_after_loglik_at_the_same_parameters_is_handed_over_once():
    # loglik keeps its E-step for the next e_step at the same parameters (EM's
    # closing loglik, then the caller's E-step): the same values as a fresh
    # problem's, and a caller that writes into the handed responsibilities does not
    # change what a later E-step returns.
    from snorkel_structured.estimators._em_core import _Problem
    from snorkel_structured.estimators._noise_kernel import _SqDists

    L, _ = _class_votes(800, np.full(5, 0.7), [0.5, 0.3, 0.2], 0.3, seed=3)
    stats = VoteStats.from_label_matrix(L, n_labels=3)
    sq = _SqDists(ss.Discrete(3).squared_distance_matrix)
    T, log_w = np.arange(3), np.log([0.5, 0.3, 0.2])
    theta = np.array([1.0, 0.5, 2.0, 1.5, 0.8])
    alpha = np.full((5, 3), 0.3)
    prob, fresh = _Problem(stats, sq), _Problem(stats, sq)
    R_ref, ll_ref = fresh.e_step(log_w, theta, T, alpha)
    assert prob.loglik(log_w, theta, T, alpha) == ll_ref
    R, ll = prob.e_step(log_w, theta, T, alpha)
    np.testing.assert_array_equal(R, R_ref)
    assert ll == ll_ref
    R[:] = -1.0  # the caller owns it now
    R2, ll2 = prob.e_step(log_w, theta, T, alpha)
    np.testing.assert_array_equal(R2, R_ref)
    assert ll2 == ll_ref
    # other parameters are never served from it
    prob.loglik(log_w, theta, T, alpha)
    R3, _ = prob.e_step(log_w, theta * 2.0, T, alpha)
    np.testing.assert_array_equal(R3, fresh.e_step(log_w, theta * 2.0, T, alpha)[0])


def test_choices_on_a_sample_weigh_as_all_rows():
    # Snorkel's generator draws class-dependent abstain rates. With 6 classes the
    # abstain-dependent variant costs 50 parameters: on 1e5 rows BIC takes it, on the
    # 10,000 sampled rows read as 10,000 it did not (-0.0008 accuracy).
    from snorkel.synthetic.synthetic_data import generate_simple_label_matrix

    state = np.random.get_state()  # noqa: NPY002 - Snorkel's generator
    try:
        np.random.seed(0)  # noqa: NPY002 - its only source of randomness
        _, Y, L = generate_simple_label_matrix(100_000, 10, 6)
    finally:
        np.random.set_state(state)  # noqa: NPY002
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lm = ss.StructuredLabelModel(ss.Discrete(6), confusion=False, seed=0).fit(
            L, progress_bar=False
        )
    assert lm.stats_.n_patterns > 5_000  # the choices were made on a sample
    assert lm.noise_model_["abstain"] and lm.noise_model_["theta"] == "label"
    assert np.mean(lm.predict(L) == Y) > 0.99


@pytest.mark.parametrize("power", [1.0, 2.0])
def test_each_labels_distinct_distances_and_multiplicities(power):
    # The noise model's normalizer depends on a label's row of d^p only through its
    # distinct values and how often each occurs: checked against counting the row.
    from snorkel_structured.estimators._noise_kernel import _SqDists

    space = ss.Permutations(4)
    S = space.squared_distance_matrix
    sq = _SqDists(space, power)
    T = np.array([5, 0, 23, 5, 11])  # a repeated label, out of order
    vals, logmult = sq.dists(T)
    for j, t in enumerate(T):
        row = S[t] ** (power / 2.0)
        distinct = sorted(set(row.tolist()))
        used = np.isfinite(logmult[j])
        np.testing.assert_array_equal(vals[j, used], distinct)
        mult = [int(np.sum(row == v)) for v in distinct]
        np.testing.assert_allclose(np.exp(logmult[j, used]), mult, rtol=1e-12)
        # padding: value 0 with multiplicity 0
        assert (vals[j, ~used] == 0).all()
        assert np.exp(logmult[j]).sum() == pytest.approx(len(space))
    # a tree: labels at different depths have rows of different shapes
    parents = [-1, 0, 0, 1, 1, 3]
    A = np.zeros((6, 6))
    for child, parent in enumerate(parents[1:], start=1):
        A[child, parent] = A[parent, child] = 1.0
    tree = ss.GraphSpace(A)
    vals, logmult = _SqDists(tree, power).dists(np.arange(6))
    D = tree.squared_distance_matrix ** (power / 2.0)
    for t in range(6):
        used = np.isfinite(logmult[t])
        vs, ms = vals[t, used].tolist(), np.exp(logmult[t, used]).tolist()
        got = dict(zip(vs, ms, strict=True))
        want = {v: float(np.sum(D[t] == v)) for v in set(D[t].tolist())}
        assert got.keys() == want.keys()
        for v in want:
            assert got[v] == pytest.approx(want[v], rel=1e-12)


@pytest.mark.parametrize("space", ["permutations", "tree"])
def test_theta_solves_the_moment_equation_against_bisection(space):
    # The M-step's theta_t: sum_j w[t, j] E_theta[d^2 | row j] = target_t, with
    # E_theta[d^2 | row] = sum_v d_v^2 exp(-theta d_v^2) / sum_v exp(-theta d_v^2)
    # over the row's labels v; on [0, cap], clipped at an end when the target is
    # beyond it. Checked by bisection on that definition, from warm starts near
    # and far (and at the ends, where the plain Newton path hands over).
    from scipy.optimize import brentq

    from snorkel_structured.estimators._noise_kernel import _solve_theta, _SqDists

    if space == "permutations":
        S = ss.Permutations(4).squared_distance_matrix
    else:
        A = np.zeros((7, 7))
        for child, parent in enumerate([0, 0, 1, 1, 2, 2], start=1):
            A[child, parent] = A[parent, child] = 1.0
        S = ss.GraphSpace(A).squared_distance_matrix
    T = np.array([0, 3, 5])
    vals, logmult = _SqDists(S).dists(T)
    rng = np.random.default_rng(0)
    weights = rng.dirichlet(np.ones(T.size), size=6)
    cap = 40.0

    def mean(theta, w):
        e = np.exp(-theta * S[T])  # (k, r)
        return float(w @ ((e * S[T]).sum(1) / e.sum(1)))

    inside = np.array([0.05, 0.5, 1.5, 2.5, 0.9, 2.0])
    beyond = np.array([0.05, 0.5, 1.5, 2.5, 1e-9, 1e3])  # two past the ends
    for targets, theta0 in [
        (inside, np.full(6, 1.0)),
        (inside, np.array([2.0, 0.9, 0.3, 0.1, 0.8, 0.2])),  # near the roots
        (beyond, np.full(6, 1.0)),
        (beyond, np.array([0.0, cap, 3.0, 0.2, 7.0, 0.01])),
    ]:
        got = _solve_theta(vals, logmult, weights, targets, theta0, theta_max=cap)
        for t in range(6):
            lo, hi = mean(0.0, weights[t]), mean(cap, weights[t])
            if targets[t] >= lo:
                assert got[t] == 0.0
            elif targets[t] <= hi:
                assert got[t] == cap
            else:
                want = brentq(
                    lambda th, t=t, goal=targets: mean(th, weights[t]) - goal[t],
                    0.0,
                    cap,
                    xtol=1e-14,
                )
                assert got[t] == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("blocks", [True, False])
@pytest.mark.parametrize("theta_scale", [1.0, 800.0])
def test_pseudo_likelihood_against_its_definition(theta_scale, blocks):
    # sum over patterns (with two votes or more) and over the LFs that voted of
    # log P(lambda_a = v_a | the other LFs' outputs), where each LF's output has
    # probability (1 - alpha_b) P_theta(v_b | y) if it voted and alpha_b if not
    # (alpha_b its abstain rate), and y ~ w. theta_scale 800 makes 1 / P_a(y)
    # overflow for a wrong vote, so the leave-one-out sums take the other path.
    from scipy.special import logsumexp as lse

    from snorkel_structured.estimators._em_core import _Problem
    from snorkel_structured.estimators._noise_kernel import _SqDists

    space = ss.Permutations(3)
    S = space.squared_distance_matrix
    rng = np.random.default_rng(3)
    L = rng.integers(-1, 6, size=(400, 4))
    stats = VoteStats.from_label_matrix(L, n_labels=6)
    prob = _Problem(stats, _SqDists(S))
    # 4 LFs over 6 labels: EM reads the votes as two blocks of LFs, or LF by LF
    assert prob.blocks is not None
    if not blocks:
        prob.blocks = None
    T = np.arange(6)
    w = rng.dirichlet(np.ones(6))
    theta = np.array([0.4, 1.0, 0.2, 0.7]) * theta_scale
    cond, counts, used = prob.conditional_loglik_rows(np.log(w), theta, T)
    alpha = np.clip(prob.abstain_rate, 1e-6, 1 - 1e-6)
    logZ = np.array([[lse(-th * S[y]) for y in T] for th in theta])  # (m, k)
    for i, pattern in enumerate(stats.patterns):
        terms = np.array(
            [
                np.log1p(-alpha[b]) - theta[b] * S[T, v] - logZ[b]
                if v >= 0
                else np.full(6, np.log(alpha[b]))
                for b, v in enumerate(pattern)
            ]
        )  # (m, k): log of each LF's output given y
        voted = pattern >= 0
        want = 0.0
        if voted.sum() >= 2:
            full = lse(np.log(w) + terms.sum(0))
            for a in np.flatnonzero(voted):
                want += full - lse(np.log(w) + terms.sum(0) - terms[a])
        assert cond[i] == pytest.approx(want, rel=1e-9, abs=1e-9)
        assert used[i] == (voted.sum() >= 2)
    np.testing.assert_array_equal(counts, stats.counts)


@pytest.mark.parametrize("prior", [[0.5, 1e-9, 0.5], [1 / 3, 1 / 3, 1 / 3]])
def test_silenced_labels_match_the_posterior_mode_by_hand(prior):
    """A label is silenced when some row's voting LFs all give it and no row's
    posterior mode is it; the mode written from the model, P(v | y) =
    exp(-theta_a d^2(v, y)) / Z_a on three classes (d^2 = 1 between classes)."""
    from snorkel_structured.estimators._em_choices import silenced_labels
    from snorkel_structured.estimators._em_core import EMFit, _Problem
    from snorkel_structured.estimators._noise_kernel import _SqDists

    rng = np.random.default_rng(0)
    L = rng.integers(-1, 3, size=(300, 4))
    L[:20, :3] = -1
    L[:20, 3] = 1  # rows where LF 3 alone votes class 1
    stats = VoteStats.from_label_matrix(L, n_labels=3)
    prob = _Problem(stats, _SqDists(ss.Discrete(3).squared_distance_matrix))
    T, w = np.arange(3), np.asarray(prior)
    theta = np.array([1.5, 1.2, 0.9, 0.3])
    got = silenced_labels(prob, T, EMFit(w, theta, None, 0.0, 0, True))

    log_z = np.log1p(2.0 * np.exp(-theta))  # (m,)
    modes, unanimous = set(), set()
    for pattern in stats.patterns:
        score = np.log(w).copy()
        for a, v in enumerate(pattern):
            if v >= 0:
                score -= theta[a] * (T != v) + log_z[a]
        modes.add(int(np.argmax(score)))
        votes = set(pattern[pattern >= 0].tolist())
        if len(votes) == 1:
            unanimous |= votes
    assert got.tolist() == sorted(unanimous - modes)
    # a near-zero prior silences the class only LF 3 (the weakest) gives alone
    assert got.tolist() == ([1] if prior[1] < 1e-6 else [])


@pytest.mark.parametrize("confusion", [False, "auto"])
def test_free_prior_cannot_silence_a_voted_class_on_iris(confusion):
    """Iris, threshold LFs: only the sepal-width LF votes versicolor. A free prior
    explained those votes as noise (prior 0, never predicted, accuracy 0.60-0.62
    against 0.74-0.76 for majority vote); in the distance family the uniform prior
    takes over. Dawid and Skene's tables (the default on classes) keep a free prior
    and must still predict every class."""
    from sklearn.datasets import load_iris

    from snorkel_structured.aggregators import majority_vote

    X, y = load_iris(return_X_y=True)

    def votes(col, t, hi, lo):
        x = X[:, col]
        v = np.full(x.size, -1)
        v[x >= np.quantile(x, 1 - t)] = hi
        v[x <= np.quantile(x, t)] = lo
        return v

    L = np.stack(
        [votes(2, 0.33, 2, 0), votes(3, 0.33, 2, 0), votes(0, 0.25, 2, 0)]
        + [votes(1, 0.25, 0, 1)],
        axis=1,
    )
    for seed in (0, 2):
        idx = np.random.default_rng(seed).permutation(150)
        tr, te = idx[:100], idx[100:]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lm = ss.StructuredLabelModel(
                ss.Discrete(3), confusion=confusion, seed=0
            ).fit(L[tr], progress_bar=False)
        pred = lm.predict(L[te])
        assert set(pred[pred >= 0].tolist()) == {0, 1, 2}
        if confusion is False:
            assert lm.noise_model_["prior"] == "uniform"
        else:
            assert lm.noise_model_["theta"] == "confusion"
        acc = np.mean(pred == y[te])
        assert acc >= np.mean(majority_vote(L[te], 3) == y[te])


def test_blocked_vote_sums_against_their_definition():
    # Many LFs over few labels: the E- and M-steps read the votes as codes of blocks
    # of LFs. The log-likelihood, the responsibilities and the M-step's sums must be
    # those of the model's definition, computed here pattern by pattern.
    from scipy.special import logsumexp as lse

    from snorkel_structured.estimators._em_core import _Problem
    from snorkel_structured.estimators._noise_kernel import _SqDists

    rng = np.random.default_rng(5)
    m, r = 8, 3
    L = rng.integers(-1, r, size=(3000, m))
    stats = VoteStats.from_label_matrix(L, n_labels=r)
    S = ss.Discrete(r).squared_distance_matrix
    prob = _Problem(stats, _SqDists(S))
    assert prob.blocks is not None and len(prob.blocks.lfs) <= m // 2
    T = np.arange(r)
    w = rng.dirichlet(np.ones(r))
    theta = rng.uniform(0.2, 2.0, size=(m, r))  # one theta per LF and label
    alpha = rng.uniform(0.1, 0.5, size=(m, r))  # P(abstain | Y = j)
    R, ll = prob.e_step(np.log(w), theta, T, alpha)
    logZ = np.log(np.exp(-theta[:, :, None] * S[T][None]).sum(-1))  # (m, k)
    want_ll = 0.0
    for i, pattern in enumerate(stats.patterns):
        terms = np.array(
            [
                np.log1p(-alpha[a]) - theta[a] * S[T, v] - logZ[a]
                if v >= 0
                else np.log(alpha[a])
                for a, v in enumerate(pattern)
            ]
        ).sum(0) + np.log(w)
        want_ll += stats.counts[i] * lse(terms)
        np.testing.assert_allclose(R[i], np.exp(terms - lse(terms)), rtol=1e-10)
    assert ll == pytest.approx(want_ll, rel=1e-12)
    N, num, _ = prob.vote_moments(R, T)
    cR = stats.counts[:, None] * R
    for a in range(m):
        voted = stats.patterns[:, a] >= 0
        np.testing.assert_allclose(N[a], cR[voted].sum(0), rtol=1e-12)
        d2 = S[T][:, stats.patterns[voted, a]].T  # (voted patterns, k)
        np.testing.assert_allclose(num[a], (cR[voted] * d2).sum(0), rtol=1e-12)
