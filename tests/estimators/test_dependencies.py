"""Tests of the model-free LF dependency test against the truth that generated the data."""

import numpy as np
import pandas as pd
import pytest

import snorkel_structured as ss
from snorkel_structured.estimators import VoteStats
from snorkel_structured.estimators.dependencies import (
    ManifoldPairStats,
    dependent_pairs,
    detect_dependent_pairs,
    estimate_n_components,
    lf_dependency_test,
)
from snorkel_structured.synthetic import make_label_matrix
from snorkel_structured.synthetic_manifold import make_manifold_data


def _copy(L, a, b, rng, share=0.5):
    """LF b copies LF a's vote on a random ``share`` of the rows."""
    L = L.copy()
    mask = rng.random(L.shape[0]) < share
    L[mask, b] = L[mask, a]
    return L


def _centers(space, k, rng):
    prior = np.zeros(len(space))
    prior[rng.choice(len(space), k, replace=False)] = rng.dirichlet(np.full(k, 5.0))
    return prior


def _independent_votes(space, n, m, seed, *, k=3, theta=(0.8, 2.0), abstain=0.2):
    rng = np.random.default_rng(seed)
    prior = (
        rng.dirichlet(np.full(len(space), 5.0))
        if isinstance(space, ss.Discrete)
        else _centers(space, k, rng)
    )
    return make_label_matrix(
        n,
        space=space,
        theta=rng.uniform(*theta, m),
        prior=prior,
        abstain=abstain,
        seed=rng,
    ).L


# -- finite spaces ---------------------------------------------------------------------
@pytest.mark.parametrize("k", [2, 3])
def test_no_flag_on_independent_lfs_and_copy_pair_flagged(k):
    space = ss.Discrete(k)
    for seed in range(3):
        L = _independent_votes(space, 10_000, 6, seed, theta=(0.6, 1.8))
        res = lf_dependency_test(L, space=space)
        assert not res["dependent"].any()
        flagged = dependent_pairs(
            lf_dependency_test(_copy(L, 2, 4, np.random.default_rng(seed)), space=space)
        )
        assert flagged == [(2, 4)]


def test_two_copying_pairs_are_both_recovered_and_nothing_else():
    # m = 8 LFs over 24 rankings, two dependent pairs (1, 5) and (2, 6): the truth.
    space = ss.Permutations(4)
    rng = np.random.default_rng(7)
    L = _independent_votes(space, 10_000, 8, 7, k=2, theta=(0.4, 1.0))
    L = _copy(_copy(L, 1, 5, rng), 2, 6, rng)
    pairs, frame = detect_dependent_pairs(L, space)
    assert pairs == [(1, 5), (2, 6)]
    assert frame.loc[frame["dependent"], ["lf_a", "lf_b"]].values.tolist() == [
        [1, 5],
        [2, 6],
    ]
    # a flagged pair's observed agreement exceeds what the other LFs predict
    flagged = frame[frame["dependent"]]
    assert (flagged["observed"] > flagged["expected"] + 0.05).all()


def test_until_stops_the_search_at_the_first_pair_it_accepts(monkeypatch):
    # The same two copying pairs: stopped at the first flag, the search returns that
    # pair (the full search's first, in its order of flagging) and the first round's
    # statistics; a rule that accepts nothing changes nothing.
    from snorkel_structured.estimators.dependencies._finite import finite_test

    space = ss.Permutations(4)
    rng = np.random.default_rng(7)
    L = _independent_votes(space, 10_000, 8, 7, k=2, theta=(0.4, 1.0))
    L = _copy(_copy(L, 1, 5, rng), 2, 6, rng)
    stats = VoteStats.from_label_matrix(L, n_labels=len(space))

    def run(until):
        return finite_test(
            stats.patterns,
            stats.counts,
            None,
            0.05,
            2000,
            np.random.default_rng(0),
            until=until,
        )

    full, seen = run(None), []
    first = run(lambda obs, exp: seen.append((obs, exp)) or True)
    assert len(full[-1]) == 2 and first[-1] == full[-1][:1]
    t = int(
        np.flatnonzero((full[0] == first[-1][0][0]) & (full[1] == first[-1][0][1]))[0]
    )
    np.testing.assert_allclose(seen, [(first[3][t], first[4][t])])
    never = run(lambda obs, exp: False)
    assert never[-1] == full[-1]
    for got, want in zip(never[:-1], full[:-1], strict=True):
        np.testing.assert_array_equal(got, want)
    # the label model on Permutations stops there, and fits as after the full search
    from snorkel_structured.estimators import dependencies

    with pytest.warns(ss.IdentifiabilityWarning):
        lm = ss.StructuredLabelModel(space, seed=0).fit(L, progress_bar=False)
    assert len(lm.dependencies_) == 1 and lm.dependencies_[0] in [(1, 5), (2, 6)]
    search = dependencies.detect_dependent_pairs
    monkeypatch.setattr(
        dependencies,
        "detect_dependent_pairs",
        lambda *a, until=None, **k: search(*a, **k),
    )
    with pytest.warns(ss.IdentifiabilityWarning):
        whole = ss.StructuredLabelModel(space, seed=0).fit(L, progress_bar=False)
    assert whole.dependencies_ == [(1, 5), (2, 6)]
    np.testing.assert_array_equal(
        lm.predict(L[:2000], decision="distance"),
        whole.predict(L[:2000], decision="distance"),
    )
    np.testing.assert_allclose(lm.theta_, whole.theta_)


