"""End models at scale: low-rank kernels, GCV, truncated vectorized Frechet means,
streaming prediction (issue 15, items 1-3)."""

import warnings

import numpy as np
import pandas as pd
import pytest

import snorkel_structured as ss
from snorkel_structured.end_model._frechet import (
    frechet_means,
    truncate_weights,
    truncation_bound,
)
from snorkel_structured.end_model._kernels import (
    NU_GRID,
    exact_system,
    kernel_matrix,
    nystroem_system,
)
from snorkel_structured.synthetic import make_ranking_data

SPACE = ss.Permutations(3)


def _ranking(n, seed=0):
    """Features that reveal the label (three labels of S3), as in the paper's setup."""
    rng = np.random.default_rng(seed)
    y = rng.choice(np.array([0, 2, 5]), size=n)
    X = rng.normal(size=(n, 3)) + 1.5 * np.eye(6)[y][:, [0, 2, 5]]
    return X, y


# -- low rank == exact -----------------------------------------------------------------
@pytest.mark.parametrize("kernel", ["rbf", "linear"])
def test_low_rank_with_all_rows_as_landmarks_is_the_exact_solution(kernel):
    X, y = _ranking(80)
    Xt = np.random.default_rng(1).normal(size=(30, 3))
    kw = dict(kernel=kernel, gamma=0.3, nu=1e-2, candidates="all")
    exact = ss.KernelStructuredPredictor(SPACE, n_components=None, **kw).fit(X, y)
    low = ss.KernelStructuredPredictor(SPACE, n_components=500, **kw).fit(X, y)
    assert exact.n_components_ == 0 and low.n_components_ == 80
    np.testing.assert_allclose(
        low.decision_function(Xt), exact.decision_function(Xt), rtol=0, atol=1e-8
    )
    np.testing.assert_array_equal(low.predict(Xt), exact.predict(Xt))


def test_manifold_low_rank_with_all_rows_as_landmarks_is_the_exact_solution():
    sphere = ss.Sphere(2)
    rng = np.random.default_rng(0)
    F = rng.normal(size=(60, 2))
    Y = sphere.projection(np.c_[F, np.ones(60)])
    kw = dict(gamma=0.5, nu=1e-2, weight_tol=0.0)
    exact = ss.KernelManifoldRegressor(sphere, n_components=None, **kw).fit(F, Y)
    low = ss.KernelManifoldRegressor(sphere, n_components=60, **kw).fit(F, Y)
    Ft = rng.normal(size=(20, 2))
    np.testing.assert_allclose(low.predict(Ft), exact.predict(Ft), atol=1e-8)


def test_nystroem_kernel_is_the_exact_kernel_on_the_landmarks_span():
    # K~ = K_nZ K_ZZ^+ K_Zn: equal to K when Z holds every row; a PSD lower bound else
    rng = np.random.default_rng(2)
    X = rng.normal(size=(40, 3))
    K = kernel_matrix(X, X, "rbf", 0.4)
    system, N, Phi = nystroem_system(
        X, X[:15], np.zeros((40, 1)), "rbf", 0.4, keep_features=True
    )
    K_low = Phi @ Phi.T
    np.testing.assert_allclose(K_low[:15, :15], K[:15, :15], atol=1e-9)
    assert np.linalg.eigvalsh(K - K_low).min() > -1e-9


# -- noise-aware weights on the low-rank solution ------------------------------------------
def test_noise_aware_weights_give_the_exact_paths_predictions_by_enumeration():
    # Q by exact enumeration of the vote patterns (small S3 case); the low-rank path
    # with every row as a landmark predicts exactly as the exact path.
    data = make_ranking_data(
        150, n_items=3, theta=[0.5, 0.8, 1.2], center_probs=(0.3, 0.7), seed=4
    )
    W = ss.loss_weights(data.L, data.space, data.theta, data.prior, seed=0)
    assert W.attrs["method"] == "exact"
    rng = np.random.default_rng(4)
    X = rng.normal(size=(150, 6)) + 2.0 * (data.Y == data.support[0])[:, None]
    # a well-conditioned kernel: the Nystroem map drops eigenvalues below 1e-12 of
    # the largest, which moves scores by about sqrt(that) / (n nu)
    kw = dict(gamma=0.1, nu=1e-3, candidates="all")
    exact = ss.KernelStructuredPredictor(data.space, n_components=None, **kw).fit(X, W)
    low = ss.KernelStructuredPredictor(data.space, n_components=150, **kw).fit(X, W)
    Xt = rng.normal(size=(60, 6)) + 2.0 * rng.integers(0, 2, size=(60, 1))
    np.testing.assert_allclose(
        low.decision_function(Xt), exact.decision_function(Xt), atol=1e-8
    )
    np.testing.assert_array_equal(low.predict(Xt), exact.predict(Xt))


