"""snorkel-structured: weak supervision for structured labels.

Labels in finite metric spaces (rankings, tree nodes, classes) and on constant-curvature
manifolds (Euclidean, spherical, hyperbolic), following Vishwakarma, Roberts and Sala,
"Lifting Weak Supervision To Structured Prediction" (NeurIPS 2022).
"""

from snorkel_structured._validation import ABSTAIN
from snorkel_structured.exceptions import (
    ConvergenceWarning,
    IdentifiabilityWarning,
    NotFittedError,
)

__version__ = "0.1.0"

__all__ = [
    "ABSTAIN",
    "ConvergenceWarning",
    "IdentifiabilityWarning",
    "NotFittedError",
    "__version__",
]
