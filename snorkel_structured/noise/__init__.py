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

__all__ = [
    "FiniteNoiseModel",
    "expected_sq_dist",
    "expected_sq_dist_by_label",
    "log_conditional_probs",
    "log_posterior",
    "sample_votes",
    "theta_from_expected_sq_dist",
]
