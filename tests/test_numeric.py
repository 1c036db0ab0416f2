"""The shared numerical kernels against their references."""

import numpy as np
import pytest
from scipy.special import logsumexp as scipy_logsumexp

from snorkel_structured._numeric import logsumexp


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
