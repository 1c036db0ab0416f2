"""Scale (issue 8): chunked, streamed and Dask-distributed fits; large label spaces."""

import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import snorkel_structured as ss
from snorkel_structured.spaces.manifolds import Hyperbolic
from snorkel_structured.synthetic import make_label_matrix
from snorkel_structured.synthetic_manifold import make_manifold_data

distributed = pytest.importorskip("dask.distributed")


@pytest.fixture(scope="module")
def client():
    """One real two-worker cluster for the whole module (every Dask call below uses it)."""
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c


@pytest.fixture(scope="module")
def ranking():
    return ss.synthetic.make_ranking_data(4000, abstain=[0.0, 0.1, 0.2], seed=0)


@pytest.fixture(scope="module")
def manifold():
    return make_manifold_data(
        3000, space=Hyperbolic(2), noise_scale=[0.2, 0.5, 1.0], seed=0
    )


def _finite_fits(data):
    kw = dict(estimator="mle", n_components=2, seed=0)
    L = data.L
    fits = {
        "array": ss.StructuredLabelModel(data.space, **kw).fit(L),
        "iterator": ss.StructuredLabelModel(data.space, **kw).fit(
            iter(np.array_split(L, 4))
        ),
        "generator": ss.StructuredLabelModel(data.space, **kw).fit(
            L[i : i + 700] for i in range(0, len(L), 700)
        ),
        "dask_array": ss.StructuredLabelModel(data.space, **kw).fit(
            da.from_array(L, chunks=(900, 2))
        ),
        "dask_dataframe": ss.StructuredLabelModel(data.space, **kw).fit(
            dd.from_pandas(pd.DataFrame(L, columns=["a", "b", "c"]), npartitions=3)
        ),
    }
    part = ss.StructuredLabelModel(data.space, **kw)
    for chunk in np.array_split(L, 3):
        part.partial_fit(chunk)
    fits["partial_fit"] = part
    return fits


def test_finite_fit_from_chunks_iterators_and_dask_equals_one_fit(client, ranking):
    fits = _finite_fits(ranking)
    ref = fits.pop("array")
    for name, lm in fits.items():
        assert lm.stats_.n_samples == 4000, name
        np.testing.assert_allclose(lm.theta_, ref.theta_, rtol=1e-12, err_msg=name)
        np.testing.assert_allclose(lm.prior_, ref.prior_, rtol=1e-12, err_msg=name)
        np.testing.assert_allclose(
            lm.expected_sq_dist_, ref.expected_sq_dist_, rtol=1e-12
        )


def test_finite_predict_over_dask_equals_in_memory(client, ranking):
    lm = ss.StructuredLabelModel(ranking.space, estimator="mle", n_components=2, seed=0)
    lm.fit(ranking.L)
    arr = da.from_array(ranking.L, chunks=(1000, 3))
    frame = dd.from_pandas(pd.DataFrame(ranking.L), npartitions=4)
    lazy = lm.predict_proba(arr)
    assert isinstance(lazy, da.Array) and lazy.shape == (4000, 24)
    np.testing.assert_allclose(lazy.compute(), lm.predict_proba(ranking.L), rtol=1e-12)
    np.testing.assert_allclose(
        lm.predict_proba(frame, labels="support").compute(),
        lm.predict_proba(ranking.L, labels="support"),
        rtol=1e-12,
    )
    np.testing.assert_array_equal(lm.predict(arr).compute(), lm.predict(ranking.L))
    np.testing.assert_array_equal(lm.predict(frame).compute(), lm.predict(ranking.L))


