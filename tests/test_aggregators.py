import itertools
import warnings

import networkx as nx
import numpy as np
import pytest

import snorkel_structured as ss
from snorkel_structured.aggregators import (
    borda,
    frechet_mean,
    kemeny,
    majority_vote,
    medoid,
)


def test_kemeny_on_four_items_matches_brute_force(rng):
    space = ss.Permutations(4, "kendall_tau")
    L = rng.integers(-1, 24, size=(200, 5))
    L[0] = -1
    w = rng.uniform(0.1, 2.0, size=5)
    got = kemeny(L, space, w)
    assert got[0] == -1
    perms = list(itertools.permutations(range(4)))

    def kendall(p, q):  # item pairs that the orderings p and q put in opposite order
        pos_p, pos_q = [p.index(i) for i in range(4)], [q.index(i) for i in range(4)]
        return sum(
            (pos_p[i] - pos_p[j]) * (pos_q[i] - pos_q[j]) < 0
            for i, j in itertools.combinations(range(4), 2)
        )

    for row, label in zip(L[1:40], got[1:40], strict=True):
        costs = [
            sum(w[a] * kendall(p, perms[v]) for a, v in enumerate(row) if v >= 0)
            for p in perms
        ]
        assert costs[label] == pytest.approx(min(costs))
        assert label == int(np.argmin(costs))  # ties go to the lowest index


def test_frechet_mean_and_medoid_by_hand():
    # path 0 - 1 - 2 - 3 - 4: the squared-distance mean of votes {0, 4} is 2, not a vote.
    space = ss.GraphSpace(np.diag(np.ones(4), 1) + np.diag(np.ones(4), -1))
    L = np.array([[0, 4, -1], [0, 0, 3], [-1, -1, -1]])
    np.testing.assert_array_equal(frechet_mean(L, space), [2, 1, -1])
    np.testing.assert_array_equal(medoid(L, space), [0, 0, -1])
    # weights move the mean toward the heavier LF
    assert frechet_mean(L[:1], space, weights=[3.0, 1.0, 1.0])[0] == 1


def test_majority_vote():
    L = np.array([[1, 1, 0], [2, -1, 2], [-1, -1, -1], [0, 1, 2]])
    np.testing.assert_array_equal(majority_vote(L, 3), [1, 2, -1, 0])
    draws = {
        int(majority_vote(L[3:], 3, tie_break="random", seed=s)[0]) for s in range(30)
    }
    assert draws == {0, 1, 2}
    with pytest.raises(ValueError, match="tie_break"):
        majority_vote(L, 3, tie_break="first")


def test_aggregator_errors():
    space = ss.Discrete(3)
    with pytest.raises(ValueError, match="weights"):
        frechet_mean(np.zeros((2, 3), int), space, weights=[1, 2])
    with pytest.raises(ValueError, match="outside the label space"):
        kemeny(np.array([[0, 3, 1]]), space)


def _borda_by_definition(row, perms, n_items, w):
    """Brute force: points n_items - 1 - k to the item at position k of each vote,
    summed with the LF weights; items by decreasing total, ties by lower item index."""
    total = [0.0] * n_items
    for a, v in enumerate(row):
        if v < 0:
            continue
        for k, item in enumerate(perms[v]):
            total[item] += w[a] * (n_items - 1 - k)
    return tuple(sorted(range(n_items), key=lambda i: (-total[i], i)))


@pytest.mark.parametrize("n_items", [3, 4, 5])
def test_borda_matches_its_definition(rng, n_items):
    space = ss.Permutations(n_items)
    perms = list(itertools.permutations(range(n_items)))
    L = rng.integers(-1, len(space), size=(300, 4))
    L[0] = -1
    L[1] = [0, -1, -1, -1]  # a single vote is returned as it is
    got = borda(L, space)
    assert got[0] == -1 and got[1] == 0
    for row, label in zip(L[1:], got[1:], strict=True):
        assert space.item(label) == _borda_by_definition(row, perms, n_items, [1] * 4)
    w = rng.uniform(0.1, 2.0, size=4)
    got_w = borda(L[1:], space, w)
    for row, label in zip(L[1:], got_w, strict=True):
        assert space.item(label) == _borda_by_definition(row, perms, n_items, w)


def test_borda_by_hand_and_errors():
    space = ss.Permutations(3)
    votes = space.encode([(0, 1, 2), (2, 1, 0)])  # exact opposites: all items tie
    assert space.decode(borda(votes[None, :], space)) == [(0, 1, 2)]
    votes = space.encode([(2, 0, 1), (2, 1, 0), (0, 1, 2)])  # points 0: 3, 1: 2, 2: 4
    assert space.decode(borda(votes[None, :], space)) == [(2, 0, 1)]
    with pytest.raises(TypeError, match="Permutations"):
        borda(np.zeros((2, 3), int), ss.Discrete(3))
    with pytest.raises(ValueError, match="weights"):
        borda(votes[None, :], space, weights=[1.0, -1.0, 1.0])


