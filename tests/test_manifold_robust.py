"""Robust noise, dev sets, dependencies and weight shrinkage of ManifoldLabelModel."""

import warnings

import numpy as np
import pytest

from snorkel_structured import (
    ConvergenceWarning,
    Euclidean,
    Hyperbolic,
    IdentifiabilityWarning,
    ManifoldLabelModel,
    Sphere,
)
from snorkel_structured.estimators._manifold_stats import ManifoldStats
from snorkel_structured.estimators.robust_manifold import (
    MAX_OUTLIER_RATE,
    fit_background,
    robust_frechet_mean,
)
from snorkel_structured.estimators.triplet import triplet_estimate
from snorkel_structured.label_model._manifold_shrinkage import eb_shrink
from snorkel_structured.synthetic_manifold import make_manifold_data

S2 = Sphere(2)


def contaminate(data, space, eps, seed):
    """Replace each vote, with probability eps[a], by a point unrelated to the label.

    Sphere: uniform; Euclidean: the label of another row (a draw from the population
    of labels), as in the model's outlier law.
    """
    rng = np.random.default_rng(seed)
    X = data.X.copy()
    n, m, _ = X.shape
    out = rng.random((n, m)) < np.asarray(eps)
    if isinstance(space, Sphere):
        junk = space.random_point(n * m, seed=rng).reshape(X.shape)
    else:
        junk = data.Y[rng.integers(0, n, size=(n, m))]
    X[out] = junk[out]
    return X, out


def test_recovers_outlier_rates_and_inlier_scales():
    d = make_manifold_data(6000, space=S2, noise_scale=[0.01, 0.02, 0.04, 0.03], seed=0)
    eps = np.array([0.1, 0.0, 0.2, 0.05])
    X, _ = contaminate(d, S2, eps, seed=1)
    plain = ManifoldLabelModel(S2, robust=False).fit(X)
    lm = ManifoldLabelModel(S2, robust=True, seed=0).fit(X)
    np.testing.assert_allclose(lm.outlier_rate_, eps, atol=0.02)
    np.testing.assert_allclose(lm.noise_scale_, d.noise_scale, rtol=0.12)
    # the plain model reads the outliers as noise: far too large scales
    assert np.all(plain.noise_scale_[[0, 2]] > 2 * d.noise_scale[[0, 2]])
    assert lm.noise_model_["family"] == "robust"


def test_robust_mean_ignores_a_gross_outlier_lf():
    d = make_manifold_data(3000, space=S2, noise_scale=[0.01, 0.01, 0.02, 0.02], seed=2)
    X, out = contaminate(d, S2, [0.0, 0.0, 0.0, 0.3], seed=3)
    lm = ManifoldLabelModel(S2, robust=True, seed=0).fit(X)
    pred = lm.predict(X)
    resp = lm.responsibilities(X)
    rows = out[:, 3]
    # outlying votes are recognized, and the pseudolabel stays with the truth
    # (a uniform point that happens to land near the truth is rightly kept)
    assert resp[rows, 3].mean() < 0.1 and resp[~rows, 3].mean() > 0.9
    err_robust = S2.dist(pred[rows], d.Y[rows])
    err_clean = S2.dist(S2.frechet_mean(X[rows, :3]), d.Y[rows])
    # the same weights without responsibilities: the outliers drag the mean
    err_weighted = S2.dist(S2.frechet_mean(X[rows], lm.weights_), d.Y[rows])
    assert np.mean(err_robust) < 1.2 * np.mean(err_clean)
    assert np.mean(err_robust) < 0.5 * np.mean(err_weighted)


def test_heldout_choice_plain_on_plain_data_robust_on_contaminated():
    d = make_manifold_data(4000, space=S2, noise_scale=[0.01, 0.02, 0.05], seed=4)
    lm = ManifoldLabelModel(S2, seed=0).fit(d.X)
    assert lm.noise_model_["family"] == "plain"
    assert lm.noise_model_["criterion"] == "heldout_loglik"
    np.testing.assert_array_equal(lm.outlier_rate_, 0.0)
    X, _ = contaminate(d, S2, [0.15, 0.0, 0.1], seed=5)
    lm = ManifoldLabelModel(S2, seed=0).fit(X)
    assert lm.noise_model_["family"] == "robust"
    assert lm.noise_model_["heldout_gain"] > 2 * lm.noise_model_["heldout_se"]
    e = Euclidean(2)
    d = make_manifold_data(4000, space=e, noise_scale=[0.01, 0.02, 0.05], seed=6)
    assert ManifoldLabelModel(e, seed=0).fit(d.X).noise_model_["family"] == "plain"
    X, _ = contaminate(d, e, [0.2, 0.0, 0.0], seed=7)
    lm = ManifoldLabelModel(e, seed=0).fit(X)
    assert lm.noise_model_["family"] == "robust"
    assert abs(lm.outlier_rate_[0] - 0.2) < 0.04


