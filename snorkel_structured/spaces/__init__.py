"""Label spaces: finite metric spaces and constant-curvature manifolds."""

from snorkel_structured.spaces.finite import Discrete, FiniteMetricSpace
from snorkel_structured.spaces.graphs import GraphSpace
from snorkel_structured.spaces.permutations import PERMUTATION_METRICS, Permutations

__all__ = [
    "PERMUTATION_METRICS",
    "Discrete",
    "FiniteMetricSpace",
    "GraphSpace",
    "Permutations",
]
