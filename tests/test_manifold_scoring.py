"""ManifoldLabelModel's Snorkel-facing reports: score, get_weights, spread, filtering.

Expected values are computed by hand from the definitions (weighted means, distances,
inverse-variance sums) or from the truth that generated the data.
"""

import numpy as np
import pandas as pd
import pytest

import snorkel_structured as ss
from snorkel_structured._warnings import captured
from snorkel_structured.labeling import filter_unlabeled_manifold
from snorkel_structured.synthetic_manifold import make_manifold_data

NAN = np.nan


@pytest.fixture(scope="module")
def line():
    """Euclidean(1): true labels and three LFs with known E d^2, some abstains."""
    space = ss.Euclidean(1)
    data = make_manifold_data(
        6000, space=space, noise_scale=[0.05, 0.2, 0.8], abstain=0.2, seed=3
    )
    model = ss.ManifoldLabelModel(space, robust=False, shrinkage=0.0).fit(data.X)
    return space, data, model


def test_get_weights_are_normalized_inverse_variances(line):
    _, _, model = line
    w = model.get_weights()
    inv = 1.0 / model.expected_sq_dist_
    np.testing.assert_allclose(w, inv / inv.sum(), rtol=1e-12)
    w[0] = -1.0  # a copy: the model is unchanged
    assert model.get_weights()[0] > 0


def test_score_matches_hand_computed_weighted_means(line):
    space, data, model = line
    X = data.X[:40].copy()
    Y = data.Y[:40].copy()
    X[0] = NAN  # no LF votes: not covered
    Y[1] = NAN  # unknown true label: left out of the distances
    w = model.get_weights()
    votes = X[:, :, 0]
    voted = ~np.isnan(votes)
    ww = np.where(voted, w, 0.0)
    with np.errstate(invalid="ignore"):
        pred = np.nansum(ww * np.nan_to_num(votes), axis=1) / ww.sum(axis=1)
    keep = voted.any(axis=1) & ~np.isnan(Y[:, 0])
    d = np.abs(pred[keep] - Y[keep, 0])
    scores = model.score(
        X, Y, metrics=["coverage", "mean_distance", "mean_sq_distance"]
    )
    assert list(scores) == ["coverage", "mean_distance", "mean_sq_distance"]
    assert scores["coverage"] == pytest.approx(voted.any(axis=1).mean())
    assert scores["mean_distance"] == pytest.approx(d.mean(), rel=1e-9)
    assert scores["mean_sq_distance"] == pytest.approx((d**2).mean(), rel=1e-9)
    assert model.score(X, Y) == {"mean_distance": pytest.approx(d.mean(), rel=1e-9)}
    assert model.score(X, Y, metrics=None) == {}


def test_score_without_scorable_rows_is_nan_with_a_warning(line):
    _, data, model = line
    X = data.X[:5].copy()
    Y = np.full((5, 1), NAN)  # no true label known
    with captured() as caught:
        scores = model.score(X, Y, metrics=["mean_distance", "coverage"])
    assert np.isnan(scores["mean_distance"]) and scores["coverage"] == 1.0
    assert any("No row has both" in str(w.message) for w in caught)
    with captured() as caught:  # coverage alone needs no true label: no warning
        assert model.score(X, Y, metrics=["coverage"]) == {"coverage": 1.0}
    assert not caught


def test_score_refuses_unknown_metrics_and_bad_shapes(line):
    _, data, model = line
    with pytest.raises(ValueError, match="Unrecognized metric: accuracy"):
        model.score(data.X[:5], data.Y[:5], metrics=["accuracy"])
    with pytest.raises(ValueError, match="Y must have shape \\(5, 1\\)"):
        model.score(data.X[:5], data.Y[:4])


def test_spread_is_the_inverse_variance_sum_of_the_voting_lfs(line):
    _, data, model = line
    pred, spread = model.predict(data.X, return_spread=True)
    np.testing.assert_array_equal(pred, model.predict(data.X))
    voted = ~np.isnan(data.X[:, :, 0])
    with np.errstate(divide="ignore"):
        expected = 1.0 / (voted / model.expected_sq_dist_).sum(axis=1)
    none = ~voted.any(axis=1)
    assert none.any() and np.isnan(spread[none]).all()
    np.testing.assert_allclose(spread[~none], expected[~none], rtol=1e-12)


def test_spread_matches_the_true_squared_error_per_vote_pattern(line):
    space, data, model = line
    pred, spread = model.predict(data.X, return_spread=True)
    err = space.dist(pred, data.Y) ** 2
    voted = ~np.isnan(data.X[:, :, 0])
    codes = voted @ (1 << np.arange(3))
    true_e = data.expected_sq_dist  # the generating noise, not the estimate
    for code in np.unique(codes[voted.any(axis=1)]):
        rows = codes == code
        if rows.sum() < 300:
            continue
        v = voted[rows][0]
        w = v / model.expected_sq_dist_  # the weights the model used on these rows
        truth = (w**2 * true_e).sum() / w.sum() ** 2  # E err^2 of that weighted mean
        se = err[rows].std() / np.sqrt(rows.sum())
        assert abs(err[rows].mean() - truth) < 4 * se
        assert spread[rows][0] == pytest.approx(truth, rel=0.15)


