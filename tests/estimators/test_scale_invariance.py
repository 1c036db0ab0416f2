"""The finite label model does not depend on the unit of the distances (issue 14, item 3).

Scaling every distance of a space by c scales every squared distance by c^2, so the model
exp(-theta d^p) is the same model with theta / c^p: the fitted theta must scale so, and
the prior, posteriors and predictions must not move. A cap on theta fixed in absolute
units broke this (theta hit 50 at c = 1e-3 and accuracy fell from 0.99 to 0.81).
"""

import numpy as np
import pytest

import snorkel_structured as ss
from snorkel_structured.estimators import VoteStats
from snorkel_structured.estimators.tensor import tensor_estimate
from snorkel_structured.noise.finite import theta_cap, theta_from_expected_sq_dist
from snorkel_structured.synthetic import make_ranking_data


@pytest.fixture(scope="module")
def data():
    return make_ranking_data(3000, seed=0)


def _scaled(space, c):
    return ss.FiniteMetricSpace(space.items, space.distance_matrix * c)


@pytest.mark.parametrize("estimator", ["mle", "tensor"])
def test_label_model_is_invariant_to_the_unit_of_distance(data, estimator):
    # Powers of two scale every squared distance exactly, so the fits must agree to
    # rounding. (With c = 1e-3 the tensor method sees S perturbed at 1e-16, which
    # turns the bases of S4's repeated eigenvalues and moves its random restarts: its
    # theta then agrees to 1e-3, as the next test shows for EM at 1e-6.)
    # prior_support="search": EM run to 1e-8 per row (the whole-space default stops
    # at 1e-6, where SQUAREM's path, which mixes units, decides the last digits);
    # the tensor decomposition finds its own support and takes no prior_support.
    support = {} if estimator == "tensor" else {"prior_support": "search"}
    fits = {
        c: ss.StructuredLabelModel(
            _scaled(data.space, c), estimator=estimator, seed=0, **support
        ).fit(data.L)
        for c in (2.0**-10, 1.0, 2.0**10)
    }
    ref = fits[1.0]
    # the generating model is recovered at the reference scale
    assert np.mean(ref.predict(data.L) == data.Y) > 0.95
    for c, lm in fits.items():
        p = lm.noise_model_.get("power", 2.0)  # theta multiplies d^p
        np.testing.assert_allclose(
            np.asarray(lm.theta_) * c**p, np.asarray(ref.theta_), rtol=1e-9
        )
        np.testing.assert_array_equal(lm.predict(data.L), ref.predict(data.L))
        np.testing.assert_allclose(
            lm.predict_proba(data.L), ref.predict_proba(data.L), atol=1e-10
        )


@pytest.mark.parametrize("c", [1e-3, 1e3])
def test_em_fit_in_any_unit_matches_unit_distances(data, c):
    # The default fit (a prior over the whole space, EM to 1e-6 per row).
    lm = ss.StructuredLabelModel(_scaled(data.space, c), seed=0).fit(data.L)
    ref = ss.StructuredLabelModel(data.space, seed=0).fit(data.L)
    p = lm.noise_model_.get("power", 2.0)
    np.testing.assert_allclose(np.asarray(lm.theta_) * c**p, ref.theta_, rtol=1e-3)
    np.testing.assert_array_equal(lm.predict(data.L), ref.predict(data.L))
    assert not any("upper bound" in str(w) for w in lm.fit_warnings_)


def test_tensor_estimate_scales_exactly(data):
    stats = VoteStats.from_label_matrix(data.L, n_labels=len(data.space))
    S = data.space.squared_distance_matrix
    ref = tensor_estimate(stats, S, seed=0)
    for c2 in (1e-6, 1e6):
        est = tensor_estimate(stats, S * c2, seed=0)
        np.testing.assert_allclose(est.prior, ref.prior, atol=1e-9)
        np.testing.assert_allclose(
            est.expected_sq_dist, ref.expected_sq_dist * c2, rtol=1e-7
        )
        np.testing.assert_allclose(est.theta, ref.theta / c2, rtol=1e-7)


def test_theta_inversion_reaches_large_theta_in_small_units(data):
    # An LF with E[d^2] a thousandth of the smallest squared distance has
    # theta * d_min^2 near log(#neighbours) + log(1000): beyond a fixed cap of 50 once
    # the distances are in units of 1e-3, reachable with the cap in the space's units.
    S = data.space.squared_distance_matrix * 1e-6
    target = np.array([1e-3 * 1e-6])
    theta = theta_from_expected_sq_dist(S, target)
    np.testing.assert_allclose(
        (np.exp(-theta[0] * S[0]) * S[0]).sum() / np.exp(-theta[0] * S[0]).sum(),
        target[0],
        rtol=1e-8,
    )
    assert theta_cap(S) == pytest.approx(theta_cap(S * 1e6) * 1e6)
