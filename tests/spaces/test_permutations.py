import itertools
import math

import numpy as np
import pytest

import snorkel_structured as ss

METRICS = ss.spaces.PERMUTATION_METRICS


# -- a reference written from the documentation, not from the code -------------------
# A tuple p is an ordering: position k holds item p[k]. pos_p[i] is the position of item
# i in p. Kendall tau counts item pairs the two orderings put in opposite order; the
# footrule is sum_i |pos_p[i] - pos_q[i]|; Hamming counts positions k with p[k] != q[k];
# Cayley is n minus the number of cycles of the permutation that takes p to q.


def all_orderings(n):
    return np.array(list(itertools.permutations(range(n))), dtype=np.int64)


def positions(P):
    """pos[r, i] = the k with P[r, k] == i, found by scanning the positions."""
    pos = np.empty_like(P)
    rows = np.arange(len(P))
    for k in range(P.shape[1]):
        pos[rows, P[:, k]] = k
    return pos


def count_cycles(images):
    """Cycles of each map x -> images[r, x], by walking every cycle once."""
    n_maps, n = images.shape
    rows = np.arange(n_maps)
    visited = np.zeros((n_maps, n), dtype=bool)
    cycles = np.zeros(n_maps, dtype=np.int64)
    for start in range(n):
        fresh = ~visited[:, start]  # start opens a new cycle where it is unvisited
        cycles += fresh
        x = np.full(n_maps, start)
        for _ in range(n):  # a cycle has at most n elements
            visited[rows[fresh], x[fresh]] = True
            x = images[rows, x]
    return cycles


def reference(metric, P, Q):
    """Distances between the orderings P[r] and Q[r] (arrays (n_pairs, n))."""
    n = P.shape[1]
    if metric == "hamming":
        return (P != Q).sum(axis=1)
    if metric == "cayley":
        # The permutation taking p to q sends item p[k] to item q[k].
        images = np.empty_like(P)
        rows = np.arange(len(P))
        for k in range(n):
            images[rows, P[:, k]] = Q[:, k]
        return n - count_cycles(images)
    pos_p, pos_q = positions(P), positions(Q)
    if metric == "spearman_footrule":
        return np.abs(pos_p - pos_q).sum(axis=1)
    discordant = np.zeros(len(P), dtype=np.int64)
    for i, j in itertools.combinations(range(n), 2):
        discordant += (pos_p[:, i] - pos_p[:, j]) * (pos_q[:, i] - pos_q[:, j]) < 0
    return discordant


def reference_matrix(metric, n):
    P = all_orderings(n)
    a, b = np.divmod(np.arange(len(P) ** 2), len(P))
    return reference(metric, P[a], P[b]).reshape(len(P), len(P))