def test_low_rank_scores_are_linear_in_the_loss_weights():
    # With fewer landmarks than rows (a real approximation), fitting the weights frame
    # equals summing the fits of its columns one at a time: the loss is linear in the
    # weights, so Q^-1 rows act on the low-rank solution as on the exact one.
    data = make_ranking_data(120, n_items=3, theta=[0.5, 0.8, 1.2], seed=5)
    W = ss.loss_weights(data.L, data.space, data.theta, data.prior, seed=0)
    X = np.random.default_rng(5).normal(size=(120, 2))
    kw = dict(gamma=0.5, nu=1e-3, n_components=40, candidates="all")
    whole = ss.KernelStructuredPredictor(data.space, **kw).fit(X, W)
    total = 0.0
    for col in W.columns[1:]:
        part = W.copy()
        part[[c for c in W.columns[1:] if c != col]] = 0.0
        model = ss.KernelStructuredPredictor(data.space, **kw).fit(X, part)
        np.testing.assert_array_equal(model.X_fit_, whole.X_fit_)  # same landmarks
        total = total + model.decision_function(X)
    assert whole.n_components_ == 40
    np.testing.assert_allclose(whole.decision_function(X), total, atol=1e-9)


# -- GCV -----------------------------------------------------------------------------------
def _brute_gcv(K, Y, lam):
    n = K.shape[0]
    H = K @ np.linalg.solve(K + lam * np.eye(n), np.eye(n))
    R = Y - H @ Y
    return n * np.sum(R * R) / (n - np.trace(H)) ** 2


def test_gcv_criterion_equals_its_definition():
    rng = np.random.default_rng(3)
    X, W = rng.normal(size=(50, 2)), rng.normal(size=(50, 3))
    A = rng.normal(size=(3, 4))
    lams = np.array([1e-3, 0.1, 3.0])
    K = kernel_matrix(X, X, "rbf", 0.7)
    got = exact_system(K, W).gcv(lams, A)
    np.testing.assert_allclose(got, [_brute_gcv(K, W @ A, t) for t in lams], rtol=1e-8)
    # Nystroem: the same definition with the low-rank kernel Phi Phi^T
    system, _, Phi = nystroem_system(X, X[:20], W, "rbf", 0.7, keep_features=True)
    K_low = Phi @ Phi.T
    got = system.gcv(lams, A)
    np.testing.assert_allclose(
        got, [_brute_gcv(K_low, W @ A, t) for t in lams], rtol=1e-7
    )


def test_gcv_without_ridge_skips_zero_eigenvalues_without_warnings():
    # nu=0 meets an eigenvalue clipped to exactly 0 (round-off of a singular kernel):
    # 0 / 0 gave NaN and a RuntimeWarning. That direction is simply not fitted.
    rng = np.random.default_rng(0)
    X, W = rng.normal(size=(6, 2)), rng.normal(size=(6, 2))
    K = kernel_matrix(np.r_[X, X[:1]], np.r_[X, X[:1]], "rbf", 0.7)  # rank 6 of 7
    system = exact_system(K, np.r_[W, W[:1]])
    system.evals[np.argmin(system.evals)] = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = system.gcv(np.array([0.0, 1e-3]))
    assert np.isfinite(got).all()
    fitted = system.evals > 0
    resid = float((system.proj[~fitted] ** 2).sum())  # lam = 0: only unfitted parts
    np.testing.assert_allclose(got[0], 7 * resid / (7 - fitted.sum()) ** 2)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gcv_picks_little_ridge_for_noiseless_labels_and_much_for_pure_noise(seed):
    # Known answers: labels that are a function of X want (almost) no ridge; labels
    # independent of X want the fit shrunk to nothing (nu of order 1 or more).
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(300, 2))
    clean = np.where(X[:, 0] + X[:, 1] > 0, 5, 0)  # no label noise
    noise = rng.choice([0, 5], size=300)  # independent of X
    kw = dict(gamma=1.0)  # the ridge alone is chosen
    m_clean = ss.KernelStructuredPredictor(SPACE, **kw).fit(X, clean)
    m_noise = ss.KernelStructuredPredictor(SPACE, **kw).fit(X, noise)
    assert m_clean.nu_ <= 1e-4
    assert m_noise.nu_ >= 0.1
    assert m_clean.score(X, clean) > 0.97


