"""The shared numerical kernels against their references."""

import numpy as np
import pytest
from scipy.special import logsumexp as scipy_logsumexp

from snorkel_structured._numeric import logsumexp, normalize_log_rows


@pytest.mark.parametrize("shape", [(50, 7, 30), (40, 3, 5), (6, 4, 2), (9, 1, 3)])
@pytest.mark.parametrize("axis", [None, 0, 1, 2, -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_logsumexp_matches_scipy_with_infinities(shape, axis, keepdims):
    # both code paths (short axes loop over entries, long ones reduce) against SciPy,
    # with a row of -inf (log 0) and a +inf entry
    a = np.random.default_rng(0).normal(size=shape) * 30
    a[0, 0, :] = -np.inf
    a[1, 0, 0] = np.inf
    want = scipy_logsumexp(a, axis=axis, keepdims=keepdims)
    got = logsumexp(a, axis=axis, keepdims=keepdims)
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_logsumexp_by_hand():
    a = np.log(np.array([[1.0, 2.0, 5.0], [1e-300, 1e-300, 1e-300]]))
    np.testing.assert_allclose(np.exp(logsumexp(a, axis=1)), [8.0, 3e-300])
    assert logsumexp(np.array([1000.0, 1000.0])) == pytest.approx(1000.0 + np.log(2))


@pytest.mark.parametrize("shape", [(50, 30), (20, 200), (7, 9), (5, 4), (3, 1)])
@pytest.mark.parametrize("axis", [1, -1, 0])
@pytest.mark.parametrize("keepdims", [False, True])
def test_logsumexp_of_rows_matches_scipy(shape, axis, keepdims):
    # 2-D arrays reduced along their rows: the transposed maximum (rows up to 32),
    # the rows' own maximum beyond, and the sums as a matrix product
    a = np.random.default_rng(1).normal(size=shape) * 30
    a[0, :] = -np.inf
    a[-1, 0] = np.inf
    want = scipy_logsumexp(a, axis=axis, keepdims=keepdims)
    got = logsumexp(a, axis=axis, keepdims=keepdims)
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("k", [1, 4, 9, 30, 200])
def test_normalize_log_rows_is_exp_of_a_minus_its_logsumexp(k):
    a = np.random.default_rng(2).normal(size=(40, k)) * 50
    a[1, : k // 2] = -np.inf  # some labels impossible
    a[2, :] = -np.inf  # every label impossible: NaN probabilities, as the reference
    probs, lse = normalize_log_rows(a)
    want_lse = scipy_logsumexp(a, axis=1)
    np.testing.assert_allclose(lse, want_lse, rtol=1e-12)
    with np.errstate(invalid="ignore"):
        want = np.exp(a - want_lse[:, None])
    np.testing.assert_allclose(probs, want, rtol=1e-12, atol=1e-300)
    assert np.isnan(probs[2]).all() and lse[2] == -np.inf
    ok = np.arange(40) != 2
    np.testing.assert_allclose(probs[ok].sum(axis=1), 1.0, rtol=1e-12)


@pytest.mark.parametrize("k", [3, 9, 30, 200])
@pytest.mark.parametrize("offset", [0.0, -480.0, 570.0, -650.0, 650.0, -1e4])
def test_finite_rows_far_from_zero_match_scipy(k, offset):
    # finite entries: within 600 of 0 the exponential is taken unshifted, beyond it
    # the rows' maxima shift it (short rows: one column at a time); all to SciPy's
    # precision, with one row far below the others (it must not underflow to 0)
    a = np.random.default_rng(3).normal(size=(30, k)) * 5 + offset
    a[4] -= 100.0
    probs, lse = normalize_log_rows(a)
    want_lse = scipy_logsumexp(a, axis=1)
    np.testing.assert_allclose(lse, want_lse, rtol=1e-12)
    np.testing.assert_allclose(probs, np.exp(a - want_lse[:, None]), rtol=1e-10)
    np.testing.assert_allclose(logsumexp(a, axis=1), want_lse, rtol=1e-12)