def _copied_partner(seed):
    """LF 3 copies LF 0's vote on 80% of rows (a shared source)."""
    d = make_manifold_data(
        20000, space=S2, noise_scale=[0.05, 0.02, 0.03, 0.05, 0.04], seed=seed
    )
    X = d.X.copy()
    rng = np.random.default_rng(seed)
    copy = rng.random(X.shape[0]) < 0.8
    X[copy, 3] = X[copy, 0]
    return d, X


def test_declared_dependencies_are_excluded_from_the_triplets():
    d, X = _copied_partner(8)
    stats = ManifoldStats.from_outputs(X, S2)
    naive = triplet_estimate(stats, d.noise)
    declared = triplet_estimate(stats, d.noise, dependencies=[(3, 0)])
    # LF 0 is estimated right once the copy is declared, and far too good otherwise
    assert abs(declared.expected_sq_dist[0] / d.expected_sq_dist[0] - 1) < 0.06
    assert naive.expected_sq_dist[0] < 0.7 * d.expected_sq_dist[0]
    assert not any(set(p) == {0, 3} for p in declared.pairs_used.tolist())
    lm = ManifoldLabelModel(S2, robust=False, shrinkage=0.0).fit(
        X, dependencies=[(0, 3)]
    )
    np.testing.assert_allclose(
        lm.expected_sq_dist_[:3], d.expected_sq_dist[:3], rtol=0.06
    )
    np.testing.assert_array_equal(lm.groups_[0], lm.groups_[3])
    # the group counts once: a row where only LFs 0 and 3 vote with the same point,
    # and LF 1 elsewhere, is pulled no harder towards the copies than with LF 0 alone
    row = X[:1].copy()
    row[0, 2] = row[0, 4] = np.nan
    row[0, 3] = row[0, 0]
    alone = row.copy()
    alone[0, 3] = np.nan
    np.testing.assert_allclose(lm.predict(row), lm.predict(alone), atol=1e-9)


def test_unidentified_after_dependencies_warns_and_falls_back():
    d = make_manifold_data(3000, space=S2, noise_scale=[0.02, 0.03, 0.04], seed=9)
    with pytest.warns(IdentifiabilityWarning, match="cannot identify"):
        lm = ManifoldLabelModel(S2, robust=False).fit(d.X, dependencies=[(0, 1)])
    assert np.all(np.isfinite(lm.expected_sq_dist_))


def test_dev_set_improves_on_contaminated_data():
    d = make_manifold_data(
        5000, space=S2, noise_scale=[0.01, 0.03, 0.05, 0.02], seed=10
    )
    X, _ = contaminate(d, S2, [0.25, 0.0, 0.0, 0.1], seed=11)
    dev, train, test = slice(0, 100), slice(100, 3500), slice(3500, None)
    unsup = ManifoldLabelModel(S2, robust=False).fit(X[train])
    sup = ManifoldLabelModel(S2, seed=0).fit(X[train], X_dev=X[dev], Y_dev=d.Y[dev])
    assert sup.noise_model_["criterion"] == "dev_loss"
    assert sup.noise_model_["family"] == "robust"

    def err(pred):
        return np.mean(S2.dist(pred, d.Y[test]))

    unweighted = err(S2.frechet_mean(X[test]))
    best_lf = min(err(X[test, a]) for a in range(4))
    assert err(sup.predict(X[test])) < min(
        unweighted, best_lf, err(unsup.predict(X[test]))
    )


def test_dev_rows_enter_the_moment_equations():
    # LFs 0 and 1 declared dependent: without labels LF 0 and 1 are unidentified;
    # labeled rows add one equation per LF and identify them
    d = make_manifold_data(4000, space=S2, noise_scale=[0.02, 0.03, 0.04], seed=17)
    with pytest.warns(IdentifiabilityWarning, match="cannot identify"):
        ManifoldLabelModel(S2, robust=False).fit(d.X[300:], dependencies=[(0, 1)])
    with warnings.catch_warnings():
        warnings.simplefilter("error", IdentifiabilityWarning)
        lm = ManifoldLabelModel(S2, robust=False).fit(
            d.X[300:], X_dev=d.X[:300], Y_dev=d.Y[:300], dependencies=[(0, 1)]
        )
    np.testing.assert_allclose(lm.expected_sq_dist_, d.expected_sq_dist, rtol=0.2)