def test_statistics_and_label_matrix_give_the_same_answer():
    space = ss.Permutations(4)
    rng = np.random.default_rng(3)
    L = _copy(_independent_votes(space, 4000, 6, 3, k=2), 0, 3, rng)
    chunks = [VoteStats.from_label_matrix(c, len(space)) for c in np.array_split(L, 3)]
    from_stats = detect_dependent_pairs(sum(chunks), space, seed=1)
    from_votes = detect_dependent_pairs(L, space, seed=1)
    assert from_stats[0] == from_votes[0] == [(0, 3)]
    pd.testing.assert_frame_equal(from_stats[1], from_votes[1])


def test_false_alarm_rate_and_z_calibration_on_independent_lfs():
    # 40 datasets of conditionally independent LFs (the generating truth). The
    # family-wise false-alarm rate at alpha = 0.05 must stay near 5%: at most 5 of 40
    # pass with probability 0.986 at a true rate of 5% and 0.0006 at 25% (the old
    # Holm/z test's worst cells were 15-20%). The pooled z of the 400 pairs must be
    # standard normal: a standard error 20% off, or a bias of 0.25 se, fails.
    space = ss.Discrete(3)
    runs = 0
    z = []
    for seed in range(40):
        L = _independent_votes(space, 3000, 5, 100 + seed, theta=(0.8, 2.0))
        pairs, res = detect_dependent_pairs(L, space, seed=seed)
        runs += bool(pairs)
        z.append(res["z"].to_numpy())
    z = np.concatenate(z)
    assert runs <= 5
    assert abs(np.nanmean(z)) < 0.2
    assert 0.85 < np.nanstd(z) < 1.15


def test_false_alarm_rate_with_an_estimated_rank():
    # Permutations(4): the rank of the joint tables (two centers) is estimated from
    # the votes; same bound as above.
    space = ss.Permutations(4)
    runs = sum(
        bool(
            detect_dependent_pairs(
                _independent_votes(space, 4000, 6, seed, k=2, theta=(0.4, 1.0)),
                space,
                seed=seed,
            )[0]
        )
        for seed in range(40)
    )
    assert runs <= 5


def test_rank_estimate_recovers_the_number_of_centers_and_ignores_a_copy():
    for space, k, theta in [
        (ss.Permutations(4), 2, (0.4, 1.0)),
        (ss.Permutations(5), 3, (0.3, 1.0)),
    ]:
        L = _independent_votes(space, 5000, 7, 1, k=k, theta=theta)
        copied = _copy(L, 0, 1, np.random.default_rng(0))
        for votes in (L, copied):
            stats = VoteStats.from_label_matrix(votes, len(space))
            assert estimate_n_components(stats.patterns, stats.counts) == k


def test_fewer_than_four_lfs_returns_nothing():
    space = ss.Discrete(3)
    L = _independent_votes(space, 500, 3, 0)
    pairs, frame = detect_dependent_pairs(L, space)
    assert pairs == [] and frame.empty
    assert list(frame.columns) == list(
        lf_dependency_test(L[:, [0, 1, 2, 0]], space=space)
    )
    X = make_manifold_data(100, space=ss.Sphere(2), noise_scale=[0.1] * 3, seed=0).X
    assert detect_dependent_pairs(X, ss.Sphere(2))[0] == []


