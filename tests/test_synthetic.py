import numpy as np
import pytest

import snorkel_structured as ss
from snorkel_structured.synthetic import make_label_matrix, make_ranking_data


def test_paper_setup_defaults():
    data = make_ranking_data(20_000, seed=0)
    assert data.L.shape == (20_000, 3) and data.Y.shape == (20_000,)
    assert data.support.size == 2
    np.testing.assert_allclose(sorted(data.prior[data.support]), [0.2, 0.8])
    np.testing.assert_allclose(
        data.expected_sq_dist, [1.1863, 0.6800, 0.8621], atol=5e-5
    )
    # the empirical E[d^2] with the truth visible is close to the population value
    S = data.space.squared_distance_matrix
    emp = [S[data.L[:, a], data.Y].mean() for a in range(3)]
    np.testing.assert_allclose(emp, data.expected_sq_dist, atol=0.05)
    # labels follow the prior
    assert (
        abs(np.mean(data.Y == data.support[np.argmax(data.prior[data.support])]) - 0.8)
        < 0.01
    )


def test_seeds_repeat_and_differ():
    a, b, c = (make_ranking_data(500, seed=s, abstain=0.2) for s in (3, 3, 4))
    np.testing.assert_array_equal(a.L, b.L)
    np.testing.assert_array_equal(a.Y, b.Y)
    assert not np.array_equal(a.L, c.L)
    assert ((a.L == -1).mean() - 0.2) < 0.05


def test_make_label_matrix_label_dependent_and_errors():
    space = ss.Discrete(3)
    theta = np.array([[2.0, 0.5, 1.0], [1.0, 1.0, 1.0], [0.0, 3.0, 0.0]])
    data = make_label_matrix(
        30_000, space=space, theta=theta, prior=[0.5, 0.3, 0.2], seed=1
    )
    for a in range(3):
        for y in range(3):
            acc = np.mean(data.L[data.Y == y, a] == y)
            p = np.exp(0) / (np.exp(0) + 2 * np.exp(-theta[a, y]))
            assert abs(acc - p) < 0.03
    with pytest.raises(ValueError, match="prior"):
        make_label_matrix(10, space=space, theta=[1.0], prior=[1.0, 0.0])
    with pytest.raises(ValueError, match="theta"):
        make_label_matrix(10, space=space, theta=np.ones((2, 2)), prior=[1, 1, 1])
    with pytest.raises(ValueError, match="n_samples"):
        make_label_matrix(0, space=space, theta=[1.0], prior=[1, 1, 1])
    with pytest.raises(ValueError, match="center_probs"):
        make_ranking_data(10, centers=[0, 1, 2], center_probs=[0.5, 0.5])