def test_gcv_ridge_is_near_the_oracle_on_a_held_out_set():
    # Known answer by brute force: the nu with the least error on 4,000 fresh rows of
    # the same distribution; GCV (which sees only the 300 training rows) lands within
    # a decade of it and within 25% of its test error (the grid steps by 10^0.25).
    rng = np.random.default_rng(1)

    def draw(n):
        X = rng.uniform(-2, 2, size=(n, 1))
        f = np.sin(2 * X[:, 0])
        return X, f

    X, f = draw(300)
    y = f + 0.5 * rng.normal(size=300)
    Xt, ft = draw(4000)
    K = kernel_matrix(X, X, "rbf", 1.0)
    Kt = kernel_matrix(Xt, X, "rbf", 1.0)
    system = exact_system(K, y[:, None])
    errs = [np.mean((Kt @ system.dual(300 * v)[:, 0] - ft) ** 2) for v in NU_GRID]
    chosen = int(np.argmin(system.gcv(300 * NU_GRID)))
    best = int(np.argmin(errs))
    assert abs(np.log10(NU_GRID[chosen] / NU_GRID[best])) <= 1.0
    assert errs[chosen] <= 1.25 * errs[best]


# -- vectorized Frechet means and the truncation ---------------------------------------------
def _clusters(space, n_rows, n_points, scale, seed):
    rng = np.random.default_rng(seed)
    if isinstance(space, ss.Euclidean):
        base = rng.normal(size=(n_rows, space.ambient_dim))
    else:
        base = space.random_point(n_rows, seed=rng)
    base = np.repeat(base[:, None], n_points, axis=1)
    P = space.exp(space.random_tangent_vec(base, scale=scale, seed=rng), base)
    return P, rng.random((n_rows, n_points))


SPACES = [
    ss.Sphere(2),
    ss.Sphere(4),
    ss.Hyperbolic(2),
    ss.Hyperbolic(4),
    ss.Euclidean(3),
    ss.ProductManifold([ss.Sphere(2), ss.Hyperbolic(2)]),
]


@pytest.mark.parametrize("space", SPACES, ids=repr)
def test_vectorized_frechet_means_match_the_space_per_row(space):
    for scale in (0.05, 0.6):
        P, W = _clusters(space, 40, 25, scale, seed=7)
        W[:, :3] = 0.0  # zero weights are allowed
        got = frechet_means(space, P, W)
        want = np.stack([space.frechet_mean(P[i], W[i]) for i in range(len(P))])
        np.testing.assert_allclose(space.dist(got, want), 0.0, atol=1e-8)


@pytest.mark.parametrize(
    "space",
    [ss.Euclidean(2), ss.Hyperbolic(2), ss.Hyperbolic(3), ss.Sphere(2)],
    ids=repr,
)
def test_truncation_error_bound_holds_on_random_cases(space):
    rng = np.random.default_rng(11)
    scale = 0.1 if isinstance(space, ss.Sphere) else 1.0
    P, _ = _clusters(space, 60, 80, scale, seed=3)
    W = rng.exponential(size=(60, 80)) ** 3  # heavy-tailed, as kernel weights are
    for tol in (0.3, 0.05, 0.01):
        idx, kept, eps = truncate_weights(W, tol)
        assert np.all(eps <= tol + 1e-12)
        np.testing.assert_allclose(kept.sum(1), W.sum(1) * (1 - eps), rtol=1e-12)
        trunc = frechet_means(
            space, np.take_along_axis(P, idx[..., None], 1), kept, tol=1e-13
        )
        full = space.frechet_mean(P, W, tol=1e-13)
        bound = truncation_bound(space, trunc, eps, P, W)
        assert np.isfinite(bound).all()
        dist = space.dist(trunc, full)
        assert np.all(dist <= bound + 1e-9), (dist - bound).max()
        assert dist.max() > 0  # the truncation did change the means