def test_seeded_runs_repeat():
    space = ss.Discrete(3)
    L = _copy(_independent_votes(space, 3000, 5, 2), 0, 1, np.random.default_rng(0))
    a = lf_dependency_test(L, space=space, seed=5)
    b = lf_dependency_test(L, space=space, seed=np.random.default_rng(5))
    pd.testing.assert_frame_equal(a, b)


def test_label_model_gives_the_rank():
    space = ss.Permutations(4)
    L = _independent_votes(space, 3000, 5, 4, k=2, theta=(0.4, 1.0))
    stats = VoteStats.from_label_matrix(L, len(space))
    model = type(
        "Fitted",
        (),
        {"theta_": np.ones(5), "support_": np.arange(2), "space": space, "n_lfs_": 5},
    )()
    via_model = lf_dependency_test(L, model, space=space, seed=0)
    via_rank = lf_dependency_test(L, space=space, n_components=2, seed=0)
    pd.testing.assert_frame_equal(via_model, via_rank)
    assert estimate_n_components(stats.patterns, stats.counts) == 2


# -- manifolds -------------------------------------------------------------------------
def test_manifold_residual_is_zero_in_expectation_for_euclidean():
    space = ss.Euclidean(2)
    d = make_manifold_data(
        200_000,
        space=space,
        noise_scale=[0.2, 0.5, 1.0, 0.3, 0.7],
        abstain=0.1,
        seed=0,
    )
    res = lf_dependency_test(d.X, space=space)
    # E d^2(a, b) = e_a + e_b exactly: the others' prediction is unbiased.
    assert np.allclose(res["observed"], res["expected"], rtol=0.01)
    assert np.all(np.abs(res["z"]) < 4.0)
    true = d.expected_sq_dist
    assert np.allclose(res["expected"], true[res.lf_a] + true[res.lf_b], rtol=0.02)


@pytest.mark.parametrize("space", [ss.Euclidean(3), ss.Sphere(2), ss.Hyperbolic(2)])
def test_manifold_copy_pair_flagged(space):
    d = make_manifold_data(
        10_000, space=space, noise_scale=[0.1, 0.2, 0.15, 0.3, 0.25], seed=3
    )
    assert not lf_dependency_test(d.X, space=space)["dependent"].any()
    X = d.X.copy()
    mask = np.random.default_rng(0).random(len(X)) < 0.5
    X[mask, 3] = X[mask, 1]
    assert dependent_pairs(lf_dependency_test(X, space=space)) == [(1, 3)]


def test_manifold_statistics_add_and_match_the_outputs():
    space = ss.Sphere(2)
    X = make_manifold_data(
        3000, space=space, noise_scale=[0.1, 0.2, 0.15, 0.3, 0.25], seed=1
    ).X
    whole = ManifoldPairStats.from_outputs(X, space)
    parts = sum(ManifoldPairStats.from_outputs(c, space) for c in np.array_split(X, 4))
    assert parts.n_samples == whole.n_samples == 3000
    np.testing.assert_allclose(parts.cross_gg, whole.cross_gg)
    a = detect_dependent_pairs(parts, space, seed=0)
    b = detect_dependent_pairs(X, space, seed=0)
    pd.testing.assert_frame_equal(a[1], b[1])


def test_manifold_false_alarm_rate_on_independent_lfs():
    # 40 sphere datasets with conditionally independent LFs: at most 5 flagged runs
    # (see the finite test for what the bound rules out).
    space = ss.Sphere(2)
    runs = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        X = make_manifold_data(
            3000,
            space=space,
            noise_scale=rng.uniform(0.02, 0.3, 6),
            abstain=0.1,
            seed=rng,
        ).X
        runs += bool(detect_dependent_pairs(X, space, seed=seed)[0])
    assert runs <= 5


@pytest.mark.parametrize("space", [ss.Discrete(4), ss.Sphere(2)])
def test_power_on_a_pair_copying_half_the_votes(space):
    # LF 1 copies LF 0's vote on a random half of the rows, n = 10,000, 6 LFs: that
    # pair is flagged first (the most significant) on every dataset. (Another pair
    # may follow with probability about alpha: the step-down controls that rate.)
    for seed in range(3):
        rng = np.random.default_rng(seed)
        if isinstance(space, ss.Sphere):
            L = make_manifold_data(
                10_000, space=space, noise_scale=rng.uniform(0.05, 0.3, 6), seed=rng
            ).X
        else:
            L = _independent_votes(space, 10_000, 6, seed)
        L = _copy(L, 0, 1, rng)
        _, frame = detect_dependent_pairs(L, space, seed=seed)
        assert dependent_pairs(frame)[:1] == [(0, 1)]


