"""Fuzz properties of the finite label spaces and the pseudo-Euclidean embedding.

Properties come from the documentation and the mathematics (the paper's section 3.1 and
the docstrings), checked against brute force: networkx's own shortest paths, the
definitions of the permutation metrics, explicit triple loops.
"""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import snorkel_structured as ss
from tests.fuzz._common import (
    budget,
    check_user_error,
    distance_matrices,
    weighted_graphs,
)

# relative accuracy of an exact embedding (the eigenvalue cutoff tol=1e-9 is relative
# to max|c| <= r max S / 2, so dropped eigenvalues move d^2 by at most ~r 1e-9 max S)
ISOMETRY_RTOL = 1e-8


def _check_metric_axioms(space: ss.FiniteMetricSpace, metric: bool) -> None:
    D = np.asarray(space.distance_matrix)
    r = len(space)
    assert D.shape == (r, r)
    assert np.isfinite(D).all() and (D >= 0).all()
    np.testing.assert_array_equal(D, D.T)
    np.testing.assert_array_equal(np.diag(D), 0.0)
    i, j = np.meshgrid(np.arange(r), np.arange(r), indexing="ij")
    np.testing.assert_array_equal(space.dist(i, j), D)  # batched dist == matrix
    np.testing.assert_allclose(space.squared_distance_matrix, D**2, rtol=1e-15)
    # brute-force largest triangle violation d(i,k) - d(i,j) - d(j,k)
    worst = max(
        D[a, c] - D[a, b] - D[b, c] for a, b, c in itertools.product(range(r), repeat=3)
    )
    assert space.max_triangle_violation() == pytest.approx(worst, abs=1e-12 * D.max())
    if metric:
        assert worst <= 1e-9 * max(1.0, D.max())


def _check_round_trip(space: ss.FiniteMetricSpace, data: st.DataObject) -> None:
    r = len(space)
    items = list(space.items)
    np.testing.assert_array_equal(space.encode(items), np.arange(r))
    assert space.decode(np.arange(r)) == items
    idx = np.array(
        data.draw(st.lists(st.integers(-1, r - 1), max_size=12), label="indices"),
        dtype=np.int64,
    )
    decoded = space.decode(idx)
    assert [x is None for x in decoded] == (idx == ss.ABSTAIN).tolist()
    np.testing.assert_array_equal(space.encode(decoded), idx)
    for i in range(r):
        assert space.index(space.item(i)) == i


def _check_isometry(space_or_S, S: np.ndarray) -> None:
    emb = ss.PseudoEuclideanEmbedding().fit(space_or_S)
    X, s = emb.coords_, emb.signs_
    d_pos, d_neg = emb.signature_
    assert X.shape == (S.shape[0], d_pos + d_neg)
    np.testing.assert_array_equal(s, np.r_[np.ones(d_pos), -np.ones(d_neg)])
    # d^2(y_i, y_j) = sum_k s_k (X_ik - X_jk)^2, recomputed here from the coordinates
    diff = X[:, None, :] - X[None, :, :]
    embedded = np.einsum("ijk,k->ij", diff * diff, s)
    scale = max(float(S.max()), np.finfo(float).tiny)
    err = float(np.abs(embedded - S).max()) / scale
    assert err <= ISOMETRY_RTOL, f"relative isometry error {err:.3g}"
    assert emb.isometry_error() <= ISOMETRY_RTOL


# --- FiniteMetricSpace -----------------------------------------------------------------


@budget(40)
@given(D=distance_matrices(low=1e-3, high=1e3), data=st.data())
def test_finite_metric_space_round_trip_and_distances(D, data):
    items = [f"label{i}" for i in range(len(D))]
    space = ss.FiniteMetricSpace(items, D)
    np.testing.assert_array_equal(space.distance_matrix, D)
    _check_metric_axioms(space, metric=False)
    assert space.is_metric() == (space.max_triangle_violation() <= 1e-9)
    _check_round_trip(space, data)


@budget(40)
@given(D=distance_matrices(low=1e-3, high=1e3))
def test_embedding_of_random_semimetric_is_isometric(D):
    space = ss.FiniteMetricSpace(range(len(D)), D)
    _check_isometry(space, D**2)
    _check_isometry(D**2, D**2)  # fit on the squared-distance matrix itself


