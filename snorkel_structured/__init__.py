"""snorkel-structured: weak supervision for structured labels.

Labels in finite metric spaces (rankings, tree nodes, classes) and on constant-curvature
manifolds (Euclidean, spherical, hyperbolic), following Vishwakarma, Roberts and Sala,
"Lifting Weak Supervision To Structured Prediction" (NeurIPS 2022).

The public names are imported on first use (PEP 562 module ``__getattr__``), so that
``import snorkel_structured`` and the command line's ``--help`` do not pay for
Snorkel's label model, which imports PyTorch (seconds), nor for scikit-learn.
``ss.StructuredLabelModel`` imports them when it is first accessed.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from snorkel_structured._version import __version__

# public name -> module that defines it (a submodule's own name maps to itself).
_LAZY = {
    "ABSTAIN": "snorkel_structured._validation",
    "AggregatingVoter": "snorkel_structured.label_model.baselines",
    "ManifoldMeanVoter": "snorkel_structured.label_model.baselines",
    "ConvergenceWarning": "snorkel_structured.exceptions",
    "IdentifiabilityWarning": "snorkel_structured.exceptions",
    "IllConditionedWarning": "snorkel_structured.exceptions",
    "NotFittedError": "snorkel_structured.exceptions",
    "Euclidean": "snorkel_structured.spaces.manifolds",
    "Hyperbolic": "snorkel_structured.spaces.manifolds",
    "ProductManifold": "snorkel_structured.spaces.manifolds",
    "Sphere": "snorkel_structured.spaces.manifolds",
    "Discrete": "snorkel_structured.spaces.finite",
    "FiniteMetricSpace": "snorkel_structured.spaces.finite",
    "GraphSpace": "snorkel_structured.spaces.graphs",
    "Permutations": "snorkel_structured.spaces.permutations",
    "Rankings": "snorkel_structured.spaces.rankings",
    "PseudoEuclideanEmbedding": "snorkel_structured.embedding",
    "FiniteNoiseModel": "snorkel_structured.noise.finite",
    "RiemannianGaussian": "snorkel_structured.noise.manifold",
    "WrappedNormal": "snorkel_structured.noise.manifold",
    "KernelManifoldRegressor": "snorkel_structured.end_model.manifold",
    "KernelStructuredPredictor": "snorkel_structured.end_model.structured",
    "VoteStats": "snorkel_structured.estimators._stats",
    "ManifoldLabelModel": "snorkel_structured.label_model.manifold",
    "StructuredLabelModel": "snorkel_structured.label_model.structured",
    "RankingLabelModel": "snorkel_structured.label_model.ranking",
    "NoiseMatrix": "snorkel_structured.noise_aware",
    "loss_weights": "snorkel_structured.noise_aware",
    "noise_matrix": "snorkel_structured.noise_aware",
    "ManifoldDaskApplier": "snorkel_structured.labeling.manifold",
    "ManifoldLabelingFunction": "snorkel_structured.labeling.manifold",
    "ManifoldPandasApplier": "snorkel_structured.labeling.manifold",
    "ManifoldPandasParallelApplier": "snorkel_structured.labeling.manifold",
    "manifold_labeling_function": "snorkel_structured.labeling.manifold",
    "filter_unlabeled_manifold": "snorkel_structured.labeling.utils",
    "RankingDaskApplier": "snorkel_structured.labeling.rankings",
    "RankingLFAnalysis": "snorkel_structured.labeling.ranking_analysis",
    "RankingLabelingFunction": "snorkel_structured.labeling.rankings",
    "RankingPandasApplier": "snorkel_structured.labeling.rankings",
    "RankingPandasParallelApplier": "snorkel_structured.labeling.rankings",
    "ranking_labeling_function": "snorkel_structured.labeling.rankings",
    "StructuredLabelingFunction": "snorkel_structured.labeling.finite",
    "structured_labeling_function": "snorkel_structured.labeling.finite",
    "StructuredLFAnalysis": "snorkel_structured.labeling.analysis",
    "aggregators": "snorkel_structured.aggregators",
    "datasets": "snorkel_structured.datasets",
    "synthetic": "snorkel_structured.synthetic",
}

__all__ = [
    "ABSTAIN",
    "AggregatingVoter",
    "ManifoldMeanVoter",
    "ConvergenceWarning",
    "IdentifiabilityWarning",
    "IllConditionedWarning",
    "NotFittedError",
    "Euclidean",
    "Hyperbolic",
    "ProductManifold",
    "Sphere",
    "Discrete",
    "FiniteMetricSpace",
    "GraphSpace",
    "Permutations",
    "Rankings",
    "PseudoEuclideanEmbedding",
    "FiniteNoiseModel",
    "RiemannianGaussian",
    "WrappedNormal",
    "KernelManifoldRegressor",
    "KernelStructuredPredictor",
    "VoteStats",
    "ManifoldLabelModel",
    "StructuredLabelModel",
    "RankingLabelModel",
    "NoiseMatrix",
    "loss_weights",
    "noise_matrix",
    "ManifoldDaskApplier",
    "ManifoldLabelingFunction",
    "ManifoldPandasApplier",
    "ManifoldPandasParallelApplier",
    "manifold_labeling_function",
    "filter_unlabeled_manifold",
    "RankingDaskApplier",
    "RankingLFAnalysis",
    "RankingLabelingFunction",
    "RankingPandasApplier",
    "RankingPandasParallelApplier",
    "ranking_labeling_function",
    "StructuredLabelingFunction",
    "structured_labeling_function",
    "StructuredLFAnalysis",
    "aggregators",
    "datasets",
    "synthetic",
    "__version__",
]

# Subpackages that ``import snorkel_structured`` used to bind as a side effect of its
# eager imports (``ss.spaces.PERMUTATION_METRICS``, ``ss.noise.log_posterior``, ...).
_LAZY.update(
    {
        name: f"snorkel_structured.{name}"
        for name in (
            "embedding",
            "end_model",
            "estimators",
            "exceptions",
            "label_model",
            "labeling",
            "noise",
            "noise_aware",
            "rankings",
            "spaces",
        )
    }
)


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(module_name)
    value = module if module_name.rsplit(".", 1)[-1] == name else getattr(module, name)
    globals()[name] = value  # later accesses skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


if TYPE_CHECKING:  # static analysers and IDEs see the eager imports
    from snorkel_structured import aggregators, datasets, synthetic
    from snorkel_structured._validation import ABSTAIN
    from snorkel_structured.embedding import PseudoEuclideanEmbedding
    from snorkel_structured.end_model.manifold import KernelManifoldRegressor
    from snorkel_structured.end_model.structured import KernelStructuredPredictor
    from snorkel_structured.estimators._stats import VoteStats
    from snorkel_structured.exceptions import (
        ConvergenceWarning,
        IdentifiabilityWarning,
        IllConditionedWarning,
        NotFittedError,
    )
    from snorkel_structured.label_model.baselines import (
        AggregatingVoter,
        ManifoldMeanVoter,
    )
    from snorkel_structured.label_model.manifold import ManifoldLabelModel
    from snorkel_structured.label_model.ranking import RankingLabelModel
    from snorkel_structured.label_model.structured import StructuredLabelModel
    from snorkel_structured.labeling.analysis import StructuredLFAnalysis
    from snorkel_structured.labeling.finite import (
        StructuredLabelingFunction,
        structured_labeling_function,
    )
    from snorkel_structured.labeling.manifold import (
        ManifoldDaskApplier,
        ManifoldLabelingFunction,
        ManifoldPandasApplier,
        ManifoldPandasParallelApplier,
        manifold_labeling_function,
    )
    from snorkel_structured.labeling.ranking_analysis import RankingLFAnalysis
    from snorkel_structured.labeling.rankings import (
        RankingDaskApplier,
        RankingLabelingFunction,
        RankingPandasApplier,
        RankingPandasParallelApplier,
        ranking_labeling_function,
    )
    from snorkel_structured.labeling.utils import filter_unlabeled_manifold
    from snorkel_structured.noise.finite import FiniteNoiseModel
    from snorkel_structured.noise.manifold import RiemannianGaussian, WrappedNormal
    from snorkel_structured.noise_aware import NoiseMatrix, loss_weights, noise_matrix
    from snorkel_structured.spaces.finite import Discrete, FiniteMetricSpace
    from snorkel_structured.spaces.graphs import GraphSpace
    from snorkel_structured.spaces.manifolds import (
        Euclidean,
        Hyperbolic,
        ProductManifold,
        Sphere,
    )
    from snorkel_structured.spaces.permutations import Permutations
    from snorkel_structured.spaces.rankings import Rankings