def test_sphere_lf_of_junk_votes_neither_disables_nor_fools_the_test():
    # Five LFs around the truth on S^2, two of them near-copies of one noisy source,
    # and a sixth of junk votes (uniform on the sphere, unrelated to Y): its mean cos
    # with every LF is 0 up to sampling noise. The copies are flagged on every seed
    # and no pair of the junk LF is. Before, a seed where all the junk LF's means
    # were <= 0 left every pair unjudged (2 of these 10 seeds: the copies missed),
    # and a tiny positive mean entered on the log scale with an exploding
    # delta-method term, so junk pairs came out "too close" (4 of 10).
    space = ss.Sphere(2)
    n = 3000
    for seed in range(10):
        rng = np.random.default_rng(seed)
        Y = rng.standard_normal((n, 3))
        Y /= np.linalg.norm(Y, axis=1, keepdims=True)

        def around(center, scale, rng=rng):
            x = center + scale * rng.standard_normal((n, 3))
            return x / np.linalg.norm(x, axis=1, keepdims=True)

        source = around(Y, 0.5)
        junk = around(np.zeros((n, 3)), 1.0)
        X = np.stack(
            [
                around(Y, 0.3),
                around(Y, 0.4),
                around(Y, 0.5),
                around(source, 0.05),
                around(source, 0.05),
                junk,
            ],
            axis=1,
        )
        pairs, frame = detect_dependent_pairs(X, space, seed=0)
        assert (3, 4) in pairs, seed
        assert not any(5 in p for p in pairs), seed
        # the junk LF's pairs are not judged (no estimable log); the copies are
        junk_rows = (frame["lf_a"] == 5) | (frame["lf_b"] == 5)
        assert frame.loc[junk_rows, "z"].isna().all()
        copies = (frame["lf_a"] == 3) & (frame["lf_b"] == 4)
        assert frame.loc[copies, "z"].item() > 10


# -- errors ----------------------------------------------------------------------------
def test_validation_errors():
    space = ss.Discrete(3)
    L = _independent_votes(space, 500, 4, 0)
    with pytest.raises(ValueError, match="at least 4 labeling functions"):
        lf_dependency_test(L[:, :3], space=space)
    three = type(
        "Fitted", (), {"theta_": np.ones(3), "support_": np.arange(3), "n_lfs_": 3}
    )()
    with pytest.raises(ValueError, match="fitted with 3 labeling functions"):
        lf_dependency_test(L, three, space=space)
    with pytest.raises(ValueError, match="label-model layer"):
        lf_dependency_test(L, space=space, method="model")
    with pytest.raises(ValueError, match="alpha"):
        lf_dependency_test(L, space=space, alpha=1.5)
    with pytest.raises(ValueError, match="method"):
        lf_dependency_test(L, space=space, method="magic")
    with pytest.raises(ValueError, match="space"):
        lf_dependency_test(L)
    with pytest.raises(ValueError, match="needs no label model"):
        lf_dependency_test(np.zeros((5, 4, 2)), three, space=ss.Euclidean(2))
    with pytest.raises(TypeError, match="Product"):
        lf_dependency_test(np.zeros((5, 4, 2)), space=object())
    with pytest.raises(ValueError, match="lacks columns"):
        dependent_pairs(pd.DataFrame({"lf_a": [0]}))
    with pytest.raises(ValueError, match="n_boot"):
        lf_dependency_test(L, space=space, n_boot=10, alpha=0.05)
    with pytest.raises(ValueError, match="lf_names has 2 names"):
        detect_dependent_pairs(L, space, lf_names=["a", "b"])
    with pytest.raises(ValueError, match="n_components"):
        detect_dependent_pairs(L, space, n_components=0)
    with pytest.raises(ValueError, match="over 3 labels but space has 4"):
        detect_dependent_pairs(VoteStats.from_label_matrix(L, 3), ss.Discrete(4))
    weighted = VoteStats(3, np.zeros((1, 4), dtype=np.int64), np.array([0.5]))
    with pytest.raises(ValueError, match="whole row counts"):
        detect_dependent_pairs(weighted, space)
    stats = ManifoldPairStats.from_outputs(np.zeros((5, 4, 3)), ss.Euclidean(3))
    with pytest.raises(ValueError, match="euclidean statistics"):
        detect_dependent_pairs(stats, ss.Sphere(2))
    with pytest.raises(ValueError, match="Cannot add"):
        stats + ManifoldPairStats.from_outputs(np.zeros((5, 5, 3)), ss.Euclidean(3))