def test_weight_tol_zero_is_the_untruncated_prediction():
    sphere = ss.Sphere(2)
    rng = np.random.default_rng(0)
    F = rng.normal(size=(150, 2))
    Y = sphere.projection(np.c_[F, np.ones(150)] + 0.1 * rng.normal(size=(150, 3)))
    model = ss.KernelManifoldRegressor(sphere, weight_tol=0.0).fit(F, Y)
    Ft = rng.normal(size=(25, 2))
    w = np.maximum(model._alpha(Ft), 0.0)
    want = sphere.frechet_mean(np.broadcast_to(Y, (25, *Y.shape)), w)
    np.testing.assert_allclose(sphere.dist(model.predict(Ft), want), 0.0, atol=1e-8)
    truncated = model.set_params(weight_tol=0.05).fit(F, Y).predict(Ft)
    assert np.max(sphere.dist(truncated, want)) < 0.05


# -- streaming ---------------------------------------------------------------------------------
def test_streaming_predict_equals_one_block_predict(tmp_path, capsys):
    X, y = _ranking(300)
    Xt = np.random.default_rng(9).normal(size=(1000, 3))
    model = ss.KernelStructuredPredictor(SPACE, n_components=60, chunk_size=10_000)
    whole = model.fit(X, y).predict(Xt)
    scores = model.decision_function(Xt)
    model.set_params(chunk_size=7)  # streamed: blocks of 7 rows, never copied whole
    np.testing.assert_array_equal(model.predict(Xt), whole)
    np.testing.assert_allclose(model.decision_function(Xt), scores, atol=1e-12)
    np.testing.assert_array_equal(model.predict(Xt.tolist()), whole)
    mm = np.lib.format.open_memmap(tmp_path / "x.npy", mode="w+", shape=Xt.shape)
    mm[:] = Xt
    np.testing.assert_array_equal(model.predict(mm), whole)
    capsys.readouterr()
    model.predict(Xt, progress_bar=True)
    assert "1000/1000" in capsys.readouterr().err
    bad = Xt.copy()
    bad[523, 1] = np.nan
    with pytest.raises(ValueError, match=r"entry \(523, 1\)"):
        model.predict(bad)


def test_manifold_streaming_predict_equals_one_block_predict():
    sphere = ss.Sphere(2)
    rng = np.random.default_rng(0)
    F = rng.normal(size=(200, 2))
    Y = sphere.projection(np.c_[F, np.ones(200)])
    Ft = rng.normal(size=(90, 2))
    model = ss.KernelManifoldRegressor(sphere, chunk_size=1000).fit(F, Y)
    whole = model.predict(Ft)
    streamed = model.set_params(chunk_size=8).predict(Ft)
    # truncation keeps, per block, the count the block's neediest row needs: more rows
    # never hurt, so blocks may differ only within the truncation bound
    # (each within weight_tol * pi of the untruncated mean, by the bound)
    np.testing.assert_allclose(sphere.dist(streamed, whole), 0.0, atol=2e-3 * np.pi)
    exact = model.set_params(weight_tol=0.0)
    np.testing.assert_allclose(
        exact.predict(Ft), exact.set_params(chunk_size=1000).predict(Ft), atol=1e-10
    )


# -- persistence and validation -----------------------------------------------------------------
def test_low_rank_models_round_trip(tmp_path):
    X, y = _ranking(200)
    model = ss.KernelStructuredPredictor(SPACE, n_components=30).fit(X, y)
    model.save(tmp_path / "s.model")
    fresh = ss.KernelStructuredPredictor(SPACE).load(tmp_path / "s.model")
    np.testing.assert_array_equal(
        fresh.decision_function(X), model.decision_function(X)
    )
    sphere = ss.Sphere(2)
    Y = sphere.projection(np.c_[X[:, :2], np.ones(200)])
    reg = ss.KernelManifoldRegressor(sphere, n_components=30, nu="auto").fit(X, Y)
    reg.save(tmp_path / "m.model")
    fresh = ss.KernelManifoldRegressor(sphere).load(tmp_path / "m.model")
    np.testing.assert_array_equal(fresh.predict(X[:20]), reg.predict(X[:20]))
    assert fresh.n_components_ == 30 and fresh.factor_ is None


