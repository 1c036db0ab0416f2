"""Structured labeling functions, appliers and LF analysis (the Snorkel-facing layer).

- :func:`structured_labeling_function`: LFs returning items of a finite space, as real
  Snorkel ``LabelingFunction`` objects (use Snorkel's appliers and ``LFAnalysis``);
- :func:`manifold_labeling_function` with :class:`ManifoldPandasApplier`,
  :class:`ManifoldDaskApplier`, :class:`ManifoldPandasParallelApplier`: LFs returning
  points on a manifold;
- :func:`ranking_labeling_function` with :class:`RankingPandasApplier`,
  :class:`RankingDaskApplier`, :class:`RankingPandasParallelApplier`: LFs returning
  orderings (top-k lists) of a row's items, and :class:`RankingLFAnalysis`, their
  coverage, overlaps, conflicts and accuracy over item pairs;
- :class:`StructuredLFAnalysis`: coverage, overlaps and conflicts in the label metric;
- :func:`filter_unlabeled_manifold`: Snorkel's ``filter_unlabeled_dataframe`` for
  manifold pseudolabels (optionally dropping rows whose spread is too large).
"""

from snorkel_structured.labeling.analysis import StructuredLFAnalysis
from snorkel_structured.labeling.finite import (
    StructuredLabelingFunction,
    structured_labeling_function,
)
from snorkel_structured.labeling.manifold import (
    ApplierMetadata,
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

__all__ = [
    "ApplierMetadata",
    "ManifoldDaskApplier",
    "ManifoldLabelingFunction",
    "ManifoldPandasApplier",
    "ManifoldPandasParallelApplier",
    "RankingDaskApplier",
    "RankingLFAnalysis",
    "RankingLabelingFunction",
    "RankingPandasApplier",
    "RankingPandasParallelApplier",
    "StructuredLFAnalysis",
    "StructuredLabelingFunction",
    "filter_unlabeled_manifold",
    "manifold_labeling_function",
    "ranking_labeling_function",
    "structured_labeling_function",
]