# -- the finite statistic against its definition ---------------------------------------
def _statistic_by_definition(P, p, v1, v2, a, b, both_orientations):
    """Observed agreement mass of LFs a and b minus tr(C^-1 B^T A), averaged over the
    orientations (v1, v2) and (v2, v1), written from the docstring of
    ``_pair_statistic`` with a loop over the labels both LFs use."""
    agree = sum(p[u] for u in range(len(p)) if P[u, a] == P[u, b] != -1)
    shared = sorted(set(P[:, a]) & set(P[:, b]) - {-1})
    orientations = [(v1, v2), (v2, v1)] if both_orientations else [(v1, v2)]
    pred = 0.0
    for fa, fb in orientations:
        C = sum(p[u] * np.outer(fb[u], fa[u]) for u in range(len(p)))
        K = np.zeros_like(C)
        for label in shared:
            A = sum(p[u] * fa[u] for u in range(len(p)) if P[u, a] == label)
            B = sum(p[u] * fb[u] for u in range(len(p)) if P[u, b] == label)
            K += np.outer(B, A)
        pred += np.trace(np.linalg.solve(C, K)) / len(orientations)
    return agree - pred


@pytest.mark.parametrize("both_orientations", [True, False])
@pytest.mark.parametrize("n_labels", [3, 12])  # LFs' votes read densely / sparsely
def test_pair_statistic_and_its_influence_against_their_definitions(
    both_orientations, n_labels
):
    # The influence function of a functional T of the pattern frequencies p is
    # d/de T((1 - e) p + e delta_u) at e = 0: checked by central differences, with
    # alphabets that differ (a label only one LF uses) and abstains.
    from snorkel_structured.estimators.dependencies._finite import (
        _pair_statistic,
        _Votes,
    )

    rng = np.random.default_rng(0)
    u, kk = 40, 3
    P = np.stack(
        [
            rng.integers(-1, n_labels, u),
            rng.integers(-1, n_labels + 1, u),
            rng.integers(0, n_labels, u),
        ],
        axis=1,
    )
    p = rng.dirichlet(np.ones(u))
    v1, v2 = rng.normal(size=(u, kk)), rng.normal(size=(u, kk))
    votes = _Votes(P, np.ones(u))
    diff, influence = _pair_statistic(votes, v1, v2, 0, 1, p, both_orientations)
    assert diff == pytest.approx(
        _statistic_by_definition(P, p, v1, v2, 0, 1, both_orientations), abs=1e-12
    )
    eps = 1e-6
    for row in range(u):
        step = eps * (np.eye(u)[row] - p)
        up, down = (
            _statistic_by_definition(P, q, v1, v2, 0, 1, both_orientations)
            for q in (p + step, p - step)
        )
        assert influence[row] == pytest.approx((up - down) / (2 * eps), abs=1e-6)
    # its mean under p is zero, as an influence function's must be
    assert p @ influence == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("both_orientations", [True, False])