def test_spread_counts_a_declared_duplicate_once():
    # LF 3 copies LF 0 exactly: perfectly correlated errors. The spread treats a
    # dependency group that way, so it matches the true error of the pseudolabel.
    space = ss.Euclidean(2)
    data = make_manifold_data(8000, space=space, noise_scale=[0.3, 0.3, 0.3], seed=5)
    X = np.concatenate([data.X, data.X[:, :1]], axis=1)
    model = ss.ManifoldLabelModel(space, robust=False, shrinkage=0.0)
    model.fit(X, dependencies=[(0, 3)])
    pred, spread = model.predict(X, return_spread=True)
    err = space.dist(pred, data.Y) ** 2
    se = err.std() / np.sqrt(err.size)
    # the group {0, 3} weighs as one LF: thirds of three LFs with E d^2 = 2 * 0.3
    assert abs(err.mean() - 0.6 / 3) < 4 * se
    assert spread.mean() == pytest.approx(err.mean(), rel=0.08)


def test_spread_on_the_sphere_matches_the_error_for_small_noise():
    space = ss.Sphere(2)
    data = make_manifold_data(4000, space=space, noise_scale=[0.01, 0.02, 0.04], seed=1)
    model = ss.ManifoldLabelModel(space, robust=False).fit(data.X)
    pred, spread = model.predict(data.X, return_spread=True)
    err = space.dist(pred, data.Y) ** 2
    assert spread.mean() == pytest.approx(err.mean(), rel=0.1)


def test_predict_refuses_spread_over_dask(line):
    da = pytest.importorskip("dask.array")
    _, data, model = line
    with pytest.raises(ValueError, match="does not return the spread"):
        model.predict(da.from_array(data.X[:20], chunks=10), return_spread=True)


def test_filter_unlabeled_manifold_as_snorkel_filters(line):
    _, data, model = line
    X_lf = data.X[:200]
    pred, spread = model.predict(X_lf, return_spread=True)
    df = pd.DataFrame({"f": np.arange(200)}, index=np.arange(200) * 3)
    kept, y = filter_unlabeled_manifold(df, pred, X_lf)
    voted = ~np.isnan(X_lf[:, :, 0])
    assert kept.index.tolist() == (np.flatnonzero(voted.any(axis=1)) * 3).tolist()
    np.testing.assert_array_equal(y, pred[voted.any(axis=1)])
    limit = float(np.nanmedian(spread))
    kept, y = filter_unlabeled_manifold(
        df.to_numpy(), pred, X_lf, spread=spread, max_spread=limit
    )
    mask = voted.any(axis=1) & (np.nan_to_num(spread, nan=np.inf) <= limit)
    np.testing.assert_array_equal(kept[:, 0], np.flatnonzero(mask))
    assert 0 < mask.sum() < voted.any(axis=1).sum()
    with pytest.raises(ValueError, match="max_spread needs spread"):
        filter_unlabeled_manifold(df, pred, X_lf, max_spread=1.0)
    with pytest.raises(ValueError, match="X has 199 rows but L has 200"):
        filter_unlabeled_manifold(df.iloc[1:], pred, X_lf)


def test_save_load_round_trip_keeps_every_report(line, tmp_path):
    space, data, model = line
    path = tmp_path / "manifold.model"
    model.save(path)
    fresh = ss.ManifoldLabelModel(space).load(path)
    pred, spread = model.predict(data.X[:300], return_spread=True)
    pred2, spread2 = fresh.predict(data.X[:300], return_spread=True)
    np.testing.assert_array_equal(pred2, pred)
    np.testing.assert_array_equal(spread2, spread)
    np.testing.assert_array_equal(fresh.get_weights(), model.get_weights())
    metrics = ["coverage", "mean_distance", "mean_sq_distance"]
    assert fresh.score(data.X[:300], data.Y[:300], metrics) == model.score(
        data.X[:300], data.Y[:300], metrics
    )


def test_fit_refuses_all_abstain_outputs():
    X = np.full((50, 3, 2), NAN)
    with pytest.raises(ValueError, match="X has no votes: every labeling function"):
        ss.ManifoldLabelModel(ss.Euclidean(2)).fit(X)


def test_fit_refuses_raw_points_with_none_and_transposed_outputs():
    space = ss.Euclidean(2)
    raw = [[(0.0, 1.0), None, (1.0, 1.0)]] * 20
    with pytest.raises(ValueError, match="row of NaN where an LF abstains"):
        ss.ManifoldLabelModel(space).fit(raw)
    data = make_manifold_data(100, space=space, noise_scale=[0.1, 0.2, 0.3], seed=0)
    with pytest.raises(ValueError, match="looks transposed"):
        ss.ManifoldLabelModel(space).fit(data.X.transpose(1, 0, 2))
    model = ss.ManifoldLabelModel(space, robust=False).fit(data.X)
    with pytest.raises(ValueError, match="looks transposed"):
        model.predict(data.X[:5].transpose(1, 0, 2))
