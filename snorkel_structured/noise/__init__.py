"""Generative noise models P(lambda | y): families, parameter maps and samplers."""

from snorkel_structured.noise.finite import (
    FiniteNoiseModel,
    expected_sq_dist,
    expected_sq_dist_by_label,
    log_conditional_probs,
    log_posterior,
    sample_votes,
    theta_from_expected_sq_dist,
)
from snorkel_structured.noise.manifold import RiemannianGaussian, WrappedNormal

__all__ = [
    "FiniteNoiseModel",
    "RiemannianGaussian",
    "WrappedNormal",
    "expected_sq_dist",
    "expected_sq_dist_by_label",
    "log_conditional_probs",
    "log_posterior",
    "sample_votes",
    "theta_from_expected_sq_dist",
]