def test_files_from_before_the_low_rank_kernels_load_as_exact_models(tmp_path):
    # Such files have no nu_ / n_components_ (nor the low-rank attributes): simulate
    # one by removing them before saving.
    X, y = _ranking(100)
    model = ss.KernelStructuredPredictor(SPACE, gamma=0.5, nu=1e-3).fit(X, y)
    del model.nu_, model.n_components_
    model.save(tmp_path / "old_s.model")
    fresh = ss.KernelStructuredPredictor(SPACE).load(tmp_path / "old_s.model")
    assert fresh.n_components_ == 0 and fresh.nu_ == 1e-3
    np.testing.assert_array_equal(fresh.predict(X), model.predict(X))
    sphere = ss.Sphere(2)
    Y = sphere.projection(np.c_[X[:, :2], np.ones(100)])
    reg = ss.KernelManifoldRegressor(sphere).fit(X, Y)
    del reg.nu_, reg.n_components_, reg.landmarks_, reg.alpha_basis_, reg.alpha_coef_
    reg.save(tmp_path / "old_m.model")
    fresh = ss.KernelManifoldRegressor(sphere).load(tmp_path / "old_m.model")
    assert fresh.n_components_ == 0 and fresh.landmarks_ is None
    np.testing.assert_array_equal(fresh.predict(X[:10]), reg.fit(X, Y).predict(X[:10]))


def test_scale_parameters_are_validated():
    X, y = _ranking(30)
    with pytest.raises(ValueError, match="n_components must be 'auto', None or an int"):
        ss.KernelStructuredPredictor(SPACE, n_components="big").fit(X, y)
    with pytest.raises(ValueError, match="n_components must be in the range"):
        ss.KernelStructuredPredictor(SPACE, n_components=0).fit(X, y)
    with pytest.raises(ValueError, match="nu must be a number >= 0 or 'auto'"):
        ss.KernelStructuredPredictor(SPACE, nu="gcv").fit(X, y)
    with pytest.raises(ValueError, match="nu must be > 0 with a low-rank kernel"):
        ss.KernelStructuredPredictor(SPACE, nu=0.0, n_components=5).fit(X, y)
    sphere = ss.Sphere(2)
    Y = sphere.projection(np.c_[X[:, :2], np.ones(30)])
    with pytest.raises(ValueError, match="weight_tol must be in the range"):
        ss.KernelManifoldRegressor(sphere, weight_tol=1.0).fit(X, Y)


def test_auto_switches_to_low_rank_above_the_threshold():
    # 2,001 rows > 2,000: the default becomes a 1,000-landmark Nystroem kernel
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2001, 2))
    y = np.where(X[:, 0] > 0, 5, 0)
    model = ss.KernelStructuredPredictor(SPACE).fit(X, y)
    assert model.n_components_ == 1000 and model.X_fit_.shape == (1000, 2)
    assert model.score(X, y) > 0.97
    small = ss.KernelStructuredPredictor(SPACE).fit(X[:2000], y[:2000])
    assert small.n_components_ == 0
    pd.testing.assert_index_equal(pd.Index(small.labels_), pd.Index([0, 5]))


def test_fit_shows_a_progress_bar_only_when_asked(capsys):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 4))
    y = rng.integers(0, 6, 600)
    model = ss.KernelStructuredPredictor(ss.Permutations(3), n_components=50)
    model.fit(X, y)
    assert "Nystroem kernel" not in capsys.readouterr().err
    model.fit(X, y, progress_bar=True)
    assert "600/600" in capsys.readouterr().err


def test_frechet_means_shortens_a_hyperbolic_step_exp_refuses():
    # Four points of H^5 about 30 apart (drawn by RiemannianGaussian(H^5).sample):
    # the first Newton step from the extrinsic start is longer than max_radius, which
    # Hyperbolic.exp refuses; the step halving shortens it and reaches the mean that
    # the space's own solver finds (it raised a ValueError).
    space = ss.Hyperbolic(5)
    P = np.array(
        [
            [6.535475165325778e09, 1.8435421379246886e09, 3.629679591754201e09,
             -6.025349872455205e08, -3.940132208892045e09, 3.201800095116131e09],
            [4.921992448407897e06, 7.74841922832841e05, 3.069115071592631e06,
             -4.968308002164546e05, -2.176242116992122e06, 3.036987279906348e06],
            [2.063148026468239e06, -2.587910139644629e05, 1.115486129464901e06,
             2.023230939526123e04, -8.529831982343381e05, 1.489062793292447e06],
            [1.790420788344658e07, 2.803665426899641e06, 1.627315727820374e07,
             -4.982353156390054e06, -4.359142325358881e06, 2.014573780926535e06],
        ]
    )  # fmt: skip
    W = np.array([1.6713202354627605, 0.0, 1.7550323889310284, 1.0149104366808956])
    assert space.belongs(P).all()
    expected = space.frechet_mean(P, W)
    np.testing.assert_allclose(
        frechet_means(space, P[None], W[None])[0], expected, rtol=1e-6
    )
