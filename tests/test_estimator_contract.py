"""One contract for every estimator: the scikit-learn conventions of STYLE rule 4."""

import copy
import pickle

import numpy as np
import pytest
from sklearn.base import clone

import snorkel_structured as ss
from snorkel_structured.synthetic import make_ranking_data
from snorkel_structured.synthetic_manifold import make_manifold_data

RANKS = make_ranking_data(2_000, seed=0, abstain=0.1)
SPHERE = ss.Sphere(2)
POINTS = make_manifold_data(
    2_000, space=SPHERE, noise_scale=[0.05, 0.1, 0.2], abstain=0.1, seed=1
)
FEATURES = np.random.default_rng(2).normal(size=(2_000, 4))


def _fit_args(name):
    return {
        "structured_lm": (RANKS.L,),
        "manifold_lm": (POINTS.X,),
        "kernel_structured": (FEATURES[:300], RANKS.Y[:300]),
        "kernel_manifold": (FEATURES[:300], POINTS.Y[:300]),
        "embedding": (RANKS.space,),
    }[name]


def _make(name, **params):
    return {
        "structured_lm": lambda: ss.StructuredLabelModel(
            RANKS.space, estimator="mle", seed=0, **params
        ),
        "manifold_lm": lambda: ss.ManifoldLabelModel(SPHERE, seed=0, **params),
        "kernel_structured": lambda: ss.KernelStructuredPredictor(
            RANKS.space, **params
        ),
        "kernel_manifold": lambda: ss.KernelManifoldRegressor(SPHERE, **params),
        "embedding": lambda: ss.PseudoEuclideanEmbedding(seed=0, **params),
    }[name]()


def _fitted_state(est):
    return {
        k: v for k, v in vars(est).items() if k.endswith("_") and not k.startswith("_")
    }


def _assert_equal(x, y, key):
    if isinstance(x, np.ndarray):
        np.testing.assert_array_equal(x, y, err_msg=key)
    elif isinstance(x, (tuple, list)):
        assert len(x) == len(y), key
        for u, v in zip(x, y, strict=True):
            _assert_equal(u, v, key)
    elif isinstance(x, (int, float, str, bool)):
        assert x == y, key


def _assert_same(a, b):
    assert a.keys() == b.keys()
    for key in a:
        _assert_equal(a[key], b[key], key)


NAMES = [
    "structured_lm",
    "manifold_lm",
    "kernel_structured",
    "kernel_manifold",
    "embedding",
]


@pytest.mark.parametrize("name", NAMES)
def test_init_stores_params_and_clone_round_trips(name):
    est = _make(name)
    params = est.get_params()
    twin = clone(est)
    assert twin is not est and twin.get_params().keys() == params.keys()
    for key, value in params.items():
        assert twin.get_params()[key] is value or twin.get_params()[key] == value
    assert not _fitted_state(est)  # __init__ sets no fitted attribute


@pytest.mark.parametrize("name", NAMES)
def test_fit_returns_self_refits_identically_and_does_not_mutate(name):
    args = _fit_args(name)
    before = [copy.deepcopy(a) for a in args]
    est = _make(name)
    assert est.fit(*args) is est
    for a, b in zip(args, before, strict=True):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)  # inputs untouched
    state = _fitted_state(est)
    assert state
    _assert_same(
        state, _fitted_state(_make(name).fit(*args))
    )  # int seed: identical refits
    _assert_same(state, _fitted_state(pickle.loads(pickle.dumps(est))))


@pytest.mark.parametrize(
    "name, method, arg",
    [
        ("structured_lm", "predict", RANKS.L[:5]),
        ("structured_lm", "predict_proba", RANKS.L[:5]),
        ("manifold_lm", "predict", POINTS.X[:5]),
        ("kernel_structured", "predict", FEATURES[:5]),
        ("kernel_manifold", "predict", FEATURES[:5]),
        ("embedding", "transform", [0, 1]),
    ],
)
def test_not_fitted_error(name, method, arg):
    from sklearn.exceptions import NotFittedError as SklearnNotFittedError

    with pytest.raises(ss.NotFittedError, match="not fitted"):
        getattr(_make(name), method)(arg)
    # the docstrings promise that scikit-learn's except clause catches it too
    with pytest.raises(SklearnNotFittedError):
        getattr(_make(name), method)(arg)


@pytest.mark.parametrize("name", ["kernel_structured", "kernel_manifold"])
def test_end_models_check_features_as_scikit_learn_does(name):
    import scipy.sparse as sparse

    X, y = _fit_args(name)
    est = _make(name).fit(X, y)
    assert est.n_features_in_ == X.shape[1]
    with pytest.raises(ValueError, match="expecting 4 features"):
        est.predict(X[:3, :2])
    bad = {
        "no feature": (X[:, :0], "at least one row and column"),
        "complex": (X.astype(complex), "complex"),
        "sparse": (sparse.csr_matrix(X), "sparse"),
    }
    for what, (features, match) in bad.items():
        with pytest.raises(ValueError, match=match):
            _make(name).fit(features, y)
        if what != "no feature":
            with pytest.raises(ValueError, match=match):
                est.predict(features[:3])