def test_reference_on_small_cases():
    # The reference itself, against facts that need no code: the reversal of an
    # ordering is at the maximal Kendall distance n(n-1)/2, the footrule of a reversal
    # is floor(n^2 / 2), and Cayley's maximum n - 1 is reached by the n-cycles.
    for n in range(2, 6):
        P = all_orderings(n)
        assert (reference("kendall_tau", P, P[:, ::-1]) == n * (n - 1) // 2).all()
        assert (reference("spearman_footrule", P, P[:, ::-1]) == n * n // 2).all()
        cayley_from_identity = reference("cayley", np.repeat(P[:1], len(P), 0), P)
        assert (cayley_from_identity == n - 1).sum() == math.factorial(n - 1)


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("n_items", [2, 3, 4, 5, 6])
def test_every_pair_matches_the_documented_definition(metric, n_items):
    expected = reference_matrix(metric, n_items)
    r = math.factorial(n_items)
    assert expected.shape == (r, r)  # r^2 ordered pairs checked per (n, metric)
    space = ss.Permutations(n_items, metric)
    i, j = np.divmod(np.arange(r * r), r)
    lazy = space.dist(i, j)  # before the matrix exists: the matrix-free path
    assert "distance_matrix" not in space.__dict__
    np.testing.assert_array_equal(lazy.reshape(r, r), expected)
    np.testing.assert_array_equal(space.distance_matrix, expected)
    np.testing.assert_array_equal(space.dist(i, j).reshape(r, r), expected)
    rows = np.array([0, r - 1, r // 3])
    np.testing.assert_array_equal(
        space.squared_distance_rows(rows), expected[rows] ** 2
    )


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("n_items", [7, 8])
def test_large_spaces_rows_and_pairs_match_the_definition(metric, n_items, rng):
    # S7 and S8 are above DENSE_MAX_LABELS: rows are computed without the matrix.
    space = ss.Permutations(n_items, metric)
    r = len(space)
    rows = rng.choice(r, size=3, replace=False)
    got = space.squared_distance_rows(rows)
    P = space.permutations
    expected = np.stack([reference(metric, P[[y] * r], P) for y in rows])
    np.testing.assert_array_equal(got, expected.astype(float) ** 2)
    i, j = rng.integers(0, r, size=(2, 2000))
    np.testing.assert_array_equal(space.dist(i, j), reference(metric, P[i], P[j]))
    assert "distance_matrix" not in space.__dict__


# (0, 2, 1) vs (1, 2, 0), two exact reverses. Positions of items 0, 1, 2:
#   pos_p = (0, 2, 1), pos_q = (2, 0, 1).
#   Kendall: pair {0,1}: p 0 < 2, q 2 > 0 opposite; {0,2}: p 0 < 1, q 2 > 1 opposite;
#            {1,2}: p 2 > 1, q 0 < 1 opposite -> 3.
#   Footrule: |0-2| + |2-0| + |1-1| = 4.
#   Hamming: position 0: 0 vs 1 differ, 1: 2 vs 2 same, 2: 1 vs 0 differ -> 2.
#   Cayley: items move 0 -> 1, 2 -> 2, 1 -> 0: cycles (0 1)(2) -> 3 - 2 = 1.
# (2, 0, 3, 1) vs its reverse (1, 3, 0, 2): pos_p = (1, 3, 0, 2), pos_q = (2, 0, 3, 1);
#   footrule |1-2| + |3-0| + |0-3| + |2-1| = 8; Kendall: all 6 pairs flip.
# (0, 1, 2, 3) vs (1, 2, 3, 0): every item moves, Hamming 4; the cycle 0 -> 1 -> 2 ->
#   3 -> 0 is one cycle, Cayley 4 - 1 = 3.
@pytest.mark.parametrize(
    "metric, p, q, d",
    [
        ("kendall_tau", (0, 2, 1), (1, 2, 0), 3),
        ("spearman_footrule", (0, 2, 1), (1, 2, 0), 4),
        ("hamming", (0, 2, 1), (1, 2, 0), 2),
        ("cayley", (0, 2, 1), (1, 2, 0), 1),
        ("kendall_tau", (2, 0, 3, 1), (1, 3, 0, 2), 6),
        ("spearman_footrule", (2, 0, 3, 1), (1, 3, 0, 2), 8),
        ("kendall_tau", (0, 1, 2, 3), (1, 0, 3, 2), 2),
        ("spearman_footrule", (0, 1, 2, 3), (1, 0, 2, 3), 2),
        ("hamming", (0, 1, 2, 3), (1, 2, 3, 0), 4),
        ("cayley", (0, 1, 2, 3), (1, 2, 3, 0), 3),
        ("cayley", (0, 1, 2, 3), (1, 0, 3, 2), 2),
    ],
)
def test_hand_checked_distances(metric, p, q, d):
    lazy, dense = ss.Permutations(len(p), metric), ss.Permutations(len(p), metric)
    assert dense.distance_matrix.shape == (len(dense),) * 2  # built: the dense path
    for space in (lazy, dense):
        assert float(space.dist(space.index(p), space.index(q))) == d
        assert float(space.dist(space.index(q), space.index(p))) == d


def test_metric_axioms_and_invariance(rng):
    for metric in METRICS:
        space = ss.Permutations(4, metric)
        D = space.distance_matrix
        assert space.is_metric()
        P = space.permutations
        # Renaming the items (item i becomes s[i]) keeps every distance.
        s = rng.permutation(4)
        renamed = space.rank(s[P])
        np.testing.assert_array_equal(D[np.ix_(renamed, renamed)], D)
        # Reading both orderings backwards keeps every distance.
        reversed_ = space.rank(P[:, ::-1])
        np.testing.assert_array_equal(D[np.ix_(reversed_, reversed_)], D)
        if metric in ("hamming", "cayley"):  # these also ignore how positions are named
            moved = space.rank(P[:, s])
            np.testing.assert_array_equal(D[np.ix_(moved, moved)], D)


def test_lexicographic_order_rank_and_encode():
    space = ss.Permutations(4)
    assert space.item(0) == (0, 1, 2, 3) and space.item(23) == (3, 2, 1, 0)
    np.testing.assert_array_equal(space.rank(space.permutations), np.arange(24))
    assert space.encode(np.array([[3, 2, 1, 0], [0, 1, 3, 2]])).tolist() == [23, 1]
    assert space.encode([(3, 2, 1, 0), None, [0, 1, 3, 2]]).tolist() == [23, -1, 1]
    assert space.index(np.array([0, 1, 3, 2])) == 1


# -- from_scores ------------------------------------------------------------------------
def test_from_scores_orders_items_best_first(rng):
    space = ss.Permutations(5)
    scores = rng.normal(size=(200, 5))
    labels = space.from_scores(scores)
    assert labels.dtype == np.int64 and labels.shape == (200,)
    for row, ordering in zip(scores, space.decode(labels), strict=True):
        assert sorted(ordering) == list(range(5))
        assert (np.diff(row[list(ordering)]) < 0).all()  # best score first
        assert space.from_scores(row) == ordering  # 1-D gives the tuple itself
        assert all(type(i) is int for i in ordering)
    low_first = space.decode(space.from_scores(scores, descending=False))
    assert low_first == [ordering[::-1] for ordering in space.decode(labels)]


def test_from_scores_kendall_counts_pairs_the_scores_disagree_on(rng):
    space = ss.Permutations(6, "kendall_tau")
    a, b = rng.normal(size=(2, 100, 6))
    got = space.dist(space.from_scores(a), space.from_scores(b))
    i, j = np.triu_indices(6, 1)
    disagree = ((a[:, i] - a[:, j]) * (b[:, i] - b[:, j]) < 0).sum(axis=1)
    np.testing.assert_array_equal(got, disagree)


def test_from_scores_ties_break_by_item_index():
    space = ss.Permutations(4)
    assert space.from_scores([1.0, 1.0, 1.0, 1.0]) == (0, 1, 2, 3)
    assert space.from_scores([0.5, 2, 0.5, 2]) == (1, 3, 0, 2)
    assert space.from_scores([0.5, 2, 0.5, 2], descending=False) == (0, 2, 1, 3)
    assert space.from_scores([0.0, -0.0, np.inf, -np.inf]) == (2, 0, 1, 3)
    assert space.decode(space.from_scores([[3, 3, 1, 1], [1, 1, 3, 3]])) == [
        (0, 1, 2, 3),
        (2, 3, 0, 1),
    ]


def test_from_scores_accepts_integers_and_empty_batches():
    space = ss.Permutations(3)
    assert space.from_scores(np.array([2, 7, 5])) == (1, 2, 0)
    assert space.from_scores(np.empty((0, 3))).shape == (0,)


def test_from_scores_errors():
    space = ss.Permutations(3)
    with pytest.raises(ValueError, match=r"NaN for item 1\b"):
        space.from_scores([0.1, np.nan, 0.3])
    with pytest.raises(ValueError, match="NaN for item 2 of row 1"):
        space.from_scores([[0.1, 0.2, 0.3], [0.1, 0.2, np.nan]])
    with pytest.raises(ValueError, match=r"shape \(3,\) or \(n_rows, 3\).*\(4,\)"):
        space.from_scores([0.1, 0.2, 0.3, 0.4])
    with pytest.raises(ValueError, match="shape"):
        space.from_scores(np.zeros((2, 2, 3)))
    with pytest.raises(ValueError, match="shape"):
        space.from_scores(0.5)
    with pytest.raises(TypeError, match="numeric"):
        space.from_scores(["a", "b", "c"])
    with pytest.raises(TypeError, match="descending must be a bool"):
        space.from_scores([1, 2, 3], descending="yes")


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
