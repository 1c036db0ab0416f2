import numpy as np
import pandas as pd
import pytest

from snorkel_structured._validation import (
    check_distance_matrix,
    check_is_fitted,
    check_label_matrix,
    check_scalar,
    check_seed,
)
from snorkel_structured.exceptions import NotFittedError


def test_check_seed():
    g = np.random.default_rng(0)
    assert check_seed(g) is g
    assert check_seed(5).random() == np.random.default_rng(5).random()
    with pytest.raises(TypeError, match="RandomState"):
        check_seed(np.random.RandomState(0))
    with pytest.raises(ValueError, match="non-negative"):
        check_seed(-1)


def test_check_label_matrix():
    L = np.array([[0, 1], [-1, 2]], dtype=np.int32)
    out = check_label_matrix(L, n_labels=3)
    assert out.dtype == np.int64 and out is not L
    out[0, 0] = 2
    assert L[0, 0] == 0  # the caller's array is never touched
    np.testing.assert_array_equal(check_label_matrix(pd.DataFrame(L)), L)
    np.testing.assert_array_equal(check_label_matrix(L.astype(float)), L)
    with pytest.raises(ValueError, match="2-D"):
        check_label_matrix(np.zeros(3))
    with pytest.raises(ValueError, match="at least 3 columns"):
        check_label_matrix(L, min_lfs=3)
    with pytest.raises(ValueError, match=r"entry \(1, 1\) is 2"):
        check_label_matrix(L, n_labels=2)
    with pytest.raises(ValueError, match="NaN"):
        check_label_matrix(np.array([[0.0, np.nan]]))
    with pytest.raises(ValueError, match="integer"):
        check_label_matrix(np.array([[0.5, 1.0]]))
    with pytest.raises(ValueError, match="dtype"):
        check_label_matrix(np.array([["a", "b"]]))
    with pytest.raises(ValueError, match="-1"):
        check_label_matrix(np.array([[-2, 0]]))
    with pytest.raises(ValueError, match="3 columns"):
        check_label_matrix(L, n_lfs=3)


def test_check_scalar_and_is_fitted():
    assert check_scalar(3, "k", kind="int", low=1) == 3
    with pytest.raises(ValueError, match=r"k must be in the range \[1, inf\); got 0"):
        check_scalar(0, "k", kind="int", low=1)
    with pytest.raises(TypeError, match="int"):
        check_scalar(1.5, "k", kind="int")
    with pytest.raises(ValueError, match="finite"):
        check_scalar(np.inf, "x")

    class Est:
        pass

    est = Est()
    with pytest.raises(NotFittedError, match="not fitted"):
        check_is_fitted(est)
    est.coef_ = 1
    check_is_fitted(est)


def test_check_distance_matrix_symmetrizes_tiny_asymmetry():
    D = np.array([[0.0, 1.0], [1.0 + 1e-13, 0.0]])
    out = check_distance_matrix(D)
    assert out[0, 1] == out[1, 0]
