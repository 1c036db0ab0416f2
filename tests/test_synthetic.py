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


# -- invalid parameters are refused instead of giving votes outside [-1, r) ---------


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_theta_is_refused(bad):
    # NaN or inf theta gave votes of -24 (neither an abstain nor a label of S4).
    with pytest.raises(ValueError, match=r"theta must be finite; got -?(nan|inf) at"):
        make_ranking_data(100, theta=[bad, 1.0], seed=0)
    with pytest.raises(ValueError, match=r"theta must be finite.*index \(0, 1\)"):
        make_label_matrix(
            10, space=ss.Discrete(3), theta=[[1.0, bad, 1.0]], prior=[1, 1, 1]
        )


@pytest.mark.parametrize("bad", [np.nan, 1.5, -0.1])
def test_abstain_rates_outside_0_1_or_nan_are_refused(bad):
    # NaN passed the old range check: data.abstain was NaN and no vote abstained.
    with pytest.raises(
        ValueError, match=rf"abstain rates must be in \[0, 1\]; got {bad} at index 1"
    ):
        make_ranking_data(100, abstain=[0.1, bad, 0.0], seed=0)


@pytest.mark.parametrize(
    ("centers", "message"),
    [
        ([-1, 3], r"centers\[0\] = -1 is out of range"),  # wrapped to label 23
        ([3, 24], r"centers\[1\] = 24 is out of range"),  # a bare IndexError
        ([0.7, 3.2], r"centers\[0\] = 0.7 is not a whole number"),  # truncated to 0
        ([np.nan, 3], r"centers\[0\] = nan is not a whole number"),
        ([3, 3], "centers holds label 3 more than once"),  # prior[3] = 1.0
        ([[0, 1]], "non-empty 1-D array"),
    ],
)
def test_bad_centers_are_refused(centers, message):
    with pytest.raises(ValueError, match=message) as info:
        make_ranking_data(10, centers=centers, seed=0)
    assert "distinct label indices in [0, 24)" in str(info.value)


def test_whole_number_centers_give_the_same_data():
    ints = make_ranking_data(200, centers=[5, 9], seed=3)
    floats = make_ranking_data(200, centers=np.array([5.0, 9.0]), seed=3)
    np.testing.assert_array_equal(ints.support, [5, 9])
    assert ints.prior[5] == 0.2 and ints.prior[9] == 0.8
    np.testing.assert_array_equal(ints.L, floats.L)
    np.testing.assert_array_equal(ints.Y, floats.Y)
