"""Label models: Snorkel-facing estimators of labeling-function noise, and baselines."""

from snorkel_structured.label_model.baselines import AggregatingVoter, ManifoldMeanVoter
from snorkel_structured.label_model.manifold import ManifoldLabelModel
from snorkel_structured.label_model.structured import StructuredLabelModel

__all__ = [
    "AggregatingVoter",
    "ManifoldLabelModel",
    "ManifoldMeanVoter",
    "StructuredLabelModel",
]