def test_manifold_fit_from_chunks_and_dask_equals_one_fit(client, manifold):
    X = manifold.X
    ref = ss.ManifoldLabelModel(Hyperbolic(2)).fit(X)
    flat = pd.DataFrame(X.reshape(len(X), -1))
    others = {
        "iterator": ss.ManifoldLabelModel(Hyperbolic(2)).fit(
            iter(np.array_split(X, 4))
        ),
        "dask_array": ss.ManifoldLabelModel(Hyperbolic(2)).fit(
            da.from_array(X, chunks=(800, 3, 3))
        ),
        "dask_dataframe": ss.ManifoldLabelModel(Hyperbolic(2)).fit(
            dd.from_pandas(flat, npartitions=3)
        ),
    }
    part = ss.ManifoldLabelModel(Hyperbolic(2))
    for chunk in np.array_split(X, 3):
        part.partial_fit(chunk)
    others["partial_fit"] = part
    for name, mm in others.items():
        np.testing.assert_allclose(
            mm.noise_scale_, ref.noise_scale_, rtol=1e-10, err_msg=name
        )
        np.testing.assert_allclose(
            mm.expected_sq_dist_, ref.expected_sq_dist_, rtol=1e-10
        )
    lazy = ref.predict(da.from_array(X, chunks=(1000, 3, 3)))
    assert isinstance(lazy, da.Array)
    np.testing.assert_allclose(lazy.compute(), ref.predict(X), rtol=1e-10)
    np.testing.assert_allclose(
        ref.predict(dd.from_pandas(flat, npartitions=2)).compute(),
        ref.predict(X),
        rtol=1e-10,
    )


@pytest.fixture(scope="module")
def s7():
    space = ss.Permutations(7)
    centers = np.array([1234, 4321])
    prior = np.zeros(len(space))
    prior[centers] = [0.3, 0.7]
    data = make_label_matrix(
        8000, space=space, theta=[0.3, 0.5, 0.4], prior=prior, seed=1
    )
    lm = ss.StructuredLabelModel(space, estimator="mle", n_components=2, seed=0).fit(
        data.L
    )
    return lm, data.L, data.Y, data.expected_sq_dist, centers


def test_permutations7_end_to_end_recovers_the_truth(s7):
    lm, L, Y, expected, centers = s7
    assert (
        "distance_matrix" not in lm.space.__dict__
    )  # the 5040 x 5040 matrix was never built
    np.testing.assert_array_equal(lm.support_, centers)
    np.testing.assert_allclose(lm.prior_[centers], [0.3, 0.7], atol=0.02)
    np.testing.assert_allclose(lm.expected_sq_dist_, expected, rtol=0.03)
    probs = lm.predict_proba(L, labels="support")
    assert probs.shape == (8000, 2)
    np.testing.assert_allclose(probs.sum(1), 1.0)
    assert (lm.predict(L) == Y).mean() > 0.99
    full = lm.predict_proba(L[:10])
    assert full.shape == (10, 5040)
    np.testing.assert_allclose(full[:, lm.support_], probs[:10])


def test_memory_budget_error_suggests_the_support_form(s7):
    lm, L, *_ = s7
    with pytest.raises(
        ValueError, match=r"\(8000, 5040\) float64 array .*labels='support'"
    ):
        lm.predict_proba(L, max_bytes=10**6)
    with pytest.raises(ValueError, match="labels must be one of"):
        lm.predict_proba(L, labels="some")


def test_large_space_refuses_dense_estimators(s7):
    lm, L, *_ = s7
    with pytest.raises(ValueError, match="estimator='mle'"):
        ss.StructuredLabelModel(lm.space, estimator="tensor").fit(L)
    with pytest.raises(ValueError, match="prior_support='all' on a space of 5040"):
        ss.StructuredLabelModel(lm.space, estimator="mle", prior_support="all").fit(L)
    with pytest.raises(ValueError, match="would build an"):
        lm.log_conditional_probs()


def test_noise_aware_end_model_on_permutations7_without_the_matrix(s7):
    # Q by seeded Monte Carlo (the (r+1)^m patterns are too many), weights from k rows
    # of S, and a kernel predictor over the support: the 5040 x 5040 matrix never built.
    lm, L, Y, _, centers = s7
    n = 600
    weights = lm.loss_weights(L[:n], seed=0, n_draws=2_000)
    assert weights.attrs["method"] == "monte_carlo"
    assert weights.attrs["support"] == sorted(centers.tolist())
    # features that reveal the center, as in the paper's end-model experiment
    X = (Y[:n] == centers[1]).astype(float)[:, None] + np.random.default_rng(0).normal(
        scale=0.3, size=(n, 2)
    )
    model = ss.KernelStructuredPredictor(lm.space).fit(X, weights)
    assert set(np.unique(model.predict(X)).tolist()) <= set(centers.tolist())
    assert model.score(X, Y[:n]) > 0.9
    assert "distance_matrix" not in lm.space.__dict__