def test_shrinkage_goes_to_equal_weights_without_evidence():
    # three equally good LFs and few rows: the estimated differences are noise
    d = make_manifold_data(200, space=S2, noise_scale=[0.05, 0.05, 0.05], seed=12)
    lm = ManifoldLabelModel(S2, robust=False).fit(d.X)
    np.testing.assert_allclose(lm.weights_, 1 / 3, atol=0.02)
    raw = ManifoldLabelModel(S2, robust=False, shrinkage=0.0).fit(d.X)
    assert np.ptp(raw.weights_) > np.ptp(lm.weights_)
    # clearly different LFs with many rows keep their differences
    d = make_manifold_data(20000, space=S2, noise_scale=[0.01, 0.05, 0.2], seed=13)
    lm = ManifoldLabelModel(S2, robust=False).fit(d.X)
    assert np.all(lm.shrinkage_ < 0.1)
    assert lm.weights_[0] > 5 * lm.weights_[2]


def test_shrinkage_keeps_a_dominant_lf_dominant():
    # one LF ten times as precise as four others, 100 rows: its log E d^2 is far
    # less certain downwards (it may be better still) than upwards, and it is an
    # outlier of the normal prior; shrinkage pulled it to the others' weight
    # (weights 0.20, 0.20, 0.24, 0.24, 0.12; squared error 0.23, as equal weights)
    for seed in range(3):
        d = make_manifold_data(
            100, space=S2, noise_scale=[0.05, 0.5, 0.5, 0.5, 1.0], seed=seed
        )
        lm = ManifoldLabelModel(S2, robust=False).fit(d.X)
        equal = ManifoldLabelModel(S2, robust=False, shrinkage=1.0).fit(d.X)
        assert lm.weights_[0] > 2 * lm.weights_[1:].max()
        err = np.mean(S2.squared_dist(lm.predict(d.X), d.Y))
        assert err < 0.5 * np.mean(S2.squared_dist(equal.predict(d.X), d.Y))


def test_eb_shrink_with_equal_variances_is_the_morris_estimate():
    # written from the docstring: equal v gives mu the mean, tau^2 = max(0, mean
    # squared deviation - v), kappa = v / (v + tau^2), each LF within one sd of g
    rng = np.random.default_rng(0)
    for v in (0.01, 0.3, 3.0):
        g = rng.normal(size=6)
        mu = g.mean()
        tau2 = max(0.0, np.mean((g - mu) ** 2) - v)
        want = mu + tau2 / (v + tau2) * (g - mu)
        want = np.clip(want, g - np.sqrt(v), g + np.sqrt(v))
        got, _ = eb_shrink(g, np.full(6, v))
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_eb_shrink_reads_the_side_it_moves_and_keeps_the_order():
    g = np.array([-3.0, 0.0, 0.1, -0.1, 0.5])
    sides = np.full((5, 2), 0.01)
    sides[0] = (200.0, 0.01)  # LF 0 may be far better, hardly worse
    got, _ = eb_shrink(g, np.full(5, 50.0), sides)
    assert abs(got[0] - g[0]) <= 0.1 + 1e-12  # at most one sd (0.1) upwards
    symmetric, _ = eb_shrink(g, np.r_[200.0, np.full(4, 0.01)])
    assert symmetric[0] > -0.5  # the symmetric variance pulls it to the others
    rng = np.random.default_rng(1)
    for _ in range(200):
        g = rng.normal(size=5)
        sides = rng.exponential(size=(5, 2)) ** 3
        got, _ = eb_shrink(g, sides.mean(axis=1), sides)
        assert np.all(np.diff(got[np.argsort(g)]) >= -1e-12)


