import numpy as np
import pytest

import snorkel_structured as ss


def test_items_lookup_and_encode_round_trip():
    space = ss.FiniteMetricSpace(["a", "b", "c"], [[0, 1, 2], [1, 0, 1], [2, 1, 0]])
    assert len(space) == 3 and space.items == ("a", "b", "c")
    assert [space.index(x) for x in "abc"] == [0, 1, 2]
    assert space.item(2) == "c"
    codes = space.encode(["c", None, "a", "b"])
    assert codes.dtype == np.int64 and codes.tolist() == [2, -1, 0, 1]
    assert space.decode(codes) == ["c", None, "a", "b"]
    np.testing.assert_array_equal(
        space.squared_distance_matrix, space.distance_matrix**2
    )
    assert float(space.dist(0, 2)) == 2.0


def test_distance_matrix_is_read_only_and_copied():
    D = np.array([[0.0, 1.0], [1.0, 0.0]])
    space = ss.FiniteMetricSpace([0, 1], D)
    D[0, 1] = 5.0
    assert space.distance_matrix[0, 1] == 1.0
    with pytest.raises(ValueError):
        space.distance_matrix[0, 1] = 3.0


@pytest.mark.parametrize(
    "D, match",
    [
        ([[0, 1, 2], [1, 0, 1]], "square"),
        ([[0, 1], [2, 0]], "symmetric"),
        ([[1, 1], [1, 0]], "zero diagonal"),
        ([[0, np.inf], [np.inf, 0]], "finite"),
        ([[0, np.nan], [np.nan, 0]], "finite"),
        ([[0, -1], [-1, 0]], "non-negative"),
        ([[0, 1e200], [1e200, 0]], "too large to square"),
        ([["a", "b"], ["c", "d"]], "numeric"),
    ],
)
def test_invalid_distance_matrices(D, match):
    with pytest.raises(ValueError, match=match):
        ss.FiniteMetricSpace(range(len(D)), D)


def test_item_errors():
    with pytest.raises(ValueError, match="distinct"):
        ss.FiniteMetricSpace(["a", "a"], [[0, 1], [1, 0]])
    with pytest.raises(ValueError, match="same number"):
        ss.FiniteMetricSpace(["a", "b", "c"], [[0, 1], [1, 0]])
    with pytest.raises(TypeError, match="hashable"):
        ss.FiniteMetricSpace([[0], [1]], [[0, 1], [1, 0]])
    space = ss.FiniteMetricSpace(["a", "b"], [[0, 1], [1, 0]])
    with pytest.raises(ValueError, match="not an item"):
        space.index("z")
    with pytest.raises(ValueError, match="not an item"):
        space.encode(["a", "z"])
    with pytest.raises(ValueError, match="outside the label space"):
        space.decode([0, 2])
    with pytest.raises(ValueError, match="index must be"):
        space.item(5)


def test_triangle_violations_are_allowed_and_reported():
    # d(0, 2) = 5 > d(0, 1) + d(1, 2) = 2: a semimetric, accepted.
    D = [[0, 1, 5], [1, 0, 1], [5, 1, 0]]
    space = ss.FiniteMetricSpace("xyz", D)
    assert space.max_triangle_violation() == pytest.approx(3.0)
    assert not space.is_metric()
    assert ss.Discrete(4).is_metric()


def test_discrete_space():
    space = ss.Discrete(cardinality=3)
    np.testing.assert_array_equal(space.distance_matrix, 1 - np.eye(3))
    assert space.encode([2, None, 0]).tolist() == [2, -1, 0]
    assert space == ss.Discrete(3) and space != ss.Discrete(4)
    for bad in (1, 2.5, True, "3"):
        with pytest.raises(ValueError, match="cardinality"):
            ss.Discrete(bad)


def test_value_object_equality():
    a = ss.FiniteMetricSpace("ab", [[0, 1], [1, 0]])
    b = ss.FiniteMetricSpace("ab", [[0, 1], [1, 0]])
    c = ss.FiniteMetricSpace("ab", [[0, 2], [2, 0]])
    assert a == b and hash(a) == hash(b) and a != c


def test_none_is_refused_as_an_item():
    # None means abstain in encode/decode: as an item, decode(encode([None])) could
    # not tell the label from an abstain.
    with pytest.raises(ValueError, match="None at position 1"):
        ss.FiniteMetricSpace(["a", None], [[0.0, 1.0], [1.0, 0.0]])


def test_pickles_leave_out_tables_computed_on_demand():
    import pickle

    import networkx as nx

    from snorkel_structured.spaces import Discrete, GraphSpace, Permutations

    given = ss.FiniteMetricSpace(["a", "b", "c"], [[0, 2, 3], [2, 0, 1], [3, 1, 0]])
    spaces = [Discrete(3), Permutations(4), given, GraphSpace(nx.path_graph(4))]
    for space in spaces:
        fresh = pickle.dumps(space)
        S = np.array(space.squared_distance_matrix)  # fills the caches
        back = pickle.loads(pickle.dumps(space))
        # the same space, the same bytes as before the caches were filled
        assert pickle.dumps(space) == fresh
        assert back == space
        np.testing.assert_array_equal(back.squared_distance_matrix, S)
    # a matrix given by the user is the space itself and is kept
    assert "distance_matrix" in pickle.loads(pickle.dumps(given)).__dict__
