import numpy as np
import pandas as pd
import pytest

from snorkel_structured._validation import (
    check_distance_matrix,
    check_is_fitted,
    check_label_matrix,
    check_manifold_outputs,
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


def test_check_label_matrix_explains_items_and_transposes():
    # rankings as tuples (with None abstains) instead of indices: numpy's own error was
    # "setting an array element with a sequence ... inhomogeneous shape"
    with pytest.raises(ValueError, match=r"ragged.*space\.encode"):
        check_label_matrix([[(0, 1, 2), None, (1, 0, 2)]] * 4, min_lfs=3)
    with pytest.raises(ValueError, match=r"sequence of length 3.*space\.encode"):
        check_label_matrix([[(0, 1, 2), (0, 2, 1), (1, 0, 2)]] * 4, min_lfs=3)
    with pytest.raises(ValueError, match=r"dtype object.*space\.encode"):
        check_label_matrix(np.array([[None, None, None]], dtype=object))
    L = np.zeros((1000, 4), dtype=np.int64)
    with pytest.raises(ValueError, match=r"shape \(4, 1000\).*transposed: pass L\.T"):
        check_label_matrix(L.T, min_lfs=3)
    with pytest.raises(ValueError, match=r"4 columns.*transposed: pass L\.T"):
        check_label_matrix(L[:6].T, n_lfs=4)
    # a wide matrix with more rows than columns is legitimate
    assert check_label_matrix(np.zeros((80, 60), dtype=int)).shape == (80, 60)


def test_check_manifold_outputs_explains_none_and_transposes():
    from snorkel_structured.spaces.manifolds import Euclidean

    space = Euclidean(2)
    with pytest.raises(ValueError, match="row of NaN where an LF abstains"):
        check_manifold_outputs([[(0.0, 1.0), None, (1.0, 1.0)]] * 3, space)
    obj = np.empty((2, 3), dtype=object)  # points as tuples inside an object array
    for i in range(2):
        for j in range(3):
            obj[i, j] = (0.0, 1.0)
    with pytest.raises(ValueError, match="object array"):
        check_manifold_outputs(obj, space)
    with pytest.raises(ValueError, match="looks transposed"):
        check_manifold_outputs(np.zeros((3, 100, 2)), space)


def test_vote_stats_of_many_lfs_count_exactly_and_all_abstain_is_refused():
    from collections import Counter

    from snorkel_structured.estimators import VoteStats

    # 60 LFs over 24 labels: 25^60 codes overflowed float (OverflowError) before
    rng = np.random.default_rng(0)
    L = rng.integers(-1, 2, size=(200, 60))
    L[100:] = L[:100]  # every pattern twice
    stats = VoteStats.from_label_matrix(L, n_labels=24)
    truth = Counter(map(tuple, L.tolist()))
    got = {
        tuple(p): c for p, c in zip(stats.patterns.tolist(), stats.counts, strict=True)
    }
    assert got == {k: float(v) for k, v in truth.items()}
    assert stats.check_has_votes() is stats
    empty = VoteStats.from_label_matrix(np.full((7, 3), -1), n_labels=24)
    with pytest.raises(ValueError, match="L_train has no votes.*7 rows"):
        empty.check_has_votes()


def test_label_matrix_from_sparse_and_nullable_frames():
    # a SciPy sparse matrix reads its zeros as votes for label 0: refused by name
    # (it had been "got shape ()"); pandas' nullable Int64 columns are read as
    # integers, and a missing vote (pd.NA) is named like a NaN
    import scipy.sparse as sp

    L = np.array([[0, 1, -1], [2, -1, 1]])
    with pytest.raises(ValueError, match="SciPy sparse matrix"):
        check_label_matrix(sp.csr_matrix(L + 1), n_labels=3)
    frame = pd.DataFrame(L).astype("Int64")
    np.testing.assert_array_equal(check_label_matrix(frame, n_labels=3), L)
    frame.iloc[1, 2] = pd.NA
    with pytest.raises(ValueError, match=r"entry \(1, 2\) is nan"):
        check_label_matrix(frame, n_labels=3)
