import itertools

import numpy as np
import pytest

import snorkel_structured as ss


def brute(metric, p, q):
    n = len(p)
    if metric == "kendall_tau":
        return sum(
            (p[i] - p[j]) * (q[i] - q[j]) < 0
            for i, j in itertools.combinations(range(n), 2)
        )
    if metric == "spearman_footrule":
        return sum(abs(a - b) for a, b in zip(p, q))
    if metric == "hamming":
        return sum(a != b for a, b in zip(p, q))
    # cayley: n minus the number of cycles of p^-1 q, by walking the cycles
    inv = np.argsort(p)
    comp = [inv[q[k]] for k in range(n)]
    seen, cycles = set(), 0
    for s in range(n):
        if s not in seen:
            cycles += 1
            while s not in seen:
                seen.add(s)
                s = comp[s]
    return n - cycles


@pytest.mark.parametrize("metric", ss.spaces.PERMUTATION_METRICS)
@pytest.mark.parametrize("n_items", [3, 4])
def test_distance_matrix_matches_brute_force(metric, n_items):
    space = ss.Permutations(n_items, metric)
    expected = np.array(
        [[brute(metric, p, q) for q in space.items] for p in space.items]
    )
    np.testing.assert_array_equal(space.distance_matrix, expected)


@pytest.mark.parametrize(
    "metric, p, q, d",
    [  # computed by hand
        ("kendall_tau", (0, 1, 2, 3), (1, 0, 3, 2), 2),
        ("kendall_tau", (0, 1, 2, 3), (3, 2, 1, 0), 6),
        ("spearman_footrule", (0, 1, 2, 3), (3, 2, 1, 0), 8),
        ("spearman_footrule", (0, 1, 2, 3), (1, 0, 2, 3), 2),
        ("hamming", (0, 1, 2, 3), (1, 0, 2, 3), 2),
        ("hamming", (0, 1, 2, 3), (1, 2, 3, 0), 4),
        ("cayley", (0, 1, 2, 3), (1, 2, 3, 0), 3),
        ("cayley", (0, 1, 2, 3), (1, 0, 3, 2), 2),
    ],
)
def test_hand_checked_distances(metric, p, q, d):
    space = ss.Permutations(4, metric)
    assert float(space.dist(space.index(p), space.index(q))) == d


@pytest.mark.parametrize("metric", ss.spaces.PERMUTATION_METRICS)
def test_dist_without_matrix_matches_matrix(metric, rng):
    lazy = ss.Permutations(6, metric)
    i, j = rng.integers(0, 720, size=(2, 300))
    values = lazy.dist(i, j)
    assert "distance_matrix" not in lazy.__dict__  # computed without the matrix
    np.testing.assert_array_equal(
        values, ss.Permutations(6, metric).distance_matrix[i, j]
    )


def test_metric_axioms_and_invariance(rng):
    for metric in ss.spaces.PERMUTATION_METRICS:
        space = ss.Permutations(4, metric)
        D = space.distance_matrix
        assert space.is_metric()
        # Every metric is invariant under permuting positions, d(p o s, q o s) = d(p, q);
        # Hamming and Cayley also under relabelling values, d(s o p, s o q) = d(p, q).
        s = rng.permutation(4)
        P = space.permutations
        moved = space.rank(P[:, s])
        np.testing.assert_array_equal(D[np.ix_(moved, moved)], D)
        if metric in ("hamming", "cayley"):
            relabelled = space.rank(s[P])
            np.testing.assert_array_equal(D[np.ix_(relabelled, relabelled)], D)


def test_lexicographic_order_rank_and_encode():
    space = ss.Permutations(4)
    assert space.item(0) == (0, 1, 2, 3) and space.item(23) == (3, 2, 1, 0)
    np.testing.assert_array_equal(space.rank(space.permutations), np.arange(24))
    assert space.encode(np.array([[3, 2, 1, 0], [0, 1, 3, 2]])).tolist() == [23, 1]
    assert space.encode([(3, 2, 1, 0), None, [0, 1, 3, 2]]).tolist() == [23, -1, 1]
    assert space.index(np.array([0, 1, 3, 2])) == 1


def test_permutation_errors():
    with pytest.raises(ValueError, match="n_items"):
        ss.Permutations(9)
    with pytest.raises(ValueError, match="n_items"):
        ss.Permutations(1)
    with pytest.raises(ValueError, match="metric"):
        ss.Permutations(4, "ulam")
    space = ss.Permutations(4)
    with pytest.raises(ValueError, match="permutation of 0..3"):
        space.rank(np.array([[0, 0, 1, 2]]))
    with pytest.raises(ValueError, match="shape"):
        space.rank(np.array([[0, 1, 2]]))
    with pytest.raises(ValueError, match="not an item"):
        space.index((0, 1, 2, 4))
    with pytest.raises(ValueError, match="not an item"):
        space.index((1.5, 0, 2, 3))  # never truncated into a valid ranking
    assert space.index((1.0, 0, 2, 3)) == space.index((1, 0, 2, 3))