@st.composite
def _broken_matrices(draw):
    """Distance matrices with exactly one documented defect."""
    D = draw(distance_matrices(min_r=2, max_r=5))
    r = len(D)
    kind = draw(
        st.sampled_from(
            ["nan", "inf", "negative", "asymmetric", "diagonal", "shape", "ragged"]
        )
    )
    i, j = draw(st.integers(0, r - 1)), draw(st.integers(0, r - 1))
    if kind in ("nan", "inf"):
        bad = np.nan if kind == "nan" else draw(st.sampled_from([np.inf, -np.inf]))
        D[i, j] = bad
        if draw(st.booleans()):
            D[j, i] = bad
        return kind, D
    if kind == "negative":
        j = (i + 1) % r
        D[i, j] = D[j, i] = -draw(st.floats(1e-6, 1e3))
        return kind, D
    if kind == "asymmetric":
        j = (i + 1) % r
        D[i, j] *= draw(st.floats(1.01, 10.0))
        return kind, D
    if kind == "diagonal":
        D[i, i] = draw(st.floats(1e-3, 1e3))
        return kind, D
    if kind == "ragged":
        return kind, [list(row[: 1 + (k % r)]) for k, row in enumerate(D)]
    shape = draw(st.sampled_from(["wide", "flat", "cube", "empty", "scalar"]))
    return kind, {
        "wide": np.c_[D, np.ones(r)],
        "flat": D.ravel(),
        "cube": D[None],
        "empty": np.zeros((0, 0)),
        "scalar": np.float64(1.0),
    }[shape]


@budget(60)
@given(case=_broken_matrices())
def test_invalid_distance_matrix_raises_value_error(case):
    kind, D = case
    r = len(D) if isinstance(D, list) or np.ndim(D) >= 1 else 1
    for build in (
        lambda: ss.FiniteMetricSpace(range(r), D),
        lambda: ss.PseudoEuclideanEmbedding().fit(D),
        lambda: ss.GraphSpace(D) if kind in ("nan", "inf", "shape", "ragged") else 0,
    ):
        try:
            out = build()
        except Exception as exc:  # noqa: BLE001 - the type is what is checked
            check_user_error(exc)
        else:
            assert out == 0, f"{kind} accepted"


@budget(30)
@given(
    D=distance_matrices(max_r=4),
    items=st.sampled_from(["short", "long", "dup", "none", "unhashable"]),
)
def test_invalid_items_raise_clean_errors(D, items):
    r = len(D)
    bad = {
        "short": list(range(r - 1)),
        "long": list(range(r + 1)),
        "dup": [0] * r,
        "none": [None] + list(range(1, r)),
        "unhashable": [[i] for i in range(r)],
    }[items]
    with pytest.raises((ValueError, TypeError)) as info:
        ss.FiniteMetricSpace(bad, D)
    assert str(info.value).strip()
    if items != "unhashable":  # a documented TypeError: items must be hashable
        assert info.type is ValueError


@budget(40)
@given(
    D=distance_matrices(max_r=4),
    probe=st.one_of(
        st.integers(-100, 100),
        st.floats(allow_nan=True),
        st.text(max_size=3),
        st.none(),
    ),
)
def test_lookups_outside_the_space_raise_value_error(D, probe):
    space = ss.FiniteMetricSpace([f"x{i}" for i in range(len(D))], D)
    r = len(space)
    if not (isinstance(probe, int) and 0 <= probe < r):
        with pytest.raises(ValueError):
            space.item(probe)
    with pytest.raises(ValueError):
        space.index(probe)  # no probe is an item ("x0", ...)
    if isinstance(probe, int) and not -1 <= probe < r:
        with pytest.raises(ValueError):
            space.decode(np.array([probe]))
    with pytest.raises(ValueError):
        space.decode(np.array([0.5]))  # float indices are refused


# --- Discrete and Permutations -----------------------------------------------------------


@budget(15)
@given(k=st.integers(2, 12), data=st.data())
def test_discrete_is_the_zero_one_metric(k, data):
    space = ss.Discrete(cardinality=k)
    np.testing.assert_array_equal(space.distance_matrix, 1.0 - np.eye(k))
    _check_metric_axioms(space, metric=True)
    _check_round_trip(space, data)
    _check_isometry(space, 1.0 - np.eye(k))


@budget(20)
@given(k=st.one_of(st.integers(-5, 1), st.floats(0, 5), st.booleans(), st.none()))
def test_discrete_refuses_bad_cardinality(k):
    with pytest.raises(ValueError):
        ss.Discrete(cardinality=k)


