"""snorkel-structured: weak supervision for structured labels.

Labels in finite metric spaces (rankings, tree nodes, classes) and on constant-curvature
manifolds (Euclidean, spherical, hyperbolic), following Vishwakarma, Roberts and Sala,
"Lifting Weak Supervision To Structured Prediction" (NeurIPS 2022).
"""

from snorkel_structured import aggregators, datasets, synthetic
from snorkel_structured._validation import ABSTAIN
from snorkel_structured.embedding import PseudoEuclideanEmbedding
from snorkel_structured.end_model.manifold import KernelManifoldRegressor
from snorkel_structured.end_model.structured import KernelStructuredPredictor
from snorkel_structured.estimators import VoteStats
from snorkel_structured.exceptions import (
    ConvergenceWarning,
    IdentifiabilityWarning,
    IllConditionedWarning,
    NotFittedError,
)
from snorkel_structured.label_model import (
    AggregatingVoter,
    ManifoldMeanVoter,
    StructuredLabelModel,
)
from snorkel_structured.label_model.manifold import ManifoldLabelModel
from snorkel_structured.labeling import (
    ManifoldDaskApplier,
    ManifoldLabelingFunction,
    ManifoldPandasApplier,
    ManifoldPandasParallelApplier,
    StructuredLabelingFunction,
    StructuredLFAnalysis,
    manifold_labeling_function,
    structured_labeling_function,
)
from snorkel_structured.noise import FiniteNoiseModel
from snorkel_structured.noise.manifold import RiemannianGaussian, WrappedNormal
from snorkel_structured.noise_aware import NoiseMatrix, loss_weights, noise_matrix
from snorkel_structured.spaces import (
    Discrete,
    FiniteMetricSpace,
    GraphSpace,
    Permutations,
)
from snorkel_structured.spaces.manifolds import (
    Euclidean,
    Hyperbolic,
    ProductManifold,
    Sphere,
)

__version__ = "0.1.0"

__all__ = [
    "ABSTAIN",
    "AggregatingVoter",
    "ManifoldMeanVoter",
    "ConvergenceWarning",
    "Euclidean",
    "Hyperbolic",
    "KernelManifoldRegressor",
    "ManifoldLabelModel",
    "ProductManifold",
    "RiemannianGaussian",
    "Sphere",
    "WrappedNormal",
    "Discrete",
    "FiniteMetricSpace",
    "FiniteNoiseModel",
    "GraphSpace",
    "IdentifiabilityWarning",
    "IllConditionedWarning",
    "KernelStructuredPredictor",
    "NoiseMatrix",
    "NotFittedError",
    "Permutations",
    "PseudoEuclideanEmbedding",
    "StructuredLabelModel",
    "VoteStats",
    "aggregators",
    "datasets",
    "loss_weights",
    "noise_matrix",
    "ManifoldDaskApplier",
    "ManifoldLabelingFunction",
    "ManifoldPandasApplier",
    "ManifoldPandasParallelApplier",
    "StructuredLabelingFunction",
    "StructuredLFAnalysis",
    "manifold_labeling_function",
    "structured_labeling_function",
    "synthetic",
    "__version__",
]
