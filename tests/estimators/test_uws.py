import numpy as np
import pytest

from snorkel_structured.estimators.uws import uws_expected_sq_dist


def test_exact_on_additive_matrix_with_missing_pairs(rng):
    s = rng.random(5) + 0.1
    M = s[:, None] + s[None, :]
    M[0, 4] = M[4, 0] = np.nan
    np.testing.assert_allclose(uws_expected_sq_dist(M), s)


def test_median_over_triplets_and_unidentified_lf():
    s = np.array([1.0, 2.0, 3.0, 4.0])
    M = s[:, None] + s[None, :]
    M[1, 2] = M[2, 1] = 100.0  # one corrupted pair: the median resists it for LF 0
    assert uws_expected_sq_dist(M)[0] == pytest.approx(1.0)
    M = s[:, None] + s[None, :]
    M[3, :3] = M[:3, 3] = np.nan
    out = uws_expected_sq_dist(M)
    assert np.isnan(out[3]) and np.allclose(out[:3], s[:3])


def test_validation():
    with pytest.raises(ValueError, match="n_lfs >= 3"):
        uws_expected_sq_dist(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="symmetric"):
        uws_expected_sq_dist(np.array([[0, 1, 2], [3, 0, 1], [2, 1, 0.0]]))
    with pytest.raises(ValueError, match="non-negative finite"):
        uws_expected_sq_dist(-np.ones((3, 3)))
