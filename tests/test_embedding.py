import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import snorkel_structured as ss


def exact_error(space_or_S):
    emb = ss.PseudoEuclideanEmbedding().fit(space_or_S)
    return emb, emb.isometry_error()


def three_branch_tree(t):
    g = nx.Graph()
    for b in range(3):
        prev = "root"
        for k in range(t):
            g.add_edge(prev, (b, k))
            prev = (b, k)
    return g


@pytest.mark.parametrize(
    "space",
    [
        *(ss.Permutations(4, m) for m in ss.spaces.PERMUTATION_METRICS),
        ss.Permutations(5, "kendall_tau"),
        ss.Discrete(5),
        ss.GraphSpace(three_branch_tree(4)),
        ss.GraphSpace(nx.balanced_tree(2, 3)),
        ss.GraphSpace(nx.cycle_graph(7)),
    ],
    ids=repr,
)
def test_isometry_on_built_in_spaces(space):
    emb, err = exact_error(space)
    assert err < 1e-9
    # distances recomputed from the coordinates, entry by entry
    X, s = emb.coords_, emb.signs_
    i, j = np.triu_indices(len(space), 1)
    d2 = ss.embedding.pseudo_sq_dist(X[i], X[j], s)
    np.testing.assert_allclose(
        d2,
        space.squared_distance_matrix[i, j],
        atol=1e-9 * space.squared_distance_matrix.max(),
    )


def test_s4_kendall_signature():
    emb = ss.PseudoEuclideanEmbedding().fit(ss.Permutations(4, "kendall_tau"))
    assert emb.signature_ == (6, 11)
    assert emb.coords_.shape == (24, 17)
    np.testing.assert_array_equal(emb.signs_, [1.0] * 6 + [-1.0] * 11)
    # positive eigenvalues first, then negative, each by decreasing magnitude
    pos, neg = emb.eigenvalues_[:6], emb.eigenvalues_[6:]
    assert (pos > 0).all() and (neg < 0).all()
    assert (np.diff(pos) <= 1e-12).all() and (np.diff(np.abs(neg)) <= 1e-12).all()


def test_three_branch_tree_embeds_in_three_dimensions():
    # The paper's example: a root with three paths of t nodes embeds in d = 3.
    emb, err = exact_error(ss.GraphSpace(three_branch_tree(6)))
    assert sum(emb.signature_) == 3 and err < 1e-9


def random_points_sq_dists(draw_pts):
    diff = draw_pts[:, None, :] - draw_pts[None, :, :]
    return (diff**2).sum(-1)


@settings(max_examples=25, deadline=None)
@given(
    arrays(
        np.float64,
        st.tuples(st.integers(2, 12), st.integers(1, 4)),
        elements=st.floats(-10, 10),
    )
)
def test_isometry_on_random_euclidean_metrics(points):
    S = random_points_sq_dists(points)
    if S.max() == 0:
        return
    emb, err = exact_error(S)
    assert err < 1e-9
    assert emb.signature_[1] == 0  # Euclidean distances need no negative part


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 14), st.integers(0, 2**32 - 1), st.booleans())
def test_isometry_on_random_metrics_and_semimetrics(r, seed, metric):
    rng = np.random.default_rng(seed)
    A = rng.uniform(0.1, 5.0, size=(r, r))
    D = np.triu(A, 1) + np.triu(A, 1).T
    if metric:  # shortest paths make it a metric; otherwise a semimetric in general
        D = ss.FiniteMetricSpace(range(r), D).distance_matrix
        from scipy.sparse.csgraph import shortest_path

        D = shortest_path(D, directed=False)
    space = ss.FiniteMetricSpace(range(r), D)
    _, err = exact_error(space)
    assert err < 1e-9


def test_truncation_keeps_largest_eigenvalues():
    space = ss.Permutations(4)
    full = ss.PseudoEuclideanEmbedding().fit(space)
    trunc = ss.PseudoEuclideanEmbedding(dim=5).fit(space)
    assert sum(trunc.signature_) == 5
    kept = np.sort(np.abs(trunc.eigenvalues_))
    np.testing.assert_allclose(kept, np.sort(np.abs(full.eigenvalues_))[-5:])
    assert trunc.isometry_error() > 1e-3  # no longer exact, and it says so


def test_large_space_low_rank_path_is_exact():
    # S7 (5,040 labels) has Kendall-tau Gram rank 196: the verified randomized path
    # must still be exact; a truncated fit uses the iterative eigensolver.
    space = ss.Permutations(7)
    emb = ss.PseudoEuclideanEmbedding(seed=0).fit(space)
    assert sum(emb.signature_) == 196
    assert emb.isometry_error() < 1e-9
    trunc = ss.PseudoEuclideanEmbedding(dim=10, seed=0).fit(space)
    assert sum(trunc.signature_) == 10
    np.testing.assert_allclose(
        np.sort(np.abs(trunc.eigenvalues_)),
        np.sort(np.abs(emb.eigenvalues_))[-10:],
        rtol=1e-8,
    )


def test_transform_and_sq_dist():
    space = ss.Permutations(4)
    emb = ss.PseudoEuclideanEmbedding().fit(space)
    u, v = emb.transform([0, 5]), emb.transform([23, 7])
    np.testing.assert_allclose(
        emb.sq_dist(u, v), space.squared_distance_matrix[[0, 5], [23, 7]]
    )
    with pytest.raises(ValueError, match="indices"):
        emb.transform([24])
    with pytest.raises(ss.NotFittedError):
        ss.PseudoEuclideanEmbedding().transform([0])


def test_embedding_errors():
    with pytest.raises(ValueError, match="symmetric"):
        ss.PseudoEuclideanEmbedding().fit(np.array([[0, 1.0], [2.0, 0]]))
    with pytest.raises(ValueError, match="dim"):
        ss.PseudoEuclideanEmbedding(dim=0).fit(ss.Discrete(3))
    with pytest.raises(ValueError, match="tol"):
        ss.PseudoEuclideanEmbedding(tol=2.0).fit(ss.Discrete(3))


def test_complex_matrix_is_refused():
    # fuzz report: numpy silently dropped the imaginary part (ComplexWarning only)
    S = np.array([[0.0, 1.0], [1.0, 0.0]])
    for bad in (S.astype(complex), S + 1e-3j, [[0, 1j], [1j, 0]]):
        with pytest.raises(ValueError, match="S must be real; got a complex array"):
            ss.PseudoEuclideanEmbedding().fit(bad)
    assert ss.PseudoEuclideanEmbedding().fit(S).signature_ == (1, 0)
