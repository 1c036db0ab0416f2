import itertools

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

    for row, label in zip(L[1:40], got[1:40]):
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