def test_second_moment_statistic_and_influence_against_their_definitions(
    both_orientations,
):
    # The small-alphabet path reads the statistic off the second moments M of the
    # stacked one-hot votes z, and its influence at a pattern as z^T G z - diff:
    # both against the definition (a loop over the shared labels) and central
    # differences of it. LF 1 has a label LF 0 never uses; abstains everywhere.
    from snorkel_structured.estimators.dependencies._finite_onehot import (
        OneHotFold,
        agreement_indicators,
        pair_quadratic_forms,
    )

    rng = np.random.default_rng(3)
    u, kk, n_labels = 60, 2, 3
    P = np.stack(
        [rng.integers(-1, n_labels + (c == 1), u) for c in range(5)], axis=1
    )  # a = 0, b = 1, halves O1 = {2, 3}, O2 = {4}
    vals = [np.unique(P[:, c]) for c in range(5)]
    codes = [np.searchsorted(vals[c], P[:, c]) for c in range(5)]
    starts = np.concatenate([[0], np.cumsum([v.size for v in vals])[:-1]])
    Z = np.hstack([np.eye(v.size)[code] for v, code in zip(vals, codes, strict=True)])
    cols = [starts[c] + np.arange(vals[c].size) for c in range(5)]
    F1, F2 = np.zeros((Z.shape[1], kk)), np.zeros((Z.shape[1], kk))
    F1[np.concatenate(cols[2:4])] = rng.normal(size=(cols[2].size + cols[3].size, kk))
    F2[cols[4]] = rng.normal(size=(cols[4].size, kk))
    shared = np.intersect1d(vals[0], vals[1])
    shared = shared[shared != -1]
    rows_a = cols[0][np.searchsorted(vals[0], shared)]
    rows_b = cols[1][np.searchsorted(vals[1], shared)]

    E = agreement_indicators(Z.shape[1], [rows_a], [rows_b])

    def statistic(q):
        M = Z.T @ (Z * q[:, None])
        diff, G = pair_quadratic_forms(M, F1[None], F2[None], E, both_orientations)
        return float(diff[0]), G[0]

    p = rng.dirichlet(np.ones(u))
    diff, G = statistic(p)
    v1, v2 = Z @ F1, Z @ F2
    assert diff == pytest.approx(
        _statistic_by_definition(P, p, v1, v2, 0, 1, both_orientations), abs=1e-12
    )
    influence = OneHotFold(codes, [v.size for v in vals]).quadratic_forms(G[None])[:, 0]
    influence = influence - diff
    eps = 1e-6
    for row in range(u):
        step = eps * (np.eye(u)[row] - p)
        up, down = (statistic(q)[0] for q in (p + step, p - step))
        assert influence[row] == pytest.approx((up - down) / (2 * eps), abs=1e-6)
    assert p @ influence == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize(
    "case", ["independent k=2", "copies k=3", "copies k=4", "sparse k=3"]
)
def test_second_moment_path_equals_the_per_pattern_path(case, monkeypatch):
    # Small alphabets take the second-moment path; the per-pattern path (every
    # space's) is the reference: the same flags, z and predictions to rounding,
    # through forward selection rounds that change the halves.
    from snorkel_structured.estimators.dependencies import _finite

    kind, k = case.split(" k=")
    k = int(k)
    space = ss.Discrete(k)
    rng = np.random.default_rng(k)
    L = _independent_votes(
        space, 4000, 8, seed=k, abstain=0.7 if kind == "sparse" else 0.2
    )
    if kind == "copies":
        L = _copy(_copy(L, 0, 1, rng), 5, 6, rng, share=0.4)
    calls = []
    form = _finite.pair_quadratic_forms
    monkeypatch.setattr(
        _finite, "pair_quadratic_forms", lambda *a: calls.append(1) or form(*a)
    )
    frames = {}
    for second_moments in (True, False):
        monkeypatch.setattr(_finite, "_SECOND_MOMENTS", second_moments)
        frames[second_moments] = detect_dependent_pairs(L, space, seed=0)
        assert bool(calls) == second_moments  # the path taken
        calls.clear()
    (flags, new), (flags_ref, ref) = frames[True], frames[False]
    assert flags == flags_ref
    if kind == "copies":
        assert {(0, 1), (5, 6)} <= set(flags)
    for column in ("z", "observed", "expected"):
        np.testing.assert_allclose(new[column], ref[column], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("shape", [(12, 20), (20, 12)])
def test_top_singular_triplets_match_the_svd(shape):
    # Top-k triplets read from eigh of the smaller Gram matrix: the same singular
    # values and subspaces as numpy's SVD, and M v_i = s_i u_i. Where the k-th
    # singular value falls below 1e-4 of the first, the SVD itself is returned.
    from snorkel_structured.estimators.dependencies._finite import _top_svd

    rng = np.random.default_rng(1)
    n = min(shape)
    left = np.linalg.qr(rng.normal(size=(shape[0], n)))[0]
    right = np.linalg.qr(rng.normal(size=(shape[1], n)))[0]
    for sv_true, k in [
        (np.geomspace(1.0, 1e-3, n), 5),
        (np.geomspace(1.0, 1e-9, n), 9),
    ]:
        M = left @ np.diag(sv_true) @ right.T
        U, sv, Vt = _top_svd(M, k)
        assert sv.size >= k and np.all(np.diff(sv) <= 0)
        np.testing.assert_allclose(sv[:k], sv_true[:k], rtol=1e-9)
        np.testing.assert_allclose(M @ Vt[:k].T, U[:, :k] * sv[:k], atol=1e-9)
        for got, true in ((U, left), (Vt.T, right)):  # the same k-dim subspace
            np.testing.assert_allclose(
                got[:, :k] @ got[:, :k].T, true[:, :k] @ true[:, :k].T, atol=1e-9
            )
        # the SVD's full spectrum where squaring would lose the k-th value
        assert sv.size == (n if sv_true[k - 1] < 1e-4 else k)
