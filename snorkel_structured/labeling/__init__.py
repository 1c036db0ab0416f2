"""Structured labeling functions, appliers and LF analysis (the Snorkel-facing layer).

- :func:`structured_labeling_function`: LFs returning items of a finite space, as real
  Snorkel ``LabelingFunction`` objects (use Snorkel's appliers and ``LFAnalysis``);
- :func:`manifold_labeling_function` with :class:`ManifoldPandasApplier`,
  :class:`ManifoldDaskApplier`, :class:`ManifoldPandasParallelApplier`: LFs returning
  points on a manifold;
- :class:`StructuredLFAnalysis`: coverage, overlaps and conflicts in the label metric.
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

__all__ = [
    "ApplierMetadata",
    "ManifoldDaskApplier",
    "ManifoldLabelingFunction",
    "ManifoldPandasApplier",
    "ManifoldPandasParallelApplier",
    "StructuredLFAnalysis",
    "StructuredLabelingFunction",
    "manifold_labeling_function",
    "structured_labeling_function",
]