def test_fit_stats_and_partial_fit_stay_plain_and_additive():
    d = make_manifold_data(3000, space=S2, noise_scale=[0.02, 0.03, 0.04], seed=14)
    X, _ = contaminate(d, S2, [0.2, 0.0, 0.0], seed=15)
    part = ManifoldLabelModel(S2)
    with warnings.catch_warnings():
        # (1, 2) declared dependent leaves no triangle: warned, tested elsewhere
        warnings.simplefilter("ignore", IdentifiabilityWarning)
        full = ManifoldLabelModel(S2, robust=False).fit(X, dependencies=[(1, 2)])
        for chunk in np.array_split(X, 3):
            part.partial_fit(chunk, dependencies=[(1, 2)])
    np.testing.assert_allclose(part.noise_scale_, full.noise_scale_, rtol=1e-10)
    assert part.noise_model_["criterion"] == "statistics_only"
    stats = ManifoldStats.from_outputs(X, S2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IdentifiabilityWarning)
        via = ManifoldLabelModel(S2).fit_stats(stats, dependencies=[(1, 2)])
    np.testing.assert_allclose(via.weights_, full.weights_, rtol=1e-10)
    with pytest.raises(ValueError, match="robust=True needs the raw rows"):
        ManifoldLabelModel(S2, robust=True).fit(iter(np.array_split(X, 2)))


def test_validation_errors():
    d = make_manifold_data(300, space=S2, noise_scale=[0.02, 0.03, 0.04], seed=16)
    lm = ManifoldLabelModel(S2, robust=False)
    with pytest.raises(ValueError, match="no class balance"):
        lm.fit(d.X, Y_dev=d.Y[:10])
    with pytest.raises(ValueError, match="without Y_dev"):
        lm.fit(d.X, X_dev=d.X[:10])
    with pytest.raises(ValueError, match=r"Y_dev must have shape \(n_dev, 3\)"):
        lm.fit(d.X, X_dev=d.X[:10], Y_dev=d.Y[:9])
    with pytest.raises(ValueError, match="must have 3 labeling functions"):
        lm.fit(d.X, X_dev=d.X[:10, :2], Y_dev=d.Y[:10])
    for deps, msg in [
        ([(0, 0)], "pairs an LF with itself"),
        ([(0, 3)], r"names an LF outside \[0, 3\)"),
        ([(0, -1)], "outside"),
        ([(0, 1.0)], "must hold integer LF indices"),
        ([(0, True)], "must hold integer LF indices"),
        ([(0, 1, 2)], "must be pairs of LF indices"),
        (5, "must be pairs of LF indices"),
    ]:
        with pytest.raises(ValueError, match=msg):
            lm.fit(d.X, dependencies=deps)
    for kw, msg in [
        ({"robust": "yes"}, "robust must be 'auto', True or False"),
        ({"robust": 1}, "robust must be 'auto', True or False"),
        ({"shrinkage": 1.5}, "shrinkage must be in the range"),
    ]:
        with pytest.raises(ValueError, match=msg):
            ManifoldLabelModel(S2, **kw).fit(d.X)
    with pytest.raises(TypeError, match="shrinkage must be a real number"):
        ManifoldLabelModel(S2, shrinkage="none").fit(d.X)


def test_exact_lfs_on_discrete_labels_tie_instead_of_collapsing():
    # Integer labels; LFs exactly right except, with probability eps, a few units off
    # (like UTC offsets). The inliers' E d^2 is 0: without a floor the robust fit
    # drives it to 0 and the weights among the exact LFs become arbitrary.
    e = Euclidean(1)
    rng = np.random.default_rng(0)
    n = 4000
    Y = rng.integers(-6, 7, size=n).astype(float)[:, None]
    eps = np.array([0.02, 0.05, 0.1, 0.3])
    off = rng.random((n, 4)) < eps
    jump = rng.choice([-3, -2, -1, 1, 2, 3], size=(n, 4))
    X = (Y + np.where(off, jump, 0))[..., None]
    plain = ManifoldLabelModel(e, robust=False).fit(X)
    lm = ManifoldLabelModel(e, seed=0).fit(X)
    assert lm.noise_model_["family"] == "robust"
    np.testing.assert_allclose(lm.outlier_rate_[:3], eps[:3], atol=0.02)
    # the three LFs that are exact on their inlier rows are equally good inliers
    np.testing.assert_allclose(lm.weights_[:3], lm.weights_[0], rtol=1e-9)
    assert np.all(np.isfinite(lm.weights_)) and lm.weights_[0] > 0.2
    err = np.abs(lm.predict(X) - Y).mean()
    assert err < 0.5 * np.abs(plain.predict(X) - Y).mean()


def test_auto_keeps_plain_when_noise_is_wide_against_curvature():
    # The paper's hyperbolic setup (tangent variances of a few units): the robust
    # model's local Gaussian approximation fails there, so "auto" stays plain (and
    # fast) and recovers exactly what the plain model does.
    h = Hyperbolic(5)
    d = make_manifold_data(1000, space=h, noise_scale=[3.0, 1.5, 4.0], seed=4)
    lm = ManifoldLabelModel(h, seed=0).fit(d.X)
    assert lm.noise_model_ == {"criterion": "noise_too_wide", "family": "plain"}
    plain = ManifoldLabelModel(h, robust=False).fit(d.X)
    np.testing.assert_array_equal(lm.noise_scale_, plain.noise_scale_)


