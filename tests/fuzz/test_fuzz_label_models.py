"""Fuzz properties of the label models, baselines and aggregators on random votes.

Whatever the votes (few rows, random abstains, rows and LFs that never vote,
duplicated LFs), a label model either fits or refuses with a ValueError that says why;
a fitted model returns no NaN/inf, posteriors that are distributions, and labels of the
space (or -1). Warnings must carry a message and no raw numpy warning may leak.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import snorkel_structured as ss
from snorkel_structured import aggregators
from tests.fuzz._common import (
    budget,
    distance_matrices,
    label_matrices,
    manifold,
    perturb,
    random_points,
    run_or_value_error,
    user_warnings,
)


@st.composite
def finite_spaces(draw: st.DrawFn, max_labels: int = 6) -> ss.FiniteMetricSpace:
    kind = draw(st.sampled_from(["discrete", "permutations", "metric", "tree"]))
    if kind == "discrete":
        return ss.Discrete(cardinality=draw(st.integers(2, max_labels)))
    if kind == "permutations":
        return ss.Permutations(
            n_items=3, metric=draw(st.sampled_from(["kendall_tau", "cayley"]))
        )
    if kind == "metric":
        D = draw(distance_matrices(min_r=2, max_r=max_labels, low=0.1, high=10.0))
        return ss.FiniteMetricSpace([f"y{i}" for i in range(len(D))], D)
    n = draw(st.integers(2, max_labels))
    return ss.GraphSpace(nx.random_labeled_tree(n, seed=draw(st.integers(0, 999))))


def _check_fitted_structured(lm: ss.StructuredLabelModel, L: np.ndarray) -> None:
    r = len(lm.space)
    prior = np.asarray(lm.prior_)
    assert prior.shape == (r,) and np.isfinite(prior).all() and (prior >= 0).all()
    assert abs(prior.sum() - 1.0) <= 1e-9
    for name in ("theta_", "expected_sq_dist_", "coverage_", "abstain_"):
        value = np.asarray(getattr(lm, name), dtype=np.float64)
        assert np.isfinite(value).all(), f"{name} = {value}"
    assert (np.asarray(lm.expected_sq_dist_) >= 0).all()
    P = lm.predict_proba(L)
    assert P.shape == (len(L), r)
    assert np.isfinite(P).all() and (P >= 0).all()
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-9)
    silent = (L == ss.ABSTAIN).all(axis=1)
    # documented: rows where no LF votes get the prior, as in Snorkel
    np.testing.assert_allclose(
        P[silent], np.broadcast_to(prior, P[silent].shape), atol=1e-9
    )
    for decision in ("map", "distance", "sq_distance"):
        pred = lm.predict(L, decision=decision)
        assert pred.shape == (len(L),) and pred.dtype.kind == "i"
        assert ((pred >= ss.ABSTAIN) & (pred < r)).all()
        if decision != "map":  # the least expected (squared) distance always exists
            assert (pred >= 0).all()
    cond = (
        lm.get_conditional_probs()
    )  # (m, r + 1, r): P(lambda_a = v | y), abstain first
    assert cond.shape == (L.shape[1], r + 1, r) and np.isfinite(cond).all()
    np.testing.assert_allclose(cond.sum(axis=1), 1.0, atol=1e-8)
    weights = lm.get_weights()
    assert (
        np.isfinite(weights).all() and ((weights >= 0) & (weights <= 1 + 1e-12)).all()
    )


@budget(25)
@given(
    data=st.data(),
    space=finite_spaces(),
    estimator=st.sampled_from(["mle", "mle", "tensor", "uws"]),
)
def test_structured_label_model_on_random_votes(space, estimator, data):
    L = data.draw(label_matrices(len(space)), label="L")
    with user_warnings():
        lm = run_or_value_error(
            lambda: ss.StructuredLabelModel(space, estimator=estimator, seed=0).fit(L)
        )
        if lm is not None:
            _check_fitted_structured(lm, L)
            # vote patterns never seen in fit
            new = data.draw(label_matrices(len(space), n_lfs=L.shape[1]), label="L_new")
            _check_fitted_structured(lm, new)


@budget(5)
@given(
    D=distance_matrices(min_r=3, max_r=5, low=0.5, high=5.0),
    data=st.data(),
    c=st.floats(1e-3, 1e3),
)
def test_structured_label_model_is_scale_invariant(D, c, data):
    """exp(-theta d^2) with theta/c^2 on c*d is the same model: same predictions."""
    L = data.draw(label_matrices(len(D), min_rows=20, max_rows=40), label="L")
    items = [f"y{i}" for i in range(len(D))]
    with user_warnings():
        base = run_or_value_error(
            lambda: ss.StructuredLabelModel(ss.FiniteMetricSpace(items, D), seed=0).fit(
                L
            )
        )
        scaled = run_or_value_error(
            lambda: ss.StructuredLabelModel(
                ss.FiniteMetricSpace(items, c * D), seed=0
            ).fit(L)
        )
    assert (base is None) == (scaled is None)
    if base is not None:
        # EM stops at a tolerance on the log-likelihood per row, and its accelerated
        # steps mix theta (in the space's units) with log prior weights, so the two
        # fits agree to about sqrt(tol) in their parameters; on a few dozen rows with
        # a prior over the whole space, the posteriors to about 1e-2. The MAP must
        # agree wherever the base posterior's top two labels are that far apart.
        p_base, p_scaled = base.predict_proba(L), scaled.predict_proba(L)
        np.testing.assert_allclose(p_base, p_scaled, atol=1e-2)
        top2 = np.sort(p_base, axis=1)[:, -2:]
        clear = top2[:, 1] - top2[:, 0] > 2e-2
        np.testing.assert_array_equal(base.predict(L)[clear], scaled.predict(L)[clear])


# --- baselines and aggregators --------------------------------------------------------


@budget(40)
@given(
    space=finite_spaces(),
    method=st.sampled_from(["majority", "kemeny", "frechet_mean", "medoid"]),
    data=st.data(),
)
def test_aggregating_voter_is_optimal_for_its_rule(space, method, data):
    L = data.draw(label_matrices(len(space), max_rows=15, min_lfs=1), label="L")
    m = L.shape[1]
    w = np.array(data.draw(st.lists(st.floats(0.0, 10.0), min_size=m, max_size=m)))
    if method != "majority" and not (w > 0).any():  # majority ignores weights
        with pytest.raises(ValueError, match="weights must have a positive entry"):
            ss.AggregatingVoter(space, method=method, weights=w).fit(L).predict(L)
        return
    with user_warnings():
        voter = ss.AggregatingVoter(space, method=method, weights=w).fit(L)
        pred = voter.predict(L)
    r = len(space)
    D = np.asarray(space.distance_matrix)
    # A weight-0 LF counts as abstaining (scikit-learn's zero sample weight).
    counted = (L != ss.ABSTAIN) & ((w > 0) | (method == "majority"))
    silent = ~counted.any(axis=1)
    np.testing.assert_array_equal(pred == ss.ABSTAIN, silent)  # -1 exactly there
    for row, c, y in zip(L[~silent], counted[~silent], pred[~silent], strict=True):
        votes, wv = row[c], w[c]
        if method == "majority":
            counts = np.bincount(votes, minlength=r)
            assert counts[y] == counts.max()
            continue
        cost = D if method == "kemeny" else D**2
        scores = (wv[:, None] * cost[votes]).sum(axis=0)  # (r,)
        allowed = np.unique(votes) if method == "medoid" else np.arange(r)
        assert y in allowed
        assert scores[y] <= scores[allowed].min() + 1e-9 * max(1.0, scores.max())


@budget(30)
@given(
    space=finite_spaces(max_labels=4),
    rule=st.sampled_from(["frechet_mean", "kemeny", "medoid", "majority_vote"]),
    bad=st.sampled_from(
        [
            "weights_nan",
            "weights_negative",
            "weights_shape",
            "L_float",
            "L_range",
            "L_1d",
        ]
    ),
)
def test_aggregators_refuse_bad_input_with_value_error(space, rule, bad):
    r = len(space)
    L = np.zeros((4, 3), dtype=np.int64)
    w = np.ones(3)
    if bad == "weights_nan":
        w[0] = np.nan
    elif bad == "weights_negative":
        w[0] = -1.0
    elif bad == "weights_shape":
        w = np.ones(4)
    elif bad == "L_float":
        L = L + 0.5
    elif bad == "L_range":
        L[0, 0] = r
    else:
        L = L[:, 0]
    if rule == "majority_vote":
        if bad.startswith("weights"):
            return  # majority_vote has no weights
        call = lambda: aggregators.majority_vote(L, r)  # noqa: E731
    else:
        call = lambda: getattr(aggregators, rule)(L, space, w)  # noqa: E731
    try:
        call()
    except ValueError as exc:
        assert str(exc).strip()
    else:
        raise AssertionError(f"{rule} accepted {bad}")


# --- manifold label model --------------------------------------------------------------


@st.composite
def manifold_votes(
    draw: st.DrawFn, kind: str, dim: int, max_rows: int = 60, n_lfs: int | None = None
) -> np.ndarray:
    """(n, m, ambient) LF outputs around a planted truth; NaN rows are abstains."""
    n = draw(st.integers(1, max_rows))
    m = draw(st.integers(3, 5)) if n_lfs is None else n_lfs
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    truth = random_points(kind, dim, n, {"sphere": np.pi}.get(kind, 3.0), rng)
    scales = np.array(draw(st.lists(st.floats(0.0, 2.0), min_size=m, max_size=m)))
    X = np.stack([perturb(kind, truth, s * rng.random(n), rng) for s in scales], axis=1)
    abstain = rng.random((n, m)) < draw(st.floats(0.0, 0.8))
    if draw(st.booleans()):
        abstain[:, draw(st.integers(0, m - 1))] = True
    if draw(st.booleans()):
        abstain[rng.random(n) < 0.3] = True
    if draw(st.booleans()):
        a, b = draw(st.permutations(range(m)))[:2]
        X[:, b] = X[:, a]
        abstain[:, b] = abstain[:, a]
    X[abstain] = np.nan
    return X


@budget(40)
@given(
    kind=st.sampled_from(["euclidean", "sphere", "hyperbolic"]),
    dim=st.integers(1, 3),
    estimator=st.sampled_from(["triplet", "pair_sq_dist", "uws"]),
    robust=st.sampled_from(["auto", True, False]),
    min_overlap=st.sampled_from([1, 3, 10]),
    data=st.data(),
)
def test_manifold_label_model_on_random_votes(
    kind, dim, estimator, robust, min_overlap, data
):
    space = manifold(kind, dim)
    X = data.draw(manifold_votes(kind, dim), label="X")
    with user_warnings():
        lm = run_or_value_error(
            lambda: ss.ManifoldLabelModel(
                space,
                estimator=estimator,
                robust=robust,
                min_overlap=min_overlap,
                seed=0,
            ).fit(X)
        )
        if lm is None:
            return
        for name in ("weights_", "expected_sq_dist_", "noise_scale_", "outlier_rate_"):
            value = np.asarray(getattr(lm, name), dtype=np.float64)
            assert np.isfinite(value).all(), f"{name} = {value}"
        assert abs(lm.weights_.sum() - 1.0) <= 1e-9 and (lm.weights_ >= 0).all()
        # and on votes never seen in fit
        X = np.concatenate([X, data.draw(manifold_votes(kind, dim, n_lfs=X.shape[1]))])
        pred = lm.predict(X)
        resp = lm.responsibilities(X)
    silent = np.isnan(X).any(axis=2).all(axis=1)
    assert pred.shape == (len(X), space.ambient_dim)
    assert np.isnan(pred[silent]).all()  # documented: NaN where every LF abstained
    assert np.isfinite(pred[~silent]).all()
    assert space.belongs(pred[~silent]).all()
    voted = ~np.isnan(X).any(axis=2)
    assert np.isfinite(resp).all() and ((resp >= 0) & (resp <= 1)).all()
    assert (resp[~voted] == 0).all()


@budget(30)
@given(
    kind=st.sampled_from(["euclidean", "sphere", "hyperbolic"]),
    dim=st.integers(1, 3),
    data=st.data(),
)
def test_manifold_mean_voter_returns_points_of_the_space(kind, dim, data):
    space = manifold(kind, dim)
    X = data.draw(manifold_votes(kind, dim, max_rows=10), label="X")
    m = X.shape[1]
    w = np.array(data.draw(st.lists(st.floats(0.0, 10.0), min_size=m, max_size=m)))
    if not (w > 0).any():  # ignores every LF: refused rather than NaN everywhere
        with pytest.raises(ValueError, match="positive entry"):
            ss.ManifoldMeanVoter(space, weights=w).fit(X)
        return
    with user_warnings():
        pred = ss.ManifoldMeanVoter(space, weights=w).fit(X).predict(X)
    usable = (~np.isnan(X).any(axis=2) & (w > 0)).any(axis=1)
    assert pred.shape == (len(X), space.ambient_dim)
    assert np.isnan(pred[~usable]).all()
    assert np.isfinite(pred[usable]).all() and space.belongs(pred[usable]).all()


@budget(40)
@given(
    space=finite_spaces(max_labels=4),
    bad=st.sampled_from(
        [
            "nan",
            "fraction",
            "too_high",
            "below_abstain",
            "1d",
            "two_lfs",
            "empty",
            "text",
        ]
    ),
    data=st.data(),
)
def test_label_models_refuse_bad_label_matrices(space, bad, data):
    r = len(space)
    L = data.draw(label_matrices(r, min_rows=2, max_rows=6), label="L").astype(object)
    if bad == "nan":
        L = L.astype(np.float64)
        L[0, 0] = np.nan
    elif bad == "fraction":
        L = L.astype(np.float64) + 0.5
    elif bad == "too_high":
        L[0, 0] = r
    elif bad == "below_abstain":
        L[0, 0] = -2
    elif bad == "1d":
        L = L[:, 0]
    elif bad == "two_lfs":
        L = L[:, :2]
    elif bad == "empty":
        L = L[:0]
    else:
        L[0, 0] = "a"
    models = [ss.StructuredLabelModel(space, seed=0)]
    if bad != "two_lfs":  # baselines accept any number of LFs
        models.append(ss.AggregatingVoter(space))
    for model in models:
        with user_warnings():
            try:
                model.fit(L)
            except ValueError as exc:
                assert str(exc).strip()
            else:
                raise AssertionError(f"{bad} label matrix accepted")


@budget(30)
@given(
    kind=st.sampled_from(["euclidean", "sphere", "hyperbolic"]),
    dim=st.integers(1, 3),
    bad=st.sampled_from(["off_manifold", "inf", "ambient", "2d", "empty", "half_nan"]),
    data=st.data(),
)
def test_manifold_models_refuse_bad_outputs(kind, dim, bad, data):
    space = manifold(kind, dim)
    X = data.draw(manifold_votes(kind, dim, max_rows=8), label="X")
    if bad == "off_manifold":
        if kind == "euclidean":
            return  # every finite vector is a point of R^d
        X[0, 0] = 3.0 * np.where(np.isnan(X[0, 0]), 1.0, X[0, 0]) + 1.0
    elif bad == "inf":
        X[0, 0, -1] = np.inf
    elif bad == "ambient":
        X = np.concatenate([X, X[..., :1]], axis=-1)
    elif bad == "2d":
        X = X[:, 0]
    elif bad == "empty":
        X = X[:0]
    else:  # a vote that is NaN in one coordinate only
        X[0, 0] = np.where(np.isnan(X[0, 0]), 0.5, X[0, 0])
        X[0, 0, 0] = np.nan
    for model in (ss.ManifoldLabelModel(space, seed=0), ss.ManifoldMeanVoter(space)):
        with user_warnings():
            try:
                model.fit(X)
            except ValueError as exc:
                assert str(exc).strip()
            else:  # (a partly NaN vote is refused too: a full NaN row abstains)
                raise AssertionError(f"{type(model).__name__} accepted {bad} outputs")