def _brute_permutation_distance(p, q, metric: str) -> float:
    n = len(p)
    pos_p = {item: k for k, item in enumerate(p)}
    pos_q = {item: k for k, item in enumerate(q)}
    if metric == "kendall_tau":
        return float(
            sum(
                (pos_p[i] - pos_p[j]) * (pos_q[i] - pos_q[j]) < 0
                for i, j in itertools.combinations(range(n), 2)
            )
        )
    if metric == "spearman_footrule":
        return float(sum(abs(pos_p[i] - pos_q[i]) for i in range(n)))
    if metric == "hamming":
        return float(sum(a != b for a, b in zip(p, q, strict=True)))
    # cayley: fewest transpositions taking p to q, by breadth-first search
    frontier, seen, steps = {tuple(p)}, {tuple(p)}, 0
    while tuple(q) not in frontier:
        nxt = set()
        for s in frontier:
            for a, b in itertools.combinations(range(n), 2):
                t = list(s)
                t[a], t[b] = t[b], t[a]
                if tuple(t) not in seen:
                    seen.add(tuple(t))
                    nxt.add(tuple(t))
        frontier, steps = nxt, steps + 1
    return float(steps)


@budget(16)
@given(
    n=st.integers(2, 4),
    metric=st.sampled_from(["kendall_tau", "spearman_footrule", "cayley", "hamming"]),
    data=st.data(),
)
def test_permutation_metrics_match_their_definitions(n, metric, data):
    space = ss.Permutations(n_items=n, metric=metric)
    assert len(space) == len(set(itertools.permutations(range(n))))
    _check_metric_axioms(space, metric=True)
    _check_round_trip(space, data)
    pairs = data.draw(
        st.lists(
            st.tuples(st.integers(0, len(space) - 1), st.integers(0, len(space) - 1)),
            min_size=1,
            max_size=10,
        ),
        label="pairs",
    )
    for i, j in pairs:
        want = _brute_permutation_distance(space.item(i), space.item(j), metric)
        assert float(space.dist(i, j)) == want
    _check_isometry(space, np.asarray(space.distance_matrix) ** 2)


@budget(20)
@given(
    scores=st.lists(
        st.floats(-1e6, 1e6, allow_nan=False), min_size=2, max_size=4, unique=True
    )
)
def test_from_scores_orders_best_first(scores):
    space = ss.Permutations(n_items=len(scores))
    order = space.from_scores(scores)
    assert tuple(order) == tuple(int(i) for i in np.argsort(-np.asarray(scores)))
    asc = space.from_scores(scores, descending=False)
    assert tuple(asc) == tuple(int(i) for i in np.argsort(np.asarray(scores)))
    np.testing.assert_array_equal(
        space.encode(np.array([order])), [space.index(tuple(order))]
    )


@budget(20)
@given(
    n=st.one_of(st.integers(-3, 1), st.integers(9, 20), st.floats(2, 4), st.none()),
    metric=st.sampled_from(["kendall_tau", "euclidean", "", "KENDALL_TAU"]),
)
def test_permutations_refuse_bad_parameters(n, metric):
    with pytest.raises(ValueError):
        ss.Permutations(n_items=n, metric=metric)


# --- GraphSpace ------------------------------------------------------------------------


@budget(30)
@given(G=weighted_graphs(), data=st.data())
def test_graph_space_is_the_shortest_path_metric(G, data):
    space = ss.GraphSpace(G)
    nodes = list(G.nodes)
    assert list(space.items) == nodes
    lengths = dict(nx.all_pairs_dijkstra_path_length(G, weight="weight"))
    want = np.array([[lengths[u][v] for v in nodes] for u in nodes])
    np.testing.assert_allclose(space.distance_matrix, want, rtol=1e-12, atol=0)
    _check_metric_axioms(space, metric=True)
    _check_round_trip(space, data)
    if len(nodes) >= 2:
        _check_isometry(space, want**2)
    # the same graph as an adjacency matrix gives the same metric
    A = nx.to_numpy_array(G, nodelist=nodes, weight="weight")
    np.testing.assert_allclose(
        ss.GraphSpace(A).distance_matrix, space.distance_matrix, rtol=1e-12
    )


@budget(40)
@given(
    G=weighted_graphs(),
    defect=st.sampled_from(["negative", "nan", "inf", "text", "disconnected", "empty"]),
)
def test_invalid_graphs_raise_value_error(G, defect):
    G = G.copy()
    nodes = list(G.nodes)
    if defect == "empty":
        G = nx.Graph()
    elif defect == "disconnected":
        G.add_node("isolated")
    else:
        if not G.number_of_edges():
            G.add_node("other")
            G.add_edge(nodes[0], "other", weight=1.0)
        u, v = next(iter(G.edges))
        G[u][v]["weight"] = {
            "negative": -1.0,
            "nan": float("nan"),
            "inf": float("inf"),
            "text": "far",
        }[defect]
    with pytest.raises(ValueError) as info:
        ss.GraphSpace(G)
    assert str(info.value).strip()