def _wide_outliers(n, eps, seed, noise_scale=(0.05, 0.1, 0.2, 0.1)):
    """Euclidean(2) labels of spread 1; each vote replaced with probability ``eps`` by
    a N(0, 10^2) point: outliers ten label-spreads wide (garbage values), far wider
    than the population of labels the background is fitted to."""
    e2 = Euclidean(2)
    d = make_manifold_data(n, space=e2, noise_scale=list(noise_scale), seed=seed)
    rng = np.random.default_rng(seed)
    X = d.X.copy()
    out = rng.random(X.shape[:2]) < eps
    X[out] = rng.normal(scale=10.0, size=(out.sum(), 2))
    return e2, d, X, out


def test_outliers_wider_than_the_labels_are_recovered_not_swapped():
    # Regression: the robust EM started from the plain E d^2 (inflated to ~20 by the
    # outliers, wider than the Gaussian background of the labels), swapped the roles
    # of the components and ended with E d^2 ~ 60 and every eps at the cap 0.5.
    e2, d, X, out = _wide_outliers(2000, 0.1, seed=0)
    lm = ManifoldLabelModel(e2, seed=0).fit(X)
    assert lm.noise_model_["family"] == "robust"
    assert not lm.noise_model_.get("robust_degenerate", False)
    np.testing.assert_allclose(lm.expected_sq_dist_, d.expected_sq_dist, rtol=0.15)
    np.testing.assert_allclose(lm.outlier_rate_, out.mean(axis=0), atol=0.03)
    plain = ManifoldLabelModel(e2, robust=False).fit(X)
    err = np.mean(e2.dist(lm.predict(X), d.Y) ** 2)
    err_plain = np.mean(e2.dist(plain.predict(X), d.Y) ** 2)
    # the oracle: inverse-variance mean of the true inliers with the true E d^2
    w = np.where(out, 0.0, 1.0 / d.expected_sq_dist)
    oracle = np.nanmean(e2.dist(e2.frechet_mean(X, w), d.Y) ** 2)
    assert err < 0.05 * err_plain
    assert err < 1.3 * oracle


def test_auto_never_keeps_a_degenerate_robust_fit():
    # 60% of every LF's votes are garbage: beyond the identifiable limit, so the
    # robust fit ends with every outlier rate at the cap (the components swapped)
    e2, d, X, _ = _wide_outliers(
        2000, 0.6, seed=1, noise_scale=(0.01, 0.02, 0.04, 0.02)
    )
    with pytest.warns(ConvergenceWarning, match="robust fit is degenerate"):
        forced = ManifoldLabelModel(e2, robust=True, seed=0).fit(X)
    np.testing.assert_array_equal(forced.outlier_rate_, MAX_OUTLIER_RATE)
    assert forced.noise_model_["robust_degenerate"]
    plain = ManifoldLabelModel(e2, robust=False).fit(X)
    for kw in ({}, {"X_dev": X[:100], "Y_dev": d.Y[:100]}):
        lm = ManifoldLabelModel(e2, seed=0).fit(X, **kw)
        assert lm.noise_model_["family"] == "plain"
        assert lm.noise_model_["robust_degenerate"]
        np.testing.assert_array_equal(lm.outlier_rate_, 0.0)
        if not kw:  # the same model as robust=False
            np.testing.assert_array_equal(lm.expected_sq_dist_, plain.expected_sq_dist_)


def test_robust_mean_does_not_depend_on_the_scale_of_the_weights():
    # The references add the labels' centre as a vote weighted by an inverse
    # variance; the votes' weights (weights_ sums to 1) must be put on that scale,
    # or the centre outweighs them and label-like outliers pass as inliers.
    e2, d, X, _ = _wide_outliers(500, 0.2, seed=2)
    lm = ManifoldLabelModel(e2, robust=True, seed=0).fit(X)
    bg = fit_background(e2, X, lm.expected_sq_dist_)
    means = [
        robust_frechet_mean(
            e2,
            X,
            expected_sq_dist=lm.expected_sq_dist_,
            outlier_rate=lm.outlier_rate_,
            background=bg,
            weights=c * lm.weights_,
            groups=lm.groups_,
        )[0]
        for c in (1.0, 1000.0)
    ]
    np.testing.assert_allclose(means[0], means[1], atol=1e-8)


