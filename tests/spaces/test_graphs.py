import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

import snorkel_structured as ss


def small_tree():
    #        root
    #      /   |   \
    #     a    b    c
    #    / \
    #  a1   a2
    return nx.Graph(
        [("root", "a"), ("root", "b"), ("root", "c"), ("a", "a1"), ("a", "a2")]
    )


def test_tree_distances_by_hand():
    space = ss.GraphSpace(small_tree())
    d = lambda u, v: float(space.dist(space.index(u), space.index(v)))  # noqa: E731
    assert d("a1", "a2") == 2
    assert d("a1", "b") == 3
    assert d("root", "a2") == 2
    assert d("b", "c") == 2
    assert space.is_metric()


def test_weighted_graph_and_sparse_adjacency():
    g = nx.Graph()
    g.add_edge(0, 1, weight=2.0)
    g.add_edge(1, 2, weight=0.5)
    g.add_edge(0, 2, weight=5.0)
    space = ss.GraphSpace(g)
    assert float(space.dist(0, 2)) == 2.5  # via node 1, not the direct edge
    unweighted = ss.GraphSpace(g, weight=None)
    assert float(unweighted.dist(0, 2)) == 1.0
    A = sp.csr_array(np.array([[0, 2.0, 5.0], [2.0, 0, 0.5], [5.0, 0.5, 0]]))
    from_sparse = ss.GraphSpace(A)
    np.testing.assert_allclose(from_sparse.distance_matrix, space.distance_matrix)
    assert from_sparse.items == (0, 1, 2)


def test_graph_errors():
    g = nx.Graph([(0, 1), (2, 3)])
    with pytest.raises(ValueError, match="connected"):
        ss.GraphSpace(g)
    with pytest.raises(ValueError, match="non-negative"):
        ss.GraphSpace(np.array([[0, -1.0], [-1.0, 0]]))
    with pytest.raises(ValueError, match="square"):
        ss.GraphSpace(np.zeros((2, 3)))


def test_multigraph_takes_the_shortest_parallel_edge_as_networkx_does():
    G = nx.MultiGraph()
    G.add_weighted_edges_from(
        [(0, 1, 1.0), (0, 1, 3.0), (1, 2, 1.0), (2, 1, 0.5), (2, 3, 2.0), (0, 3, 9.0)]
    )
    space = ss.GraphSpace(G)
    reference = dict(nx.all_pairs_dijkstra_path_length(G))
    for i, u in enumerate(space.items):
        for j, v in enumerate(space.items):
            assert space.distance_matrix[i, j] == reference[u][v]


@pytest.mark.parametrize("bad", [-1.0, float("nan"), "long"])
def test_bad_edge_lengths_are_refused_naming_the_edge(bad):
    G = nx.MultiGraph()
    G.add_edge("a", "b", weight=1.0)
    G.add_edge("a", "b", weight=bad)  # a bad parallel edge, not hidden by a good one
    G.add_edge("b", "c", weight=1.0)
    with pytest.raises(ValueError, match=r"edge \('a', 'b'\) has weight="):
        ss.GraphSpace(G)


def test_an_empty_networkx_graph_is_refused():
    with pytest.raises(ValueError, match="at least one node"):
        ss.GraphSpace(nx.Graph())
