"""Fuzz properties of the kernel end models on small random features and labels.

Predictions are labels of the space (KernelStructuredPredictor: indices among the
candidates; KernelManifoldRegressor: finite points of the manifold), never NaN; bad
input is refused with a ValueError.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import snorkel_structured as ss
from tests.fuzz._common import (
    budget,
    label_matrices,
    manifold,
    perturb,
    random_points,
    run_or_value_error,
    user_warnings,
)


@st.composite
def features(draw: st.DrawFn, n: int) -> np.ndarray:
    """(n, f) finite features, sometimes with constant or duplicated columns/rows."""
    f = draw(st.integers(1, 3))
    X = draw(
        arrays(
            np.float64,
            (n, f),
            elements=st.floats(-1e3, 1e3, allow_nan=False, allow_subnormal=False),
        )
    )
    return X


@budget(40)
@given(
    n=st.integers(1, 20),
    r=st.integers(2, 6),
    kernel=st.sampled_from(["rbf", "linear"]),
    candidates=st.sampled_from(["support", "all"]),
    nu=st.sampled_from([1e-3, 1.0, 0.0]),
    data=st.data(),
)
def test_kernel_structured_predictor_predicts_labels(
    n, r, kernel, candidates, nu, data
):
    space = ss.Discrete(cardinality=r) if r != 6 else ss.Permutations(3)
    X = data.draw(features(n), label="X")
    y = np.array(data.draw(st.lists(st.integers(0, r - 1), min_size=n, max_size=n)))
    X_new = data.draw(features(data.draw(st.integers(1, 5))), label="X_new")
    model = ss.KernelStructuredPredictor(
        space, kernel=kernel, candidates=candidates, nu=nu
    )
    with user_warnings():
        fitted = run_or_value_error(lambda: model.fit(X, y))
        if fitted is None:
            return
        if X_new.shape[1] != X.shape[1]:
            X_new = np.resize(X_new, (len(X_new), X.shape[1]))
        scores = fitted.decision_function(X_new)
        pred = fitted.predict(X_new)
    assert np.isfinite(scores).all()
    assert pred.shape == (len(X_new),) and ((pred >= 0) & (pred < r)).all()
    assert np.isin(pred, fitted.candidates_).all()
    if candidates == "support":
        assert np.isin(pred, y).all()


@budget(5)
@given(data=st.data())
def test_kernel_structured_predictor_on_loss_weights(data):
    space = ss.Permutations(3)
    L = data.draw(label_matrices(len(space), min_rows=8, max_rows=30), label="L")
    X = data.draw(features(len(L)), label="X")
    with user_warnings():
        lm = run_or_value_error(lambda: ss.StructuredLabelModel(space, seed=0).fit(L))
        if lm is None:
            return
        weights = run_or_value_error(lambda: lm.loss_weights(L, seed=0))
        if weights is None:
            return
        assert np.isfinite(weights.drop(columns="pseudolabel").to_numpy()).all()
        model = run_or_value_error(
            lambda: ss.KernelStructuredPredictor(space).fit(X, weights)
        )
        if model is None:
            return
        pred = model.predict(X)
    assert ((pred >= 0) & (pred < len(space))).all()


@budget(40)
@given(
    kind=st.sampled_from(["euclidean", "sphere", "hyperbolic"]),
    dim=st.integers(1, 3),
    n=st.integers(1, 15),
    kernel=st.sampled_from(["rbf", "linear"]),
    data=st.data(),
)
def test_kernel_manifold_regressor_predicts_points(kind, dim, n, kernel, data):
    space = manifold(kind, dim)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    X = data.draw(features(n), label="X")
    Y = random_points(kind, dim, n, {"sphere": np.pi}.get(kind, 4.0), rng)
    X_new = data.draw(
        arrays(
            np.float64,
            (data.draw(st.integers(1, 5)), X.shape[1]),
            elements=st.floats(-1e4, 1e4, allow_nan=False),
        ),
        label="X_new",
    )
    with user_warnings():
        model = run_or_value_error(
            lambda: ss.KernelManifoldRegressor(space, kernel=kernel).fit(X, Y)
        )
        if model is None:
            return
        pred = model.predict(X_new)
    assert pred.shape == (len(X_new), space.ambient_dim)
    assert np.isfinite(pred).all() and space.belongs(pred).all()


@budget(15)
@given(
    kind=st.sampled_from(["euclidean", "sphere", "hyperbolic"]),
    dim=st.integers(1, 3),
    data=st.data(),
)
def test_kernel_manifold_regressor_on_lf_outputs(kind, dim, data):
    space = manifold(kind, dim)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    n = data.draw(st.integers(12, 40))
    truth = random_points(kind, dim, n, {"sphere": np.pi}.get(kind, 3.0), rng)
    m = 3
    lfs = np.stack(
        [perturb(kind, truth, 0.3 * rng.random(n), rng) for _ in range(m)], 1
    )
    lfs[rng.random((n, m)) < data.draw(st.floats(0.0, 0.5))] = np.nan
    X = data.draw(features(n), label="X")
    with user_warnings():
        lm = run_or_value_error(
            lambda: ss.ManifoldLabelModel(space, min_overlap=3, seed=0).fit(lfs)
        )
        if lm is None:
            return
        model = run_or_value_error(
            lambda: ss.KernelManifoldRegressor(space).fit(X, lfs, lm)
        )
        if model is None:
            return
        pred = model.predict(X)
    assert np.isfinite(pred).all() and space.belongs(pred).all()


@budget(30)
@given(
    bad=st.sampled_from(["nan", "inf", "1d", "no_features", "rows", "labels"]),
    end=st.sampled_from(["structured", "manifold"]),
)
def test_end_models_refuse_bad_input_with_value_error(bad, end):
    X = np.arange(12.0).reshape(6, 2)
    y = np.array([0, 1, 2, 0, 1, 2])
    if end == "manifold":
        space = ss.Sphere(2)
        y = random_points("sphere", 2, 6, np.pi, np.random.default_rng(0))
        model = ss.KernelManifoldRegressor(space)
    else:
        model = ss.KernelStructuredPredictor(ss.Discrete(3))
    if bad == "nan":
        X[0, 0] = np.nan
    elif bad == "inf":
        X[0, 0] = np.inf
    elif bad == "1d":
        X = X[:, 0]
    elif bad == "no_features":
        X = X[:, :0]
    elif bad == "rows":
        X = X[:5]
    else:
        y = y * 10.0 if end == "manifold" else y + 3
    try:
        model.fit(X, y)
    except ValueError as exc:
        assert str(exc).strip()
    else:
        raise AssertionError(f"{type(model).__name__} accepted {bad}")