# -- LF weights: a weight of 0 counts as abstaining; bad weights are refused ---------
# balanced_tree(2, 2): root 0, children 1 and 2, leaves 3, 4 (under 1) and 5, 6 (under 2).
TREE = ss.GraphSpace(nx.balanced_tree(2, 2))
WEIGHTED = (kemeny, frechet_mean, medoid)


@pytest.mark.parametrize("aggregate", WEIGHTED)
def test_row_voted_only_by_zero_weight_lfs_abstains_and_warns(aggregate):
    # The repro: only LF 0 votes on row 0, and LF 0 has weight 0. It had got label 0
    # (the root), which nobody voted for; it is now unlabeled, like row 1.
    L = np.array([[5, -1, -1], [-1, -1, -1], [5, 3, 3]])
    with pytest.warns(UserWarning, match=r"1 of 3 rows are unlabeled .*LFs \[0\]"):
        got = aggregate(L, TREE, weights=[0, 1, 1])
    np.testing.assert_array_equal(got, [-1, -1, 3])


@pytest.mark.parametrize("aggregate", WEIGHTED)
def test_zero_weight_equals_removing_the_lf(rng, aggregate):
    L = rng.integers(-1, len(TREE), size=(300, 4))
    blanked = L.copy()
    blanked[:, 1] = -1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # rows only LF 1 voted on
        zero = aggregate(L, TREE, weights=[2.0, 0.0, 1.0, 0.5])
    np.testing.assert_array_equal(
        zero, aggregate(blanked, TREE, weights=[2.0, 1.0, 1.0, 0.5])
    )


def test_medoid_candidates_are_the_positive_weight_votes():
    # Votes 1, 3, 4: vote 1 is the medoid (sum of d^2: 1 + 1 = 2 against 4 and 4),
    # but its LF has weight 0, so it is not a candidate: 3 and 4 tie at 4, 3 wins.
    L = np.array([[1, 3, 4]])
    assert medoid(L, TREE)[0] == 1
    assert medoid(L, TREE, weights=[0, 1, 1])[0] == 3


def test_borda_zero_weight_row_abstains():
    space = ss.Permutations(3)
    L = np.array([[4, -1, -1], [4, 0, 0]])
    with pytest.warns(UserWarning, match="1 of 2 rows are unlabeled"):
        np.testing.assert_array_equal(borda(L, space, [0, 1, 1]), [-1, 0])


@pytest.mark.parametrize(
    "weights, match",
    [
        ([0, 0, 0], r"weights must have a positive entry; got all 3 zero"),
        ([1.0, -1.0, 1.0], r"non-negative; weights\[1\] is -1\.0"),
        ([np.nan, 1.0, 1.0], r"finite and non-negative; weights\[0\] is nan"),
        ([1.0, 1.0, np.inf], r"finite and non-negative; weights\[2\] is inf"),
        ([1.0, 1.0], r"weights must be 3 finite non-negative numbers .* shape \(2,\)"),
        (["a", "b", "c"], r"weights must be 3 finite non-negative numbers"),
        ([1e308, 1e308, 1.0], r"weights are too large .* Rescale them"),
    ],
)
def test_aggregators_refuse_bad_weights(weights, match):
    L = np.array([[3, 3, 4], [5, -1, -1]])
    for aggregate in WEIGHTED:
        with pytest.raises(ValueError, match=match):
            aggregate(L, TREE, weights=weights)
    space = ss.Permutations(3)
    with pytest.raises(ValueError, match=match):
        borda(np.array([[0, 1, 2]]), space, weights=weights)
    method = {kemeny: "kemeny", frechet_mean: "frechet_mean", medoid: "medoid"}
    for name in method.values():
        voter = ss.AggregatingVoter(TREE, method=name, weights=weights)
        with pytest.raises(ValueError, match=match):
            voter.predict(L)


def test_large_finite_weights_give_the_rescaled_answer(rng):
    # sum(w) * (largest squared distance 16) stays below float64's maximum: the
    # answer is that of w / max(w) (the aggregates are invariant to a common scale).
    L = rng.integers(-1, len(TREE), size=(200, 3))
    w = np.array([1.0, 0.5, 0.25])
    for aggregate in WEIGHTED:
        np.testing.assert_array_equal(
            aggregate(L, TREE, weights=w * 2.0**1000), aggregate(L, TREE, weights=w)
        )
