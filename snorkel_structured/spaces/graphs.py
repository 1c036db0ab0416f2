"""Nodes of a graph (e.g. a tree hierarchy) under the shortest-path metric."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import shortest_path

from snorkel_structured.spaces.finite import FiniteMetricSpace

__all__ = ["GraphSpace"]


def _as_length(w: Any) -> float:
    """An edge attribute as a float length (NaN when it is not a number)."""
    try:
        return float(w)
    except (TypeError, ValueError):
        return float("nan")


class GraphSpace(FiniteMetricSpace):
    """Nodes of a connected graph with (weighted) shortest-path distances.

    Parameters
    ----------
    graph : networkx.Graph, scipy sparse matrix, or array-like of shape (r, r)
        A networkx graph (items are its nodes, edge attribute ``weight`` gives lengths,
        default 1), or an adjacency matrix whose non-zero entries are edge lengths
        (items are ``0 .. r-1``). Edges are taken as undirected.
    weight : str or None, default="weight"
        Edge attribute holding the length for networkx graphs; None means every edge
        has length 1.

    Examples
    --------
    >>> import networkx as nx, snorkel_structured as ss
    >>> tree = nx.Graph([("root", "a"), ("root", "b"), ("a", "a1")])
    >>> space = ss.GraphSpace(tree)
    >>> float(space.dist(space.index("a1"), space.index("b")))
    3.0
    """

    def __init__(self, graph: Any, weight: str | None = "weight") -> None:
        adjacency, items = self._adjacency(graph, weight)
        if adjacency.shape[0] == 0:
            raise ValueError("graph must have at least one node.")
        D = shortest_path(adjacency, method="auto", directed=False)
        if not np.isfinite(D).all():
            i, j = np.argwhere(~np.isfinite(D))[0]
            raise ValueError(
                f"graph must be connected; there is no path between {items[i]!r} and "
                f"{items[j]!r}. Use one connected component."
            )
        super().__init__(items, D)

    @staticmethod
    def _networkx_adjacency(
        graph: Any, weight: str | None
    ) -> tuple[sp.csr_array, list[Any]]:
        """Edge lengths of a networkx graph; parallel edges (multigraphs) keep the
        shortest, as networkx's own shortest paths do."""
        items = list(graph.nodes)
        index = {node: i for i, node in enumerate(items)}
        edges = (
            list(graph.edges(data=weight, default=1.0))
            if weight
            else [(u, v, 1.0) for u, v in graph.edges()]
        )
        n = len(items)
        if not edges:
            return sp.csr_array((n, n), dtype=np.float64), items
        lengths = np.array([_as_length(w) for _, _, w in edges])
        bad = np.flatnonzero(~np.isfinite(lengths) | (lengths < 0))
        if bad.size:
            u, v, w = edges[bad[0]]
            raise ValueError(
                f"edge ({u!r}, {v!r}) has {weight}={w!r}; edge lengths must be "
                "finite, non-negative numbers. Fix or remove that edge."
            )
        rows = np.array([index[u] for u, _, _ in edges], dtype=np.int64)
        cols = np.array([index[v] for _, v, _ in edges], dtype=np.int64)
        # the shortest of parallel edges (either direction: the graph is undirected)
        lo, hi = np.minimum(rows, cols), np.maximum(rows, cols)
        key = lo * n + hi
        order = np.lexsort((lengths, key))
        first = np.ones(order.size, dtype=bool)
        first[1:] = key[order][1:] != key[order][:-1]
        keep = order[first]
        A = sp.coo_array((lengths[keep], (lo[keep], hi[keep])), shape=(n, n))
        return sp.csr_array(A), items

    @staticmethod
    def _adjacency(graph: Any, weight: str | None) -> tuple[sp.csr_array, list[Any]]:
        try:
            import networkx as nx
        except ImportError:  # pragma: no cover - networkx is a dependency
            nx = None
        if nx is not None and isinstance(graph, nx.Graph):
            return GraphSpace._networkx_adjacency(graph, weight)
        if sp.issparse(graph):
            A = sp.csr_array(graph, dtype=np.float64)
        else:
            arr = np.asarray(graph, dtype=np.float64)
            if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
                raise ValueError(
                    "graph must be a networkx graph or a square adjacency matrix; got "
                    f"an array of shape {arr.shape}."
                )
            A = sp.csr_array(arr)
        if A.shape[0] != A.shape[1]:
            raise ValueError(f"graph adjacency must be square; got shape {A.shape}.")
        # The same refusal as for networkx edges: shortest_path would silently drop a
        # NaN edge (and report "not connected", or accept the rest of the graph).
        coo = sp.coo_array(A)
        bad = np.flatnonzero(~np.isfinite(coo.data) | (coo.data < 0))
        if bad.size:
            i, j = int(coo.row[bad[0]]), int(coo.col[bad[0]])
            raise ValueError(
                f"edge ({i}, {j}) has length {float(coo.data[bad[0]])!r} (graph "
                "adjacency entry); edge lengths must be finite, non-negative numbers "
                "(0 = no edge). Fix or remove that edge."
            )
        return A, list(range(A.shape[0]))