def test_auto_tries_robust_on_curved_space_when_only_outliers_are_wide():
    # Hyperbolic, small inlier noise, 10% of votes thrown ~2 curvature radii away:
    # the plain E d^2 / dim exceeds MAX_CURVED_VARIANCE only because of the outliers;
    # the quantile estimate of the inlier scales lets "auto" fit the robust model.
    h = Hyperbolic(2)
    d = make_manifold_data(1500, space=h, noise_scale=[0.02, 0.05, 0.1, 0.05], seed=0)
    rng = np.random.default_rng(1)
    X = d.X.copy()
    out = rng.random(X.shape[:2]) < 0.1
    tang = np.zeros(X.shape)
    tang[..., 1:] = rng.normal(scale=2.0, size=X.shape[:2] + (2,))
    junk = h.exp(tang, np.broadcast_to(h.origin, X.shape))
    X[out] = junk[out]
    # The junk votes of all LFs scatter around one point (the origin), so the LFs
    # agree there more than independence allows and dependencies="auto" flags them;
    # this test is about the robust family alone: no dependencies.
    plain = ManifoldLabelModel(h, robust=False).fit(X, dependencies=None)
    assert np.max(plain.expected_sq_dist_) / h.dim > 1.0
    lm = ManifoldLabelModel(h, seed=0).fit(X, dependencies=None)
    assert lm.noise_model_["family"] == "robust"
    np.testing.assert_allclose(lm.expected_sq_dist_, d.expected_sq_dist, rtol=0.25)
    np.testing.assert_allclose(lm.outlier_rate_, out.mean(axis=0), atol=0.03)
    err = np.mean(h.dist(lm.predict(X), d.Y) ** 2)
    assert err < 0.5 * np.mean(h.dist(plain.predict(X), d.Y) ** 2)


def test_auto_keeps_the_plain_model_when_the_robust_fit_cannot_identify_the_lfs():
    # Diabetes progression (R^1, 200 rows) from univariate fits of 142 reference
    # rows: most votes look outlying to the robust EM, whose inlier-weighted pair
    # sums are then fractions of a row and identify no LF. robust="auto" raised
    # "Too few overlapping rows" with counts like 4.31 and 5.6e-141 for pairs that
    # co-vote on all 200 rows; it keeps the plain model, and robust=True says why.
    from sklearn.datasets import load_diabetes

    data = load_diabetes()
    X, y = data.data, data.target[:, None]
    perm = np.random.default_rng(0).permutation(len(y))
    ref, train = perm[:142], perm[142:342]
    col = {name: i for i, name in enumerate(data.feature_names)}

    def linear(x: np.ndarray, read: np.ndarray | None = None) -> np.ndarray:
        """The reference rows' line of y on x, applied to ``read`` (default x)."""
        A = np.c_[np.ones(ref.size), x[ref]]
        coef = np.linalg.lstsq(A, y[ref], rcond=None)[0]
        read = x if read is None else read
        return np.c_[np.ones(read.size), read] @ coef

    bmi, s5 = X[:, col["bmi"]], X[:, col["s5"]]
    edges = np.quantile(bmi[ref], [0.25, 0.5, 0.75])
    bin_means = np.array(
        [y[ref][np.searchsorted(edges, bmi[ref]) == k].mean(0) for k in range(4)]
    )
    # a data-entry bug flips and triples s5 for 15% of the patients
    s5_read = np.where((np.arange(len(y)) * 7919) % 100 < 15, -3.0 * s5, s5)
    L = np.stack(
        [linear(X[:, col[f]]) for f in ("bmi", "s5", "bp", "s4")]
        + [
            bin_means[np.searchsorted(edges, bmi)],
            np.where((bmi > 0.06)[:, None], y[ref][bmi[ref] > 0.06].mean(0), np.nan),
            linear(s5, s5_read),
        ],
        axis=1,
    )[train]
    space = Euclidean(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        auto = ManifoldLabelModel(space, seed=0).fit(L)
        plain = ManifoldLabelModel(space, seed=0, robust=False).fit(L)
    assert auto.noise_model_["family"] == "plain"
    assert "Too few overlapping rows" in auto.noise_model_["robust_failed"]
    np.testing.assert_array_equal(auto.predict(L), plain.predict(L))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="robust=True: the robust fit failed"):
            ManifoldLabelModel(space, seed=0, robust=True).fit(L)
